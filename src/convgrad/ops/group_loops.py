"""Group normalisation's forward and backward as compiled functions (Numba, :mod:`.jit`),
one call each, in either layout.

An activation x (N, C, *) is viewed without a copy as an (N, L) float32 array: ``nsc``,
channels-last memory (each sample's S positions of C channels), or ``ncs``, C-contiguous
memory (each sample's C rows of S).  Each function runs its passes over fixed tasks, a
block of ``r`` positions of one sample (``nsc``: all its channels; ``ncs``: one
channel), in ``prange`` loops on OpenMP's threads, with the per-group arithmetic between
them serial in the same call (one call from Python instead of a dozen NumPy steps: at
the sizes of a U-Net's layers that overhead was as long as the passes).  Where Numba's
threading layer is its work queue the functions are compiled serial.  A task writes its
results to its own row of (N, B, C) float64 arrays, combined in a fixed order: nothing
depends on the thread count.

Sums are float64.  A block's moments: ``ncs``, two passes while the row is in cache (its
mean, then the squared deviations); ``nsc``, one pass shifted by the block's first row
(the cancellation in ``sum d^2 - (sum d)^2 / k`` is at most ``k``, the shift being a
sample; float64 keeps it), each tile's terms first summed in float32 for at most
:data:`FLUSH` tiles.  Blocks and channels combine per group by Chan et al.'s update.
``nsc`` loops run along tiles of ``tile`` whole rows, one contiguous run, with
per-position accumulators and coefficients repeated along the tile, so they vectorise
(looping per row over C channels ran 2-3x slower).  ``ncs`` outputs are computed in
float64 and rounded to float32 once; ``nsc`` ones in float32, as ``(x - m_hi) a + b'``
with the mean split into float32 ``m_hi`` and a float64 residual folded into ``b'``
(torch's ``x a + b`` loses the mean's rounding; the float64 form ran at half the
width): the backward's gx likewise, and its sum of ``g (x - m)`` as ``g (x - m_hi)``
less the residual times ``sum g``.  A fused activation acts on the rounded y, as the
separate one would, and its backward on g: a (leaky) ReLU by selects and a product by 1
or the slope, SiLU by a product with its derivative kept by the forward (``exp`` a
polynomial whose powers of 2 are built as bits so the loop vectorises: Numba's ``exp``
is a scalar call without Intel's SVML); written out in each pass and layout (a compiled
helper in their closure would change Numba's cache key every process).
"""

from __future__ import annotations

import numpy as np

from . import jit

__all__ = ["ACTIVATIONS", "loops"]

#: the fused activation's code (the loops' ``act``): 0 none, 1 a (leaky) ReLU, 2 SiLU
ACTIVATIONS = {None: 0, "relu": 1, "silu": 2}
_F = np.float32
# SiLU's exp(u): u clamped to [E_LO, E_HI] (exp overflows past 88.7; below -80, 1 +
# exp(u) is 1 in float32 as at -inf); k = round(u / ln 2) then stays in [-115, 128] and
# exp(u) = (4 p(q)) 2^(k-2), 2^(k-2) normal, the one product exact up to its overflow;
# ln 2 = LN2_HI + LN2_LO, LN2_HI exact in 9 bits so k LN2_HI is exact; E0-E5 Cephes' expf
# polynomial: exp(q) = 1 + q + q^2 (((((E0 q + E1) q + E2) q + E3) q + E4) q + E5) on
# |q| <= ln 2 / 2, q = u - k ln 2
E_HI, E_LO = _F(89.0), _F(-80.0)
LOG2E, LN2_HI, LN2_LO = _F(1.44269504088896341), _F(0.693359375), _F(-2.12194440e-4)
E0, E1, E2 = _F(1.9875691500e-4), _F(1.3981999507e-3), _F(8.3334519073e-3)
E3, E4, E5 = _F(4.1665795894e-2), _F(1.6666665459e-1), _F(5.0000001201e-1)
#: tiles whose float32 partial sums (shifted x and its square; g and g (x - m)) run
#: before they join the float64 sums: each partial adds at most this many terms, so its
#: rounding stays near float32's unit (float64 along the loops ran at half the width)
FLUSH = 8


