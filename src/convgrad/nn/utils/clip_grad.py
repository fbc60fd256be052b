"""Gradient clipping: rescale all gradients to a total norm, or clamp each entry.

``clip_grad_norm_`` treats the gradients of all ``parameters`` as one vector: its norm
is the norm of the per-tensor norms, and when it exceeds ``max_norm`` every gradient is
multiplied by ``max_norm / (norm + 1e-6)`` (torch's formula, applied always with the
factor clamped to 1).  Each ``.grad`` is replaced by its scaled copy, so a gradient
that is also a node of a recorded graph (``create_graph=True``) is never changed under
it.  Norms are accumulated in float64 and returned in the gradients' dtype.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Real
from typing import Any

import numpy as np

from ...default_dtype import get_default_dtype
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _tensors(fn: str, parameters: Any) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    if not isinstance(parameters, Iterable):
        raise TypeError(f"{fn}: parameters must be a Tensor or an iterable of Tensors, got "
                        f"{type(parameters).__name__}")
    out = list(parameters)
    for i, p in enumerate(out):
        if not isinstance(p, Tensor):
            raise TypeError(f"{fn}: parameters[{i}] is a {type(p).__name__}, expected a Tensor")
    return out


def _real(fn: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real | Tensor):
        raise TypeError(f"{fn}: {name}={value!r} must be a number")
    return float(value)


def _norm(x: np.ndarray, p: float) -> float:
    """``torch.linalg.vector_norm(x, p)`` of one array, accumulated in float64."""
    a = np.abs(np.asarray(x, np.float64)).ravel()
    if a.size == 0:
        return 0.0
    if p == math.inf:
        return float(a.max())
    if p == -math.inf:
        return float(a.min())
    if p == 0:
        return float(np.count_nonzero(a))
    if p == 1:
        return float(a.sum())
    if p == 2:
        return float(np.sqrt(np.dot(a, a)))
    return float(np.sum(a**p) ** (1.0 / p))


def get_total_norm(tensors: Any, norm_type: float = 2.0, error_if_nonfinite: bool = False
                   ) -> Tensor:
    """The ``norm_type``-norm of ``tensors`` (e.g. gradients) taken together, as a Tensor."""
    fn = "get_total_norm"
    tensors = _tensors(fn, tensors)
    p = _real(fn, "norm_type", norm_type)
    if not tensors:
        return Tensor(np.zeros((), get_default_dtype()))
    dtype = np.result_type(*[t.data.dtype for t in tensors])
    total = _norm(np.array([_norm(t.data, p) for t in tensors]), p)
    if error_if_nonfinite and not math.isfinite(total):
        raise ValueError(f"{fn}: the total norm of order {p} of the gradients is {total}, "
                         "which cannot be clipped (pass error_if_nonfinite=False to scale "
                         "by it anyway)")
    return Tensor(np.asarray(total, dtype))


def clip_grads_with_norm_(parameters: Any, max_norm: float, total_norm: Any) -> None:
    """Scale every ``.grad`` by ``min(1, max_norm / (total_norm + 1e-6))``."""
    fn = "clip_grads_with_norm_"
    params = [p for p in _tensors(fn, parameters) if p.grad is not None]
    max_norm = _real(fn, "max_norm", max_norm)
    total = np.asarray(total_norm.data if isinstance(total_norm, Tensor) else total_norm)
    for p in params:
        g = p.grad.data
        dt = g.dtype.type
        with np.errstate(invalid="ignore", divide="ignore"):  # inf norms give nan, as torch
            coef = min(dt(max_norm) / (total.astype(g.dtype) + dt(1e-6)), dt(1.0))
            p.grad = Tensor._wrap(g * dt(coef))


def clip_grad_norm_(parameters: Any, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """Rescale the gradients of ``parameters`` so that their total norm is at most
    ``max_norm``; returns the total norm before clipping (a one-element Tensor)."""
    fn = "clip_grad_norm_"
    params = _tensors(fn, parameters)
    max_norm = _real(fn, "max_norm", max_norm)
    if not isinstance(error_if_nonfinite, bool):
        raise TypeError(f"{fn}: error_if_nonfinite={error_if_nonfinite!r} must be a bool")
    grads = [p.grad for p in params if p.grad is not None]
    try:
        total = get_total_norm(grads, norm_type, error_if_nonfinite)
    except (TypeError, ValueError) as e:
        raise type(e)(str(e).replace("get_total_norm", fn, 1)) from None
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_value_(parameters: Any, clip_value: float) -> None:
    """Clamp every gradient entry of ``parameters`` into ``[-clip_value, clip_value]``."""
    fn = "clip_grad_value_"
    params = _tensors(fn, parameters)
    v = _real(fn, "clip_value", clip_value)
    if not v >= 0:
        raise ValueError(f"{fn}: clip_value={clip_value!r} must be >= 0")
    for p in params:
        if p.grad is not None:
            g = p.grad.data
            p.grad = Tensor._wrap(np.clip(g, g.dtype.type(-v), g.dtype.type(v)))
