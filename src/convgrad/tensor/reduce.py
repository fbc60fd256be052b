"""Differentiable reductions: sum, max/min, softmax, log-softmax.

Each ``backward`` is written with Tensor operations, so it is itself differentiable;
``reads`` says which values it reads (see :class:`convgrad.autograd.Function`).
(``max(dim)`` with its indices is a ``Gather`` of the argmax, in ``gather``.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import OUTPUT, Context, Function
from ..ops import softmax
from ..ops.reduction import sum_over, total
from .elementwise import kernel_or_rule
from .operands import widened

Tensor = Any  # annotations: these rules see the tensor layer's Tensor


def _keep_shape(shape: tuple, dims: tuple | None) -> tuple:
    """The reduced shape with keepdim=True: reduced dims become 1."""
    return tuple(1 if dims is None or d in dims else n for d, n in enumerate(shape))


class Sum(Function):
    reads = ()

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, dims: tuple | None, keepdim: bool) -> np.ndarray:
        ctx.dims = dims
        return sum_over(x, axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        shape = ctx.inputs[0].shape
        # d(sum_j x_j)/dx_i = 1: each element gets the gradient of the sum it went into
        return grad.reshape(_keep_shape(shape, ctx.dims)).expand(shape)


class Extremum(Function):
    """max (``largest``) or min over ``dims`` (all if None); ties share the gradient evenly
    (as ``torch.max(x)`` and ``torch.amax``)."""

    reads = (0, OUTPUT)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, dims: tuple | None, keepdim: bool,
                largest: bool) -> np.ndarray:
        ctx.dims = dims
        out = (np.max if largest else np.min)(x, axis=dims, keepdims=True)
        if keepdim:
            return out
        return out.reshape([n for d, n in enumerate(x.shape) if dims is not None and d not in dims])

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        x = ctx.inputs[0].data
        keep = _keep_shape(x.shape, ctx.dims)
        hit = x == ctx.output.data.reshape(keep)
        weight = (hit / hit.sum(axis=ctx.dims, keepdims=True)).astype(x.dtype)
        # d max(x)/dx_i = 1/k for each of the k elements equal to the max, 0 elsewhere
        return grad.reshape(keep) * weight


class Softmax(Function):
    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, dim: int) -> np.ndarray:
        ctx.dim = dim

        def reference() -> np.ndarray:
            e = np.exp(x - x.max(axis=dim, keepdims=True))
            return e / total(e, axis=dim, keepdims=True)

        return softmax.forward(x, dim, False, reference)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        y = ctx.output

        def rule() -> Tensor:
            # dy_i/dx_j = y_i (delta_ij - y_j)  =>  dx = y * (g - sum_j g_j y_j)
            (g, yy), single = widened(grad, y)
            out = yy * (g - (g * yy).sum(ctx.dim, keepdim=True))
            return out.float() if single else out

        return _fast_grad(grad, y, ctx.dim, False, rule)


class LogSoftmax(Function):
    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, dim: int) -> np.ndarray:
        ctx.dim = dim

        def reference() -> np.ndarray:
            z = x - x.max(axis=dim, keepdims=True)
            # log-sum-exp shifted by the max: the sum is >= 1, so its log loses nothing
            return z - np.log(total(np.exp(z), axis=dim, keepdims=True))

        return softmax.forward(x, dim, True, reference)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        y = ctx.output

        def rule() -> Tensor:
            # dy_i/dx_j = delta_ij - softmax_j  =>  dx = g - softmax * sum_i g_i; float32 in
            # float64, rounded once as the compiled loops' (it reached 2.03x torch's error)
            (g, yy), single = widened(grad, y)
            out = g - yy.exp() * g.sum(ctx.dim, keepdim=True)
            return out.float() if single else out

        return _fast_grad(grad, y, ctx.dim, True, rule)


def _fast_grad(grad: Tensor, y: Tensor, dim: int, log: bool, rule: Any) -> Tensor:
    """The gradient ``rule()`` (Tensor operations, the math written once), run by the
    softmax family's kernel except under ``create_graph``."""
    return kernel_or_rule(grad, rule, lambda reference: softmax.backward(
        grad.data, y.data, dim, log, reference))


def along(op: type, x: Any, dim: int) -> Any:
    """``op`` (``Softmax`` or ``LogSoftmax``) of the Tensor ``x`` along the checked dim
    ``dim``: an empty result for an empty ``x``, and a 0-d ``x`` through the op as one
    element (softmax 1, log-softmax 0, with their gradients), as torch."""
    if x.numel() == 0:
        return x.clone()
    if x.ndim == 0:
        return op.apply(x.reshape(1), dim=0).reshape(())
    return op.apply(x, dim=dim)
