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

from . import jit, pick_loops
from .layouts import axis_view, memory_order
from .parallel import num_threads
from .registry import family

__all__ = ["GATHER", "MIN_LOOP_SIZE", "gather", "scatter_add"]

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
