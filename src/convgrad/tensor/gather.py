"""``gather`` along a dim and its adjoint ``scatter_add``, ``cumsum``, and ``Unpool``
(max unpooling's write of each value at its index).

``Gather`` and ``ScatterAdd`` are each other's adjoints (an index may repeat: the
adjoint of a gather adds the gradients of the repeats); ``Cumsum``'s adjoint is the
reversed cumulative sum.  Each ``backward`` is Tensor code, so it is differentiable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function
from ..ops import gather

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["Cumsum", "Gather", "ScatterAdd", "Unpool", "full_index"]


def full_index(index: np.ndarray, dim: int) -> tuple:
    """The NumPy index that ``index`` along ``dim`` means: ``out[i][j][k] = x[i][index[i][j]
    [k]][k]`` for dim 1 (every other dim indexed by its own position)."""
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


class Gather(Function):
    reads = ()

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, index: np.ndarray, dim: int) -> np.ndarray:
        ctx.index, ctx.dim = index, dim
        return gather.gather(x, index, dim, lambda: x[full_index(index, dim)])

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # y = x at index copies elements: each gradient returns to its source, repeats summed
        return ScatterAdd.apply(grad, index=ctx.index, dim=ctx.dim, shape=ctx.inputs[0].shape,
                                like=ctx.inputs[0].data)


class ScatterAdd(Function):
    """``zeros(shape)`` plus ``g`` added at ``index`` along ``dim``: Gather's adjoint
    (laid out as ``like``, the gathered array, where given and the kernel applies)."""

    reads = ()

    @staticmethod
    def forward(ctx: Context, g: np.ndarray, index: np.ndarray, dim: int,
                shape: tuple, like: Any = None) -> np.ndarray:
        ctx.index, ctx.dim = index, dim

        def reference() -> np.ndarray:
            out = np.zeros(shape, g.dtype)
            np.add.at(out, full_index(index, dim), g)
            return out

        if like is None or tuple(like.shape) != tuple(shape):
            return reference()
        return gather.scatter_add(g, index, dim, like, reference)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # out is linear in g: dg = dout at index
        return Gather.apply(grad, index=ctx.index, dim=ctx.dim)


class Cumsum(Function):
    reads = ()

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, dim: int) -> np.ndarray:
        ctx.dim = dim
        return np.cumsum(x, axis=dim, dtype=x.dtype)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # y_i = sum_{j <= i} x_j  =>  dx_j = sum_{i >= j} dy_i: a cumsum of the reversed grad
        d = ctx.dim
        return Cumsum.apply(grad.flip(d), dim=d).flip(d)


class Unpool(Function):
    """``zeros((N, C, length))`` with each ``x[n, c, i]`` written at ``index[n, c, i]``
    (max unpooling: where a pooling found it); a repeated index keeps one of its values
    (the same value, where the windows overlapped on one maximum), as torch."""

    reads = ()

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, index: np.ndarray, length: int) -> np.ndarray:
        ctx.index = index
        out = np.zeros((*x.shape[:2], length), x.dtype)
        out[full_index(index, 2)] = x
        return out

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # y = x written at index: dx = dy at index (a gather; each source of a repeated
        # index reads its gradient, as torch's)
        return Gather.apply(grad, index=ctx.index, dim=2)
