"""``convgrad.distributed``: ``torch.distributed`` as a script running in one process
meets it.

convgrad trains in one process (its kernels use every core of that process), so there is
no process group: ``is_available()`` and ``is_initialized()`` are False, which sends a
script down its single-process path, and starting a group or running a collective is a
RuntimeError that says so (never a silent no-op that would leave replicas apart).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, NoReturn

__all__ = ["ReduceOp", "all_gather", "all_reduce", "barrier", "broadcast",
           "destroy_process_group", "get_rank", "get_world_size", "init_process_group",
           "is_available", "is_initialized"]


class ReduceOp(Enum):
    """torch's reduction names (for code that names them outside its distributed path)."""

    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    AVG = "avg"


def is_available() -> bool:
    """False: convgrad has no distributed backend."""
    return False


def is_initialized() -> bool:
    """False: there is no process group."""
    return False


def _unavailable(name: str) -> Callable[..., NoReturn]:
    """A function of torch.distributed that needs a process group: a RuntimeError."""
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError(f"convgrad.distributed.{name}: convgrad trains in one process "
                           "and has no process group (distributed.is_available() is "
                           "False); run the script without its distributed options")
    refuse.__name__ = refuse.__qualname__ = name
    return refuse


init_process_group = _unavailable("init_process_group")
destroy_process_group = _unavailable("destroy_process_group")
get_rank = _unavailable("get_rank")
get_world_size = _unavailable("get_world_size")
all_reduce = _unavailable("all_reduce")
all_gather = _unavailable("all_gather")
broadcast = _unavailable("broadcast")
barrier = _unavailable("barrier")
