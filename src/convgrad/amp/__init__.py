"""``convgrad.amp``: torch's mixed-precision entry points, ``autocast`` and ``GradScaler``.

convgrad computes in float32: ``autocast`` keeps every dtype (warning once that a
float16/bfloat16 region runs in float32), and ``GradScaler('cpu')`` scales the loss,
skips steps with inf/NaN gradients and adapts its scale exactly as torch's does.
"""

from __future__ import annotations

from .autocast_mode import (
    autocast,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "get_autocast_dtype", "is_autocast_available",
           "is_autocast_enabled"]
