"""Group normalisation's passes as compiled loops (Numba, :mod:`.jit`), in either layout.

An activation x (N, C, *) is viewed without a copy as ``nsc`` (N, S, C), channels-last
memory, channels innermost, or ``ncs`` (N, C, S), C-contiguous memory.  Every pass runs
over fixed tasks, a block of ``R`` positions of one sample (``nsc``: all its channels;
``ncs``: one channel each), in a ``prange`` over a range of tasks ``[t0, t1)`` (all of
them on OpenMP's threads, or runs of them from the caller's pool where Numba's threading
layer is its work queue, as :mod:`.norm_loops`).  A task writes its results to its own
row of ``(N, B, C)`` float64 arrays: nothing depends on the thread count.

Sums are float64.  The moments are two passes over a block while it is in cache (its
mean, then the squared deviations from it), combined across blocks and channels by the
caller (Chan et al.'s update).  Outputs are computed in float64 from per-(sample,
channel) float64 coefficients and rounded to float32 once.
"""

from __future__ import annotations

import numpy as np

from . import jit

__all__ = ["loops"]

_compiled: list = []


@jit.loader
def loops() -> dict | None:
    """The compiled passes by name (``moments_nsc``, ``apply_ncs``, ...; ``parallel``:
    whether they run on Numba's threads), or None without Numba."""
    if not _compiled:
        if not jit.enabled():
            return None
        _compiled.append(_compile(jit.numba()))
    return _compiled[0]


def _compile(numba) -> dict:
    parallel = jit.thread_safe()
    prange = numba.prange if parallel else range
    plain = numba.njit(nogil=True, cache=True, parallel=parallel)
    summing = numba.njit(nogil=True, cache=True, parallel=parallel, fastmath={"reassoc"})

    # ------------------------------------------------------------- nsc: (N, S, C)
    def moments_nsc(x, r, pm, pq, t0, t1):  # pm, pq (N, B, C): a block's mean, sum d^2
        s_len, b_len = x.shape[1], pm.shape[1]
        for t in prange(t0, t1):
            n, b = t // b_len, t % b_len
            s0, s1 = b * r, min(s_len, b * r + r)
            m, q = pm[n, b], pq[n, b]
            m[:] = 0.0
            q[:] = 0.0
            for s in range(s0, s1):
                xr = x[n, s]
                for c in range(xr.shape[0]):
                    m[c] += xr[c]
            for c in range(m.shape[0]):
                m[c] /= s1 - s0
            for s in range(s0, s1):
                xr = x[n, s]
                for c in range(xr.shape[0]):
                    d = np.float64(xr[c]) - m[c]
                    q[c] += d * d

    def apply_nsc(x, mean, sc, sh, y, r, b_len, t0, t1):  # y = (x - mean) sc + sh
        s_len = x.shape[1]
        for t in prange(t0, t1):
            n, b = t // b_len, t % b_len
            mn, scn, shn = mean[n], sc[n], sh[n]
            for s in range(b * r, min(s_len, b * r + r)):
                xr, yr = x[n, s], y[n, s]
                for c in range(xr.shape[0]):
                    yr[c] = np.float32((np.float64(xr[c]) - mn[c]) * scn[c] + shn[c])

    def sums_nsc(g, x, mean, r, pa, pb, t0, t1):  # pa: sum g, pb: sum g (x - mean)
        s_len, b_len = x.shape[1], pa.shape[1]
        for t in prange(t0, t1):
            n, b = t // b_len, t % b_len
            a, p, mn = pa[n, b], pb[n, b], mean[n]
            a[:] = 0.0
            p[:] = 0.0
            for s in range(b * r, min(s_len, b * r + r)):
                xr, gr = x[n, s], g[n, s]
                for c in range(xr.shape[0]):
                    a[c] += gr[c]
                    p[c] += np.float64(gr[c]) * (np.float64(xr[c]) - mn[c])

    def grad_nsc(g, x, mean, a, k, d0, gx, r, b_len, t0, t1):  # a g + k (x - mean) + d0
        s_len = x.shape[1]
        for t in prange(t0, t1):
            n, b = t // b_len, t % b_len
            mn, an, kn, dn = mean[n], a[n], k[n], d0[n]
            for s in range(b * r, min(s_len, b * r + r)):
                xr, gr, o = x[n, s], g[n, s], gx[n, s]
                for c in range(xr.shape[0]):
                    o[c] = np.float32(an[c] * gr[c] + (kn[c] * (np.float64(xr[c]) - mn[c])
                                                       + dn[c]))

    # ------------------------------------------------------------- ncs: (N, C, S)
    def moments_ncs(x, r, pm, pq, t0, t1):
        c_len, s_len, b_len = x.shape[1], x.shape[2], pm.shape[1]
        for t in prange(t0, t1):
            n, c, b = t // (c_len * b_len), (t // b_len) % c_len, t % b_len
            xr = x[n, c, b * r:min(s_len, b * r + r)]
            m = 0.0
            for j in range(xr.shape[0]):
                m += xr[j]
            m /= xr.shape[0]
            q = 0.0
            for j in range(xr.shape[0]):
                d = np.float64(xr[j]) - m
                q += d * d
            pm[n, b, c] = m
            pq[n, b, c] = q

    def apply_ncs(x, mean, sc, sh, y, r, b_len, t0, t1):
        c_len, s_len = x.shape[1], x.shape[2]
        for t in prange(t0, t1):
            n, c, b = t // (c_len * b_len), (t // b_len) % c_len, t % b_len
            j0, j1 = b * r, min(s_len, b * r + r)
            xr, yr = x[n, c, j0:j1], y[n, c, j0:j1]
            mc, scc, shc = mean[n, c], sc[n, c], sh[n, c]
            for j in range(xr.shape[0]):
                yr[j] = np.float32((np.float64(xr[j]) - mc) * scc + shc)

    def sums_ncs(g, x, mean, r, pa, pb, t0, t1):
        c_len, s_len, b_len = x.shape[1], x.shape[2], pa.shape[1]
        for t in prange(t0, t1):
            n, c, b = t // (c_len * b_len), (t // b_len) % c_len, t % b_len
            j0, j1 = b * r, min(s_len, b * r + r)
            xr, gr, mc = x[n, c, j0:j1], g[n, c, j0:j1], mean[n, c]
            a = p = 0.0
            for j in range(xr.shape[0]):
                a += gr[j]
                p += np.float64(gr[j]) * (np.float64(xr[j]) - mc)
            pa[n, b, c] = a
            pb[n, b, c] = p

    def grad_ncs(g, x, mean, a, k, d0, gx, r, b_len, t0, t1):
        c_len, s_len = x.shape[1], x.shape[2]
        for t in prange(t0, t1):
            n, c, b = t // (c_len * b_len), (t // b_len) % c_len, t % b_len
            j0, j1 = b * r, min(s_len, b * r + r)
            xr, gr, o = x[n, c, j0:j1], g[n, c, j0:j1], gx[n, c, j0:j1]
            mc, ac, kc, dc = mean[n, c], a[n, c], k[n, c], d0[n, c]
            for j in range(xr.shape[0]):
                o[j] = np.float32(ac * gr[j] + (kc * (np.float64(xr[j]) - mc) + dc))

    passes: dict = {"parallel": parallel}
    for fn, wrap in ((moments_nsc, plain), (apply_nsc, plain), (sums_nsc, plain),
                     (grad_nsc, plain), (moments_ncs, summing), (apply_ncs, plain),
                     (sums_ncs, summing), (grad_ncs, plain)):
        passes[fn.__name__] = wrap(fn)
    return passes
