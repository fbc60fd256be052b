"""torch.nn.modules.conv's names, for scripts that import them from there."""

from __future__ import annotations

from ..conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    _ConvNd,
)

__all__ = ["_ConvNd", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]
