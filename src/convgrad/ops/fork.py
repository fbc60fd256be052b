"""A forked child process (a DataLoader worker, a ``multiprocessing`` pool's process):
what it may still use of what its parent started.

A child has only the thread that called ``fork``.  So:

* a lock another thread held at the fork stays held in the child for ever;
* a thread pool's threads are gone (work handed to them never runs);
* GNU OpenMP cannot start a team of threads in a child of a process that ran one:
  oneDNN's kernels then hang, and Numba's parallel loops on its OpenMP layer end the
  child with SIGTERM ("fork() called from a process already using GNU OpenMP").

Measured before this module: a DataLoader worker running a convolution hung when the
workers were forked within ~30 ms of building a network (oneDNN's warm-up thread held a
lock), when the parent had run a float64 convolution (the thread pool), or when it had
trained (OpenMP); one running a ReLU was killed.  The hooks here:

* before a fork, wait for the background warm-ups (:func:`.jit.warm_up`,
  :func:`.onednn.warm_up`), so that none of their locks (nor Numba's, LLVM's or
  oneDNN's inside them) is held by a thread the child will not have;
* in the child, give convgrad's locks back unlocked and drop its thread pool (made
  again on first use); where the parent had started OpenMP (oneDNN loaded, or Numba's
  parallel loops launched) run every kernel on one thread, as torch's DataLoader workers
  do, and switch Numba's loops off when its threading layer is OpenMP: the NumPy and
  oneDNN kernels run instead.
"""

from __future__ import annotations

import os

from . import jit, onednn, parallel

__all__ = ["WARM_UP_WAIT_S", "install"]

#: A fork waits at most this long for a warm-up (loading takes ~0.5 s; compiling the
#: loops the first time after installation 20-30 s); past it the fork goes ahead.
WARM_UP_WAIT_S = 120.0

_installed: list = []


def _before() -> None:
    jit.wait_for_warm_up(WARM_UP_WAIT_S)
    onednn.wait_for_warm_up(WARM_UP_WAIT_S)


def _in_child() -> None:
    openmp = onednn.loaded() or jit.parallel_launched()
    jit.after_fork_in_child()
    onednn.after_fork_in_child()
    parallel.after_fork_in_child(one_thread=openmp)


def install() -> None:
    """Register the hooks with ``os.register_at_fork`` (once; nothing where the platform
    has no fork)."""
    if _installed or not hasattr(os, "register_at_fork"):
        return
    os.register_at_fork(before=_before, after_in_child=_in_child)
    _installed.append(True)
