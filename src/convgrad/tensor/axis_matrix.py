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
        """``M @ x`` along ``axis`` of the ndarray ``x``."""
        y = self._apply_dense(x, axis)
        if y is not None:
            return y
        shape = [1] * x.ndim
        shape[axis] = self.out_size
        out = None
        for t in range(self.index.shape[1]):
            part = np.take(x, self.index[:, t], axis=axis)
            if self.weight is not None:
                part *= self.weight[:, t].astype(x.dtype).reshape(shape)
            if out is None:
                out = part
            else:
                out += part
        return out


    def _apply_dense(self, x: np.ndarray, axis: int) -> np.ndarray | None:
        """``M @ x`` along x's last axis as a matrix product with M dense, or None where
        the taps run.  Along the last axis ``np.take`` gathers single elements: bilinear
        upsampling of (8, 32, 64, W) along W took 2.3 ms (W = 32) and 4.9 ms (W = 64) by
        taps, 1.3 and 3.1 dense; the product's cost grows with the input length, the
        taps' does not (equal at 128, taps 1.5x faster at 256: :data:`DENSE_MAX_IN`), and
        along the other axes ``np.take`` copies whole rows, as fast as the product.  Only
        for float32/64 x without inf or NaN (0 * inf in the product would spread NaN
        over a whole row)."""
        if (axis != x.ndim - 1 or self.in_size > DENSE_MAX_IN or x.dtype.char not in "fd"
                or x.size == 0 or not np.isfinite(x.sum(dtype=np.float64))):
            return None
        return np.matmul(x, self._dense_as(x.dtype).T)

    def _dense_as(self, dtype: np.dtype) -> np.ndarray:
        cache = self.__dict__.setdefault("_dense_cache", {})
        m = cache.get(dtype)
        if m is None:
            m = cache[dtype] = self.dense().astype(dtype)
        return m


#: the largest input length along the last axis for the dense product (measured in
#: ``AxisMatrix._apply_dense``: 1.6-2.4x faster than the taps up to 64)
DENSE_MAX_IN = 64


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
