"""Process-wide settings: the convolution workspace bound."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_WORKSPACE_BYTES = 64 * 2**20


def get_workspace_limit() -> int:
    """Bytes any one convolution kernel may use for scratch buffers (default 64 MiB)."""
    return _WORKSPACE_BYTES


def set_workspace_limit(nbytes: int) -> None:
    """Set the scratch-buffer bound of every convolution kernel, in bytes (>= 64 KiB)."""
    global _WORKSPACE_BYTES
    if isinstance(nbytes, bool) or not isinstance(nbytes, int):
        raise TypeError(f"set_workspace_limit: nbytes must be an int, got {nbytes!r}")
    if nbytes < 2**16:
        raise ValueError(f"set_workspace_limit: nbytes={nbytes} must be >= 65536")
    _WORKSPACE_BYTES = nbytes


@contextmanager
def workspace_limit(nbytes: int) -> Iterator[None]:
    """Temporarily bound the convolution workspace (``with cg.workspace_limit(2**20): ...``)."""
    old = get_workspace_limit()
    set_workspace_limit(nbytes)
    try:
        yield
    finally:
        set_workspace_limit(old)
