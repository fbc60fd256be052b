"""torch.nn.modules.linear's names, for scripts that import them from there."""

from __future__ import annotations

from ..attention import NonDynamicallyQuantizableLinear
from ..layers import Bilinear, Identity, Linear
from ..lazy import LazyLinear

__all__ = ["Bilinear", "Identity", "Linear", "NonDynamicallyQuantizableLinear", "LazyLinear"]
