"""Smooth activations: ``gelu``, ``silu``, ``elu``, ``softplus``, ``logsigmoid``.

Where an activation is a product of existing differentiable ops (``silu = x sigmoid(x)``,
``gelu = x Phi(x)``, the tanh form of ``gelu``) it is written as that product, so its
gradients of every order come from those ops; the others are one :class:`Function` each,
their rule written in Tensor operations (differentiable again).  The normal CDF needs
``erf``, which comes from SciPy (imported on first use).
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np

from ..autograd import Context, Function
from ..tensor import Tensor, as_tensor
from ..tensor.elementwise import Where

__all__ = ["elu", "gelu", "logsigmoid", "silu", "softplus"]

_GELU_APPROXIMATIONS = ("none", "tanh")


class NormalCDF(Function):
    """``Phi(x) = (1 + erf(x / sqrt 2)) / 2``, the standard normal distribution function."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        from scipy.special import erfc

        return 0.5 * erfc(x * -math.sqrt(0.5))

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]
        # dPhi/dx = phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
        return g * (x * x * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi))


class ELU(Function):
    reads = (0,)  # the input, not the output: an in-place edit of the output is harmless

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, alpha: float) -> np.ndarray:
        ctx.alpha = alpha
        return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]
        # d elu/dx = 1 for x > 0, alpha e^x otherwise (e^min(x, 0): no overflow on the
        # branch not taken; recorded from x, so its own derivative flows on)
        return g * Where.apply(x.data > 0, 1.0, x.clip(max=0.0).exp() * ctx.alpha)


class Softplus(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
        ctx.beta, ctx.threshold = beta, threshold
        bx = x * beta
        return np.where(bx > threshold, x, np.logaddexp(0.0, bx) / beta)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]
        # d/dx log(1 + e^(b x)) / b = sigmoid(b x); 1 where b x > threshold (the linear part)
        return g * Where.apply(x.data * ctx.beta > ctx.threshold, 1.0, (x * ctx.beta).sigmoid())


class LogSigmoid(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return -np.logaddexp(0.0, -x)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        # d log(sigmoid x)/dx = 1 - sigmoid(x) = sigmoid(-x)
        return g * (-ctx.inputs[0]).sigmoid()


def _real(fn: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{fn}: {name}={value!r} must be a number")
    return float(value)


def gelu(input: Any, approximate: str = "none") -> Tensor:
    """``x Phi(x)`` with ``Phi`` the standard normal CDF; ``approximate="tanh"`` uses
    ``x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2``."""
    if approximate not in _GELU_APPROXIMATIONS:
        raise ValueError(f"gelu: approximate={approximate!r} must be one of "
                         f"{_GELU_APPROXIMATIONS}")
    x = as_tensor(input)
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (inner.tanh() + 1.0)
    return x * NormalCDF.apply(x)


def silu(input: Any, inplace: bool = False) -> Tensor:
    """``x sigmoid(x)`` (swish).  ``inplace`` is accepted; the result is a new Tensor."""
    x = as_tensor(input)
    return x * x.sigmoid()


def elu(input: Any, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where ``x > 0``, else ``alpha (e^x - 1)``.  ``inplace`` is accepted; the result
    is a new Tensor."""
    return ELU.apply(as_tensor(input), alpha=_real("elu", "alpha", alpha))


def softplus(input: Any, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + e^(beta x)) / beta``, and ``x`` itself where ``beta x > threshold``."""
    beta = _real("softplus", "beta", beta)
    if beta == 0:
        raise ValueError("softplus: beta=0 divides by zero; expected a non-zero beta")
    return Softplus.apply(as_tensor(input), beta=beta,
                          threshold=_real("softplus", "threshold", threshold))


def logsigmoid(input: Any) -> Tensor:
    """``log(sigmoid(x)) = -log(1 + e^-x)``, computed without overflow."""
    return LogSigmoid.apply(as_tensor(input))
