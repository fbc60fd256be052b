"""torch.nn.modules.upsampling's names, for scripts that import them from there."""

from __future__ import annotations

from ..resampling import Upsample

__all__ = ["Upsample"]
