"""Resampling along one axis as compiled loops (Numba, :mod:`.jit`): the adjoint of linear
upsampling, and any per-axis map given by its taps.

An array is viewed, without a copy, as (A, L, B) in its memory order: ``A`` the dims
outside the axis, ``L`` the axis, ``B`` the contiguous dims inside it.  Each output
position ``o`` along the axis sends its gradient row ``g[a, o, :]`` to two source rows,
``i0[o]`` and ``i1[o]``, with weights ``w0[o]`` and ``w1[o]`` (float32: the products and
sums are the NumPy per-phase kernel's operations, in another order).  One pass over the
gradient instead of the NumPy kernel's five per phase; the outer rows in a ``prange``.

``taps`` is :func:`.resampling.axis_map`'s gather on the same (A, L, B) view: output row
``out[a, o, :] = sum_t w[o, t] x[a, index[o, t], :]``, the products and sums in the NumPy
taps' order and rounding (bit for bit), one pass over the output instead of NumPy's
four or five per tap; the (a, o) rows in a ``prange`` (``taps``) or whole outer rows
(``taps_rows``: many short rows, NCHW's width).
"""

from __future__ import annotations

from . import jit

__all__ = ["loops"]


def _compile(numba) -> dict:
    """``{"adjoint_axis": ...}`` compiled: what ``loops()`` returns (None without Numba)."""
    parallel = jit.thread_safe()
    prange = numba.prange if parallel else range

    @numba.njit(nogil=True, cache=True, parallel=parallel)
    def adjoint_axis(g, i0, i1, w0, w1, out, a0, a1):  # g (A, Lo, B) -> out (A, Li, B)
        for a in prange(a0, a1):
            oa = out[a]
            oa[:] = 0
            for o in range(g.shape[1]):
                gr, r0, r1, u, v = g[a, o], oa[i0[o]], oa[i1[o]], w0[o], w1[o]
                for b in range(gr.shape[0]):
                    r0[b] += u * gr[b]
                for b in range(gr.shape[0]):
                    r1[b] += v * gr[b]

    @numba.njit(nogil=True, cache=True, parallel=parallel)
    def adjoint_axis_pitched(g, a_step, o_step, runs, pitch, i0, i1, w0, w1, out, a0, a1):
        """adjoint_axis of a g whose rows are ``runs`` contiguous runs of C (out's last
        dim / runs) elements, ``pitch`` apart (a channel slice of a channels-last array):
        row (a, o) starts at ``a a_step + o o_step`` of the flat ``g``; the same
        operations on each element, in the same order, as on a dense copy."""
        c_len = out.shape[2] // runs
        for a in prange(a0, a1):
            oa = out[a]
            oa[:] = 0
            for o in range(i0.shape[0]):
                r0, r1, u, v = oa[i0[o]], oa[i1[o]], w0[o], w1[o]
                base = a * a_step + o * o_step
                for m in range(runs):
                    gr = g[base + m * pitch:base + m * pitch + c_len]
                    s0, s1 = r0[m * c_len:(m + 1) * c_len], r1[m * c_len:(m + 1) * c_len]
                    for b in range(c_len):
                        s0[b] += u * gr[b]
                    for b in range(c_len):
                        s1[b] += v * gr[b]

    @numba.njit(nogil=True, cache=True, parallel=parallel)
    def taps(x, index, weight, out, p0, p1):  # x (A, Li, B) -> out (A, Lo, B)
        lo = out.shape[1]
        for p in prange(p0, p1):
            a, o = p // lo, p % lo
            row = out[a, o]
            src = x[a, index[o, 0]]
            w = weight[o, 0]
            for b in range(row.shape[0]):
                row[b] = src[b] * w
            for t in range(1, index.shape[1]):
                src = x[a, index[o, t]]
                w = weight[o, t]
                for b in range(row.shape[0]):
                    row[b] += src[b] * w

    @numba.njit(nogil=True, cache=True, parallel=parallel)
    def taps_rows(x, index, weight, out, a0, a1):  # taps, whole outer rows a in a prange
        lo, taps_, inner = out.shape[1], index.shape[1], out.shape[2]
        for a in prange(a0, a1):
            for o in range(lo):
                if inner == 1:
                    v = x[a, index[o, 0], 0] * weight[o, 0]
                    for t in range(1, taps_):
                        v += x[a, index[o, t], 0] * weight[o, t]
                    out[a, o, 0] = v
                    continue
                row = out[a, o]
                src = x[a, index[o, 0]]
                w = weight[o, 0]
                for b in range(inner):
                    row[b] = src[b] * w
                for t in range(1, taps_):
                    src = x[a, index[o, t]]
                    w = weight[o, t]
                    for b in range(inner):
                        row[b] += src[b] * w

    return {"adjoint_axis": adjoint_axis, "adjoint_axis_pitched": adjoint_axis_pitched,
            "taps": taps, "taps_rows": taps_rows, "parallel": parallel}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)
