"""Differentiable elementwise operations (NumPy broadcasting), activations and casts.

Each ``backward`` is written with Tensor operations, so it is itself differentiable.  A
rule that depends on the output uses ``ctx.output`` (the output Tensor, recorded), so its
own derivative flows back through this node.  Masks and signs (constant almost
everywhere) are plain ndarrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function

Tensor = Any  # annotations: these rules see the tensor layer's Tensor
_CONSTANT = (np.ndarray, np.generic, int, float)  # a non-Tensor operand


def _data(x: Any) -> Any:
    return x if isinstance(x, _CONSTANT) else x.data


def _zero_where(mask: Any, value: Tensor) -> Tensor:
    """``value`` with zeros where ``mask`` (an ndarray or a scalar bool) is true."""
    if np.ndim(mask) == 0:
        return type(value)._wrap(np.zeros_like(value.data)) if mask else value
    return Where.apply(mask, 0.0, value) if mask.any() else value


class Add(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        return a + b

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        # d(a + b)/da = d(a + b)/db = 1
        return (grad.sum_to_size(a.shape) if need_a else None,
                grad.sum_to_size(b.shape) if need_b else None)


class Sub(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        return a - b

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        # d(a - b)/da = 1, d(a - b)/db = -1
        return (grad.sum_to_size(a.shape) if need_a else None,
                (-grad).sum_to_size(b.shape) if need_b else None)


class Mul(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        return a * b

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        # d(ab)/da = b, d(ab)/db = a
        return ((grad * b).sum_to_size(a.shape) if need_a else None,
                (grad * a).sum_to_size(b.shape) if need_b else None)


class Div(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        return a / b

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        # d(a/b)/da = 1/b, d(a/b)/db = -a/b^2
        return ((grad / b).sum_to_size(a.shape) if need_a else None,
                (-grad * a / (b * b)).sum_to_size(b.shape) if need_b else None)


class Neg(Function):
    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return -x

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d(-x)/dx = -1
        return -grad


class Pow(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        return np.power(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        with np.errstate(divide="ignore", invalid="ignore"):  # masked entries may be inf/nan
            return Pow._grads(ctx, grad)

    @staticmethod
    def _grads(ctx: Context, grad: Tensor) -> tuple:
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        ga = gb = None
        if need_a:
            # d(a^b)/da = b a^(b-1); zero where b == 0 (torch's convention, so 0^0 -> 0)
            b_zero = np.equal(_data(b), 0)
            if np.ndim(b_zero) == 0 and b_zero:
                ga = type(a)._wrap(np.zeros_like(a.data))
            else:
                ga = _zero_where(b_zero, grad * b * a ** (b - 1)).sum_to_size(a.shape)
        if need_b:
            # d(a^b)/db = a^b log(a); zero where a == 0 and b >= 0 (torch's convention)
            log_a = np.log(a) if isinstance(a, _CONSTANT) else a.log()
            mask = np.equal(_data(a), 0) & np.greater_equal(_data(b), 0)
            gb = _zero_where(mask, grad * ctx.output * log_a).sum_to_size(b.shape)
        return ga, gb


class Exp(Function):
    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.exp(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d(e^x)/dx = e^x
        return grad * ctx.output


class Log(Function):
    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.log(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d(log x)/dx = 1/x
        return grad / ctx.inputs[0]


class Sqrt(Function):
    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.sqrt(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d(sqrt x)/dx = 1 / (2 sqrt x)
        return grad / (2.0 * ctx.output)


class Abs(Function):
    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.abs(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d|x|/dx = sign(x) (0 at x = 0, as torch)
        return grad * np.sign(ctx.inputs[0].data)


class Clip(Function):
    @staticmethod
    def forward(ctx: Context, x: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
        ctx.lo, ctx.hi = lo, hi
        return np.clip(x, lo, hi)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        x = ctx.inputs[0].data
        inside = np.ones_like(x, dtype=bool)  # (lazy for dask data)
        if ctx.lo is not None:
            inside &= x >= ctx.lo
        if ctx.hi is not None:
            inside &= x <= ctx.hi
        # d clip(x)/dx = 1 where lo <= x <= hi (bounds included, as torch), else 0
        return Where.apply(inside, grad, 0.0)


class ReLU(Function):
    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.maximum(x, 0)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d max(x, 0)/dx = 1 where x > 0, else 0
        return Where.apply(ctx.inputs[0].data > 0, grad, 0.0)


class LeakyReLU(Function):
    @staticmethod
    def forward(ctx: Context, x: np.ndarray, slope: float) -> np.ndarray:
        ctx.slope = slope
        return np.where(x > 0, x, x * slope)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        x = ctx.inputs[0].data
        # d leaky_relu(x)/dx = 1 where x > 0, else slope
        return grad * np.where(x > 0, 1.0, ctx.slope).astype(x.dtype)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.exp(-np.logaddexp(0.0, -x))  # 1 / (1 + e^-x) without overflow

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        y = ctx.output
        # d sigmoid(x)/dx = y (1 - y)
        return grad * y * (1.0 - y)


class Tanh(Function):
    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.tanh(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        y = ctx.output
        # d tanh(x)/dx = 1 - y^2
        return grad * (1.0 - y * y)


class Where(Function):
    @staticmethod
    def forward(ctx: Context, cond: np.ndarray, a: Any, b: Any) -> np.ndarray:
        return np.where(cond, a, b)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        cond, a, b = ctx.inputs
        _, need_a, need_b = ctx.needs_input_grad
        # d where(c, a, b)/da = c, d/db = not c
        return (None,
                Where.apply(cond, grad, 0.0).sum_to_size(a.shape) if need_a else None,
                Where.apply(cond, 0.0, grad).sum_to_size(b.shape) if need_b else None)


class Cast(Function):
    @staticmethod
    def forward(ctx: Context, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
        return x.astype(dtype)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # a cast is the identity on values: cast the gradient back
        return grad.astype(ctx.inputs[0].dtype)
