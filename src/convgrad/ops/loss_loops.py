"""The pointwise regression losses' reduced forward and their backward as compiled
functions (Numba, :mod:`.jit`), one call each.

Input and target are flat float32 runs of one layout (a dense array's memory).  Each
function runs fixed blocks of :data:`.losses.BLOCK` elements in a ``prange`` loop on
OpenMP's threads (compiled serial where Numba's threading layer is its work queue).  The
difference ``d = x - t`` is exact in float64; the forward sums each block's losses in
float64 into its own slot (added in block order by the caller: nothing depends on the
thread count); the backward writes ``float32(scale * dl/dd)``, rounded once.  ``kind``
(:data:`.losses.KINDS`) picks the loss outside the element loops, which vectorise:
0 ``d^2``; 1 ``|d|``; 2 smooth L1, ``0.5 d^2 / beta`` below ``beta``, else ``|d| - 0.5
beta``; 3 Huber, ``0.5 d^2`` below ``beta`` (delta), else ``beta (|d| - 0.5 beta)``.
The derivatives are torch's, zeros and NaN included: ``2 d``; ``sign(d)`` with 0 at 0
and at NaN; ``d / beta`` clamped to [-1, 1]; ``d`` clamped to [-beta, beta].
"""

from __future__ import annotations

import numpy as np

from . import jit

__all__ = ["loops"]


def _compile(numba) -> dict:
    """``{"forward": ..., "backward": ..., "parallel": ...}`` compiled: what ``loops()``
    returns (None without Numba)."""
    parallel = jit.thread_safe()
    prange = numba.prange if parallel else range
    # reassociation lets each block's float64 sum vectorise (in the compiled code's order,
    # the same every call); every value is float64 from float32 inputs
    compiled = numba.njit(nogil=True, cache=True, parallel=parallel, fastmath={"reassoc"})

    def forward(x, t, kind, beta, block, out):
        """out[p]: the sum of the losses of block p (float64)."""
        n = x.shape[0]
        half, inv2 = 0.5 * beta, (0.5 / beta if beta > 0 else 0.0)
        for p in prange(out.shape[0]):
            lo, hi = p * block, min(n, p * block + block)
            xs, ts = x[lo:hi], t[lo:hi]  # slices from 0: the loops vectorise
            s = 0.0
            if kind == 0:
                for i in range(hi - lo):
                    d = np.float64(xs[i]) - np.float64(ts[i])
                    s += d * d
            elif kind == 1:
                for i in range(hi - lo):
                    s += abs(np.float64(xs[i]) - np.float64(ts[i]))
            elif kind == 2:
                for i in range(hi - lo):
                    d = np.float64(xs[i]) - np.float64(ts[i])
                    a = abs(d)
                    s += d * d * inv2 if a < beta else a - half
            else:
                for i in range(hi - lo):
                    d = np.float64(xs[i]) - np.float64(ts[i])
                    a = abs(d)
                    s += 0.5 * d * d if a < beta else beta * (a - half)
            out[p] = s

    def backward(x, t, kind, beta, scale, block, gx):
        """gx = float32(scale * dl/dd) per element."""
        n = x.shape[0]
        for p in prange((n + block - 1) // block):
            lo, hi = p * block, min(n, p * block + block)
            xs, ts, gs = x[lo:hi], t[lo:hi], gx[lo:hi]
            if kind == 0:
                for i in range(hi - lo):
                    gs[i] = np.float32(scale * (2.0 * (np.float64(xs[i]) - np.float64(ts[i]))))
            elif kind == 1:
                for i in range(hi - lo):
                    d = np.float64(xs[i]) - np.float64(ts[i])
                    v = (1.0 if d > 0 else 0.0) - (1.0 if d < 0 else 0.0)
                    gs[i] = np.float32(scale * v)
            elif kind == 2:
                for i in range(hi - lo):
                    d = np.float64(xs[i]) - np.float64(ts[i])
                    v = -1.0 if d < -beta else (1.0 if d > beta else d / beta)
                    gs[i] = np.float32(scale * v)
            else:
                for i in range(hi - lo):
                    d = np.float64(xs[i]) - np.float64(ts[i])
                    v = -beta if d < -beta else (beta if d > beta else d)
                    gs[i] = np.float32(scale * v)

    return {"forward": compiled(forward), "backward": compiled(backward), "parallel": parallel}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)
