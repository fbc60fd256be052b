"""``convgrad.cpu.amp.autocast`` (default dtype bfloat16) and ``GradScaler``: torch's
deprecated aliases of ``convgrad.amp.autocast('cpu', ...)`` and
``convgrad.amp.GradScaler('cpu', ...)`` (each warns so, as torch does)."""

from __future__ import annotations

from ..amp.legacy import autocast_for, grad_scaler_for

__all__ = ["GradScaler", "autocast"]

autocast = autocast_for("cpu", "bfloat16")
GradScaler = grad_scaler_for("cpu")
