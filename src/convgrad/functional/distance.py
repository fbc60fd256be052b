"""Distances and similarities between two batches of vectors: ``cosine_similarity`` and
``pairwise_distance``, and ``normalize`` (vectors to unit norm); torch's formulas, made
of differentiable Tensor operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor
from ..tensor.args import number as _real
from ..tensor.operands import widened

__all__ = ["broadcast_floats", "cosine_similarity", "normalize", "pairwise_distance"]


def broadcast_floats(fn: str, *tensors: Any) -> list[Tensor]:
    """``tensors`` as float Tensors expanded to their broadcast shape; a ValueError names
    ``fn`` and the shapes that do not broadcast."""
    ts = [as_tensor(t)._floating() for t in tensors]
    try:
        shape = np.broadcast_shapes(*(t.shape for t in ts))
    except ValueError:
        shapes = ", ".join(str(t.shape) for t in ts)
        raise ValueError(f"{fn}: the shapes {shapes} do not broadcast") from None
    return [t.expand(shape) for t in ts]


def _dim(fn: str, dim: Any, ndim: int) -> int:
    n = max(ndim, 1)
    if isinstance(dim, bool) or not isinstance(dim, int) or not -n <= dim < n:
        raise ValueError(f"{fn}: dim={dim!r} must be an int in [{-n}, {n - 1}]")
    return dim


def cosine_similarity(x1: Any, x2: Any, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 / |x1| * x2 / |x2|)`` along ``dim`` (x1 and x2 broadcast), each norm at
    least ``eps``; float32 operands evaluated in float64 and rounded once (in float32 the
    norms' and quotients' roundings gave 2.3x torch's error)."""
    fn = "cosine_similarity"
    a, b = broadcast_floats(fn, x1, x2)
    d = _dim(fn, dim, a.ndim)
    eps = _real(fn, "eps", eps)
    (a, b), single = widened(a, b)
    na = (a * a).sum(d, keepdim=True).sqrt().clamp(min=eps)
    nb = (b * b).sum(d, keepdim=True).sqrt().clamp(min=eps)
    out = ((a / na) * (b / nb)).sum(d)
    return out.float() if single else out


def pairwise_distance(x1: Any, x2: Any, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dim (x1 and x2 broadcast)."""
    fn = "pairwise_distance"
    a, b = broadcast_floats(fn, x1, x2)
    p = np.inf if p == np.inf and not isinstance(p, bool) else _real(fn, "p", p)
    if p <= 0:
        raise ValueError(f"{fn}: p={p} must be > 0 (or inf)")
    d = a - b + _real(fn, "eps", eps)
    dim = -1 if a.ndim else 0
    if d.ndim == 0:
        d = d.reshape(1)
    if p == np.inf:
        return d.abs().max(dim, keepdim=keepdim).values
    if p == 2:
        return (d * d).sum(dim, keepdim=keepdim).sqrt()
    return (d.abs() ** p).sum(dim, keepdim=keepdim) ** (1.0 / p)


def normalize(input: Any, p: float = 2.0, dim: int = 1, eps: float = 1e-12,  # noqa: A002
              out: Any = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim`` (torch's ``F.normalize``)."""
    fn = "normalize"
    if out is not None:
        raise ValueError(f"{fn}: out= is not supported; use the returned tensor")
    x = as_tensor(input)._floating()
    d = _dim(fn, dim, x.ndim)
    p = np.inf if p == np.inf and not isinstance(p, bool) else _real(fn, "p", p)
    return x / x.norm(p, d, keepdim=True).clamp(min=_real(fn, "eps", eps))
