"""The Functions behind torch's special elementwise math (the methods are in
:mod:`.special_methods`): inverse trigonometric and hyperbolic functions, ``atan2``,
``hypot``, ``exp2``, ``copysign``, ``nextafter``, and SciPy's special functions (``erfc``,
``erfinv``, ``erfcx``, ``lgamma``, ``digamma``, ``polygamma``, the modified Bessel
functions ``i0``, ``i0e``, ``i1``, ``i1e``, ``ndtri``, ``log_ndtr``, ``entr``, and the
regularized incomplete gamma functions).

A float32 value is computed in float64 and rounded once (SciPy's float32 loops and
NumPy's float32 ufuncs may round more than once).  Each derivative is written with Tensor
operations (``d lgamma = digamma``, ``d digamma = polygamma(1, .)``, ...), so every order
of derivative follows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import OUTPUT, Context, Function, tensor_type
from . import operands

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["Arc", "Atan2", "Copysign", "Entr", "Erfc", "Erfcx", "Erfinv", "Exp2",
           "Gammainc", "Hypot", "I0", "I0e", "I1", "I1e", "Lgamma", "LogNdtr", "Ndtri",
           "Nextafter", "Polygamma", "in_float64", "scipy_special"]

_SQRT_PI = float(np.sqrt(np.pi))
_SQRT_2PI = float(np.sqrt(2 * np.pi))


def _t():
    return tensor_type()


def in_float64(f: Any, *xs: np.ndarray) -> np.ndarray:
    """``f(*xs)`` evaluated in float64 and rounded once to the inputs' dtype."""
    dtype = np.result_type(*xs)
    with np.errstate(all="ignore"):
        return np.asarray(f(*(np.asarray(x, np.float64) for x in xs))).astype(dtype)


def scipy_special(name: str) -> Any:
    """SciPy's ``scipy.special.<name>`` (SciPy imported on first use: ~70 ms)."""
    import scipy.special

    return getattr(scipy.special, name)


def _const(a: np.ndarray) -> Tensor:
    return _t()._wrap(np.asarray(a))


def _zero_where(mask: np.ndarray, value: Tensor, like: Any) -> Tensor:
    """``value`` with exact zeros where ``mask``."""
    if not mask.any():
        return value
    zeros = np.zeros(np.broadcast_shapes(mask.shape, value.shape), value.data.dtype)
    return operands.where(mask, _const(zeros), value)


