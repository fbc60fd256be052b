"""Pooling kernels on ndarrays: the ``pool`` kernel family.

Max and average pooling of float32 activations run on oneDNN's pooling primitive
(:mod:`.onednn.pool`), on the caller's layout (dense NCHW or channels-last, the output
allocated in the input's); everything else runs on the NumPy reference, which is
composed of Tensor operations in :mod:`convgrad.functional.pooling` (exact in float64).
:func:`choose` is the one decision; each kernel records one profiler event.

A window is ``(kernel, stride, dilation, pad_l, pad_r)`` per spatial dim, torch's
dilation, ``pad_r`` the right padding that makes exactly the output's windows fit.
"""

from __future__ import annotations

import numpy as np

from . import jit, layouts, parallel, pool_loops, reduction, relayout
from .onednn import pool as onednn_pool
from .registry import family

__all__ = ["POOL", "adaptive_argmax", "adaptive_bounds", "avg_pool_backward",
           "avg_pool_forward", "choose", "max_pool_backward", "max_pool_forward",
           "max_pool_indices"]

POOL = family("pool", ("onednn", "numba", "numpy"))


def choose(kind: str, x: np.ndarray, y_shape: tuple, window: tuple,
           include_pad: bool = True) -> str:
    """``"onednn"`` or ``"numpy"`` for a max (``kind="max"``) or average pooling of ``x``.

    oneDNN: float32, dense NCHW or channels-last, and
    * no dilation (oneDNN has only its reference kernel for dilated pooling, slower than
      NumPy's strided taps);
    * max: no NaN and no -inf in x (checked with ``x.min()``, 0.4 ms of a 23 ms pass on
      (8, 64, 64, 64)): oneDNN's maximum starts at -FLT_MAX and ignores NaN, where torch
      propagates NaN and keeps -inf windows' first tap;
    * average with the padding counted: no window past the right padding (``ceil_mode``
      windows torch divides by their part inside the padded input, oneDNN by the kernel).
    Ties: oneDNN keeps the first maximum of a window, as torch (tested).
    """
    pinned = POOL.pinned()
    if (pinned == "numpy" or type(x) is not np.ndarray or x.dtype != np.float32
            or onednn_pool.layout_of(x) is None):
        return "numpy"
    k, _, d, lo, hi = window
    if any(dd != 1 for dd in d):
        return "numpy"
    if kind == "max":
        m = x.min() if x.size else 0.0
        if not m > -np.inf:
            return "numpy"
    elif include_pad and any(h > p for h, p in zip(hi, lo)):
        return "numpy"
    plan = onednn_pool.pool_plan(f"{kind}_forward", (x.shape, _strides(x)),
                                 (y_shape, layouts.strides_like(x, y_shape)), window, include_pad)
    return "onednn" if not isinstance(plan, str) else "numpy"


def _strides(a: np.ndarray) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


def _like(x: np.ndarray, shape: tuple) -> np.ndarray:
    return layouts.empty(shape, channels_last=layouts.is_channels_last(x), dtype=x.dtype)


def _plan(pass_name: str, x, y, window: tuple, include_pad: bool = True):
    plan = onednn_pool.pool_plan(pass_name, x, y, window, include_pad)
    if isinstance(plan, str):  # choose() built the forward; a backward may still fail
        raise RuntimeError(f"oneDNN pooling {pass_name}: {plan}")
    return plan


def max_pool_forward(x: np.ndarray, y_shape: tuple, window: tuple
                     ) -> tuple[np.ndarray, np.ndarray]:
    """oneDNN max pooling: y (in x's layout) and the workspace its backward reads."""
    x = _dense(x)
    y = _like(x, y_shape)
    with POOL.record("max_pool_forward", x.shape, y_shape) as rec:
        plan = _plan("max_forward", x, y, window)
        rec.algorithm = plan.name
        ws = plan.new_workspace()
        plan.run(x, y, ws)
    return y, ws


def max_pool_backward(gy: np.ndarray, ws: np.ndarray, x_shape: tuple, window: tuple,
                      like: np.ndarray) -> np.ndarray:
    """oneDNN: each output gradient added to its window's maximum (the forward's ``ws``);
    ``gx`` in ``like``'s layout (the forward's input)."""
    gx = _like(like, x_shape)
    gy = relayout.laid_out(gy, like)
    with POOL.record("max_pool_backward", gy.shape, x_shape) as rec:
        plan = _plan("max_backward", gx, gy, window)
        rec.algorithm = plan.name
        plan.run(gy, gx, ws)
    return gx


def max_pool_indices(ws: np.ndarray, x_shape: tuple, y_shape: tuple, window: tuple,
                     like: np.ndarray) -> np.ndarray:
    """torch's indices (flat within each (N, C) plane of the input) of the maxima that the
    forward on ``like``'s layout recorded in ``ws``."""
    y_strides = layouts.strides_like(like, y_shape)
    fwd = _plan("max_forward", (x_shape, _strides(like)), (y_shape, y_strides), window)
    taps = onednn_pool.workspace_taps(fwd, ws, y_shape, y_strides)
    k, s, d, lo, _ = window
    nd = len(k)
    offs = np.unravel_index(taps, k)
    flat = np.zeros(y_shape, np.int64)
    for a in range(nd):
        shape = [1] * (nd + 2)
        shape[2 + a] = y_shape[2 + a]
        coord = (np.arange(y_shape[2 + a]) * s[a] - lo[a]).reshape(shape)
        flat = flat * x_shape[2 + a] + (coord + offs[a] * d[a])
    return flat


