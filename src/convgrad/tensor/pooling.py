"""Differentiable pooling on the fast kernels (:mod:`convgrad.ops.pooling`): two pairs of
Functions closed under differentiation.

* ``y = max_pool(x)`` copies each window's maximum (the workspace ``ws`` says where):
  dx = max_pool_grad(g, ws), the scatter of g to the maxima;
  ``gx = max_pool_grad(gy, ws)`` is linear in gy, its adjoint the gather at the maxima:
  d gy = h[argmax]  (``<scatter(gy), h> = <gy, h[argmax]>``).
* ``y = avg_pool(x)`` is linear: dx = avg_pool_grad(g), and ``avg_pool_grad`` is its
  adjoint, so d gy = avg_pool(h).

The NumPy reference (any dtype, dilation, NaN, ``divisor_override``) is composed of other
Functions in :mod:`convgrad.functional.pooling`; these run only where
:func:`convgrad.ops.pooling.choose` picked oneDNN.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function
from ..ops import pooling as K

__all__ = ["AvgPool", "AvgPoolGrad", "MaxPool", "MaxPoolGrad"]

Tensor = Any  # annotations: these rules see the tensor layer's Tensor


class MaxPool(Function):
    """``y = max_pool(x)`` over ``window`` (see :mod:`convgrad.ops.pooling`), of shape
    ``y_shape``; ``ctx.ws`` records where the maxima are."""

    reads = ()  # the backward reads the workspace, made (and kept) by the forward

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, window: tuple, y_shape: tuple) -> np.ndarray:
        y, ctx.ws = K.max_pool_forward(x, y_shape, window)
        ctx.window = window
        return y

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        x = ctx.inputs[0]
        return (MaxPoolGrad.apply(g, ws=ctx.ws, window=ctx.window, x_shape=x.shape,
                                  like=x.data),)


class MaxPoolGrad(Function):
    """``gx = max_pool_grad(gy)``: each gradient sent to its window's maximum (``ws``)."""

    reads = ()

    @staticmethod
    def forward(ctx: Context, gy: np.ndarray, ws: np.ndarray, window: tuple, x_shape: tuple,
                like: np.ndarray) -> np.ndarray:
        ctx.ws, ctx.window, ctx.x_shape, ctx.like = ws, window, x_shape, like
        return K.max_pool_backward(gy, ws, x_shape, window, like)

    @staticmethod
    def backward(ctx: Context, h: Tensor) -> tuple:
        # the adjoint of the scatter: gather h at the maxima (flat within each plane)
        gy = ctx.inputs[0]
        flat = K.max_pool_indices(ctx.ws, ctx.x_shape, gy.shape, ctx.window, ctx.like)
        n, c = ctx.x_shape[:2]
        plane = int(np.prod(ctx.x_shape[2:]))
        offsets = (np.arange(n * c) * plane).reshape((n, c) + (1,) * (flat.ndim - 2))
        return (h.reshape(-1)[offsets + flat],)


class AvgPool(Function):
    """``y = avg_pool(x)`` over ``window``, the padding counted in the divisor if
    ``include_pad``."""

    reads = ()  # linear

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, window: tuple, y_shape: tuple,
                include_pad: bool) -> np.ndarray:
        ctx.window, ctx.include_pad = window, include_pad
        return K.avg_pool_forward(x, y_shape, window, include_pad)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        x = ctx.inputs[0]
        return (AvgPoolGrad.apply(g, window=ctx.window, x_shape=x.shape,
                                  include_pad=ctx.include_pad, like=x.data),)


class AvgPoolGrad(Function):
    """``gx = avg_pool_grad(gy)``: the adjoint of :class:`AvgPool`."""

    reads = ()  # linear

    @staticmethod
    def forward(ctx: Context, gy: np.ndarray, window: tuple, x_shape: tuple,
                include_pad: bool, like: np.ndarray) -> np.ndarray:
        ctx.window, ctx.include_pad, ctx.like = window, include_pad, like
        return K.avg_pool_backward(gy, x_shape, window, include_pad, like)

    @staticmethod
    def backward(ctx: Context, h: Tensor) -> tuple:
        gy = ctx.inputs[0]
        return (AvgPool.apply(h, window=ctx.window, y_shape=gy.shape,
                              include_pad=ctx.include_pad),)
