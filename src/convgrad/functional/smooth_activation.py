"""Smooth activations: ``gelu``, ``silu``, ``elu``, ``softplus``, ``logsigmoid``.

Each is one :class:`Function` of :mod:`convgrad.tensor.activation` (run by the ``eltwise``
kernel family), its rule written in Tensor operations (differentiable again).
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor, as_tensor
from ..tensor.activation import ELU, GELU, GELUTanh, LogSigmoid, SiLU, Softplus
from ..tensor.args import number as _real

__all__ = ["elu", "gelu", "logsigmoid", "silu", "softplus"]

_GELU_APPROXIMATIONS = ("none", "tanh")


def gelu(input: Any, approximate: str = "none") -> Tensor:
    """``x Phi(x)`` with ``Phi`` the standard normal CDF; ``approximate="tanh"`` uses
    ``x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2``."""
    if approximate not in _GELU_APPROXIMATIONS:
        raise ValueError(f"gelu: approximate={approximate!r} must be one of "
                         f"{_GELU_APPROXIMATIONS}")
    x = as_tensor(input)._floating()
    return (GELUTanh if approximate == "tanh" else GELU).apply(x)


def silu(input: Any, inplace: bool = False) -> Tensor:
    """``x sigmoid(x)`` (swish).  ``inplace`` is accepted; the result is a new Tensor."""
    return SiLU.apply(as_tensor(input)._floating())


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
