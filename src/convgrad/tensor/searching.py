"""Searching functions, as torch's: ``searchsorted``, ``bucketize``, ``isin`` and
``unravel_index``.  Their results are indices or masks: integer or bool, no gradient."""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from ..autograd import tensor_type

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["bucketize", "isin", "searchsorted", "unravel_index"]


def _array(x: Any) -> np.ndarray:
    return x.data if isinstance(x, tensor_type()) else np.asarray(x)


def _side(fn: str, right: Any, side: Any) -> str:
    if not isinstance(right, bool | np.bool_):
        raise TypeError(f"{fn}: right={right!r} must be a bool")
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise ValueError(f"{fn}: side={side!r} must be 'left' or 'right'")
    if right and side == "left":
        raise ValueError(f"{fn}: side='left' contradicts right=True; pass one of them")
    return side


def _indices(out: np.ndarray, out_int32: bool) -> Tensor:
    return tensor_type()._wrap(np.asarray(out, np.int32 if out_int32 else np.int64))


def searchsorted(sorted_sequence: Any, input: Any, *, out_int32: bool = False,  # noqa: A002
                 right: bool = False, side: str | None = None, sorter: Any = None) -> Tensor:
    """For each value of ``input``, the index in ``sorted_sequence`` (sorted along its
    last dim) where it would go to keep the order: before equal values (``side='left'``,
    the default) or after them (``right=True`` / ``side='right'``).  An N-d sequence
    searches each row for the matching row of ``input``; ``sorter`` holds the indices
    that sort an unsorted sequence.  int64, or int32 with ``out_int32``."""
    fn = "searchsorted"
    seq = _array(sorted_sequence)
    values = _array(input)
    how = _side(fn, right, side)
    if seq.ndim == 0:
        raise ValueError(f"{fn}: sorted_sequence must have at least 1 dim")
    if sorter is not None:
        order = _array(sorter)
        if order.dtype.kind not in "iu" or order.shape != seq.shape:
            raise ValueError(f"{fn}: sorter must be an integer tensor of sorted_sequence's "
                             f"shape {seq.shape}, got {order.dtype} of shape {order.shape}")
        if ((order < 0) | (order >= seq.shape[-1])).any():
            raise ValueError(f"{fn}: sorter holds an index out of range [0, "
                             f"{seq.shape[-1]})")
        seq = np.take_along_axis(seq, order.astype(np.intp), -1)
    if seq.ndim == 1:
        return _indices(np.searchsorted(seq, values, side=how), out_int32)
    if values.ndim != seq.ndim or values.shape[:-1] != seq.shape[:-1]:
        raise ValueError(f"{fn}: input of shape {values.shape} must match the leading dims "
                         f"of sorted_sequence of shape {seq.shape}")
    rows, vals = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
    out = np.stack([np.searchsorted(r, v, side=how) for r, v in zip(rows, vals)]) \
        if rows.shape[0] else np.zeros(vals.shape, np.int64)
    return _indices(out.reshape(values.shape), out_int32)


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False,  # noqa: A002
              right: bool = False) -> Tensor:
    """The bucket of each value of ``input`` between the increasing 1-d ``boundaries``:
    i with ``boundaries[i-1] < v <= boundaries[i]`` (``right=True``: ``boundaries[i-1]
    <= v < boundaries[i]``)."""
    b = _array(boundaries)
    if b.ndim != 1:
        raise ValueError(f"bucketize: boundaries of shape {b.shape} must be 1-d")
    return searchsorted(b, input, out_int32=out_int32, right=right)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each of ``elements`` is among ``test_elements`` (a bool tensor of
    elements' shape; its negation with ``invert``)."""
    a, b = _array(elements), _array(test_elements)
    return tensor_type()._wrap(np.asarray(np.isin(a, b, assume_unique=bool(assume_unique),
                                                  invert=bool(invert))))


def unravel_index(indices: Any, shape: Any) -> tuple:
    """The coordinates in a tensor of ``shape`` of the flat (row-major) ``indices``: one
    int64 tensor per dim, each of indices' shape."""
    fn = "unravel_index"
    idx = _array(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{fn}: indices of dtype {idx.dtype} must be an integer tensor")
    dims = (shape,) if isinstance(shape, Integral) else tuple(shape)
    if any(isinstance(s, bool) or not isinstance(s, Integral) or s < 0 for s in dims):
        raise ValueError(f"{fn}: shape={shape!r} must hold ints >= 0")
    size = int(np.prod(dims, dtype=np.int64))
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        raise ValueError(f"{fn}: index {int(idx[bad].reshape(-1)[0])} is out of range for "
                         f"shape {dims} of {size} elements")
    flat = np.where(idx < 0, idx + size, idx).astype(np.int64)
    T = tensor_type()
    return tuple(T._wrap(np.asarray(c, np.int64)) for c in np.unravel_index(flat, dims))
