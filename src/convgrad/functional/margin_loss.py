"""Margin, embedding and likelihood losses with ``torch.nn.functional``'s signatures:
``margin_ranking_loss``, ``hinge_embedding_loss``, ``soft_margin_loss``,
``cosine_embedding_loss``, ``triplet_margin_loss``, ``multilabel_soft_margin_loss``,
``multi_margin_loss``, ``multilabel_margin_loss``, ``poisson_nll_loss`` and
``gaussian_nll_loss``, composed of
differentiable Tensor operations (gradients of any order), ``reduction`` as the other
losses (:func:`.loss.reduction_arg`).  float32 operands
are evaluated in float64 and the loss rounded once: in float32 the cosine's and the
Poisson terms' roundings gave up to 2.5x torch's error."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor, where
from ..tensor.args import number as _real
from ..tensor.operands import widened as _wide
from .distance import broadcast_floats as _broadcast
from .distance import pairwise_distance
from .loss import reduce_loss, reduction_arg
from .smooth_activation import logsigmoid, softplus

__all__ = ["cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss",
           "margin_ranking_loss", "multi_margin_loss", "multilabel_margin_loss",
           "multilabel_soft_margin_loss",
           "poisson_nll_loss",
           "soft_margin_loss", "triplet_margin_loss"]


def _out(loss: Tensor, red: str, single: bool) -> Tensor:
    out = reduce_loss(loss, red)
    return out.float() if single else out


def margin_ranking_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0,
                        size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target (input1 - input2) + margin)``, target +-1."""
    fn = "margin_ranking_loss"
    red = reduction_arg(fn, size_average, reduce, reduction)
    (x1, x2, y), single = _wide(*_broadcast(fn, input1, input2, target))
    loss = (-y * (x1 - x2) + _real(fn, "margin", margin)).clamp(min=0.0)
    return _out(loss, red, single)


