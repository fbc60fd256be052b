"""Smooth activations: ``gelu``, ``silu``, ``elu``, ``softplus``, ``logsigmoid``, each one
:class:`Function` of :mod:`convgrad.tensor.activation` (run by the ``eltwise`` kernel
family), its rule written in Tensor operations (differentiable again); and ``selu``,
``celu``, ``softsign``, ``tanhshrink`` and ``glu``, made of differentiable Tensor
operations (so their gradients are those operations').
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor, as_tensor, where
from ..tensor.activation import ELU, GELU, GELUTanh, LogSigmoid, SiLU, Softplus
from ..tensor.args import number as _real
from ..tensor.operands import widened

__all__ = ["celu", "elu", "gelu", "glu", "logsigmoid", "selu", "silu", "softplus", "softsign",
           "tanhshrink"]

#: SELU's constants (Klambauer et al., as torch's)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946

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


def selu(input: Any, inplace: bool = False) -> Tensor:  # noqa: A002
    """``scale * elu(x, alpha)`` with SELU's constants.  ``inplace`` is accepted; the
    result is a new Tensor."""
    x = as_tensor(input)._floating()
    return elu(x, SELU_ALPHA) * SELU_SCALE


def celu(input: Any, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` where ``x > 0``, else ``alpha (e^(x / alpha) - 1)``.  ``inplace`` is accepted;
    the result is a new Tensor."""
    alpha = _real("celu", "alpha", alpha)
    if alpha == 0:
        raise ValueError("celu: alpha=0 divides by zero; expected a non-zero alpha")
    x = as_tensor(input)._floating()
    return where(x.data > 0, x, (x / alpha).expm1() * alpha)


def softsign(input: Any) -> Tensor:  # noqa: A002
    """``x / (1 + |x|)``."""
    x = as_tensor(input)._floating()
    return x / (x.abs() + 1.0)


def tanhshrink(input: Any) -> Tensor:  # noqa: A002
    """``x - tanh(x)``, evaluated in float64 for float32 x and rounded once: near 0 the
    difference cancels, and float32's rounding of tanh alone put 4.6x torch's error into
    it (0.5: 3.8e-8 off, torch 8e-9)."""
    (x,), single = widened(as_tensor(input)._floating())
    out = x - x.tanh()
    return out.float() if single else out


def glu(input: Any, dim: int = -1) -> Tensor:  # noqa: A002
    """The gated linear unit: ``a * sigmoid(b)`` of the two halves ``a``, ``b`` of ``x``
    along ``dim``."""
    x = as_tensor(input)._floating()
    if x.ndim == 0:
        raise ValueError("glu: a 0-d input has no dim to halve; expected at least 1 dim")
    if isinstance(dim, bool) or not isinstance(dim, int) or not -x.ndim <= dim < x.ndim:
        raise ValueError(f"glu: dim={dim!r} must be an int in [{-x.ndim}, {x.ndim - 1}] for "
                         f"an input of shape {x.shape}")
    if x.shape[dim] % 2:
        raise ValueError(f"glu: dim {dim} of the input of shape {x.shape} has size "
                         f"{x.shape[dim]}; expected an even size to halve")
    a, b = x.chunk(2, dim)
    return a * b.sigmoid()
