"""Kernel profiler: ``with cg.profile() as prof: ...`` records every kernel run.

Kernels record their runs through their family (:meth:`.registry.Family.record`); when
no profiler is active the cost is one list lookup.  Profilers nest: every active
profiler sees each event.  Events nest too: an event's seconds exclude those of the
events recorded inside it (a convolution's reorders into oneDNN's layouts are their own
``layout`` events), so the times of a profile add up without counting anything twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["Event", "Profiler", "profile"]

_local = threading.local()


def _active() -> list[Profiler]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


@dataclass
class Event:
    """One kernel run: its name, wall seconds, floating-point operations, shapes, the
    algorithm that ran and the kernel family (``conv``, ``norm``, ...)."""

    name: str
    seconds: float
    flops: int
    shapes: tuple
    algorithm: str = ""
    family: str = ""


@dataclass
class Profiler:
    """Collects :class:`Event` objects while active (see :func:`profile`)."""

    events: list[Event] = field(default_factory=list)

    def of(self, family: str) -> list[Event]:
        """The events of one kernel family, in the order they ran."""
        return [e for e in self.events if e.family == family]

    def count(self, name: str) -> int:
        """How many times the kernel ``name`` ran."""
        return sum(1 for e in self.events if e.name == name)

    def total_seconds(self, name: str | None = None) -> float:
        return sum(e.seconds for e in self.events if name is None or e.name == name)

    def summary(self, family: str | None = None) -> str:
        """A table with one row per kernel name (in the order they first ran): its family,
        calls, total time, GFLOP/s and the algorithms; only ``family``'s kernels if given."""
        rows: dict[str, list] = {}
        for e in self.events if family is None else self.of(family):
            row = rows.setdefault(e.name, [e.family, 0, 0.0, 0, set()])
            row[1] += 1
            row[2] += e.seconds
            row[3] += e.flops
            if e.algorithm:
                row[4].add(e.algorithm)
        # the name columns as wide as their longest entry (a family name such as
        # "similarity" pushed the numbers out of line at a fixed width)
        kw = max([24, *(len(name) for name in rows)])
        fw = max([8, *(len(row[0]) for row in rows.values())])
        head = (f"{'kernel':<{kw}} {'family':<{fw}} {'calls':>6} {'time ms':>10} "
                f"{'GFLOP/s':>9}  algorithm")
        lines = [head, "-" * len(head)]
        for name, (fam, calls, secs, flops, algos) in rows.items():
            gflops = flops / secs / 1e9 if secs > 0 and flops else 0.0
            algo = ",".join(sorted(algos))
            lines.append(f"{name:<{kw}} {fam:<{fw}} {calls:>6} {secs * 1e3:>10.2f} "
                         f"{gflops:>9.1f}  {algo}")
        if not rows:
            lines.append("(no kernels ran)")
        return "\n".join(lines)


@contextmanager
def profile() -> Iterator[Profiler]:
    """Record every kernel run inside the ``with`` block into a :class:`Profiler`."""
    prof = Profiler()
    stack = _active()
    stack.append(prof)
    try:
        yield prof
    finally:
        stack.remove(prof)


class _Recording:
    """Context manager measuring one kernel run; set ``.flops``/``.algorithm`` inside."""

    __slots__ = ("name", "shapes", "flops", "algorithm", "family", "_t0", "_stack", "_inner")

    def __init__(self, name: str, shapes: tuple, flops: int, family: str) -> None:
        self.name, self.shapes, self.flops, self.algorithm = name, shapes, flops, ""
        self.family = family

    def __enter__(self) -> _Recording:
        self._stack = _active()
        if self._stack:
            _open().append(self)
            self._inner = 0.0  # seconds of the events recorded inside this one
            self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._stack:
            return
        elapsed = time.perf_counter() - self._t0
        opened = _open()
        if opened and opened[-1] is self:
            opened.pop()
            if opened:
                opened[-1]._inner += elapsed
        if exc[0] is None:
            ev = Event(self.name, elapsed - self._inner, int(self.flops), self.shapes,
                       self.algorithm, self.family)
            for prof in self._stack:
                prof.events.append(ev)


def _open() -> list[_Recording]:
    """This thread's recordings in progress, innermost last."""
    opened = getattr(_local, "open", None)
    if opened is None:
        opened = _local.open = []
    return opened


def recording() -> bool:
    """Whether a profiler is active on this thread (kernels skip timing work otherwise)."""
    return bool(_active())

