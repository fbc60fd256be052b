"""Activation functions (``F.relu``, ``F.softmax``, ...); the rules live in the op modules."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor, args, as_tensor
from ..tensor.elementwise import LeakyReLU
from ..tensor.reduce import LogSoftmax, Softmax, along

__all__ = ["leaky_relu", "log_softmax", "relu", "sigmoid", "softmax", "softmin", "tanh"]


def relu(input: Any, inplace: bool = False) -> Tensor:  # noqa: A002 (torch's names)
    """max(x, 0)."""
    return as_tensor(input).relu()


def leaky_relu(input: Any, negative_slope: float = 0.01, inplace: bool = False  # noqa: A002
               ) -> Tensor:
    """x where x > 0, else negative_slope * x."""
    if isinstance(negative_slope, bool) or not isinstance(negative_slope, int | float):
        raise TypeError(f"leaky_relu: negative_slope={negative_slope!r} must be a number")
    return LeakyReLU.apply(as_tensor(input), slope=float(negative_slope))


def sigmoid(input: Any) -> Tensor:  # noqa: A002
    """1 / (1 + exp(-x))."""
    return as_tensor(input).sigmoid()


def tanh(input: Any) -> Tensor:  # noqa: A002
    return as_tensor(input).tanh()


def _softmax_dim(fn: str, x: Tensor, dim: Any, axis: Any) -> int:
    dim = args.alias(fn, "dim", dim, "axis", axis, None)
    if dim is None:
        raise TypeError(f"{fn}: dim is required (the dim that sums to one)")
    return args.dim(fn, dim, max(x.ndim, 1))  # (a 0-d tensor has dim 0 or -1, as torch)


def _along(op: Any, fn: str, input: Any, dim: Any, axis: Any) -> Tensor:
    x = as_tensor(input)
    return along(op, x, _softmax_dim(fn, x, dim, axis))


def softmax(input: Any, dim: int | None = None, *, axis: int | None = None  # noqa: A002
            ) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (computed stably)."""
    return _along(Softmax, "softmax", input, dim, axis)


def log_softmax(input: Any, dim: int | None = None, *, axis: int | None = None  # noqa: A002
                ) -> Tensor:
    """x - logsumexp(x) along ``dim`` (computed stably)."""
    return _along(LogSoftmax, "log_softmax", input, dim, axis)


def softmin(input: Any, dim: int | None = None, *, axis: int | None = None  # noqa: A002
            ) -> Tensor:
    """``softmax(-x)`` along ``dim``."""
    return softmax(-as_tensor(input)._floating(), dim, axis=axis)
