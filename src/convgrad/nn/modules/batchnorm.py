"""torch.nn.modules.batchnorm's names, for scripts that import them from there."""

from __future__ import annotations

from ..lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from ..normalization import (
                             BatchNorm1d,
                             BatchNorm2d,
                             BatchNorm3d,
                             SyncBatchNorm,
                             _BatchNorm,
                             _NormBase,
)

__all__ = ["_NormBase", "_BatchNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "SyncBatchNorm"]
