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
and logarithms are not here: NumPy's vector ``exp`` and ``log`` run them
(:mod:`.softmax`); Numba calls the C library's scalar ones, 3-4x slower here.

* ``max_shift``: ``out = x - max_C x`` (a NaN anywhere along the axis is the maximum:
  the slice becomes NaN, as the NumPy reference);
* ``sums`` / ``dot_sums``: ``s = sum_C a`` / ``sum_C a b``, added in float64;
* ``minus`` / ``divide``: ``out = a - s`` / ``a / s``, worked out in float64 and rounded
  once;
* ``minus_scaled``: ``out = g - e s`` (log-softmax's gradient, ``e = exp(y)``);
* ``times_minus``: ``out = y (g - s)`` (softmax's gradient, ``s = sum g y``).

NumPy's reductions over a short axis that is the innermost of memory run an inner loop
of ``C`` elements per position: the maximum over the 3 classes of a channels-last
(2, 3, 64, 64, 64) took 19 ms, a whole log-softmax 28 ms (torch: 1.4 ms).
"""

from __future__ import annotations

import numpy as np

from . import jit

__all__ = ["loops"]


def _compile(numba) -> dict:
    """The loops of the module docstring by name, compiled: what ``loops()`` returns
    (None without Numba)."""
    parallel = jit.thread_safe()
    prange = numba.prange if parallel else range
    njit = numba.njit(nogil=True, cache=True, parallel=parallel)

    # rows: (positions, C) with the axis contiguous (inner == 1)
    @njit
    def max_shift_rows(x, m, out):
        for p in prange(x.shape[0]):
            v = x[p, 0]
            for c in range(1, x.shape[1]):
                u = x[p, c]
                v = u if (u > v or u != u) else v
            m[p] = v
            for c in range(x.shape[1]):
                out[p, c] = x[p, c] - v

    @njit
    def sums_rows(a, s):
        for p in prange(a.shape[0]):
            t = 0.0
            for c in range(a.shape[1]):
                t += a[p, c]
            s[p] = t

    @njit
    def dot_sums_rows(a, b, s):
        for p in prange(a.shape[0]):
            t = 0.0
            for c in range(a.shape[1]):
                t += np.float64(a[p, c]) * b[p, c]
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
        ("times_minus", times_minus_rows, times_minus))}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)
