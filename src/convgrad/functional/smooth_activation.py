"""Smooth activations: ``gelu``, ``silu``, ``elu``, ``softplus``, ``logsigmoid``.

Where an activation is a product of existing differentiable ops (``silu = x sigmoid(x)``,
``gelu = x Phi(x)``, the tanh form of ``gelu``) it is written as that product, so its
gradients of every order come from those ops; the others are one :class:`Function` each,
their rule written in Tensor operations (differentiable again).  The normal CDF needs
``erf``, which comes from SciPy (imported on first use).
"""

from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor, as_tensor
from ..tensor.activation import ELU, LogSigmoid, NormalCDF, Softplus
from ..tensor.args import number as _real

__all__ = ["elu", "gelu", "logsigmoid", "silu", "softplus"]

_GELU_APPROXIMATIONS = ("none", "tanh")


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
