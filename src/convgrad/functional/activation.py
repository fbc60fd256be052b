"""Activation functions (``F.relu``, ``F.softmax``, ...); the rules live in the op modules."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor, as_tensor
from ..tensor.elementwise import LeakyReLU
from ..tensor.reduce import LogSoftmax, Softmax
from ..tensor.tensor import _alias, _dim

__all__ = ["leaky_relu", "log_softmax", "relu", "sigmoid", "softmax", "tanh"]


def relu(x: Any) -> Tensor:
    """max(x, 0)."""
    return as_tensor(x).relu()


def leaky_relu(x: Any, negative_slope: float = 0.01) -> Tensor:
    """x where x > 0, else negative_slope * x."""
    if isinstance(negative_slope, bool) or not isinstance(negative_slope, int | float):
        raise TypeError(f"leaky_relu: negative_slope={negative_slope!r} must be a number")
    return LeakyReLU.apply(as_tensor(x), slope=float(negative_slope))


def sigmoid(x: Any) -> Tensor:
    """1 / (1 + exp(-x))."""
    return as_tensor(x).sigmoid()


def tanh(x: Any) -> Tensor:
    return as_tensor(x).tanh()


def _softmax_dim(fn: str, x: Tensor, dim: Any, axis: Any) -> int:
    dim = _alias(fn, "dim", dim, "axis", axis, None)
    if dim is None:
        raise TypeError(f"{fn}: dim is required (the dim that sums to one)")
    return _dim(fn, dim, x.ndim)


def softmax(x: Any, dim: int | None = None, *, axis: int | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (computed stably)."""
    x = as_tensor(x)
    return Softmax.apply(x, dim=_softmax_dim("softmax", x, dim, axis))


def log_softmax(x: Any, dim: int | None = None, *, axis: int | None = None) -> Tensor:
    """x - logsumexp(x) along ``dim`` (computed stably)."""
    x = as_tensor(x)
    return LogSoftmax.apply(x, dim=_softmax_dim("log_softmax", x, dim, axis))
