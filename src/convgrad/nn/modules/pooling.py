"""torch.nn.modules.pooling's names, for scripts that import them from there."""

from __future__ import annotations

from ..fractional_pooling import FractionalMaxPool2d, FractionalMaxPool3d
from ..pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
    _AdaptiveAvgPoolNd,
    _AdaptiveMaxPoolNd,
    _AvgPoolNd,
    _LPPoolNd,
    _MaxPoolNd,
    _MaxUnpoolNd,
)

__all__ = ["_MaxPoolNd", "MaxPool1d", "MaxPool2d", "MaxPool3d", "_AvgPoolNd", "AvgPool1d",
           "AvgPool2d", "AvgPool3d", "_AdaptiveAvgPoolNd", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "_AdaptiveMaxPoolNd", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "_MaxUnpoolNd", "MaxUnpool1d",
           "MaxUnpool2d", "MaxUnpool3d", "_LPPoolNd", "LPPool1d", "LPPool2d", "LPPool3d",
           "FractionalMaxPool2d", "FractionalMaxPool3d"]
