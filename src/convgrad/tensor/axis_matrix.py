"""Constant sparse matrices applied along one axis: resampling and adaptive pooling.

Interpolation and adaptive averaging are separable: along each spatial axis, every
output is a fixed weighted sum of a few inputs, ``y[o] = sum_t w[o, t] x[idx[o, t]]``.
:class:`AxisMatrix` holds such a matrix in a padded row format (``T`` taps per row;
missing taps have weight 0) and :class:`AxisMap` applies it to a Tensor.  The map is
linear in ``x``, so its gradient is the transposed matrix applied to the output's
gradient: gradients of any order are the same operation again.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ..autograd import Context, Function
from ..ops import resampling as K

__all__ = ["AxisMap", "AxisMatrix"]


class AxisMatrix:
    """An ``(out_size, in_size)`` matrix with at most ``T`` non-zeros per row.

    ``index`` (out_size, T) holds column numbers, ``weight`` (out_size, T) the values
    (float64); ``weight=None`` means every tap has weight 1 (a selection, as nearest
    resampling).
    """

    def __init__(self, index: np.ndarray, weight: np.ndarray | None, in_size: int) -> None:
        self.index = np.ascontiguousarray(index, dtype=np.intp)
        self.weight = None if weight is None else np.ascontiguousarray(weight, np.float64)
        self.in_size = int(in_size)
        self.out_size = self.index.shape[0]

    def dense(self) -> np.ndarray:
        """The matrix as a dense float64 array (for tests and small cases)."""
        m = np.zeros((self.out_size, self.in_size))
        rows = np.repeat(np.arange(self.out_size), self.index.shape[1])
        w = 1.0 if self.weight is None else self.weight.ravel()
        np.add.at(m, (rows, self.index.ravel()), w)
        return m

    @cached_property
    def T(self) -> AxisMatrix:
        """The transpose, in the same format (columns grouped into rows)."""
        taps = self.index.shape[1]
        rows = np.repeat(np.arange(self.out_size), taps)
        cols = self.index.ravel()
        vals = np.ones(rows.size) if self.weight is None else self.weight.ravel()
        keep = vals != 0
        rows, cols, vals = rows[keep], cols[keep], vals[keep]
        order = np.argsort(cols, kind="stable")
        rows, cols, vals = rows[order], cols[order], vals[order]
        counts = np.bincount(cols, minlength=self.in_size)
        width = max(int(counts.max(initial=0)), 1)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        slot = np.arange(cols.size) - starts[cols]
        index = np.zeros((self.in_size, width), np.intp)
        weight = np.zeros((self.in_size, width))
        index[cols, slot] = rows
        weight[cols, slot] = vals
        if self.weight is None and np.all(counts == width):
            return AxisMatrix(index, None, self.out_size)
        return AxisMatrix(index, weight, self.out_size)

    def apply(self, x: np.ndarray, axis: int) -> np.ndarray:
        """``M @ x`` along ``axis`` of the ndarray ``x`` (the ``resample`` family's
        :func:`~convgrad.ops.resampling.axis_map`)."""
        return K.axis_map(x, axis, self.index, self.weight, self.dense_as)

    def dense_as(self, dtype: np.dtype) -> np.ndarray:
        """:meth:`dense` in ``dtype``, kept for the matrix's life."""
        cache = self.__dict__.setdefault("_dense_cache", {})
        m = cache.get(dtype)
        if m is None:
            m = cache[dtype] = self.dense().astype(dtype)
        return m


class AxisMap(Function):
    """``y = M x`` along ``axis`` for a constant :class:`AxisMatrix` ``M``."""

    reads = ()  # linear in x: the rule reads only the constant M

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, matrix: AxisMatrix, axis: int) -> np.ndarray:
        ctx.matrix, ctx.axis = matrix, axis
        return matrix.apply(x, axis)

    @staticmethod
    def backward(ctx: Context, g):
        # y = M x is linear: dx = M^T dy
        return AxisMap.apply(g, matrix=ctx.matrix.T, axis=ctx.axis)
