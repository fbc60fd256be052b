"""Tensors holding dask arrays: evaluation, and the lazy forms of the few operations whose
NumPy code would build a full-size array in memory.

Most operations need nothing here: NumPy's functions and operators dispatch to dask, so
a Tensor whose ``data`` is a ``dask.array.Array`` stays lazy through the forward and the
backward pass, and the convolution kernels compute it chunk by chunk.  ``compute``
evaluates any number of such tensors from one graph.  The scatter of an indexing's
gradient (``IndexAdd``) and constant padding (``PadConstant``) have lazy forms below;
operations that cannot stay lazy raise :func:`eager_error`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arraytypes import is_dask_array
from ..autograd import tensor_type

__all__ = ["compute", "eager_error", "get_item", "index_add", "is_dask_array", "pad_constant"]


def eager_error(fn: str, data: Any) -> TypeError:
    """The error of an operation that would compute (or densify) a dask-backed tensor."""
    return TypeError(
        f"{fn}: the tensor holds a dask array (shape {data.shape}, chunks {data.chunksize}) "
        "and this operation cannot stay lazy; evaluate it first with convgrad.compute(t)")


def compute(*tensors: Any) -> tuple[np.ndarray, ...]:
    """The values of ``tensors`` (Tensors or arrays) as ndarrays, one per argument.

    Dask-backed ones are evaluated together, in one ``dask.compute`` call (so shared
    work, e.g. a forward pass under a loss and its gradients, is done once), on the
    current scheduler: a ``dask.distributed.Client`` if one is active.
    """
    Tensor = tensor_type()

    data = []
    for i, t in enumerate(tensors):
        a = t.data if isinstance(t, Tensor) else t
        if not (isinstance(a, np.ndarray | np.generic) or is_dask_array(a)):
            raise TypeError(f"compute: argument {i} must be a Tensor or an array, "
                            f"got {type(t).__name__}")
        data.append(a)
    if any(is_dask_array(a) for a in data):
        import dask

        data = dask.compute(*data)
    return tuple(np.asarray(a) for a in data)


def pad_constant(x: Any, widths: tuple, value: float) -> Any:
    """``x`` (dask) surrounded by ``value``; ``widths`` one (lo, hi) pair (>= 0) per dim."""
    import dask.array as da

    return da.pad(x, widths, mode="constant", constant_values=value)


def get_item(x: Any, index: tuple) -> Any:
    """``x[index]`` for a dask ``x``; an index dask cannot take lazily is a TypeError."""
    try:
        return x[index]
    except (NotImplementedError, TypeError) as e:
        raise TypeError(f"indexing: the index {index!r} cannot stay lazy for a dask-backed "
                        f"tensor ({e}); evaluate the tensor first with convgrad.compute(t)"
                        ) from None


def index_add(g: Any, index: tuple, shape: tuple) -> Any:
    """``zeros(shape)`` with the dask array ``g`` added at ``index``, lazily.

    Basic indexes (ints, slices, None, Ellipsis) place ``g`` dim by dim: a unit-step
    slice by zero padding, any other by a gather from ``g`` with one zero slab appended.
    One integer array along a single dim (the other entries full slices, as the
    reflect/replicate/circular pads use) adds its repeats layer by layer.  Anything else
    raises a TypeError rather than computing.
    """
    import dask.array as da

    index = _expand_ellipsis(index, len(shape))
    arrays = [k for k, i in enumerate(index) if isinstance(i, np.ndarray)]
    if not arrays:
        return _place_basic(da, g, index, shape)
    full = all(isinstance(i, slice) and i == slice(None) for k, i in enumerate(index)
               if k != arrays[0])
    if len(arrays) == 1 and index[arrays[0]].ndim == 1 and full and len(index) <= len(shape):
        return _add_along(da, g, index[arrays[0]], arrays[0], shape)
    raise TypeError(f"indexing: the gradient of the index {index!r} cannot stay lazy for a "
                    "dask-backed tensor (only basic indexes and one integer array along "
                    "one dim can); evaluate the tensor first with convgrad.compute(t)")


def _expand_ellipsis(index: tuple, ndim: int) -> tuple:
    if not any(i is Ellipsis for i in index):
        return index
    k = next(j for j, i in enumerate(index) if i is Ellipsis)
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    return index[:k] + (slice(None),) * (ndim - used) + index[k + 1:]


def _place_basic(da: Any, g: Any, index: tuple, shape: tuple) -> Any:
    """Inverse of a basic index: g (the indexed shape) placed into zeros(shape)."""
    squeeze, picks = [], []  # g's axes that None added; per out dim: (g axis, positions)
    axis = 0
    for i in index:
        if i is None:
            squeeze.append(axis)
            axis += 1
        elif isinstance(i, slice):
            picks.append(i)
            axis += 1
        else:  # an int: the dim is gone from g
            picks.append(int(i))
    picks += [slice(None)] * (len(shape) - len(picks))
    if squeeze:
        g = g.squeeze(axis=tuple(squeeze))
    for d, (p, n) in enumerate(zip(picks, shape)):
        if not isinstance(p, slice):
            p = p % n
            g = da.expand_dims(g, d)
            p = slice(p, p + 1)
        start, stop, step = p.indices(n)
        positions = range(start, stop, step)
        if len(positions) == 0 or 0 in g.shape:
            return da.zeros(shape, dtype=g.dtype)
        if step == 1:
            if start or stop != n:
                g = da.pad(g, [(0, 0)] * d + [(start, n - stop)] + [(0, 0)] * (g.ndim - d - 1))
            continue
        source = np.full(n, len(positions), np.intp)  # the zero slab by default
        source[list(positions)] = np.arange(len(positions))
        g = _gather_or_zero(da, g, source, d)
    return g


def _gather_or_zero(da: Any, g: Any, source: np.ndarray, axis: int) -> Any:
    """``g`` gathered along ``axis`` at ``source``; index ``g.shape[axis]`` reads zeros."""
    slab = da.zeros(g.shape[:axis] + (1,) + g.shape[axis + 1:], dtype=g.dtype)
    take = (slice(None),) * axis + (source,)
    return da.concatenate([g, slab], axis=axis)[take]


def _add_along(da: Any, g: Any, idx: np.ndarray, axis: int, shape: tuple) -> Any:
    """out[..., idx[i], ...] += g[..., i, ...] along ``axis``, repeats summed by layer."""
    n = shape[axis]
    idx = np.asarray(idx, np.intp) % n
    order = np.argsort(idx, kind="stable")
    rank = np.empty(len(idx), np.intp)  # how many earlier entries share this target
    sorted_idx = idx[order]
    first = np.searchsorted(sorted_idx, sorted_idx, side="left")
    rank[order] = np.arange(len(idx)) - first
    out = None
    for r in range(int(rank.max()) + 1 if len(idx) else 0):
        sel = np.flatnonzero(rank == r)
        source = np.full(n, len(idx), np.intp)
        source[idx[sel]] = sel
        layer = _gather_or_zero(da, g, source, axis)
        out = layer if out is None else out + layer
    return da.zeros(shape, dtype=g.dtype) if out is None else out
