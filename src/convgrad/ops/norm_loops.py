"""The norm family's chunk passes as fused loops, compiled with Numba (:mod:`.jit`).

Each pass reads a chunk of the array once, while it is in cache, where NumPy makes one
pass per operation.  Two loop orders, as :class:`.normalization._Chunks` cuts an array:

* ``rows``: a channels-last array as a (R, C) matrix, channels innermost; a chunk's
  ``bounds`` are (r0, r1, c0, c1).  A chunk of all C channels is one contiguous run,
  walked in runs of :data:`TILE` elements (whole rows) with the per-channel vectors
  repeated along a run and one float64 accumulator per position, so the loops vectorise
  whatever C is (row by row, 64 channels left them 2-3x slower); a narrower chunk (more
  channels than a chunk holds rows of) is walked row by row.  Its statistics are one
  pass from the chunk's first row (the cancellation in ``sum d^2`` against
  ``(sum d)^2 / k`` is at most a few bits, the origin being a sample; float64 keeps it);
* ``ncs``: an (N, C, S) array, each (sample, channel) row's contiguous S innermost;
  a chunk's ``bounds`` are (i0, i1, c0, c1, j0, j1).

Each pass takes the whole C-contiguous arrays and a (P, 4 or 6) array of its chunks'
bounds, and runs the chunks in a ``prange``: on OpenMP's threads, the team oneDNN's
convolutions just left spinning (run on Python threads instead, the chunks waited for
those spinning threads' cores: a ResNet-18 step gained nothing).  Where Numba's threading
layer is its own work queue (which aborts when two threads launch at once) the passes
are compiled serial and the caller hands runs of chunks to its thread pool instead.
A chunk's results go to its own row of ``out``: nothing depends on the thread count.

Sums are float64 (each product ``g (x - hi)`` exact), so a chunk's sums carry no float32
rounding at all; the ``ncs`` sums may reassociate (``fastmath={"reassoc"}``, which
vectorises a float64 reduction along a row) and nothing else does.  The forward's
output is ``float32((x - mean) s + t)`` computed in float64, one rounding (torch's
``x alpha + beta`` has three, oneDNN's more); the backward recomputes it, in the same
function, for a fused ReLU's mask.  The gradient's float32 arithmetic is the NumPy
chunked kernels' own, operation by operation.  Every inner loop runs over a 1-d
contiguous slice, the ReLU's test hoisted out of it: both keep it vectorised (indexing
the 2-d array there, or a chunk typed as strided, ran 2-5x slower).
"""

from __future__ import annotations

import numpy as np

from . import jit

__all__ = ["TILE", "Loops", "loops"]

#: elements of one run of a channels-last chunk's loops (whole rows, at least one): the
#: per-channel vectors are repeated along it, so the loops vectorise across rows of few
#: channels (row by row, (8, 64, 32, 32)'s statistics took 0.129 ms; in runs, 0.051)
TILE = 512


class Loops(dict):
    """The compiled passes by name (``moments_rows``, ``sums_ncs``, ...); ``parallel``:
    they run their chunks on Numba's threads (else serial, for the caller's pool)."""

    parallel: bool = False


_compiled: list = []


@jit.loader
def loops() -> Loops | None:
    """The compiled passes, or None without Numba.  Compiled on first use (and cached on
    disk by Numba)."""
    if not _compiled:
        if not jit.enabled():
            return None
        _compiled.append(_compile(jit.numba()))
    return _compiled[0]


