"""PyTorch's elementwise math beyond the core operators, as Tensor methods (and, through
:mod:`.functions`, as ``cg.<name>(x)``): ``log1p``, ``expm1``, the trigonometric and
hyperbolic functions, ``erf``, the rounding functions and ``sign`` (gradient zero, as
torch's), ``minimum`` / ``maximum`` (a tie sends half the gradient to each side, as
torch), and the predicates ``isnan`` / ``isinf`` / ``isfinite`` (bool, no gradient).

Each Function computes its value with NumPy's ufunc in the input's dtype and writes its
derivative next to it; the rules are Tensor operations, so every order of derivative
follows.  Integer and bool inputs are computed as float32, as torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import OUTPUT, Context, Function, tensor_type
from . import operands

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["MathMethodsMixin"]


def _t():
    return tensor_type()


def _array(x: Any) -> np.ndarray:
    """A Tensor's array, or a constant operand as one."""
    return x.data if isinstance(x, _t()) else np.asarray(x)


class Log1p(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.log1p(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d log(1 + x)/dx = 1 / (1 + x)
        return grad / (ctx.inputs[0] + 1.0)


class Expm1(Function):
    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.expm1(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d(e^x - 1)/dx = e^x = output + 1
        return grad * (ctx.output + 1.0)


class Sin(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.sin(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d sin x/dx = cos x
        return grad * ctx.inputs[0].cos()


class Cos(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.cos(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d cos x/dx = -sin x
        return -(grad * ctx.inputs[0].sin())


class Tan(Function):
    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.tan(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d tan x/dx = 1 + tan^2 x
        return grad * (ctx.output * ctx.output + 1.0)


class Atan(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.arctan(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d atan x/dx = 1 / (1 + x^2)
        x = ctx.inputs[0]
        return grad / (x * x + 1.0)


class Sinh(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.sinh(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d sinh x/dx = cosh x
        return grad * ctx.inputs[0].cosh()


class Cosh(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return np.cosh(x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d cosh x/dx = sinh x
        return grad * ctx.inputs[0].sinh()


class Erf(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        from scipy.special import erf  # (imported on first use: ~70 ms)

        return erf(x).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d erf x/dx = 2 / sqrt(pi) e^(-x^2)
        x = ctx.inputs[0]
        return grad * ((-(x * x)).exp() * (2.0 / np.sqrt(np.pi)))


class Stepwise(Function):
    """``floor``, ``ceil``, ``round`` (half to even, as torch), ``trunc`` and ``sign``
    (0 for NaN, as torch): piecewise constant, so zero gradient everywhere (torch's
    convention, also at the jumps)."""

    reads = ()
    _UFUNCS = {"floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc,
               "sign": lambda x: np.sign(np.nan_to_num(x, nan=0.0))}

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, name: str) -> np.ndarray:
        return Stepwise._UFUNCS[name](x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # a step function's derivative is 0 (where it exists; torch takes 0 at the jumps,
        # and zeros, not grad * 0, so a NaN gradient does not pass either)
        return _t()._wrap(np.zeros_like(grad.data))


class Extremum(Function):
    """``maximum(a, b)`` / ``minimum(a, b)`` elementwise, broadcast; NaN wins, as torch."""

    reads = (0, 1)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray, larger: bool) -> np.ndarray:
        ctx.larger = larger
        return np.maximum(a, b) if larger else np.minimum(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        # the chosen side takes the gradient, a tie splits it in half; torch's masks:
        # a side loses it only where the other is strictly beyond it (so with a NaN on
        # either side both keep it, as torch)
        a, b = ctx.inputs
        ad, bd = _array(a), _array(b)
        half = np.where(ad == bd, 0.5, 1.0)
        beyond_b, beyond_a = (ad < bd, ad > bd) if ctx.larger else (ad > bd, ad < bd)
        share_a = np.where(beyond_b, 0.0, half)
        share_b = np.where(beyond_a, 0.0, half)
        need_a, need_b = ctx.needs_input_grad
        dtype = np.result_type(ad, bd)
        ga = (grad * share_a.astype(dtype)).sum_to_size(np.shape(ad)) if need_a else None
        gb = (grad * share_b.astype(dtype)).sum_to_size(np.shape(bd)) if need_b else None
        return ga, gb


class LogBase(Function):
    """``log2`` / ``log10``: NumPy's own (float32 evaluated in float64 and rounded once),
    not ``log(x) / ln(base)`` with its second rounding."""

    reads = (0,)
    _UFUNCS = {2: np.log2, 10: np.log10}

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, base: int) -> np.ndarray:
        ctx.base = base
        if x.dtype == np.float32:  # NumPy's float32 log10 is off by 2.2x torch's error
            return LogBase._UFUNCS[base](x.astype(np.float64)).astype(np.float32)
        return LogBase._UFUNCS[base](x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # d log_b(x)/dx = 1 / (x ln b)
        x = ctx.inputs[0]
        return grad / (x * float(np.log(ctx.base)))


class Triangle(Function):
    """``tril`` / ``triu``: the last two dims' lower (upper) triangle from the
    ``diagonal``-th diagonal, zeros elsewhere.  A mask, so the gradient is the same
    triangle of the output's."""

    reads = ()

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, lower: bool, diagonal: int) -> np.ndarray:
        ctx.lower, ctx.diagonal = lower, diagonal
        return np.tril(x, diagonal) if lower else np.triu(x, diagonal)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        return Triangle.apply(grad, lower=ctx.lower, diagonal=ctx.diagonal)


def _diagonal(fn: str, diagonal: Any) -> int:
    if isinstance(diagonal, bool) or not isinstance(diagonal, int | np.integer):
        raise TypeError(f"{fn}: diagonal={diagonal!r} must be an int")
    return int(diagonal)


class MathMethodsMixin:
    """The methods; ``self`` is a Tensor."""

    __slots__ = ()

    def log1p(self) -> Tensor:
        return Log1p.apply(self._floating())

    def log2(self) -> Tensor:
        return LogBase.apply(self._floating(), base=2)

    def log10(self) -> Tensor:
        return LogBase.apply(self._floating(), base=10)

    def logsumexp(self, dim: Any, keepdim: bool = False) -> Tensor:
        """``log(sum(exp(x)))`` over ``dim`` without overflow: shifted by the (constant)
        maximum, an infinite maximum by 0 (torch's); its gradient is the softmax."""
        x = self._floating()
        m = x.amax(dim, keepdim=True).data
        m = np.where(np.isfinite(m), m, 0).astype(x.dtype)
        s = (x - _t()._wrap(m)).exp().sum(dim, keepdim=keepdim).log()
        return s + _t()._wrap(m if keepdim else m.reshape(s.shape))

    def isclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
                equal_nan: bool = False) -> Tensor:
        """``|a - b| <= atol + rtol |b|`` elementwise (bool, no gradient), as torch."""
        b = other.data if isinstance(other, _t()) else other
        return _t()._wrap(np.isclose(self.data, b, rtol=rtol, atol=atol, equal_nan=equal_nan))

    def allclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
                 equal_nan: bool = False) -> bool:
        b = other.data if isinstance(other, _t()) else other
        return bool(np.allclose(self.data, b, rtol=rtol, atol=atol, equal_nan=equal_nan))

    def _triangle(self, fn: str, lower: bool, diagonal: Any) -> Tensor:
        if self.ndim < 2:
            raise ValueError(f"{fn}: input of shape {tuple(self.shape)} must have at least "
                             "2 dims")
        k = _diagonal(fn, diagonal)
        if self.data.dtype.kind != "f":  # integer and bool tensors: no gradient to carry
            return _t()._wrap(np.tril(self.data, k) if lower else np.triu(self.data, k))
        return Triangle.apply(self, lower=lower, diagonal=k)

    def tril(self, diagonal: int = 0) -> Tensor:
        return self._triangle("tril", True, diagonal)

    def triu(self, diagonal: int = 0) -> Tensor:
        return self._triangle("triu", False, diagonal)

    def expm1(self) -> Tensor:
        return Expm1.apply(self._floating())

    def sin(self) -> Tensor:
        return Sin.apply(self._floating())

    def cos(self) -> Tensor:
        return Cos.apply(self._floating())

    def tan(self) -> Tensor:
        return Tan.apply(self._floating())

    def atan(self) -> Tensor:
        return Atan.apply(self._floating())

    arctan = atan

    def sinh(self) -> Tensor:
        return Sinh.apply(self._floating())

    def cosh(self) -> Tensor:
        return Cosh.apply(self._floating())

    def erf(self) -> Tensor:
        return Erf.apply(self._floating())

    def _stepwise(self, name: str) -> Tensor:
        if self.data.dtype.kind != "f":  # an integer stays itself (sign: its sign), as torch
            return _t()._wrap(np.sign(self.data) if name == "sign" else self.data.copy())
        return Stepwise.apply(self, name=name)

    def floor(self) -> Tensor:
        return self._stepwise("floor")

    def ceil(self) -> Tensor:
        return self._stepwise("ceil")

    def round(self, decimals: int = 0) -> Tensor:
        if decimals != 0:
            scale = 10.0 ** int(decimals)
            return (self * scale)._stepwise("round") / scale
        return self._stepwise("round")

    def trunc(self) -> Tensor:
        return self._stepwise("trunc")

    fix = trunc

    def sign(self) -> Tensor:
        return self._stepwise("sign")

    sgn = sign

    def _pairwise_extremum(self, other: Any, larger: bool) -> Tensor:
        a, b = operands.pair(self, other)
        if not isinstance(b, _t() | np.ndarray):  # a Python number: the tensor's dtype
            b = np.asarray(b, a.data.dtype)
        return Extremum.apply(a, b, larger=larger)

    def maximum(self, other: Any) -> Tensor:
        return self._pairwise_extremum(other, True)

    def minimum(self, other: Any) -> Tensor:
        return self._pairwise_extremum(other, False)

    def subtract(self, other: Any, *, alpha: Any = 1) -> Tensor:
        """torch's alias of ``sub``."""
        return self.sub(other, alpha=alpha)

    def negative(self) -> Tensor:
        """torch's alias of ``neg``."""
        return -self

    def isnan(self) -> Tensor:
        return _t()._wrap(np.isnan(self.data))

    def isinf(self) -> Tensor:
        return _t()._wrap(np.isinf(self.data))

    def isfinite(self) -> Tensor:
        return _t()._wrap(np.isfinite(self.data))