def _compile(numba) -> dict:
    """``{"forward": ..., "backward": ...}`` compiled (``parallel``: on Numba's threads): what
    ``loops()`` returns (None without Numba)."""
    parallel = jit.thread_safe()
    prange = numba.prange if parallel else range
    # reassociation lets the float64 row sums vectorise; every value it touches is float64
    # computed from float32 inputs and rounded to float32 once, so it moves no result;
    # contraction makes each multiply-add one fused, singly rounded instruction (SiLU's
    # exp polynomial: its fused forward 1.2x faster)
    compiled = numba.njit(nogil=True, cache=True, parallel=parallel,
                          fastmath={"reassoc", "contract"})

    def forward(x, nsc, c_len, groups, tile, r, w, b, eps, act, slope, y, mean, var, keep):
        """y = (x - m) s w + b, then the activation ``act`` (:data:`ACTIVATIONS`): 1, the
        (leaky) ReLU of float32 ``slope``, ``keep`` (x's shape, uint8) set where it passes
        y (and its gradient) unscaled; 2, SiLU, ``keep`` (float32) its derivative; mean,
        var (N, G) out; w, b (C,) float64."""
        n_len, s_len = x.shape[0], x.shape[1] // c_len
        b_len = (s_len + r - 1) // r
        tasks = n_len * b_len * (1 if nsc else c_len)
        ln = tile * c_len
        zero, one, half, four = np.float32(0), np.float32(1), np.float32(0.5), np.float32(4)
        pm, pq = np.empty((n_len, b_len, c_len)), np.empty((n_len, b_len, c_len))
        for t in prange(tasks):  # each block's mean and sum of squared deviations
            if nsc:
                n, bb = t // b_len, t % b_len
                s0, s1 = bb * r, min(s_len, bb * r + r)
                xr = x[n]
                k, a1, a2 = np.empty(ln), np.zeros(ln), np.zeros(ln)
                k32 = np.empty(ln, np.float32)
                f1, f2 = np.zeros(ln, np.float32), np.zeros(ln, np.float32)
                for j in range(ln):
                    k32[j] = xr[s0 * c_len + j % c_len]
                    k[j] = k32[j]
                full = (s1 - s0) // tile
                for u in range(full):
                    seg = xr[(s0 + u * tile) * c_len:(s0 + u * tile + tile) * c_len]
                    for j in range(ln):
                        d = seg[j] - k32[j]
                        f1[j] += d
                        f2[j] += d * d
                    if u % FLUSH == FLUSH - 1 or u == full - 1:
                        for j in range(ln):
                            a1[j] += f1[j]
                            a2[j] += f2[j]
                            f1[j] = 0
                            f2[j] = 0
                for s in range(s0 + full * tile, s1):
                    seg = xr[s * c_len:(s + 1) * c_len]
                    for j in range(c_len):
                        d = np.float64(seg[j]) - k[j]
                        a1[j] += d
                        a2[j] += d * d
                cnt = s1 - s0
                for c in range(c_len):
                    v1 = v2 = 0.0
                    for i in range(tile):
                        v1 += a1[i * c_len + c]
                        v2 += a2[i * c_len + c]
                    pm[n, bb, c] = k[c] + v1 / cnt
                    pq[n, bb, c] = max(v2 - v1 * v1 / cnt, 0.0)
            else:
                n, c, bb = t // (c_len * b_len), (t // b_len) % c_len, t % b_len
                xr = x[n, c * s_len + bb * r:c * s_len + min(s_len, bb * r + r)]
                m = 0.0
                for j in range(xr.shape[0]):
                    m += xr[j]
                m /= xr.shape[0]
                q = 0.0
                for j in range(xr.shape[0]):
                    d = np.float64(xr[j]) - m
                    q += d * d
                pm[n, bb, c] = m
                pq[n, bb, c] = q
        # per group: Chan et al.'s combination of its blocks and channels
        cg = c_len // groups
        count = s_len * cg
        mc, sc = np.empty((n_len, c_len)), np.empty((n_len, c_len))
        for n in range(n_len):
            for gi in range(groups):
                tot = 0.0
                for bb in range(b_len):
                    kb = min(s_len, bb * r + r) - bb * r
                    for c in range(gi * cg, gi * cg + cg):
                        tot += kb * pm[n, bb, c]
                m = tot / count
                sq = 0.0
                for bb in range(b_len):
                    kb = min(s_len, bb * r + r) - bb * r
                    for c in range(gi * cg, gi * cg + cg):
                        d = pm[n, bb, c] - m
                        sq += pq[n, bb, c] + kb * d * d
                v = max(sq / count, 0.0)
                mean[n, gi], var[n, gi] = m, v
                inv = 1.0 / np.sqrt(v + eps)
                for c in range(gi * cg, gi * cg + cg):
                    mc[n, c], sc[n, c] = m, inv * w[c]
        # the coefficients repeated along a tile (what nsc's loops read)
        mt = np.empty((n_len, ln), np.float32)
        st = np.empty((n_len, ln), np.float32)
        ht = np.empty((n_len, ln), np.float32)
        for n in range(n_len):
            for j in range(ln):
                c = j % c_len
                hi = np.float32(mc[n, c])
                mt[n, j], st[n, j] = hi, np.float32(sc[n, c])
                ht[n, j] = np.float32(b[c] - (mc[n, c] - np.float64(hi)) * sc[n, c])
        for t in prange(tasks):
            if nsc:
                n, bb = t // b_len, t % b_len
                lo, hi, step = bb * r * c_len, min(s_len, bb * r + r) * c_len, ln
                m = s_ = h = 0.0
            else:
                n, c, bb = t // (c_len * b_len), (t // b_len) % c_len, t % b_len
                lo = c * s_len + bb * r
                hi = c * s_len + min(s_len, bb * r + r)
                step = hi - lo
                m, s_, h = mc[n, c], sc[n, c], b[c]
            xr, yr, mn, scn, shn = x[n], y[n], mt[n], st[n], ht[n]
            if act == 2:  # SiLU's scratch: exp's polynomial, its power of 2 as bits
                ep, eb = np.empty(step, np.float32), np.empty(step, np.int32)
                ef = eb.view(np.float32)
            for o in range(lo, hi, step):
                e = min(o + step, hi)
                xs, ys = xr[o:e], yr[o:e]
                if nsc:
                    for j in range(xs.shape[0]):
                        ys[j] = (xs[j] - mn[j]) * scn[j] + shn[j]
                else:
                    for j in range(xs.shape[0]):
                        ys[j] = np.float32((np.float64(xs[j]) - m) * s_ + h)
                if act == 1:
                    ks = keep[n, o:e]
                    for j in range(ys.shape[0]):
                        v = ys[j]
                        # leaky: v > 0 (NaN scaled, stays NaN); ReLU: not v <= 0 (NaN kept)
                        k = v > 0 if slope > 0 else not v <= 0
                        ks[j] = k
                        ys[j] = v if k else (v * slope if slope > 0 else zero)
                elif act == 2:
                    # y = z s, s = 1 / (1 + exp(-z)), in float32; keep = its derivative
                    # s (1 + z (1 - s)).  One division (torch's z / (1 + exp(-z)) is a
                    # second, the pass's costliest instruction; y's error 0.44 ulp mean,
                    # 2.2 at most, against its 0.38 and 1.9 over z in [-12, 12]).  exp(u)
                    # = 4 p(q) 2^(k-2) (the constants' comment), u = -z clamped (NaN to
                    # E_HI: its y is NaN 0 = NaN), so the loops vectorise
                    ks = keep[n, o:e]
                    for j in range(ys.shape[0]):
                        u = -ys[j]
                        u = u if u < E_HI else E_HI
                        u = u if u > E_LO else E_LO
                        kf = np.floor(u * LOG2E + half)
                        q = (u - kf * LN2_HI) - kf * LN2_LO
                        p = E0
                        p = p * q + E1
                        p = p * q + E2
                        p = p * q + E3
                        p = p * q + E4
                        p = p * q + E5
                        ep[j] = (p * (q * q) + q + one) * four
                        eb[j] = (np.int32(kf) + 125) << 23
                    for j in range(ys.shape[0]):
                        v = ys[j]
                        d = one + ep[j] * ef[j]
                        sg = one / d
                        ks[j] = sg * (one + v * (one - sg))
                        ys[j] = v * sg

    def backward(g, x, nsc, c_len, groups, tile, r, mean, var, w, eps, act, slope, keep,
                 need_x, gx, gw, gb):
        """gx = s (g w - mean(g w) - xh mean(g w xh)) over each group, xh = (x - m) s;
        gw = sum g xh, gb = sum g per channel (float64 out).  With an activation, g is
        first taken to its input: ``act`` 1, as it is where the forward's ``keep`` is set,
        else times ``slope`` (a ReLU: 0); 2, times ``keep``."""
        n_len, s_len = x.shape[0], x.shape[1] // c_len
        b_len = (s_len + r - 1) // r
        tasks = n_len * b_len * (1 if nsc else c_len)
        ln = tile * c_len
        cg = c_len // groups
        one, zero = np.float32(1), np.float32(0)  # g * 1 is g, bit for bit
        mc = np.empty((n_len, c_len))
        mh = np.empty((n_len, c_len), np.float32)  # the mean rounded, and its residual
        ml = np.empty((n_len, c_len))
        for n in range(n_len):
            for c in range(c_len):
                mc[n, c] = mean[n, c // cg]
                mh[n, c] = np.float32(mc[n, c])
                ml[n, c] = mc[n, c] - np.float64(mh[n, c])
        pa, pb = np.empty((n_len, b_len, c_len)), np.empty((n_len, b_len, c_len))
        for t in prange(tasks):  # sum g and sum g (x - m) of each block
            if nsc:
                n, bb = t // b_len, t % b_len
                lo, hi = bb * r * c_len, min(s_len, bb * r + r) * c_len
                xr, gr = x[n], g[n]
                mt, a1, a2 = np.empty(ln, np.float32), np.zeros(ln), np.zeros(ln)
                f1, f2 = np.zeros(ln, np.float32), np.zeros(ln, np.float32)
                gm = np.empty(ln, np.float32)
                for j in range(ln):
                    mt[j] = mh[n, j % c_len]
                u = 0
                for o in range(lo, hi, ln):
                    xs, gs = xr[o:min(o + ln, hi)], gr[o:min(o + ln, hi)]
                    if act:  # g at the activation's input (selects: they vectorise)
                        ks = keep[n, o:min(o + ln, hi)]
                        if act == 2:
                            for j in range(xs.shape[0]):
                                gm[j] = gs[j] * ks[j]
                        elif slope > 0:
                            for j in range(xs.shape[0]):
                                gm[j] = gs[j] * (one if ks[j] else slope)
                        else:
                            for j in range(xs.shape[0]):
                                gm[j] = gs[j] if ks[j] else zero
                        gs = gm[:xs.shape[0]]
                    for j in range(xs.shape[0]):
                        f1[j] += gs[j]
                        f2[j] += gs[j] * (xs[j] - mt[j])
                    u += 1
                    if u % FLUSH == 0 or o + ln >= hi:
                        for j in range(ln):
                            a1[j] += f1[j]
                            a2[j] += f2[j]
                            f1[j] = 0
                            f2[j] = 0
                for c in range(c_len):
                    v1 = v2 = 0.0
                    for i in range(tile):
                        v1 += a1[i * c_len + c]
                        v2 += a2[i * c_len + c]
                    pa[n, bb, c], pb[n, bb, c] = v1, v2 - ml[n, c] * v1
            else:
                n, c, bb = t // (c_len * b_len), (t // b_len) % c_len, t % b_len
                lo = c * s_len + bb * r
                hi = c * s_len + min(s_len, bb * r + r)
                xs, gs, m = x[n, lo:hi], g[n, lo:hi], mc[n, c]
                if act:
                    ks, gm = keep[n, lo:hi], np.empty(hi - lo, np.float32)
                    if act == 2:
                        for j in range(xs.shape[0]):
                            gm[j] = gs[j] * ks[j]
                    elif slope > 0:
                        for j in range(xs.shape[0]):
                            gm[j] = gs[j] * (one if ks[j] else slope)
                    else:
                        for j in range(xs.shape[0]):
                            gm[j] = gs[j] if ks[j] else zero
                    gs = gm
                v1 = v2 = 0.0
                for j in range(xs.shape[0]):
                    v1 += gs[j]
                    v2 += np.float64(gs[j]) * (np.float64(xs[j]) - m)
                pa[n, bb, c], pb[n, bb, c] = v1, v2
        # per channel and group: gw, gb, and gx's coefficients a g + k (x - m) + d0
        count = s_len * cg
        ac, kc, dc = np.empty((n_len, c_len)), np.empty((n_len, c_len)), np.empty((n_len, c_len))
        gw[:] = 0.0
        gb[:] = 0.0
        for n in range(n_len):
            for gi in range(groups):
                inv = 1.0 / np.sqrt(var[n, gi] + eps)
                sgs = sgsxh = 0.0
                for c in range(gi * cg, gi * cg + cg):
                    sg = sgd = 0.0
                    for bb in range(b_len):
                        sg += pa[n, bb, c]
                        sgd += pb[n, bb, c]
                    gw[c] += inv * sgd
                    gb[c] += sg
                    sgs += w[c] * sg
                    sgsxh += w[c] * inv * sgd
                for c in range(gi * cg, gi * cg + cg):
                    ac[n, c] = inv * w[c]
                    kc[n, c] = -inv * inv * sgsxh / count
                    dc[n, c] = -inv * sgs / count
        if not need_x:
            return
        at, kt = np.empty((n_len, ln), np.float32), np.empty((n_len, ln), np.float32)
        dt, mt2 = np.empty((n_len, ln), np.float32), np.empty((n_len, ln), np.float32)
        for n in range(n_len):
            for j in range(ln):
                c = j % c_len
                at[n, j], kt[n, j], mt2[n, j] = ac[n, c], kc[n, c], mh[n, c]
                dt[n, j] = dc[n, c] - kc[n, c] * ml[n, c]
        for t in prange(tasks):
            if nsc:
                n, bb = t // b_len, t % b_len
                lo, hi = bb * r * c_len, min(s_len, bb * r + r) * c_len
                xr, gr, out = x[n], g[n], gx[n]
                an, kn, dn, mn = at[n], kt[n], dt[n], mt2[n]
                gm = np.empty(ln, np.float32)
                for o in range(lo, hi, ln):
                    e = min(o + ln, hi)
                    xs, gs, os_ = xr[o:e], gr[o:e], out[o:e]
                    if act:
                        ks = keep[n, o:e]
                        if act == 2:
                            for j in range(xs.shape[0]):
                                gm[j] = gs[j] * ks[j]
                        elif slope > 0:
                            for j in range(xs.shape[0]):
                                gm[j] = gs[j] * (one if ks[j] else slope)
                        else:
                            for j in range(xs.shape[0]):
                                gm[j] = gs[j] if ks[j] else zero
                        gs = gm[:e - o]
                    for j in range(xs.shape[0]):
                        os_[j] = an[j] * gs[j] + (kn[j] * (xs[j] - mn[j]) + dn[j])
            else:
                n, c, bb = t // (c_len * b_len), (t // b_len) % c_len, t % b_len
                lo = c * s_len + bb * r
                hi = c * s_len + min(s_len, bb * r + r)
                xs, gs, os_ = x[n, lo:hi], g[n, lo:hi], gx[n, lo:hi]
                a_, k_, d_, m = ac[n, c], kc[n, c], dc[n, c], mc[n, c]
                if act:
                    ks, gm = keep[n, lo:hi], np.empty(hi - lo, np.float32)
                    if act == 2:
                        for j in range(xs.shape[0]):
                            gm[j] = gs[j] * ks[j]
                    elif slope > 0:
                        for j in range(xs.shape[0]):
                            gm[j] = gs[j] * (one if ks[j] else slope)
                    else:
                        for j in range(xs.shape[0]):
                            gm[j] = gs[j] if ks[j] else zero
                    gs = gm
                for j in range(xs.shape[0]):
                    os_[j] = np.float32(a_ * gs[j] + (k_ * (np.float64(xs[j]) - m) + d_))

    return {"forward": compiled(forward), "backward": compiled(backward), "parallel": parallel}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)