def _compile(numba) -> Loops:
    passes = Loops()
    passes.parallel = jit.thread_safe()
    prange = numba.prange if passes.parallel else range
    plain = numba.njit(nogil=True, cache=True, parallel=passes.parallel)
    summing = numba.njit(nogil=True, cache=True, parallel=passes.parallel,
                         fastmath={"reassoc"})

    # the forward's y, float32((x - m) s + t) rounded once, is written out in each pass
    # (a compiled helper in their closure would change Numba's cache key every process)

    # ----------------------------------------------------------------- rows: (R, C)
    # A chunk's runs: a full-width chunk's rows are one contiguous run, walked in runs of
    # ``tile`` whole rows (TILE elements) with the per-channel vectors repeated along a
    # run; a narrower chunk is walked row by row (tile 1).  Run u starts at
    # ``r0 C + c0 + u step`` and ends at ``min(start + ln, r1 C)``.
    def forward_rows(x, m, s, t, relu, slope, y, bounds):
        c_len = x.shape[1]
        k = np.float32(slope)
        xf, yf = x.reshape(-1), y.reshape(-1)
        for p in prange(bounds.shape[0]):
            r0, r1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            w = c1 - c0
            tile = max(1, TILE // w) if w == c_len else 1
            ln, step = tile * w, tile * w if w == c_len else c_len
            mt, st, tt = np.empty(ln), np.empty(ln), np.empty(ln)
            for j in range(ln):
                mt[j], st[j], tt[j] = m[c0 + j % w], s[c0 + j % w], t[c0 + j % w]
            for u in range((r1 - r0 + tile - 1) // tile):
                o = r0 * c_len + c0 + u * step
                e = min(o + ln, r1 * c_len)
                xs, ys = xf[o:e], yf[o:e]
                for j in range(e - o):
                    ys[j] = np.float32((np.float64(xs[j]) - mt[j]) * st[j] + tt[j])
                if relu:
                    for j in range(e - o):
                        if ys[j] < 0:  # NaN stays NaN
                            ys[j] = ys[j] * k if slope != 0 else 0

    def moments_rows(x, bounds, out):  # out[p] (3, W): origin k, sum (x - k), sum (x - k)^2
        c_len = x.shape[1]
        xf = x.reshape(-1)
        for p in prange(bounds.shape[0]):
            r0, r1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            w = c1 - c0
            tile = max(1, TILE // w) if w == c_len else 1
            ln, step = tile * w, tile * w if w == c_len else c_len
            kt, a1, a2 = np.empty(ln), np.zeros(ln), np.zeros(ln)
            for j in range(ln):  # the origin: the chunk's first row
                kt[j] = xf[r0 * c_len + c0 + j % w]
            for u in range((r1 - r0 + tile - 1) // tile):
                o = r0 * c_len + c0 + u * step
                e = min(o + ln, r1 * c_len)
                xs = xf[o:e]
                for j in range(e - o):
                    d = np.float64(xs[j]) - kt[j]
                    a1[j] += d
                    a2[j] += d * d
            for c in range(w):
                v1 = v2 = 0.0
                for i in range(tile):
                    v1 += a1[i * w + c]
                    v2 += a2[i * w + c]
                out[p, 0, c], out[p, 1, c], out[p, 2, c] = kt[c], v1, v2

    def sums_rows(x, g, hi, m, s, t, relu, slope, bounds, out):  # out[p]: sum g, sum g (x - hi)
        c_len = x.shape[1]
        k, one, zero = np.float32(slope), np.float32(1), np.float32(0)
        xf, gf = x.reshape(-1), g.reshape(-1)
        for p in prange(bounds.shape[0]):
            r0, r1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            w = c1 - c0
            tile = max(1, TILE // w) if w == c_len else 1
            ln, step = tile * w, tile * w if w == c_len else c_len
            ht, mt, st, tt = np.empty(ln, np.float32), np.empty(ln), np.empty(ln), np.empty(ln)
            for j in range(ln):
                c = c0 + j % w
                ht[j], mt[j], st[j], tt[j] = hi[c], m[c], s[c], t[c]
            a1, a2, gm = np.zeros(ln), np.zeros(ln), np.empty(ln, np.float32)
            for u in range((r1 - r0 + tile - 1) // tile):
                o = r0 * c_len + c0 + u * step
                e = min(o + ln, r1 * c_len)
                xs, gs = xf[o:e], gf[o:e]
                if relu:  # g where the output is positive, else g slope (selects)
                    if slope != 0:
                        for j in range(e - o):
                            y = np.float32((np.float64(xs[j]) - mt[j]) * st[j] + tt[j])
                            gm[j] = gs[j] * (one if y > 0 else k)
                    else:
                        for j in range(e - o):
                            y = np.float32((np.float64(xs[j]) - mt[j]) * st[j] + tt[j])
                            gm[j] = gs[j] if y > 0 else zero
                    gs = gm[:e - o]
                for j in range(e - o):
                    a1[j] += gs[j]
                    a2[j] += np.float64(gs[j]) * (xs[j] - ht[j])
            for c in range(w):
                v1 = v2 = 0.0
                for i in range(tile):
                    v1 += a1[i * w + c]
                    v2 += a2[i * w + c]
                out[p, 0, c], out[p, 1, c] = v1, v2

    def grad_rows(x, g, gx, hi, k, b, a, m, s, t, relu, slope, bounds):
        c_len = x.shape[1]
        ks, one, zero = np.float32(slope), np.float32(1), np.float32(0)
        xf, gf, of = x.reshape(-1), g.reshape(-1), gx.reshape(-1)
        for p in prange(bounds.shape[0]):  # gx = a g + (k (x - hi) + b)
            r0, r1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            w = c1 - c0
            tile = max(1, TILE // w) if w == c_len else 1
            ln, step = tile * w, tile * w if w == c_len else c_len
            ht, kt = np.empty(ln, np.float32), np.empty(ln, np.float32)
            bt, at = np.empty(ln, np.float32), np.empty(ln, np.float32)
            mt, st, tt = np.empty(ln), np.empty(ln), np.empty(ln)
            for j in range(ln):
                c = c0 + j % w
                ht[j], kt[j], bt[j], at[j] = hi[c], k[c], b[c], a[c]
                mt[j], st[j], tt[j] = m[c], s[c], t[c]
            for u in range((r1 - r0 + tile - 1) // tile):
                o = r0 * c_len + c0 + u * step
                e = min(o + ln, r1 * c_len)
                xs, gs, os_ = xf[o:e], gf[o:e], of[o:e]
                if not relu:
                    for j in range(e - o):
                        os_[j] = gs[j] * at[j] + ((xs[j] - ht[j]) * kt[j] + bt[j])
                elif slope != 0:  # g at the activation's input, by selects, in the pass
                    for j in range(e - o):
                        y = np.float32((np.float64(xs[j]) - mt[j]) * st[j] + tt[j])
                        gj = gs[j] * (one if y > 0 else ks)
                        os_[j] = gj * at[j] + ((xs[j] - ht[j]) * kt[j] + bt[j])
                else:
                    for j in range(e - o):
                        y = np.float32((np.float64(xs[j]) - mt[j]) * st[j] + tt[j])
                        gj = gs[j] if y > 0 else zero
                        os_[j] = gj * at[j] + ((xs[j] - ht[j]) * kt[j] + bt[j])

    # ------------------------------------------------------------ ncs: (N, C, S)
    def forward_ncs(x, m, s, t, relu, slope, y, bounds):
        k = np.float32(slope)
        for p in prange(bounds.shape[0]):
            i0, i1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            j0, j1 = bounds[p, 4], bounds[p, 5]
            for i in range(i0, i1):
                for c in range(c0, c1):
                    mc, sc, tc = m[c], s[c], t[c]
                    xr, yr = x[i, c, j0:j1], y[i, c, j0:j1]
                    for j in range(j1 - j0):
                        yr[j] = np.float32((np.float64(xr[j]) - mc) * sc + tc)
                    if relu:
                        for j in range(j1 - j0):
                            if yr[j] < 0:
                                yr[j] = yr[j] * k if slope != 0 else 0

    def moments_ncs(x, bounds, out):  # out[p] (3, A, W): per (sample, channel) row
        for p in prange(bounds.shape[0]):
            i0, i1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            j0, j1 = bounds[p, 4], bounds[p, 5]
            for i in range(i0, i1):
                for c in range(c0, c1):
                    xr = x[i, c, j0:j1]
                    m = 0.0
                    for j in range(j1 - j0):
                        m += xr[j]
                    m /= j1 - j0
                    s1 = s2 = 0.0
                    for j in range(j1 - j0):
                        d = np.float64(xr[j]) - m
                        s1 += d
                        s2 += d * d
                    out[p, 0, i - i0, c - c0] = m
                    out[p, 1, i - i0, c - c0] = s1
                    out[p, 2, i - i0, c - c0] = s2

    def sums_ncs(x, g, hi, m, s, t, relu, slope, bounds, scratch, out):  # out[p] (2, W)
        k, one, zero = np.float32(slope), np.float32(1), np.float32(0)
        for p in prange(bounds.shape[0]):
            i0, i1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            j0, j1 = bounds[p, 4], bounds[p, 5]
            gm = scratch[p, :j1 - j0]
            for c in range(c0, c1):
                h, mc, sc, tc = hi[c], m[c], s[c], t[c]
                gb = gd = 0.0
                for i in range(i0, i1):
                    xr, gr = x[i, c, j0:j1], g[i, c, j0:j1]
                    if relu:
                        if slope != 0:
                            for j in range(j1 - j0):
                                y = np.float32((np.float64(xr[j]) - mc) * sc + tc)
                                gm[j] = gr[j] * (one if y > 0 else k)
                        else:
                            for j in range(j1 - j0):
                                y = np.float32((np.float64(xr[j]) - mc) * sc + tc)
                                gm[j] = gr[j] if y > 0 else zero
                        gr = gm
                    for j in range(j1 - j0):
                        gb += gr[j]
                        gd += np.float64(gr[j]) * (xr[j] - h)
                out[p, 0, c - c0] = gb
                out[p, 1, c - c0] = gd

    def grad_ncs(x, g, gx, hi, k, b, a, m, s, t, relu, slope, bounds):
        ks, one, zero = np.float32(slope), np.float32(1), np.float32(0)
        for p in prange(bounds.shape[0]):
            i0, i1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            j0, j1 = bounds[p, 4], bounds[p, 5]
            for i in range(i0, i1):
                for c in range(c0, c1):
                    h, kc, bc, ac, mc, sc, tc = hi[c], k[c], b[c], a[c], m[c], s[c], t[c]
                    xr, gr, o = x[i, c, j0:j1], g[i, c, j0:j1], gx[i, c, j0:j1]
                    if not relu:
                        for j in range(j1 - j0):
                            o[j] = gr[j] * ac + ((xr[j] - h) * kc + bc)
                    elif slope != 0:
                        for j in range(j1 - j0):
                            y = np.float32((np.float64(xr[j]) - mc) * sc + tc)
                            o[j] = gr[j] * (one if y > 0 else ks) * ac + ((xr[j] - h) * kc + bc)
                    else:
                        for j in range(j1 - j0):
                            y = np.float32((np.float64(xr[j]) - mc) * sc + tc)
                            o[j] = (gr[j] if y > 0 else zero) * ac + ((xr[j] - h) * kc + bc)

    # ------------------------------------- the affine step: y = x w + b per channel
    def affine_rows(x, w, b, scaled, shifted, y, bounds):
        for p in prange(bounds.shape[0]):
            r0, r1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            wp, bp = w[c0:c1], b[c0:c1]
            for i in range(r0, r1):
                xr, yr = x[i, c0:c1], y[i, c0:c1]
                if scaled and shifted:
                    for c in range(c1 - c0):
                        yr[c] = xr[c] * wp[c] + bp[c]
                elif scaled:
                    for c in range(c1 - c0):
                        yr[c] = xr[c] * wp[c]
                else:
                    for c in range(c1 - c0):
                        yr[c] = xr[c] + bp[c]

    def affine_ncs(x, w, b, scaled, shifted, y, bounds):
        for p in prange(bounds.shape[0]):
            i0, i1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            j0, j1 = bounds[p, 4], bounds[p, 5]
            for i in range(i0, i1):
                for c in range(c0, c1):
                    wc, bc = w[c], b[c]
                    xr, yr = x[i, c, j0:j1], y[i, c, j0:j1]
                    if scaled and shifted:
                        for j in range(j1 - j0):
                            yr[j] = xr[j] * wc + bc
                    elif scaled:
                        for j in range(j1 - j0):
                            yr[j] = xr[j] * wc
                    else:
                        for j in range(j1 - j0):
                            yr[j] = xr[j] + bc

    def affine_grad_rows(g, x, gx, w, scaled, need_x, bounds, out):  # out[p]: sum g x, sum g
        for p in prange(bounds.shape[0]):
            r0, r1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            n = c1 - c0
            gw, gb, wp = out[p, 0, :n], out[p, 1, :n], w[c0:c1]
            gw[:] = 0.0
            gb[:] = 0.0
            for i in range(r0, r1):
                xr, gr, o = x[i, c0:c1], g[i, c0:c1], gx[i, c0:c1]
                for c in range(n):
                    gw[c] += np.float64(gr[c]) * np.float64(xr[c])
                    gb[c] += gr[c]
                if need_x:
                    if scaled:
                        for c in range(n):
                            o[c] = gr[c] * wp[c]
                    else:
                        o[:] = gr

    def affine_grad_ncs(g, x, gx, w, scaled, need_x, bounds, out):  # out[p] (2, W)
        for p in prange(bounds.shape[0]):
            i0, i1, c0, c1 = bounds[p, 0], bounds[p, 1], bounds[p, 2], bounds[p, 3]
            j0, j1 = bounds[p, 4], bounds[p, 5]
            for c in range(c0, c1):
                wc = w[c]
                gw = gb = 0.0
                for i in range(i0, i1):
                    xr, gr, o = x[i, c, j0:j1], g[i, c, j0:j1], gx[i, c, j0:j1]
                    for j in range(j1 - j0):
                        gw += np.float64(gr[j]) * np.float64(xr[j])
                        gb += gr[j]
                    if need_x:
                        if scaled:
                            for j in range(j1 - j0):
                                o[j] = gr[j] * wc
                        else:
                            o[:] = gr
                out[p, 0, c - c0] = gw
                out[p, 1, c - c0] = gb

    # ------------------------------ the chunks' sums combined, in chunk order (serial)
    def combine_moments(out, bounds, n, mean, var):
        # out[p] (3, A, W): origin m, s1 = sum (x - m), s2 = sum (x - m)^2 of each of the
        # chunk's A rows of k elements (A = 1 for a rows chunk); bounds[p, 2:4] its channels
        # and k from bounds[p, 0:2] (rows) or bounds[p, 4:6] (ncs).  mean = sum (k m + s1) / n;
        # var = sum (s2 + 2 (m - mean) s1 + k (m - mean)^2) / n (Chan et al.), samples in
        # order within a chunk, chunks in order
        mean[:] = 0.0
        var[:] = 0.0
        ncs = bounds.shape[1] == 6
        for p in range(bounds.shape[0]):
            c0, c1 = bounds[p, 2], bounds[p, 3]
            a = bounds[p, 1] - bounds[p, 0] if ncs else 1
            k = bounds[p, 5] - bounds[p, 4] if ncs else bounds[p, 1] - bounds[p, 0]
            for c in range(c1 - c0):
                acc = k * out[p, 0, 0, c] + out[p, 1, 0, c]
                for i in range(1, a):
                    acc += k * out[p, 0, i, c] + out[p, 1, i, c]
                mean[c0 + c] += acc
        for c in range(mean.shape[0]):
            mean[c] = mean[c] / n
        for p in range(bounds.shape[0]):
            c0, c1 = bounds[p, 2], bounds[p, 3]
            a = bounds[p, 1] - bounds[p, 0] if ncs else 1
            k = bounds[p, 5] - bounds[p, 4] if ncs else bounds[p, 1] - bounds[p, 0]
            for c in range(c1 - c0):
                dm = out[p, 0, 0, c] - mean[c0 + c]
                acc = out[p, 2, 0, c] + 2 * dm * out[p, 1, 0, c] + k * dm * dm
                for i in range(1, a):
                    dm = out[p, 0, i, c] - mean[c0 + c]
                    acc += out[p, 2, i, c] + 2 * dm * out[p, 1, i, c] + k * dm * dm
                var[c0 + c] += acc
        for c in range(var.shape[0]):
            var[c] = var[c] / n

    def backward_coefficients(out, bounds, inv, lo, w, n, gw, gb, k, b, a):
        # the backward's sums (out[p] (2, W): sum g, sum g (x - hi) of chunk p's channels)
        # added in chunk order, then, per channel, in float64 and rounded once to float32:
        # gw = inv (gd - lo gb), a = inv w, k = -a gw / n, and the second pass's
        # gx = a g + k (x - hi) + b with k scaled by inv, b = -a gb / n - k inv lo
        total = np.zeros((2, inv.shape[0]))
        for p in range(bounds.shape[0]):
            c0, c1 = bounds[p, 2], bounds[p, 3]
            for s in range(2):
                for c in range(c1 - c0):
                    total[s, c0 + c] += out[p, s, c]
        for c in range(inv.shape[0]):
            sb, sd, iv = total[0, c], total[1, c], inv[c]
            g_w = iv * (sd - lo[c] * sb)
            av = iv * np.float64(w[c])
            kv = -av * g_w / n
            b[c] = np.float32(-av * sb / n - kv * iv * lo[c])
            k[c] = np.float32(kv * iv)
            a[c] = np.float32(av)
            gw[c] = np.float32(g_w)
            gb[c] = np.float32(sb)

    serial = numba.njit(nogil=True, cache=True)
    passes["combine_moments"] = serial(combine_moments)
    passes["backward_coefficients"] = serial(backward_coefficients)

    for fn, wrap in ((forward_rows, plain), (moments_rows, plain), (sums_rows, plain),
                     (grad_rows, plain), (forward_ncs, plain), (moments_ncs, summing),
                     (sums_ncs, summing), (grad_ncs, plain), (affine_rows, plain),
                     (affine_ncs, plain), (affine_grad_rows, plain),
                     (affine_grad_ncs, summing)):
        passes[fn.__name__] = wrap(fn)
    return passes
