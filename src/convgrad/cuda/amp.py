"""``convgrad.cuda.amp.autocast`` (default dtype float16) and ``GradScaler``: torch's
deprecated aliases of ``convgrad.amp.autocast('cuda', ...)`` and
``convgrad.amp.GradScaler('cuda', ...)``; each warns so, as torch does, and the scaler,
CUDA not being available, is disabled (every method passes through), as torch's is on a
machine without CUDA."""

from __future__ import annotations

from ..amp.legacy import autocast_for, grad_scaler_for

__all__ = ["GradScaler", "autocast"]

autocast = autocast_for("cuda", "float16")
GradScaler = grad_scaler_for("cuda")
