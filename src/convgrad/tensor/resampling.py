"""Differentiable resampling on the fast kernels (:mod:`convgrad.ops.resampling`): a pair
of Functions closed under differentiation.

``y = resample(x)`` is linear: dx = resample_grad(g), its adjoint, and
``gx = resample_grad(gy)`` has d gy = resample(h).  The NumPy reference (per-axis maps,
any factor and mode) is in :mod:`convgrad.functional.interpolate`; these run only where
:func:`convgrad.ops.resampling.choose` picked oneDNN.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function
from ..ops import resampling as K

__all__ = ["Resample", "ResampleGrad"]

Tensor = Any  # annotations: these rules see the tensor layer's Tensor


class Resample(Function):
    """``y = resample(x)`` to ``y_shape`` (``mode``: "nearest" or "linear"), in the layout
    of ``like`` (x's own, or, for a gradient of a gradient, the original input's)."""

    reads = ()  # linear

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, y_shape: tuple, mode: str,
                like: np.ndarray | None = None) -> np.ndarray:
        ctx.mode, ctx.like = mode, x if like is None else like
        return K.resample_forward(x, y_shape, mode, ctx.like)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        x = ctx.inputs[0]
        return (ResampleGrad.apply(g, x_shape=x.shape, mode=ctx.mode, like=ctx.like),)


class ResampleGrad(Function):
    """``gx = resample_grad(gy)``: the adjoint of :class:`Resample`."""

    reads = ()  # linear

    @staticmethod
    def forward(ctx: Context, gy: np.ndarray, x_shape: tuple, mode: str, like: np.ndarray
                ) -> np.ndarray:
        ctx.mode, ctx.like = mode, like
        return K.resample_backward(gy, x_shape, mode, like)

    @staticmethod
    def backward(ctx: Context, h: Tensor) -> tuple:
        gy = ctx.inputs[0]
        return (Resample.apply(h, y_shape=gy.shape, mode=ctx.mode, like=ctx.like),)
