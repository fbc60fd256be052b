"""torch.nn.modules.instancenorm's names, for scripts that import them from there."""

from __future__ import annotations

from ..lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d
from ..normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm

__all__ = ["_InstanceNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
