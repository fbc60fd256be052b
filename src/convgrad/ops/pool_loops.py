"""Adaptive max pooling's windows along one axis as a compiled loop (Numba, :mod:`.jit`).

An array is viewed as (A, L, B) in its memory order (``A`` the dims outside the axis,
``L`` the axis, ``B`` the contiguous dims inside it).  Output ``o`` of the axis covers
inputs ``start[o] <= i < stop[o]``; ``window_argmax`` writes each window's maximum and
its position for every (a, b): the first maximum in order, the last NaN if any (torch's
choice: ``v > best or isnan(v)``), scanning whole rows ``x[a, i, :]``; the outer rows
in a ``prange``.
"""

from __future__ import annotations

import numpy as np

from . import jit

__all__ = ["loops"]


def _compile(numba) -> dict:
    """``{"window_argmax": ...}`` compiled: what ``loops()`` returns (None without Numba)."""
    parallel = jit.thread_safe()
    prange = numba.prange if parallel else range

    @numba.njit(nogil=True, cache=True, parallel=parallel)
    def window_argmax(x, start, stop, best, pos, a0, a1):  # x (A, L, B) -> (A, M, B)
        for a in prange(a0, a1):
            for o in range(start.shape[0]):
                s0 = start[o]
                vb, pb, src = best[a, o], pos[a, o], x[a, s0]
                for b in range(src.shape[0]):
                    vb[b] = src[b]
                    pb[b] = s0
                for i in range(s0 + 1, stop[o]):
                    src = x[a, i]
                    for b in range(src.shape[0]):
                        v = src[b]
                        if v > vb[b] or v != v:
                            vb[b] = v
                            pb[b] = i

    return {"window_argmax": window_argmax, "parallel": parallel}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)


@jit.exercise
def _exercise() -> None:
    """The loop once on tiny float32 arrays (the argument types of real calls)."""
    f = loops()
    if f is None:
        return
    x = np.zeros((1, 3, 2), np.float32)
    f["window_argmax"](x, np.zeros(2, np.int64), np.full(2, 3, np.int64),
                       np.empty((1, 2, 2), np.float32), np.empty((1, 2, 2), np.int64), 0, 1)
