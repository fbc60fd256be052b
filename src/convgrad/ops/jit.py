"""Numba, the compiler of the loops no kernel library provides: few-channel direct
convolutions (:mod:`.direct`) and the norm family's fused chunk passes
(:mod:`.norm_loops`).

Optional: without it (or with ``CONVGRAD_DISABLE_NUMBA=1``) nothing selects those loops.
Imported on first use, not with convgrad: importing it costs 0.2-0.4 s.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["enabled", "numba", "set_threads", "thread_safe"]

_numba = None  # the numba module once imported, False when it is not installed
_layer: list = []  # the threading layer Numba chose, once known


def numba():
    """The numba module, or None when it is not installed."""
    global _numba
    if _numba is None:
        try:
            import numba as module
        except ImportError:
            _numba = False
        else:
            _numba = module
    return _numba or None


def enabled() -> bool:
    """Numba is installed and not disabled by ``CONVGRAD_DISABLE_NUMBA``."""
    return (os.environ.get("CONVGRAD_DISABLE_NUMBA", "") in ("", "0")
            and numba() is not None)


def set_threads(n: int) -> None:
    """Numba's parallel loops launched from this thread run on ``n`` threads (at most
    the ``NUMBA_NUM_THREADS`` it started)."""
    module = numba()
    module.set_num_threads(max(1, min(n, module.config.NUMBA_NUM_THREADS)))


def thread_safe() -> bool:
    """Numba's parallel loops may be launched from several threads at once: its threading
    layer is OpenMP or TBB, not its own work queue (which aborts the process then).  The
    layer is chosen on the first parallel launch, which this makes (0.6 s, once)."""
    if not _layer:
        module = numba()

        @module.njit(parallel=True, cache=True)
        def probe(n):
            out = np.zeros(n)
            for i in module.prange(n):
                out[i] = i
            return out

        probe(2)
        _layer.append(module.threading_layer())
    return _layer[0] in ("omp", "tbb")
