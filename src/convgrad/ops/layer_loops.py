"""Layer normalisation's forward and backward as compiled functions (Numba, :mod:`.jit`),
one call each.

The input is viewed as an (R, K) float32 C-contiguous array: R rows (every leading
index), each normalised over its K trailing elements, which lie in one run of memory.
Each function runs fixed tasks of ``rows`` consecutive rows in a ``prange`` loop on
OpenMP's threads (compiled serial where Numba's threading layer is its work queue); a
row stays in cache through its passes, so x is read from memory once a call.  Per row,
in float64: the mean, then the mean squared deviation (two passes over the row: never
``E[x^2] - E[x]^2``), ``s = (var + eps)^-1/2`` and every output ``float32((x - m) s w +
b)``, rounded once.  The backward, with ``xh = (x - m) s`` and ``gs = g w``, writes
``gx = s (gs - mean(gs) - xh mean(gs xh))`` (the row's statistics differentiated),
rounded once, and adds each row's ``g xh`` and ``g`` into its task's row of float64
partial sums, which the caller adds in task order: nothing depends on the thread count.
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
    # reassociation lets the float64 row sums vectorise (their order is the compiled
    # code's, the same every call); contraction fuses each multiply-add, rounded once
    compiled = numba.njit(nogil=True, cache=True, parallel=parallel,
                          fastmath={"reassoc", "contract"})

    def forward(x, rows, w, b, eps, y, mean, rstd):
        """y = float32((x - m) s w + b) per row of x (R, K); w, b (K,) float64; mean,
        rstd (R,) float64 out."""
        r_len, k_len = x.shape
        tasks = (r_len + rows - 1) // rows
        for t in prange(tasks):
            for i in range(t * rows, min(r_len, t * rows + rows)):
                xr, yr = x[i], y[i]
                s1 = 0.0
                for j in range(k_len):
                    s1 += np.float64(xr[j])
                m = s1 / k_len
                s2 = 0.0
                for j in range(k_len):
                    d = np.float64(xr[j]) - m
                    s2 += d * d
                s = 1.0 / np.sqrt(s2 / k_len + eps)
                mean[i], rstd[i] = m, s
                for j in range(k_len):
                    yr[j] = np.float32((np.float64(xr[j]) - m) * s * w[j] + b[j])

    def backward(g, x, w, mean, rstd, rows, need_x, gx, gw, gb):
        """gx (R, K) = float32(s (gs - mean(gs) - xh mean(gs xh))) where ``need_x``; gw, gb
        (tasks, K) float64 out: each task's sums of g xh and of g."""
        r_len, k_len = x.shape
        tasks = gw.shape[0]
        for t in prange(tasks):
            pw, pb = gw[t], gb[t]
            for j in range(k_len):
                pw[j] = 0.0
                pb[j] = 0.0
            for i in range(t * rows, min(r_len, t * rows + rows)):
                xr, gr = x[i], g[i]
                m, s = mean[i], rstd[i]
                a1 = 0.0
                a2 = 0.0
                for j in range(k_len):
                    xh = (np.float64(xr[j]) - m) * s
                    gj = np.float64(gr[j])
                    gs = gj * w[j]
                    a1 += gs
                    a2 += gs * xh
                    pw[j] += gj * xh
                    pb[j] += gj
                if need_x:
                    c1, c2 = a1 / k_len, a2 / k_len
                    gxr = gx[i]
                    for j in range(k_len):
                        xh = (np.float64(xr[j]) - m) * s
                        gxr[j] = np.float32(s * (np.float64(gr[j]) * w[j] - c1 - xh * c2))

    return {"forward": compiled(forward), "backward": compiled(backward), "parallel": parallel}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)