class Arc(Function):
    """``acos``, ``asin``, ``acosh``, ``asinh``, ``atanh``: NumPy's values;
    d acos = -1/sqrt(1 - x^2), d asin = 1/sqrt(1 - x^2), d acosh = 1/sqrt(x^2 - 1),
    d asinh = 1/sqrt(x^2 + 1), d atanh = 1/(1 - x^2)."""

    reads = (0,)
    _UFUNCS = {"acos": np.arccos, "asin": np.arcsin, "acosh": np.arccosh,
               "asinh": np.arcsinh, "atanh": np.arctanh}

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, name: str) -> np.ndarray:
        ctx.name = name
        return in_float64(Arc._UFUNCS[name], x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        x, name = ctx.inputs[0], ctx.name
        if name == "acos":
            return -grad * (1 - x * x).rsqrt()
        if name == "asin":
            return grad * (1 - x * x).rsqrt()
        if name == "acosh":
            return grad * (x * x - 1).rsqrt()
        if name == "asinh":
            return grad * (x * x + 1).rsqrt()
        return grad / (1 - x * x)


class Atan2(Function):
    """``atan2(y, x)``, broadcast; d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2), both 0
    at (0, 0), as torch."""

    reads = (0, 1)

    @staticmethod
    def forward(ctx: Context, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        return in_float64(np.arctan2, y, x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        y, x = ctx.inputs
        r2 = x * x + y * y
        zero = r2.data == 0
        recip = _zero_where(zero, 1 / operands.where(zero, _const(np.ones_like(r2.data)), r2),
                            r2)
        need_y, need_x = ctx.needs_input_grad
        return ((grad * x * recip).sum_to_size(y.shape) if need_y else None,
                (grad * -y * recip).sum_to_size(x.shape) if need_x else None)


class Hypot(Function):
    """``sqrt(x^2 + y^2)`` without overflow (NumPy's); d/dx = x / h, d/dy = y / h (NaN at
    (0, 0), as torch)."""

    reads = (0, 1, OUTPUT)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return in_float64(np.hypot, x, y)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        x, y = ctx.inputs
        h = ctx.output
        need_x, need_y = ctx.needs_input_grad
        return ((grad * x / h).sum_to_size(x.shape) if need_x else None,
                (grad * y / h).sum_to_size(y.shape) if need_y else None)


class Exp2(Function):
    """``2^x``; d/dx = 2^x ln 2."""

    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(np.exp2, x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        return grad * ctx.output * float(np.log(2.0))


class Copysign(Function):
    """``|x|`` with the sign of ``other``; d/dx = copysign(x, other) / x (0 where x is 0,
    NaN at an infinite x, as torch), d/dother = 0."""

    reads = (0, OUTPUT)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, other: np.ndarray) -> np.ndarray:
        return np.copysign(x, other)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        x, other = ctx.inputs
        xd = x.data
        with np.errstate(all="ignore"):
            ratio = np.where(xd == 0, 0, ctx.output.data / xd).astype(grad.data.dtype)
        need_x, need_o = ctx.needs_input_grad
        zeros = _const(np.zeros(other.shape, grad.data.dtype)) if need_o else None
        return ((grad * _const(ratio)).sum_to_size(x.shape) if need_x else None, zeros)


class Nextafter(Function):
    """The next float after ``x`` towards ``other``; d/dx = 1 (0 where x == other, where
    the value is other), d/dother = 0: torch's."""

    reads = (0, 1)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, other: np.ndarray) -> np.ndarray:
        return np.nextafter(x, other)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        x, other = ctx.inputs
        need_x, need_o = ctx.needs_input_grad
        zeros = _const(np.zeros(other.shape, grad.data.dtype)) if need_o else None
        moves = np.broadcast_to(x.data != other.data, grad.shape).astype(grad.data.dtype)
        return ((grad * _const(moves)).sum_to_size(x.shape) if need_x else None, zeros)


class Erfc(Function):
    """``1 - erf(x)`` (SciPy's, accurate in the tail); d/dx = -2/sqrt(pi) e^(-x^2)."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(scipy_special("erfc"), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        x = ctx.inputs[0]
        return grad * ((-(x * x)).exp() * (-2.0 / _SQRT_PI))


class Erfcx(Function):
    """``e^(x^2) erfc(x)``; d/dx = 2 x erfcx(x) - 2/sqrt(pi)."""

    reads = (0, OUTPUT)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(scipy_special("erfcx"), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        return grad * (2 * ctx.inputs[0] * ctx.output - 2.0 / _SQRT_PI)


class Erfinv(Function):
    """The inverse of ``erf``; d/dx = sqrt(pi)/2 e^(erfinv(x)^2)."""

    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(scipy_special("erfinv"), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        y = ctx.output
        return grad * ((y * y).exp() * (_SQRT_PI / 2))


class Lgamma(Function):
    """``log |Gamma(x)|``; d/dx = digamma(x)."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(scipy_special("gammaln"), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        return grad * ctx.inputs[0].digamma()


class Polygamma(Function):
    """The ``n``-th derivative of digamma (``n = 0``: digamma itself, -inf at 0 as torch);
    d/dx = polygamma(n + 1, x)."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, n: int) -> np.ndarray:
        ctx.n = n
        if n == 0:
            return in_float64(scipy_special("psi"), x)
        return in_float64(lambda v: scipy_special("polygamma")(n, v), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        return grad * Polygamma.apply(ctx.inputs[0], n=ctx.n + 1)


class I0(Function):
    """The modified Bessel function of the first kind, order 0; d/dx = i1(x)."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(scipy_special("i0"), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        return grad * I1.apply(ctx.inputs[0])


class I0e(Function):
    """``e^(-|x|) i0(x)``; d/dx = i1e(x) - sign(x) i0e(x)."""

    reads = (0, OUTPUT)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(scipy_special("i0e"), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        x = ctx.inputs[0]
        return grad * (I1e.apply(x) - ctx.output * _const(np.sign(x.data)))


class I1(Function):
    """The modified Bessel function of the first kind, order 1; d/dx = i0(x) - i1(x)/x
    (1/2 at 0)."""

    reads = (0, OUTPUT)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(scipy_special("i1"), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        x = ctx.inputs[0]
        zero = x.data == 0
        safe = operands.where(zero, _const(np.ones_like(x.data)), x)
        d = I0.apply(x) - ctx.output / safe
        return grad * operands.where(zero, _const(np.full_like(x.data, 0.5)), d)


class I1e(Function):
    """``e^(-|x|) i1(x)``; d/dx = i0e(x) - i1e(x) (sign(x) + 1/x) (1/2 at 0)."""

    reads = (0, OUTPUT)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(scipy_special("i1e"), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        x = ctx.inputs[0]
        zero = x.data == 0
        safe = operands.where(zero, _const(np.ones_like(x.data)), x)
        d = I0e.apply(x) - ctx.output * (_const(np.sign(x.data)) + 1 / safe)
        return grad * operands.where(zero, _const(np.full_like(x.data, 0.5)), d)


class Ndtri(Function):
    """The inverse of the standard normal CDF; d/dx = sqrt(2 pi) e^(ndtri(x)^2 / 2)."""

    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(scipy_special("ndtri"), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        y = ctx.output
        return grad * ((y * y * 0.5).exp() * _SQRT_2PI)


class LogNdtr(Function):
    """``log`` of the standard normal CDF (accurate in both tails); d/dx =
    e^(-x^2/2 - log_ndtr(x)) / sqrt(2 pi)."""

    reads = (0, OUTPUT)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(scipy_special("log_ndtr"), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        x = ctx.inputs[0]
        return grad * ((x * x * -0.5 - ctx.output).exp() / _SQRT_2PI)


class Entr(Function):
    """``-x ln x`` (0 at 0, -inf below); d/dx = -(ln x + 1) (inf at 0, NaN below, as
    torch)."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return in_float64(scipy_special("entr"), x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        return grad * -(ctx.inputs[0].log() + 1)


class Gammainc(Function):
    """The regularized lower (``upper=False``) or upper incomplete gamma function of
    ``(a, x)``; d/dx = ±e^((a - 1) ln x - x - lgamma(a)).  torch has no derivative in
    ``a``: asking for it raises NotImplementedError, as torch."""

    reads = (0, 1)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
        ctx.upper = upper
        return in_float64(scipy_special("gammaincc" if upper else "gammainc"), a, x)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        a, x = ctx.inputs
        need_a, need_x = ctx.needs_input_grad
        name = "gammaincc" if ctx.upper else "gammainc"
        if need_a:
            raise NotImplementedError(f"{name}: the derivative with respect to input (a) is "
                                      "not implemented (as in torch)")
        if not isinstance(a, _t()):
            a = _const(a)
        d = ((a - 1) * x.log() - x - a.lgamma()).exp()
        return None, ((-grad if ctx.upper else grad) * d).sum_to_size(x.shape)