def hinge_embedding_loss(input: Any, target: Any, margin: float = 1.0,  # noqa: A002
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1 (torch's
    sum of the two terms, each where target is not the other value)."""
    fn = "hinge_embedding_loss"
    red = reduction_arg(fn, size_average, reduce, reduction)
    (x, y), single = _wide(*_broadcast(fn, input, target))
    zero = np.zeros((), x.dtype)
    margin_part = where(y.data != 1, (_real(fn, "margin", margin) - x).clamp(min=0.0), zero)
    self_part = where(y.data != -1, x, zero)
    return _out(margin_part + self_part, red, single)


def soft_margin_loss(input: Any, target: Any, size_average: Any = None,  # noqa: A002
                     reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target input))``."""
    fn = "soft_margin_loss"
    red = reduction_arg(fn, size_average, reduce, reduction)
    (x, y), single = _wide(*_broadcast(fn, input, target))
    return _out(softplus(-y * x), red, single)


def cosine_embedding_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0,
                          size_average: Any = None, reduce: Any = None,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(input1, input2)`` where target is 1, ``max(0, cos - margin)`` where it
    is -1 (cos over dim 1 of (N, D) inputs, or of the single (D,) pair; torch's 1e-12
    added to each squared norm)."""
    fn = "cosine_embedding_loss"
    red = reduction_arg(fn, size_average, reduce, reduction)
    x1, x2 = as_tensor(input1)._floating(), as_tensor(input2)._floating()
    if x1.shape != x2.shape or x1.ndim not in (1, 2):
        raise ValueError(f"{fn}: input1 of shape {x1.shape} and input2 of shape {x2.shape} "
                         "must be one (N, D) or (D,) shape")
    y = as_tensor(target)
    d = x1.ndim - 1
    if y.shape != x1.shape[:d]:
        raise ValueError(f"{fn}: target of shape {y.shape} must be {x1.shape[:d]}")
    (x1, x2), single = _wide(x1, x2)
    prod = (x1 * x2).sum(d)
    denom = (((x1 * x1).sum(d) + 1e-12) * ((x2 * x2).sum(d) + 1e-12)).sqrt()
    cos = prod / denom
    zero = np.zeros((), cos.dtype)
    pos = where(y.data == 1, 1.0 - cos, zero)
    neg = where(y.data == -1, (cos - _real(fn, "margin", margin)).clamp(min=0.0), zero)
    return _out(pos + neg, red, single)


def triplet_margin_loss(anchor: Any, positive: Any, negative: Any, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                        size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with
    :func:`.pairwise_distance`'s ``d``; ``swap``: the smaller of d(anchor, negative) and
    d(positive, negative)."""
    fn = "triplet_margin_loss"
    red = reduction_arg(fn, size_average, reduce, reduction)
    a, pos, neg = (as_tensor(t)._floating() for t in (anchor, positive, negative))
    if not a.ndim == pos.ndim == neg.ndim or a.ndim not in (1, 2):
        raise ValueError(f"{fn}: anchor {a.shape}, positive {pos.shape} and negative "
                         f"{neg.shape} must all be (N, D) or all (D,)")
    (a, pos, neg), single = _wide(a, pos, neg)
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_swap = pairwise_distance(pos, neg, p, eps)
        d_neg = where(d_swap.data < d_neg.data, d_swap, d_neg)
    loss = (d_pos - d_neg + _real(fn, "margin", margin)).clamp(min=0.0)
    return _out(loss, red, single)


def multilabel_soft_margin_loss(input: Any, target: Any, weight: Any = None,  # noqa: A002
                                size_average: Any = None, reduce: Any = None,
                                reduction: str = "mean") -> Tensor:
    """``-(t log sigmoid(x) + (1 - t) log sigmoid(-x))`` per class, times ``weight``,
    averaged over the classes (the last dim) of each sample."""
    fn = "multilabel_soft_margin_loss"
    red = reduction_arg(fn, size_average, reduce, reduction)
    x, t = as_tensor(input)._floating(), as_tensor(target)
    if x.shape != t.shape or x.ndim not in (1, 2):
        raise ValueError(f"{fn}: input of shape {x.shape} and target of shape {t.shape} "
                         "must be one (N, C) or (C,) shape")
    (x, t), single = _wide(x, t._floating())
    loss = -(t * logsigmoid(x) + (1.0 - t) * logsigmoid(-x))
    if weight is not None:
        loss = loss * as_tensor(weight)
    return _out(loss.sum(-1) / x.shape[-1], red, single)


def multi_margin_loss(input: Any, target: Any, p: int = 1, margin: float = 1.0,  # noqa: A002
                      weight: Any = None, size_average: Any = None, reduce: Any = None,
                      reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i])^p``, each
    term times ``weight[y]`` (after the power, as torch computes it), over the C
    classes; input (N, C) or (C,), target the class indices (N,) or ()."""
    from .embedding import _indices

    fn = "multi_margin_loss"
    red = reduction_arg(fn, size_average, reduce, reduction)
    if p not in (1, 2) or isinstance(p, bool):
        raise ValueError(f"{fn}: p={p!r} must be 1 or 2")
    x = as_tensor(input)._floating()
    if x.ndim not in (1, 2):
        raise ValueError(f"{fn}: input of shape {tuple(x.shape)} must be (N, C) or (C,)")
    batched = x.ndim == 2
    x2 = x if batched else x.unsqueeze(0)
    c = x2.shape[1]
    y = _indices(fn, target, c).reshape(-1)
    if y.shape[0] != x2.shape[0]:
        raise ValueError(f"{fn}: target of {y.shape[0]} class indices for an input of "
                         f"{x2.shape[0]} samples")
    (x2,), single = _wide(x2)
    rows = np.arange(x2.shape[0])
    picked = x2[rows, y].reshape(-1, 1)
    z = (_real(fn, "margin", margin) - picked + x2).clamp(min=0.0)
    if p == 2:
        z = z * z
    others = np.ones(x2.shape, x2.dtype)
    others[rows, y] = 0.0  # the target's own term is left out
    z = z * others
    if weight is not None:
        w = as_tensor(weight)
        if tuple(w.shape) != (c,):
            raise ValueError(f"{fn}: weight of shape {tuple(w.shape)} must be ({c},)")
        z = z * w.to(x2.dtype)[y].reshape(-1, 1)
    loss = z.sum(1) / c
    return _out(loss if batched else loss.reshape(()), red, single)


def multilabel_margin_loss(input: Any, target: Any, size_average: Any = None,  # noqa: A002
                           reduce: Any = None, reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: ``sum_{j, i} max(0, 1 - (x[y[j]] - x[i])) / C`` over
    the target classes ``y[j]`` (a row's entries before its first -1) and the classes
    ``i`` that are not among them; input (N, C) or (C,), target of the same shape
    holding class indices.  A term at exactly 0 has no gradient (torch's ``z > 0``)."""
    fn = "multilabel_margin_loss"
    red = reduction_arg(fn, size_average, reduce, reduction)
    x = as_tensor(input)._floating()
    if x.ndim not in (1, 2):
        raise ValueError(f"{fn}: input of shape {tuple(x.shape)} must be (N, C) or (C,)")
    raw = target.data if isinstance(target, Tensor) else np.asarray(target)
    if tuple(raw.shape) != tuple(x.shape):
        raise ValueError(f"{fn}: target of shape {tuple(raw.shape)} must have the input's "
                         f"shape {tuple(x.shape)}")
    if raw.dtype.kind == "f" and (not np.isfinite(raw).all() or (raw != np.round(raw)).any()):
        raise TypeError(f"{fn}: target of dtype {raw.dtype} holds values that are not whole "
                        "numbers; expected class indices (torch.long)")
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"{fn}: target of dtype {raw.dtype} must hold class indices")
    batched = x.ndim == 2
    x2 = x if batched else x.unsqueeze(0)
    n, c = x2.shape
    y = raw.astype(np.int64).reshape(n, c)
    if y.size and (y.min() < -1 or y.max() >= c):
        raise IndexError(f"{fn}: target holds {y.min() if y.min() < -1 else y.max()}, "
                         f"outside [-1, {c - 1}] (-1 ends a row's targets)")
    # a row's targets: its entries before the first -1
    valid = np.cumprod(y >= 0, axis=1).astype(bool)
    is_target = np.zeros((n, c), bool)
    rows = np.arange(n)
    for j in range(c):
        is_target[rows[valid[:, j]], y[valid[:, j], j]] = True
    (x2,), single = _wide(x2)
    total = None
    for j in range(int(valid.sum(1).max()) if n else 0):
        picked = x2[rows, np.where(valid[:, j], y[:, j], 0)].reshape(-1, 1)
        counted = (valid[:, j, None] & ~is_target).astype(x2.dtype)
        term = ((1.0 - picked + x2).relu() * counted).sum(1)
        total = term if total is None else total + term
    if total is None:
        total = x2.sum(1) * 0.0
    loss = total / c
    return _out(loss if batched else loss.reshape(()), red, single)


