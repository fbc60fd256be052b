"""Piecewise activations of ``torch.nn.functional``: ``hardtanh``, ``relu6``,
``hardswish``, ``mish``, ``prelu``, ``rrelu``, ``hardsigmoid``, ``threshold``,
``hardshrink`` and ``softshrink``, each made of differentiable Tensor operations (so
their gradients are those operations').  A NaN input gives NaN, as torch's; each
piece's test is torch's, so a value on a boundary takes torch's piece (and its
gradient)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor, where
from ..tensor.activation import Hardswish
from .layer_input import layer_input
from .smooth_activation import _real, softplus

__all__ = ["hardshrink", "hardsigmoid", "hardswish", "hardtanh", "mish", "prelu", "relu6",
           "rrelu", "softshrink", "threshold"]


def hardtanh(input: Any, min_val: float = -1.0, max_val: float = 1.0,  # noqa: A002
             inplace: bool = False) -> Tensor:
    """``x`` clamped to ``[min_val, max_val]``."""
    lo, hi = _real("hardtanh", "min_val", min_val), _real("hardtanh", "max_val", max_val)
    if lo > hi:
        raise ValueError(f"hardtanh: min_val={min_val} must be <= max_val={max_val}")
    return as_tensor(input).clamp(lo, hi)


def relu6(input: Any, inplace: bool = False) -> Tensor:  # noqa: A002
    """``min(max(x, 0), 6)``."""
    return hardtanh(input, 0.0, 6.0)


def hardswish(input: Any, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * relu6(x + 3) / 6``."""
    return Hardswish.apply(as_tensor(input)._floating())


def mish(input: Any, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * tanh(softplus(x))``."""
    x = as_tensor(input)
    return x * softplus(x).tanh()


def rrelu(input: Any, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: ``x`` where positive, else ``a x`` with ``a`` drawn from
    U(lower, upper) per element in training (the library's generator; a constant, so
    the gradient there is ``a``), ``(lower + upper) / 2`` otherwise, as torch."""
    fn = "rrelu"
    lo, hi = _real(fn, "lower", lower), _real(fn, "upper", upper)
    if lo > hi:
        raise ValueError(f"{fn}: lower={lower} must be <= upper={upper}")
    x = as_tensor(input)._floating()
    positive = x.data > 0
    if training:
        from ..nn.init import default_generator  # (nn imports functional: at call time)

        slopes = default_generator().uniform(lo, hi, x.shape)
    else:
        slopes = (lo + hi) / 2
    return x * np.where(positive, 1.0, slopes).astype(x.dtype)


def prelu(input: Any, weight: Any) -> Tensor:  # noqa: A002
    """``x`` where positive, else ``weight * x``; ``weight`` has one slope or one per
    channel (dim 1)."""
    w = weight if isinstance(weight, Tensor) else None
    x = layer_input("prelu", input, w)
    w = w if w is not None else Tensor(np.asarray(weight, x.dtype))
    if w.ndim > 1 or (w.numel() != 1 and (x.ndim < 2 or w.numel() != x.shape[1])):
        raise ValueError(f"prelu: weight of shape {w.shape} must hold 1 slope or one per "
                         f"channel of the input of shape {x.shape}")
    if w.numel() != 1:
        w = w.reshape((-1,) + (1,) * (x.ndim - 2))
    elif w.ndim:
        w = w.reshape(())
    return where(x.data > 0, x, w * x)


def hardsigmoid(input: Any, inplace: bool = False) -> Tensor:  # noqa: A002
    """``(x + 3) / 6`` on ``(-3, 3)``, 0 below, 1 above."""
    x = as_tensor(input)._floating()
    d = x.data
    inside = ~((d <= -3) | (d >= 3))  # NaN inside: (NaN + 3) / 6 is NaN, as torch's
    return where(inside, (x + 3.0) / 6.0, (d >= 3).astype(d.dtype))


def threshold(input: Any, threshold: float, value: float,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``."""
    t = _real("threshold", "threshold", threshold)
    v = _real("threshold", "value", value)
    x = as_tensor(input)._floating()
    return where(~(x.data <= t), x, np.asarray(v, x.dtype))  # NaN kept, as torch's


def _lambd(fn: str, lambd: Any) -> float:
    lambd = _real(fn, "lambd", lambd)
    if lambd < 0:
        raise ValueError(f"{fn}: lambd={lambd} must be >= 0")
    return lambd


def hardshrink(input: Any, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """``x`` where ``|x| > lambd``, else 0."""
    lambd = _real("hardshrink", "lambd", lambd)
    x = as_tensor(input)._floating()
    d = x.data
    return where(~((d >= -lambd) & (d <= lambd)), x, np.zeros((), d.dtype))


def softshrink(input: Any, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    lambd = _lambd("softshrink", lambd)
    x = as_tensor(input)._floating()
    d = x.data
    return where(d > lambd, x - lambd, where(d < -lambd, x + lambd, x * 0.0))