def avg_pool_forward(x: np.ndarray, y_shape: tuple, window: tuple, include_pad: bool
                     ) -> np.ndarray:
    """oneDNN average pooling of x into a new array in x's layout."""
    x = _dense(x)
    y = _like(x, y_shape)
    with POOL.record("avg_pool_forward", x.shape, y_shape) as rec:
        plan = _plan("avg_forward", x, y, window, include_pad)
        rec.algorithm = plan.name
        plan.run(x, y)
    return y


def avg_pool_backward(gy: np.ndarray, x_shape: tuple, window: tuple, include_pad: bool,
                      like: np.ndarray) -> np.ndarray:
    """oneDNN: the adjoint of :func:`avg_pool_forward`, ``gx`` in ``like``'s layout."""
    gx = _like(like, x_shape)
    gy = relayout.laid_out(gy, like)
    with POOL.record("avg_pool_backward", gy.shape, x_shape) as rec:
        plan = _plan("avg_backward", gx, gy, window, include_pad)
        rec.algorithm = plan.name
        plan.run(gy, gx)
    return gx


def _dense(a: np.ndarray) -> np.ndarray:
    """``a`` itself when oneDNN can read it, else a C-contiguous float32 copy (a gradient
    of a gradient may arrive in any layout)."""
    return a if onednn_pool.layout_of(a) is not None else np.ascontiguousarray(a, np.float32)


def adaptive_bounds(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Adaptive pooling's windows of an axis of ``n`` pooled to ``m``: ``[start, stop)``."""
    o = np.arange(m)
    return (o * n) // m, -((-(o + 1) * n) // m)


def adaptive_argmax(a: np.ndarray, out: tuple) -> np.ndarray:
    """The flat per-plane index of each adaptive window's maximum of ``a`` (N, C,
    *spatial) pooled to ``out`` (torch's choice: the first maximum in the window's
    row-major order, the last NaN if any).

    Axis by axis from the innermost (W, then H, then D): the first maximum of each row,
    then the first row holding the window's maximum, is the first maximum in row-major
    order (and the last NaN likewise).  Each axis runs in the array's memory order,
    viewed as (outer, axis, inner): Numba's loop over each window's rows (``numba``,
    float32 and float64), else a NumPy walk over the taps of the widest window, shorter
    windows clamped to their last input (``numpy``).  Measured on (16, 64, 64, 64)
    channels-last to 7x7 (forward and backward, torch 2.4-2.6 ms): the NumPy walk 41.5 ms;
    walking all dims' taps at once on the logical dims before it 55.6 ms."""
    with POOL.record("adaptive_argmax", a.shape, tuple(out)) as rec:
        compiled = (POOL.pinned() in (None, "numba") and a.dtype.kind == "f"
                    and a.dtype.itemsize in (4, 8) and pool_loops.loops() is not None)
        rec.algorithm = "numba" if compiled else "numpy"
        nd = len(out)
        order = layouts.memory_order(a)
        t = a.transpose(order)
        if not t.flags.c_contiguous:  # strided: its logical order, copied dense
            order, t = list(range(a.ndim)), np.ascontiguousarray(a)
        best, picks = t, []  # picks[j]: the chosen input position along spatial axis nd-1-j
        for ax in range(nd - 1, -1, -1):
            start, stop = adaptive_bounds(a.shape[2 + ax], out[ax])
            p = order.index(2 + ax)  # the axis in memory order
            walk = _compiled_walk if compiled else _numpy_walk
            best, chosen = walk(best, p, start, stop)
            picks = [np.take_along_axis(q, chosen, axis=p) for q in picks] + [chosen]
        flat = np.zeros(best.shape, np.int64)
        for ax, q in enumerate(reversed(picks)):
            flat = flat * a.shape[2 + ax] + q
        return flat.transpose(np.argsort(order))


def _compiled_walk(cur: np.ndarray, p: int, start: np.ndarray, stop: np.ndarray) -> tuple:
    """Each window's maximum and its position along axis ``p`` of C-contiguous ``cur``."""
    shape = cur.shape
    A, B = int(np.prod(shape[:p], dtype=np.int64)), int(np.prod(shape[p + 1:], dtype=np.int64))
    view = cur.reshape(A, shape[p], B)
    best = np.empty((A, len(start), B), cur.dtype)
    pos = np.empty((A, len(start), B), np.int64)
    lp = pool_loops.loops()
    args = (view, np.ascontiguousarray(start, np.int64), np.ascontiguousarray(stop, np.int64),
            best, pos)
    threads = parallel.num_threads() if cur.size >= reduction.PARALLEL_MIN_SIZE else 1
    jit.run_rows(lp["window_argmax"], lp["parallel"], args, A, threads)
    out_shape = shape[:p] + (len(start),) + shape[p + 1:]
    return best.reshape(out_shape), pos.reshape(out_shape)


def _numpy_walk(cur: np.ndarray, p: int, start: np.ndarray, stop: np.ndarray) -> tuple:
    """:func:`_compiled_walk` by NumPy: the taps of the widest window in turn."""
    shape = (-1,) + (1,) * (cur.ndim - 1 - p)
    best = chosen = None
    for off in range(int((stop - start).max())):
        pos = np.minimum(start + off, stop - 1)
        view = np.take(cur, pos, axis=p)
        if best is None:
            best, chosen = view, np.broadcast_to(pos.reshape(shape), view.shape).copy()
            continue
        take = (view > best) | np.isnan(view)
        np.copyto(best, view, where=take)
        np.copyto(chosen, pos.reshape(shape), where=take)
    return best, chosen