def poisson_nll_loss(input: Any, target: Any, log_input: bool = True,  # noqa: A002
                     full: bool = False, size_average: Any = None, eps: float = 1e-8,
                     reduce: Any = None, reduction: str = "mean") -> Tensor:
    """The Poisson negative log-likelihood of ``target`` counts: ``exp(input) - target
    input`` for a log-rate ``input`` (``log_input``), else ``input - target log(input +
    eps)``; ``full`` adds Stirling's ``t log t - t + log(2 pi t) / 2`` where t > 1."""
    fn = "poisson_nll_loss"
    red = reduction_arg(fn, size_average, reduce, reduction)
    (x, t), single = _wide(*_broadcast(fn, input, target))
    if log_input:
        loss = x.exp() - t * x
    else:
        loss = x - t * (x + _real(fn, "eps", eps)).log()
    if full:
        big = t.data > 1
        safe = where(big, t, np.ones((), t.dtype))
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        loss = loss + where(big, stirling, np.zeros((), t.dtype))
    return _out(loss, red, single)


def gaussian_nll_loss(input: Any, target: Any, var: Any, full: bool = False,  # noqa: A002
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """The Gaussian negative log-likelihood ``(log(var) + (input - target)^2 / var) / 2``
    (``full``: plus ``log(2 pi) / 2``).  ``var`` has the input's shape, or lacks its last
    dim or has 1 there (one variance per sample, as torch); negative entries are a
    ValueError; it is clamped at ``eps`` for the value only (the gradient passes as if
    unclamped, as torch's)."""
    fn = "gaussian_nll_loss"
    red = reduction_arg(fn, None, None, reduction)
    x, t, v = (as_tensor(a)._floating() for a in (input, target, var))
    if v.shape != x.shape:
        if x.shape[:-1] == v.shape:
            v = v.unsqueeze(-1)
        elif not (x.ndim and v.shape[:-1] == x.shape[:-1] and v.shape[-1:] == (1,)):
            raise ValueError(f"{fn}: var of shape {v.shape} does not fit the input of shape "
                             f"{x.shape}; expected its shape, or it without (or with 1 as) "
                             "its last dim")
    if (v.data < 0).any():
        raise ValueError(f"{fn}: var has negative entries")
    eps = _real(fn, "eps", eps, low=0.0)
    (x, t, v), single = _wide(*_broadcast(fn, x, t, v))
    v = v + (v.clamp(min=eps) - v).detach()  # the clamp's value, the identity's gradient
    loss = ((x - t) * (x - t) / v + v.log()) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _out(loss, red, single)
