"""``convgrad.cuda``: there is no CUDA device (convgrad runs on the CPU), as a PyTorch
script asks: ``cuda.is_available()`` is False and ``cuda.device_count()`` is 0.

``convgrad.cuda.amp`` (loaded on first use) holds torch's deprecated ``autocast`` and
``GradScaler`` aliases: the scaler, for a device that is not here, is disabled, as torch's
is on a machine without CUDA."""

from __future__ import annotations

__all__ = ["amp", "device_count", "is_available", "manual_seed", "manual_seed_all"]


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    """Nothing to seed (no CUDA device); accepted as torch accepts it without one."""


manual_seed_all = manual_seed


def __getattr__(name: str):
    # convgrad.cuda.amp loads on first use
    if name == "amp":
        import importlib

        return importlib.import_module(".amp", __name__)
    raise AttributeError(f"module 'convgrad.cuda' has no attribute {name!r}")
