"""Smooth activation layers and ``Softmax``: ``GELU``, ``SiLU``, ``ELU``, ``Softplus``,
``Softmax`` (arguments and ``repr`` as ``torch.nn``)."""

from __future__ import annotations

import warnings
from typing import Any

from ..functional import activation as Fa
from ..functional import smooth_activation as Fs
from ..tensor import Tensor, as_tensor
from .module import Module

__all__ = ["ELU", "GELU", "SiLU", "Softmax", "Softplus"]


class GELU(Module):
    """``x Phi(x)`` (``approximate="tanh"``: the tanh approximation)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in Fs._GELU_APPROXIMATIONS:
            raise ValueError(f"GELU: approximate={approximate!r} must be one of "
                             f"{Fs._GELU_APPROXIMATIONS}")
        self.approximate = approximate

    def forward(self, input: Any) -> Tensor:
        return Fs.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """``x sigmoid(x)``.  ``inplace`` is accepted; the result is a new Tensor."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Any) -> Tensor:
        return Fs.silu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ELU(Module):
    """``x`` where positive, else ``alpha (e^x - 1)``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        Fs._real("ELU", "alpha", alpha)
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Any) -> Tensor:
        return Fs.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """``log(1 + e^(beta x)) / beta`` (linear where ``beta x > threshold``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        Fs._real("Softplus", "beta", beta)
        Fs._real("Softplus", "threshold", threshold)
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Any) -> Tensor:
        return Fs.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """``exp(x) / sum(exp(x))`` along ``dim``.  ``dim=None`` picks torch's legacy default
    (0 for 0-, 1- and 3-d input, else 1) with a warning."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Any) -> Tensor:
        x = as_tensor(input)
        dim = self.dim
        if dim is None:
            warnings.warn("Softmax: dim=None picks a dim from the input's rank; pass dim",
                          stacklevel=2)
            dim = 0 if x.ndim in (0, 1, 3) else 1
        return Fa.softmax(x, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
