"""The ``gather`` kernel family: one element picked per position along an axis
(``gather`` with an index of size 1 along its dim), and its adjoint, on Numba's loops
(:mod:`.pick_loops`) or NumPy.

The NumPy reference of each pass is its Function's own code
(:mod:`convgrad.tensor.gather`), handed in as a callable; this module decides which runs
(:func:`_views`: the loops' views, or None for NumPy) and records every run.  The loops
run float32 ndarrays of at least :data:`MIN_LOOP_SIZE` elements, dense in one order of
their dims, whose index has size 1 along the axis and the array's size along every other
dim; the result of the adjoint takes the layout of the array the gather read.  Anything
else (float64, the reference; an index of another shape; dask arrays) runs NumPy, which
also sums repeated indices.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import jit, layouts, pick_loops
from .layouts import axis_view, memory_order
from .parallel import num_threads
from .registry import family

__all__ = ["GATHER", "MIN_LOOP_SIZE", "gather", "index_add", "scatter_add"]

#: the gather family: ``prefer("numpy")`` pins the Functions' NumPy code
GATHER = family("gather", ("numba", "numpy"))

#: Below this many elements NumPy runs (a loop call costs ~10 us from Python).
MIN_LOOP_SIZE = 1 << 12
_F32 = np.dtype(np.float32)


def _views(full: np.ndarray, index: np.ndarray, dim: int) -> tuple | None:
    """``full`` as (outer, C, inner), ``index`` (size 1 along ``dim``, intp, within
    [0, C)) as (outer, inner), both in ``full``'s memory order, and that order; None
    where the loops do not apply."""
    if (GATHER.pinned() == "numpy" or full.dtype != _F32 or type(index) is not np.ndarray
            or index.dtype != np.intp or index.ndim != full.ndim or index.shape[dim] != 1
            or any(n != m for d, (n, m) in enumerate(zip(index.shape, full.shape))
                   if d != dim)
            or (full.size < MIN_LOOP_SIZE and GATHER.pinned() != "numba")):
        return None
    order = memory_order(full)
    xs = axis_view(full, dim, order)
    if xs is None or pick_loops.loops() is None:
        return None
    # the index in full's memory order: its positions line up with full's
    t = np.ascontiguousarray(index.transpose(order)).reshape(xs.shape[0], xs.shape[2])
    if t.size and (t.min() < 0 or t.max() >= full.shape[dim]):
        return None  # NumPy's indexing raises (or wraps a negative index) as before
    if jit.thread_safe():
        jit.set_threads(num_threads())
    return xs, t, order


def _loop(name: str, full: np.ndarray) -> Callable[..., None]:
    """The loop ``name`` for ``full``'s (outer, C, inner) view: its rows form (on the 2-D
    and 1-D views) where ``inner`` is 1."""
    rows, blocks = pick_loops.loops()[name]
    if full.shape[2] != 1:
        return blocks
    return lambda *arrays: rows(*(a[..., 0] if a.ndim == 3 else a[:, 0] for a in arrays))


def gather(x: Any, index: Any, dim: int, reference: Callable[[], Any]) -> Any:
    """``x`` picked at ``index`` along ``dim``; ``reference()`` is the NumPy result."""
    with GATHER.record("gather", tuple(getattr(x, "shape", ()))) as rec:
        views = _views(x, index, dim) if type(x) is np.ndarray else None
        if views is not None:
            rec.algorithm = "numba"
            xs, t, order = views
            out = np.empty(t.shape, x.dtype)
            _loop("pick", xs)(xs, t, out)
            # (outer, inner) in x's memory order -> index's shape
            shape = [index.shape[d] for d in order]
            return out.reshape(shape).transpose(np.argsort(order))
        rec.algorithm = "numpy"
        return reference()


def scatter_add(g: Any, index: Any, dim: int, like: Any, reference: Callable[[], Any]) -> Any:
    """Zeros shaped and laid out as ``like`` with ``g`` added at ``index`` along ``dim``;
    ``reference()`` is the NumPy result."""
    with GATHER.record("scatter_add", tuple(getattr(like, "shape", ()))) as rec:
        out = np.empty_like(like) if type(like) is np.ndarray and type(g) is np.ndarray \
            and g.dtype == like.dtype else None
        views = _views(out, index, dim) if out is not None else None
        if views is not None:
            rec.algorithm = "numba"
            outs, t, order = views
            gs = np.ascontiguousarray(g.transpose(order)).reshape(t.shape)
            _loop("place", outs)(gs, t, outs)
            return out
        rec.algorithm = "numpy"
        return reference()


@jit.exercise
def _exercise() -> None:
    """The compiled loops once (:func:`.jit.warm_up`)."""
    for inner in (1, 2):  # the rows and the blocks forms
        x, t = np.zeros((1, 2, inner), np.float32), np.zeros((1, inner), np.intp)
        _loop("pick", x)(x, t, np.zeros((1, inner), np.float32))
        _loop("place", x)(np.zeros((1, inner), np.float32), t, x)


def index_add(g: np.ndarray, index: tuple, shape: tuple, channels_last: bool) -> np.ndarray:
    """``zeros(shape)`` (channels-last in memory with ``channels_last``) with ``g`` added
    at the advanced ``index`` (an index array per dim: repeats accumulate, in the index
    order), a ``gather`` event ``index_add``.  One array per dim is added through flat
    memory offsets (NumPy's one-dim ``add.at``, the same sums in the same order: an
    adaptive max pooling's gradient of (16, 64, 64, 64) took ~9 ms as the
    multi-dimensional ``add.at`` into an NCHW array); anything else by ``np.add.at``."""
    with GATHER.record("index_add", g.shape, shape) as rec:
        rec.algorithm = "numpy"
        out = layouts.empty(shape, channels_last=channels_last, dtype=g.dtype)
        flat = np.ravel(out, order="K")  # a view: out is dense, its memory in order
        flat[...] = 0
        offsets = _flat_offsets(out, index)
        if offsets is None:
            np.add.at(out, index, g)
        else:
            np.add.at(flat, offsets.ravel(), np.broadcast_to(g, offsets.shape).ravel())
        return out


def _flat_offsets(out: np.ndarray, index: tuple) -> np.ndarray | None:
    """The memory offsets (elements) in ``out`` of an index that holds one integer array
    per dim, each within its dim; None for any other index (NumPy raises its errors)."""
    if (not isinstance(index, tuple) or len(index) != out.ndim
            or not all(isinstance(i, np.ndarray) and i.dtype.kind in "iu" for i in index)):
        return None
    try:
        arrays = np.broadcast_arrays(*index)
    except ValueError:
        return None
    offsets = np.zeros(arrays[0].shape if arrays else (), np.int64)
    for i, n, st in zip(arrays, out.shape, out.strides):
        if i.size and (i.min() < -n or i.max() >= n):
            return None
        offsets += np.where(i < 0, i + n, i) * (st // out.itemsize)
    return offsets
