"""Resampling kernels on ndarrays: the ``resample`` kernel family.

Nearest and linear upsampling by whole factors of float32 activations run forward on
oneDNN's resampling primitive (:mod:`.onednn.resample`) for channels-last input (the
output channels-last too), and backward on NumPy strided views (linear: one compiled
pass per axis, :mod:`.resample_loops`, where Numba is installed);
everything else runs on per-axis maps (:func:`axis_map`, a constant sparse matrix
applied along one axis, from :mod:`convgrad.functional.interpolate`): by its taps on
NumPy (the reference), or along a short last axis as a dense matrix product (``dense``).
:func:`choose` and :func:`choose_axis_map` are the decisions; each kernel records one
profiler event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import jit, layouts, parallel, reduction, relayout
from .onednn import resample as onednn_resample
from .registry import family
from .resample_loops import loops

__all__ = ["DENSE_MAX_IN", "RESAMPLE", "axis_map", "choose", "choose_axis_map",
           "resample_backward", "resample_forward"]

RESAMPLE = family("resample", ("onednn", "numba", "dense", "numpy"))

#: the longest last axis a per-axis map runs on as a dense product: along the last axis
#: ``np.take`` gathers single elements (bilinear upsampling of (8, 32, 64, W) along W:
#: 2.3 ms at W = 32 and 4.9 ms at W = 64 by taps, 1.3 and 3.1 dense); the product's cost
#: grows with the input length, the taps' does not (equal at 128, taps 1.5x faster at
#: 256); along the other axes ``np.take`` copies whole rows, as fast as the product
DENSE_MAX_IN = 64


def _pair(x: np.ndarray, shape: tuple) -> tuple:
    return shape, layouts.strides_like(x, shape)


def choose(mode: str, x: np.ndarray, out: tuple, scales: tuple,
           align_corners: bool = False) -> str:
    """``"onednn"`` or ``"numpy"`` for ``mode`` ("nearest" or "linear") from x to spatial
    size ``out`` with torch's ``scales`` (None: from the sizes).

    oneDNN (the forward; the backward is NumPy, :func:`resample_backward`): float32, dense
    layout, every axis upsampled by a whole factor s (and the given scale factor, if any,
    exactly s), ``align_corners=False``.  There oneDNN's half-pixel sources are torch's:
    ``nearest`` rounds ``(o + 1/2)/s - 1/2`` to ``o // s`` (exact); ``linear`` interpolates
    at ``(o + 1/2)/s - 1/2`` clamped at the edges (within torch's own float32 error,
    tested).  NCHW input stays NumPy (measured below).
    """
    if (RESAMPLE.pinned() == "numpy" or type(x) is not np.ndarray or x.dtype != np.float32
            or align_corners):
        return "numpy"
    if not layouts.is_channels_last(x):
        # NCHW: NumPy's per-axis maps measured as fast or faster (forward and backward,
        # (8, 64, 32, 32) upsampled 2x, vs torch: nearest 0.19-0.41x against 0.35x,
        # bilinear 0.51x against 0.60x); channels-last: nearest 1.4x against 0.5x, bilinear
        # 3.0x against 1.0x
        return "numpy"
    for n, m, sf in zip(x.shape[2:], out, scales):
        s = m // n
        if s < 1 or m != s * n or (sf is not None and sf != s):
            return "numpy"
    if all(m == n for n, m in zip(x.shape[2:], out)):
        return "numpy"  # the identity: nothing to resample
    y_shape = (*x.shape[:2], *out)
    plan = onednn_resample.resample_plan("forward", mode, _pair(x, x.shape), _pair(x, y_shape))
    return "onednn" if not isinstance(plan, str) else "numpy"


def _plan(pass_name: str, mode: str, like: np.ndarray, x_shape: tuple, y_shape: tuple):
    plan = onednn_resample.resample_plan(pass_name, mode, _pair(like, x_shape),
                                         _pair(like, y_shape))
    if isinstance(plan, str):
        raise RuntimeError(f"oneDNN resampling {pass_name}: {plan}")
    return plan


def resample_forward(x: np.ndarray, y_shape: tuple, mode: str, like: np.ndarray
                     ) -> np.ndarray:
    """oneDNN: x resampled to ``y_shape``, in ``like``'s layout."""
    x = relayout.laid_out(x, like)
    # aligned: oneDNN may write it with non-temporal stores (see layouts.ALIGNMENT)
    y = layouts.empty(y_shape, channels_last=layouts.is_channels_last(like), aligned=True)
    with RESAMPLE.record(f"{mode}_forward", x.shape, y_shape) as rec:
        plan = _plan("forward", mode, like, x.shape, y_shape)
        rec.algorithm = plan.name
        plan.run(x, y)
    return y


