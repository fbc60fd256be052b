"""The passes along a softmax axis, as compiled loops (Numba, :mod:`.jit`).

Each loop sees a dense array as ``(outer, C, inner)``: ``C`` the softmax axis, ``inner``
the elements that lie inside one of its steps in memory (1 for channels-last activations
and for a classifier's logits, H*W for NCHW), and a per-position array ``s`` as
``(outer, inner)``.  Each loop has two forms, ``(rows, blocks)``: where ``inner`` is 1
the rows form takes ``(outer, C)`` and ``(outer,)`` views and runs along each row; else
the blocks form runs along ``inner``, contiguous in memory.  Both are a ``prange`` over
``outer``.  One loop body serving both cases ran 3.5x slower on rows, and the blocks
form run on rows 2-5x slower than the rows form ((524288, 3) channels-last logits:
``minus_scaled`` 2.9 against 1.1 ms; (256, 1000): 0.10 against 0.03 ms).  The exponentials
and logarithms are mostly not here: NumPy's vector ``exp`` and ``log`` run them
(:mod:`.softmax`); Numba calls the C library's scalar ones, 3-4x slower here.  The one
exceptions, ``exp_sums``, ``minus_scaled_exp`` and ``softmax`` (along rows: a
log-softmax's sum of exponentials and its gradient, none kept, and a whole softmax),
build exp from group norm's polynomial, which vectorises.

* ``max_shift``: ``out = x - max_C x`` (a NaN anywhere along the axis makes the slice's
  softmax NaN, as the NumPy reference: through the maximum along other axes, through
  the sum of exponentials along rows);
* ``sums`` / ``dot_sums``: ``s = sum_C a`` / ``sum_C a b``, added in float64;
* ``minus`` / ``divide``: ``out = a - s`` / ``a / s``, worked out in float64 and rounded
  once;
* ``minus_scaled``: ``out = g - e s`` (log-softmax's gradient, ``e = exp(y)``);
* ``times_minus``: ``out = y (g - s)`` (softmax's gradient, ``s = sum g y``);
* ``exp_sums`` (rows only): ``s = sum_C exp(z)`` of ``z = x - max``;
* ``minus_scaled_exp`` (rows only): ``out = g - exp(y) s``;
* ``softmax`` (rows only): the whole softmax of each row, one pass per row in cache.

NumPy's reductions over a short axis that is the innermost of memory run an inner loop
of ``C`` elements per position: the maximum over the 3 classes of a channels-last
(2, 3, 64, 64, 64) took 19 ms, a whole log-softmax 28 ms (torch: 1.4 ms).
"""

from __future__ import annotations

import numpy as np

from . import jit
from .group_loops import E0, E1, E2, E3, E4, E5, E_LO, LN2_HI, LN2_LO, LOG2E

__all__ = ["LANES", "ROW_BLOCK", "loops"]

#: running values a row reduction keeps (one per position of a run of this many)
LANES = 16
#: rows of one task of the row loops (each task allocates its scratch once: per row, the
#: allocations cost more than a 128-element row's passes)
ROW_BLOCK = 64


