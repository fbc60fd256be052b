"""``convgrad.cpu``: torch's ``torch.cpu`` namespace, for ``convgrad.cpu.amp`` (the
deprecated CPU aliases of ``convgrad.amp.autocast`` and ``GradScaler``)."""

from __future__ import annotations

from . import amp

__all__ = ["amp", "device_count", "is_available"]


def is_available() -> bool:
    """True: convgrad always runs on the CPU."""
    return True


def device_count() -> int:
    return 1
