"""Process-wide settings: the convolution workspace bound."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_WORKSPACE_BYTES = 64 * 2**20
_local = threading.local()  # ``workspace_limit`` overrides, per thread


def get_workspace_limit() -> int:
    """Bytes any one convolution kernel may use for scratch buffers (default 64 MiB).

    Inside ``with workspace_limit(n):`` it is ``n`` for that thread only.
    """
    override = getattr(_local, "limit", None)
    return _WORKSPACE_BYTES if override is None else override


def _check(nbytes: object, fn: str) -> int:
    if isinstance(nbytes, bool) or not isinstance(nbytes, int):
        raise TypeError(f"{fn}: nbytes must be an int, got {nbytes!r}")
    if nbytes < 2**16:
        raise ValueError(f"{fn}: nbytes={nbytes} must be >= 65536")
    return nbytes


def set_workspace_limit(nbytes: int) -> None:
    """Set the scratch-buffer bound of every convolution kernel, in bytes (>= 64 KiB)."""
    global _WORKSPACE_BYTES
    _WORKSPACE_BYTES = _check(nbytes, "set_workspace_limit")


@contextmanager
def workspace_limit(nbytes: int) -> Iterator[None]:
    """Bound the workspace in this thread (``with cg.workspace_limit(2**20): ...``)."""
    _check(nbytes, "workspace_limit")
    saved = getattr(_local, "limit", None)
    _local.limit = nbytes
    try:
        yield
    finally:
        _local.limit = saved
