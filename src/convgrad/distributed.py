"""``convgrad.distributed``: ``torch.distributed`` as a script running in one process
meets it.

convgrad trains in one process (its kernels use every core of that process), so there is
no process group: ``is_available()`` and ``is_initialized()`` are False, which sends a
script down its single-process path, and starting a group or running a collective is a
RuntimeError that says so (never a silent no-op that would leave replicas apart).
"""

from __future__ import annotations

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


def _unavailable(name: str) -> NoReturn:
    raise RuntimeError(f"convgrad.distributed.{name}: convgrad trains in one process and has "
                       "no process group (distributed.is_available() is False); run the "
                       "script without its distributed options")


def init_process_group(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("init_process_group")


def destroy_process_group(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("destroy_process_group")


def get_rank(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("get_rank")


def get_world_size(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("get_world_size")


def all_reduce(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("all_reduce")


def all_gather(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("all_gather")


def broadcast(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("broadcast")


def barrier(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("barrier")
