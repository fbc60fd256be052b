"""``convgrad.backends.cudnn``: there is no cuDNN (convgrad runs on the CPU).  A script's
``cudnn.benchmark = True`` or ``cudnn.deterministic = True`` is accepted and changes
nothing: convgrad's kernels are chosen by its own dispatch point, and the same inputs
give the same bits whatever the thread count."""

from __future__ import annotations

__all__ = ["benchmark", "deterministic", "enabled", "is_available", "version"]

#: settable, read by nothing (as torch's flags on a machine without CUDA)
benchmark = False
deterministic = False
enabled = True


def is_available() -> bool:
    return False


def version() -> None:
    """No cuDNN: None, as torch without CUDA."""
    return None
