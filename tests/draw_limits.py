"""A wall-clock bound for one fuzz draw: a hang fails that draw, not the whole run."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


class DrawTimeout(Exception):
    """Raised inside a draw that ran past its time limit."""


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def _alarm(signum, frame):
        raise DrawTimeout(f"a draw ran longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
