"""``convgrad.cuda``: there is no CUDA device (convgrad runs on the CPU), as a PyTorch
script asks: ``cuda.is_available()`` is False and ``cuda.device_count()`` is 0."""

from __future__ import annotations

__all__ = ["device_count", "is_available", "manual_seed", "manual_seed_all"]


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    """Nothing to seed (no CUDA device); accepted as torch accepts it without one."""


manual_seed_all = manual_seed