def resample_backward(gy: np.ndarray, x_shape: tuple, mode: str, like: np.ndarray
                      ) -> np.ndarray:
    """The adjoint of :func:`resample_forward` (each gradient spread back over the sources
    with the same weights), in ``like``'s layout, not on oneDNN: its backward
    (``simple:any``) measured 20-100 ms on (8, 64, 64, 64) gradients, 2-10x NumPy's.
    ``nearest``: the sum of each output block; ``linear``: per axis, each phase of the
    output added with its two weights (:func:`_linear_adjoint_axis`), or one compiled
    pass per axis (``numba``, :mod:`.resample_loops`, where Numba is installed: bilinear
    2x onto (8, 32, 32, 32) channels-last took 0.27 ms, NumPy's phases 0.97 ms)."""
    gx = layouts.empty(x_shape, channels_last=layouts.is_channels_last(like))
    with RESAMPLE.record(f"{mode}_backward", gy.shape, x_shape) as rec:
        if mode == "nearest":
            rec.algorithm = "numpy:block_sum"  # one strided view per offset in the block
            factors = [m // n for n, m in zip(x_shape[2:], gy.shape[2:])]
            for t, offs in enumerate(np.ndindex(*factors)):
                view = gy[(Ellipsis, *(slice(o, None, f) for o, f in zip(offs, factors)))]
                if t == 0:
                    np.copyto(gx, view, casting="same_kind")
                else:
                    np.add(gx, view, out=gx, casting="same_kind")
            return gx
        compiled = gy.dtype == np.float32 and RESAMPLE.pinned() in (None, "numba") and loops()
        rec.algorithm = "numba" if compiled else "numpy:phases"
        adjoint = _compiled_adjoint_axis if compiled else _linear_adjoint_axis
        # the loop reads like's dense layout; a channel slice of a channels-last gradient
        # (a U-Net's concatenation) as it lies, its first pass reading runs of channels
        pitched = _pitched(gy) if compiled and layouts.is_channels_last(like) else None
        g = gy if pitched or not compiled else relayout.laid_out(gy, like)
        for a in range(len(x_shape) - 2):
            shape = (*x_shape[:2 + a + 1], *g.shape[2 + a + 1:])
            out = gx if a == len(x_shape) - 3 else layouts.empty(
                shape, channels_last=layouts.is_channels_last(like))
            if a == 0 and pitched:
                _compiled_adjoint_pitched(pitched, out)
            else:
                adjoint(g, out, 2 + a)
            g = out
    return gx


def _pitched(g: np.ndarray) -> tuple | None:
    """For a float32 (N, C, *S) ``g`` whose memory is channels-last runs of C elements,
    ``pitch`` apart, the S dims after the first merging into one run of runs (a channel
    slice of a dense channels-last array): (flat view of its memory, N step, S1 step,
    runs per (n, s1) row, pitch) in elements, and S1's length; None for any other ``g``
    (a dense one included: the plain loop reads it)."""
    if layouts.is_channels_last(g) or g.ndim < 3 or g.size == 0:
        return None
    st = [s // g.itemsize for s in g.strides]
    if any(s * g.itemsize != b for s, b in zip(st, g.strides)) or st[1] != 1 or min(st) < 0:
        return None
    spatial, steps = g.shape[2:], st[2:]
    pitch = steps[-1] if len(spatial) > 1 else st[2]
    if pitch < g.shape[1]:
        return None
    for j in range(len(spatial) - 1, 1, -1):  # S2..Sk merge into runs of pitch
        if steps[j - 1] != steps[j] * spatial[j]:
            return None
    runs = int(np.prod(spatial[1:], dtype=np.int64))
    span = sum((n - 1) * s for n, s in zip(g.shape, st)) + 1
    flat = np.lib.stride_tricks.as_strided(g, shape=(span,), strides=(g.itemsize,),
                                           writeable=False)
    return flat, st[0], st[2], runs, pitch, g.shape[2]


def _rows(a: np.ndarray, axis: int) -> np.ndarray:
    """Dense ``a`` (C-contiguous or channels-last) as (A, L, B) in its memory order, L
    along ``axis``, no copy."""
    order = ((0, *range(2, a.ndim), 1) if layouts.is_channels_last(a)
             else tuple(range(a.ndim)))
    t = a.transpose(order)
    p = order.index(axis)
    return t.reshape(int(np.prod(t.shape[:p])), t.shape[p], -1, copy=False)


def _adjoint_taps(n: int, m: int) -> tuple:
    """(i0, i1, w0, w1) of linear upsampling's adjoint from ``m`` outputs to ``n`` inputs
    along an axis (see :func:`_linear_adjoint_axis`)."""
    s = m // n
    o = np.arange(m)
    q, c = o // s, (o % s + 0.5) / s - 0.5
    i1 = np.clip(q + np.sign(c).astype(np.int64), 0, n - 1)
    return q, i1, (1 - np.abs(c)).astype(np.float32), np.abs(c).astype(np.float32)


def _compiled_adjoint_axis(g: np.ndarray, out: np.ndarray, axis: int) -> None:
    """:func:`_linear_adjoint_axis` as one compiled pass (:mod:`.resample_loops`); ``g``
    and ``out`` in the same dense layout."""
    gv, ov = _rows(g, axis), _rows(out, axis)
    lp = loops()
    threads = 1 if g.size < reduction.PARALLEL_MIN_SIZE else parallel.num_threads()
    jit.run_rows(lp["adjoint_axis"], lp["parallel"],
                 (gv, *_adjoint_taps(out.shape[axis], g.shape[axis]), ov), gv.shape[0], threads)


def _compiled_adjoint_pitched(pitched: tuple, out: np.ndarray) -> None:
    """:func:`_compiled_adjoint_axis` along the first spatial axis of a :func:`_pitched`
    gradient into the dense channels-last ``out``: no copy of the gradient first."""
    flat, a_step, o_step, runs, pitch, m = pitched
    ov = _rows(out, 2)
    lp = loops()
    threads = 1 if ov.size < reduction.PARALLEL_MIN_SIZE else parallel.num_threads()
    jit.run_rows(lp["adjoint_axis_pitched"], lp["parallel"],
                 (flat, a_step, o_step, runs, pitch, *_adjoint_taps(out.shape[2], m), ov),
                 ov.shape[0], threads)


def _linear_adjoint_axis(g: np.ndarray, out: np.ndarray, axis: int) -> None:
    """``out`` = the adjoint of linear upsampling by a whole factor s along ``axis``
    (half-pixel sources, clamped at the edges, as torch's ``align_corners=False``).

    Output ``o = q s + r`` reads source ``q + c_r``, ``c_r = (r + 1/2)/s - 1/2`` in
    (-1/2, 1/2): weight ``1 - |c_r|`` on input q and ``|c_r|`` on its neighbour q + 1
    (c_r > 0) or q - 1 (c_r < 0), the neighbour clamped to the edge.  So phase r's
    gradients add to ``out`` once scaled by ``1 - |c_r|`` and once by ``|c_r|`` shifted.
    """
    n = out.shape[axis]
    s = g.shape[axis] // n
    lead = (slice(None),) * axis

    def at(a: np.ndarray, sl: slice) -> np.ndarray:
        return a[lead + (sl,)]

    out[...] = 0
    for r in range(s):
        c = (r + 0.5) / s - 0.5
        gr = at(g, slice(r, None, s))
        out += np.float32(1 - abs(c)) * gr
        if c == 0:
            continue
        w = np.float32(abs(c))
        if c > 0:   # the right neighbour; the last input is its own
            at(out, slice(1, None))[...] += w * at(gr, slice(0, n - 1))
            at(out, slice(n - 1, n))[...] += w * at(gr, slice(n - 1, n))
        else:       # the left neighbour; the first input is its own
            at(out, slice(0, n - 1))[...] += w * at(gr, slice(1, None))
            at(out, slice(0, 1))[...] += w * at(gr, slice(0, 1))


def choose_axis_map(x: np.ndarray, axis: int) -> str:
    """``"numba"``, ``"dense"`` or ``"numpy"`` (the taps) for a per-axis map of ``x`` along
    ``axis``.  float32 with Numba: the compiled taps, on any axis (NCHW's width too, where
    the dense product took 57 ms and the compiled taps 5 for (16, 64, 64, 64) doubled).
    Otherwise dense along the innermost axis of x's memory when it is its last axis
    (NCHW's width), of at most :data:`DENSE_MAX_IN` inputs, for float32/64 x without inf
    or NaN (0 * inf in the product would spread NaN over a whole row; ``np.isfinite`` of
    the float64 sum reads x once, with no temporary); along any other axis the NumPy taps
    copy runs of memory (a channels-last array's width: its pixels' channels)."""
    pinned = RESAMPLE.pinned()
    if type(x) is not np.ndarray or pinned == "numpy" or x.size == 0:
        return "numpy"
    if pinned in (None, "numba") and x.dtype == np.float32 and loops() is not None:
        return "numba"
    if (axis != x.ndim - 1 or layouts.memory_order(x)[-1] != axis
            or x.shape[axis] > DENSE_MAX_IN or x.dtype.char not in "fd"
            or not np.isfinite(x.sum(dtype=np.float64))):
        return "numpy"
    return "dense"


def axis_map(x: np.ndarray, axis: int, index: np.ndarray, weight: np.ndarray | None,
             dense_as: Callable[[np.dtype], np.ndarray]) -> np.ndarray:
    """``y = M x`` along ``axis`` for the (out, in) matrix M with ``index[o, t]`` the input
    of tap ``t`` of output ``o`` and ``weight[o, t]`` its weight (None: every weight 1);
    ``dense_as(dtype)`` is M as a dense array.  ``y[o] = sum_t w[o, t] x[index[o, t]]``.

    The taps run on x's memory as it lies, viewed as (outer, in, inner) (a copy first
    where x is not dense), so each gathers runs of ``inner`` elements and y keeps x's
    layout (channels-last stays channels-last).  Gathering along the logical axes of a
    channels-last array instead cost 10x torch (bilinear ``align_corners=True`` 2x on
    (16, 64, 64, 64): 105 ms forward and backward, torch 9.8)."""
    with RESAMPLE.record("axis_map", x.shape) as rec:
        rec.algorithm = choose_axis_map(x, axis)
        if type(x) is not np.ndarray:  # a dask array: the taps along the logical axis,
            return _lazy_taps(x, axis, index, weight)  # lazily (no view of its memory)
        if rec.algorithm == "dense":
            return np.matmul(x, dense_as(x.dtype).T)
        order = layouts.memory_order(x)
        view = layouts.axis_view(x, axis, order)
        if view is None:  # strided: its logical order, copied dense
            order = list(range(x.ndim))
            view = layouts.axis_view(np.ascontiguousarray(x), axis, order)
        if rec.algorithm == "numba":
            out = _compiled_taps(view, index, weight)
        else:
            out = None
            for t in range(index.shape[1]):
                part = np.take(view, index[:, t], axis=1)
                if weight is not None:
                    part *= weight[:, t].astype(x.dtype)[:, None]
                if out is None:
                    out = part
                else:
                    out += part
        shape = [x.shape[d] for d in order]
        shape[order.index(axis)] = index.shape[0]
        return out.reshape(shape).transpose(np.argsort(order))


def _lazy_taps(x: Any, axis: int, index: np.ndarray, weight: np.ndarray | None) -> Any:
    """:func:`axis_map` of a dask array: each tap a ``take`` along ``axis`` (any chunks),
    weighted and summed as the NumPy taps are, so the values are theirs."""
    shape = [1] * x.ndim
    shape[axis] = -1
    out = None
    for t in range(index.shape[1]):
        part = np.take(x, index[:, t], axis=axis)
        if weight is not None:
            part = part * weight[:, t].astype(x.dtype).reshape(shape)
        out = part if out is None else out + part
    return out


def _compiled_taps(view: np.ndarray, index: np.ndarray, weight: np.ndarray | None
                   ) -> np.ndarray:
    """:func:`axis_map`'s taps on the float32 (A, L, B) ``view`` as one compiled pass
    (:mod:`.resample_loops`): (A, len(index), B), bit for bit the NumPy taps."""
    A, _, B = view.shape
    Lo = index.shape[0]
    out = np.empty((A, Lo, B), np.float32)
    w = (np.ones(index.shape, np.float32) if weight is None
         else np.ascontiguousarray(weight, np.float32))
    idx = np.ascontiguousarray(index, np.int64)
    lp = loops()
    threads = 1 if out.size < reduction.PARALLEL_MIN_SIZE else parallel.num_threads()
    # whole outer rows per step where there are enough of them (a short inner run, NCHW's
    # width: 1 element, costs the per-row bookkeeping 8.4M times otherwise), else each
    # (row, output) pair (a channels-last batch of one has a single outer row)
    by_rows = A >= 8 * threads
    kernel, rows = (lp["taps_rows"], A) if by_rows else (lp["taps"], A * Lo)
    jit.run_rows(kernel, lp["parallel"], (view, idx, w, out), rows, threads)
    return out


@jit.exercise
def _exercise() -> None:
    """The compiled adjoint once, on a tiny channels-last array (:func:`.jit.warm_up`)."""
    like = layouts.empty((1, 2, 2, 2), channels_last=True)
    g = np.zeros((1, 4, 4, 3), np.float32)
    resample_backward(g[..., :2].transpose(0, 3, 1, 2), like.shape, "linear", like)  # pitched
    resample_backward(layouts.empty((1, 2, 4, 4), channels_last=True), like.shape, "linear",
                      like)
    if loops():
        _compiled_taps(np.zeros((1, 2, 2), np.float32), np.zeros((3, 2), np.int64),
                       np.ones((3, 2)))
