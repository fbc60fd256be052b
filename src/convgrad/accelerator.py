"""``convgrad.accelerator``: there is no accelerator (convgrad runs on the CPU), as
``torch.accelerator`` reports on a machine without one."""

from __future__ import annotations

__all__ = ["current_accelerator", "device_count", "is_available"]


def is_available() -> bool:
    return False


def current_accelerator(check_available: bool = False) -> None:
    """None: no accelerator."""
    return None


def device_count() -> int:
    return 0
