"""torch.nn.modules.pixelshuffle's names, for scripts that import them from there."""

from __future__ import annotations

from ..resampling import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