def _compile(numba) -> dict:
    """The loops of the module docstring by name, compiled: what ``loops()`` returns
    (None without Numba)."""
    parallel = jit.thread_safe()
    prange = numba.prange if parallel else range
    njit = numba.njit(nogil=True, cache=True, parallel=parallel)

    # rows: (positions, C) with the axis contiguous (inner == 1).  The reductions along
    # a row keep LANES running values (maxima; float64 partial sums), one per position
    # in a run of LANES: an elementwise loop over the run vectorises, where one running
    # value is a serial chain (a (350, 33278) log-softmax's maximum and sum took 15 and 9
    # ms so, torch's whole log-softmax 7).  A NaN on the row is not this maximum (u > v
    # is false for it), but its z is NaN, and so are the row's sum of exponentials and
    # with it every output of the row, as along the other axes
    @njit
    def max_shift_rows(x, m, out):
        k = x.shape[1]
        full = k - k % LANES
        rows = x.shape[0]
        for blk in prange((rows + ROW_BLOCK - 1) // ROW_BLOCK):
            best = np.empty(LANES, x.dtype)
            for p in range(blk * ROW_BLOCK, min(rows, blk * ROW_BLOCK + ROW_BLOCK)):
                row = x[p]
                v = row[0]
                if k < 2 * LANES:  # a short row (a segmentation's few classes): one pass
                    for c in range(1, k):
                        u = row[c]
                        v = u if u > v else v
                else:
                    for j in range(LANES):
                        best[j] = v
                    for c in range(0, full, LANES):
                        run = row[c:c + LANES]
                        for j in range(LANES):
                            u = run[j]
                            best[j] = u if u > best[j] else best[j]
                    for j in range(LANES):
                        v = best[j] if best[j] > v else v
                    for c in range(full, k):
                        u = row[c]
                        v = u if u > v else v
                m[p] = v
                orow = out[p]
                for c in range(k):
                    orow[c] = row[c] - v

    @njit
    def exp_sums_rows(z, s):
        """s[p] = sum exp(z[p]) of rows z <= 0 (x less its maximum): exp(u) as group
        norm's SiLU builds it (:mod:`.group_loops`' constants: Cephes' polynomial, the
        power of 2 as bits; 0 below E_LO, where exp is under 2e-35, as exp(-inf)), so
        the loop vectorises; no array of them is written (a
        (350, 33278) log-softmax: 36 ms with NumPy's exp into a full-size array, 12 so;
        torch 13)."""
        k = z.shape[1]
        full = k - k % LANES
        half, one, four, zero = np.float32(0.5), np.float32(1), np.float32(4), np.float32(0)
        rows = z.shape[0]
        for blk in prange((rows + ROW_BLOCK - 1) // ROW_BLOCK):
            part = np.empty(LANES)
            ep = np.empty(LANES, np.float32)
            eb = np.empty(LANES, np.int32)
            ef = eb.view(np.float32)
            for p in range(blk * ROW_BLOCK, min(rows, blk * ROW_BLOCK + ROW_BLOCK)):
                row = z[p]
                for j in range(LANES):
                    part[j] = 0.0
                for c in range(0, full + LANES, LANES):
                    n = min(LANES, k - c)
                    if n <= 0:
                        break
                    run = row[c:c + n]
                    for j in range(n):
                        u = run[j]
                        low = u < E_LO  # exp 0 there, as of -inf
                        u = E_LO if low else u  # (a NaN stays: so does the row's sum)
                        kf = np.floor(u * LOG2E + half)
                        q = (u - kf * LN2_HI) - kf * LN2_LO
                        e = E0
                        e = e * q + E1
                        e = e * q + E2
                        e = e * q + E3
                        e = e * q + E4
                        e = e * q + E5
                        ep[j] = zero if low else (e * (q * q) + q + one) * four
                        eb[j] = (np.int32(kf) + 125) << 23
                    for j in range(n):
                        part[j] += ep[j] * ef[j]
                t = 0.0
                for j in range(LANES):
                    t += part[j]
                s[p] = t

    @njit
    def softmax_rows(x, out):
        """out = exp(x - max) / sum exp(x - max) along each row, one task's rows at a
        time while they are in cache: the maximum as max_shift_rows finds it, exp as
        exp_sums_rows builds it (along the whole row, into out and a row of the powers
        of 2 as bits), the sum with LANES float64 running values, then each output scaled
        by the float64 reciprocal of the sum and rounded once (a (256, 128, 128)
        attention's softmax: 5.3 ms as NumPy's exp and three loops, torch 1.4)."""
        k = x.shape[1]
        full = k - k % LANES
        half, one, four, zero = np.float32(0.5), np.float32(1), np.float32(4), np.float32(0)
        rows = x.shape[0]
        for blk in prange((rows + ROW_BLOCK - 1) // ROW_BLOCK):
            best = np.empty(LANES, x.dtype)
            part = np.empty(LANES)
            eb = np.empty(k, np.int32)
            ef = eb.view(np.float32)
            for p in range(blk * ROW_BLOCK, min(rows, blk * ROW_BLOCK + ROW_BLOCK)):
                row, orow = x[p], out[p]
                for j in range(LANES):
                    best[j] = row[0]
                for c in range(0, full, LANES):
                    run = row[c:c + LANES]
                    for j in range(LANES):
                        u = run[j]
                        best[j] = u if u > best[j] else best[j]
                v = best[0]
                for j in range(LANES):
                    v = best[j] if best[j] > v else v
                for c in range(full, k):
                    u = row[c]
                    v = u if u > v else v
                for c in range(k):
                    u = row[c] - v
                    low = u < E_LO  # exp 0 there, as of -inf (a masked score)
                    u = E_LO if low else u  # (a NaN stays: so does the sum)
                    kf = np.floor(u * LOG2E + half)
                    q = (u - kf * LN2_HI) - kf * LN2_LO
                    e = E0
                    e = e * q + E1
                    e = e * q + E2
                    e = e * q + E3
                    e = e * q + E4
                    e = e * q + E5
                    orow[c] = zero if low else (e * (q * q) + q + one) * four
                    eb[c] = (np.int32(kf) + 125) << 23
                for c in range(k):
                    orow[c] = orow[c] * ef[c]
                for j in range(LANES):
                    part[j] = 0.0
                for c in range(0, full, LANES):
                    run = orow[c:c + LANES]
                    for j in range(LANES):
                        part[j] += run[j]
                t = 0.0
                for j in range(LANES):
                    t += part[j]
                for c in range(full, k):
                    t += orow[c]
                r = 1.0 / t
                for c in range(k):
                    orow[c] = np.float64(orow[c]) * r

    @njit
    def minus_scaled_exp_rows(g, y, s, out):
        """out = g - exp(y) s along rows (log-softmax's gradient from its output y), exp
        as :func:`exp_sums_rows` builds it, 0 below E_LO (a -inf log-probability's
        softmax is 0), so no array of exponentials is written."""
        k = y.shape[1]
        half, one, four, zero = np.float32(0.5), np.float32(1), np.float32(4), np.float32(0)
        rows = y.shape[0]
        for blk in prange((rows + ROW_BLOCK - 1) // ROW_BLOCK):
            ep = np.empty(LANES, np.float32)
            eb = np.empty(LANES, np.int32)
            ef = eb.view(np.float32)
            for p in range(blk * ROW_BLOCK, min(rows, blk * ROW_BLOCK + ROW_BLOCK)):
                gr, yr, orow, sp = g[p], y[p], out[p], s[p]
                for c in range(0, k, LANES):
                    n = min(LANES, k - c)
                    run = yr[c:c + n]
                    for j in range(n):
                        u = run[j]
                        low = u < E_LO
                        u = E_LO if low else u  # (a NaN stays)
                        kf = np.floor(u * LOG2E + half)
                        q = (u - kf * LN2_HI) - kf * LN2_LO
                        e = E0
                        e = e * q + E1
                        e = e * q + E2
                        e = e * q + E3
                        e = e * q + E4
                        e = e * q + E5
                        ep[j] = zero if low else (e * (q * q) + q + one) * four
                        eb[j] = (np.int32(kf) + 125) << 23
                    gs, os_ = gr[c:c + n], orow[c:c + n]
                    for j in range(n):
                        os_[j] = gs[j] - np.float64(ep[j] * ef[j]) * sp

    # float64 sums of whole rows, reassociated so that they vectorise: every term is a
    # float32 value (or the float64 product of two) and only float64 additions move,
    # so the sum changes by float64 roundings alone (as group norm's sums; the 16
    # running values by runs of a row cost a slice per run, as much as a short row)
    sum_njit = numba.njit(nogil=True, cache=True, parallel=parallel,
                          fastmath={"reassoc"})

    @sum_njit
    def sums_rows(a, s):
        rows = a.shape[0]
        for blk in prange((rows + ROW_BLOCK - 1) // ROW_BLOCK):
            for p in range(blk * ROW_BLOCK, min(rows, blk * ROW_BLOCK + ROW_BLOCK)):
                row = a[p]
                t = 0.0
                for c in range(row.shape[0]):
                    t += row[c]
                s[p] = t

    @sum_njit
    def dot_sums_rows(a, b, s):
        rows = a.shape[0]
        for blk in prange((rows + ROW_BLOCK - 1) // ROW_BLOCK):
            for p in range(blk * ROW_BLOCK, min(rows, blk * ROW_BLOCK + ROW_BLOCK)):
                ra, rb = a[p], b[p]
                t = 0.0
                for c in range(ra.shape[0]):
                    t += np.float64(ra[c]) * rb[c]
                s[p] = t

    @njit
    def minus_rows(a, s, out):
        for p in prange(a.shape[0]):
            for c in range(a.shape[1]):
                out[p, c] = np.float64(a[p, c]) - s[p]

    @njit
    def divide_rows(a, s, out):
        for p in prange(a.shape[0]):
            for c in range(a.shape[1]):
                out[p, c] = np.float64(a[p, c]) / s[p]

    @njit
    def minus_scaled_rows(g, e, s, out):
        for p in prange(g.shape[0]):
            for c in range(g.shape[1]):
                out[p, c] = g[p, c] - np.float64(e[p, c]) * s[p]

    @njit
    def times_minus_rows(y, g, s, out):
        for p in prange(y.shape[0]):
            for c in range(y.shape[1]):
                out[p, c] = y[p, c] * (g[p, c] - s[p])

    # blocks: (outer, C, inner), inner > 1, each pass along inner
    @njit
    def max_shift(x, m, out):
        outer, k, inner = x.shape
        for o in prange(outer):
            for i in range(inner):
                m[o, i] = x[o, 0, i]
            for c in range(1, k):
                for i in range(inner):
                    v = x[o, c, i]
                    if v > m[o, i] or v != v:
                        m[o, i] = v
            for c in range(k):
                for i in range(inner):
                    out[o, c, i] = x[o, c, i] - m[o, i]

    @njit
    def sums(a, s):
        outer, k, inner = a.shape
        for o in prange(outer):
            for i in range(inner):
                s[o, i] = 0.0
            for c in range(k):
                for i in range(inner):
                    s[o, i] += a[o, c, i]

    @njit
    def dot_sums(a, b, s):
        outer, k, inner = a.shape
        for o in prange(outer):
            for i in range(inner):
                s[o, i] = 0.0
            for c in range(k):
                for i in range(inner):
                    s[o, i] += np.float64(a[o, c, i]) * b[o, c, i]

    @njit
    def minus(a, s, out):
        outer, k, inner = a.shape
        for o in prange(outer):
            for c in range(k):
                for i in range(inner):
                    out[o, c, i] = np.float64(a[o, c, i]) - s[o, i]

    @njit
    def divide(a, s, out):
        outer, k, inner = a.shape
        for o in prange(outer):
            for c in range(k):
                for i in range(inner):
                    out[o, c, i] = np.float64(a[o, c, i]) / s[o, i]

    @njit
    def minus_scaled(g, e, s, out):
        outer, k, inner = g.shape
        for o in prange(outer):
            for c in range(k):
                for i in range(inner):
                    out[o, c, i] = g[o, c, i] - np.float64(e[o, c, i]) * s[o, i]

    @njit
    def times_minus(y, g, s, out):
        outer, k, inner = y.shape
        for o in prange(outer):
            for c in range(k):
                for i in range(inner):
                    out[o, c, i] = y[o, c, i] * (g[o, c, i] - s[o, i])

    return {name: (rows, blocks) for name, rows, blocks in (
        ("max_shift", max_shift_rows, max_shift), ("sums", sums_rows, sums),
        ("dot_sums", dot_sums_rows, dot_sums), ("minus", minus_rows, minus),
        ("divide", divide_rows, divide), ("minus_scaled", minus_scaled_rows, minus_scaled),
        ("times_minus", times_minus_rows, times_minus),
        ("exp_sums", exp_sums_rows, None),
        ("minus_scaled_exp", minus_scaled_exp_rows, None),
        ("softmax", softmax_rows, None))}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)
