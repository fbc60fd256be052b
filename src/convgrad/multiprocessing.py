"""``convgrad.multiprocessing``: Python's ``multiprocessing`` under torch's name, with
``spawn(fn, args, nprocs)`` as torch has it: ``nprocs`` processes each run ``fn(i,
*args)``; with ``join`` the call waits for all, and a process that raised makes it raise
a RuntimeError carrying that process's traceback.

A Tensor or module moved into shared memory first (``share_memory_``,
``Module.share_memory``: :mod:`convgrad.tensor.shared_memory`) reaches a process as a
reference to the same memory; anything else arrives as a copy.
"""

from __future__ import annotations

import multiprocessing as _mp
import traceback
from collections.abc import Callable
from multiprocessing import (  # noqa: F401 (re-exported, as torch.multiprocessing does)
    Pipe,
    Process,
    Queue,
    cpu_count,
    get_all_start_methods,
    get_context,
    get_start_method,
    set_start_method,
)
from typing import Any

__all__ = ["Pipe", "Process", "ProcessContext", "Queue", "cpu_count",
           "get_all_start_methods", "get_context", "get_start_method", "set_start_method",
           "spawn", "start_processes"]


def _run(fn: Callable[..., Any], i: int, args: tuple, errors: Any) -> None:
    try:
        fn(i, *args)
    except BaseException:  # the parent raises it, with this traceback
        errors.put((i, traceback.format_exc()))
        raise SystemExit(1) from None


class ProcessContext:
    """The processes of one :func:`spawn`; ``join()`` waits for them all."""

    def __init__(self, processes: list, errors: Any) -> None:
        self.processes, self._errors = processes, errors

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Wait for every process (at most ``timeout`` seconds each); True when all have
        ended.  A process that raised or died is a RuntimeError naming it."""
        for p in self.processes:
            p.join(timeout)
        if any(p.is_alive() for p in self.processes):
            return False
        if not self._errors.empty():
            i, text = self._errors.get()
            raise RuntimeError(f"spawn: process {i} raised:\n{text}")
        for i, p in enumerate(self.processes):
            if p.exitcode != 0:
                raise RuntimeError(f"spawn: process {i} ended with exit code {p.exitcode}")
        return True


def start_processes(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1,
                    join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> ProcessContext | None:
    """Run ``fn(i, *args)`` in ``nprocs`` new processes (``i`` = 0 .. nprocs - 1)."""
    if not callable(fn):
        raise TypeError(f"spawn: fn={fn!r} must be callable")
    if not isinstance(args, tuple):
        raise TypeError(f"spawn: args={args!r} must be a tuple")
    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"spawn: nprocs={nprocs!r} must be an int >= 1")
    ctx = _mp.get_context(start_method)
    errors = ctx.SimpleQueue()
    processes = [ctx.Process(target=_run, args=(fn, i, args, errors), daemon=daemon)
                 for i in range(nprocs)]
    for p in processes:
        p.start()
    context = ProcessContext(processes, errors)
    if not join:
        return context
    context.join()
    return None


def spawn(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """torch's ``multiprocessing.spawn``: :func:`start_processes` with the spawn method."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
