"""torch.nn.modules.upsampling's names, for scripts that import them from there."""

from __future__ import annotations

from ..resampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
