"""torch.nn.modules.instancenorm's names, for scripts that import them from there."""

from __future__ import annotations

from ..normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm

__all__ = ["_InstanceNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
