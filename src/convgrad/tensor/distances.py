"""p-norm distances between rows, as ``cdist`` and ``pdist`` compute them: one node,
:class:`RowDistances`, whose forward and backward build the pairs' differences
``a_i - b_j`` a block of :data:`BLOCK` elements at a time, so the workspace is a block
plus the result and the inputs (all pairs' differences at once are (P, R, M) values: an
unbounded workspace for many rows), and whose backward is written in Tensor operations
(gradients of any order).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd import OUTPUT, Context, Function, tensor_type
from .tensor import Tensor, concatenate, where

__all__ = ["BLOCK", "RowDistances", "row_distances"]

#: elements of one block of differences: 16 MiB of float32, a few of L2's sizes, large
#: enough that a block's Python steps cost nothing next to its arithmetic
BLOCK = 1 << 22


def _blocks(a: Any, b: Any) -> tuple[range, int]:
    """The first rows of ``a``'s (B, P, M) blocks against all of ``b`` (B, R, M)."""
    step = max(1, BLOCK // max(1, a.shape[0] * b.shape[1] * a.shape[2]))
    return range(0, a.shape[1], step), step


def _norms(d: np.ndarray, p: float) -> np.ndarray:
    """``||d||_p`` along the last axis of ``|a - b|`` (NumPy's pairwise sums)."""
    if p == 0:
        return (d != 0).sum(-1).astype(d.dtype)
    if math.isinf(p):
        return d.max(-1) if d.shape[-1] else d.sum(-1)
    if p == 1:
        return d.sum(-1)
    if p == 2:
        return np.sqrt((d * d).sum(-1))
    return (d ** p).sum(-1) ** (1.0 / p)


class RowDistances(Function):
    """(B, P, R) distances ``d_ij = ||a_i - b_j||_p`` of a (B, P, M) and b (B, R, M).
    d d_ij / d a_i = s(a_i - b_j) / d_ij^(p-1) with s(t) = sign(t) |t|^(p-1) (p = 1: sign
    t; p = inf: sign t where |t| = d_ij; p = 0: none), d/d b_j its negative; as torch, a
    zero distance, and for p < 1 a zero entry, has a zero gradient."""

    reads = (0, 1, OUTPUT)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
        ctx.p = p
        out = np.empty((a.shape[0], a.shape[1], b.shape[1]), a.dtype)
        starts, step = _blocks(a, b)
        for s in starts:
            out[:, s:s + step] = _norms(np.abs(a[:, s:s + step, None] - b[:, None]), p)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        a, b = ctx.inputs
        d, p = ctx.output, ctx.p
        T = tensor_type()
        if p == 0:
            return (T._wrap(np.zeros_like(a.data)), T._wrap(np.zeros_like(b.data)))
        if p == 1 or math.isinf(p):
            coef = grad
        else:
            zero = d.data == 0
            coef = where(zero, 0.0, grad / where(zero, 1.0, d) ** (p - 1))
        need_a, need_b = ctx.needs_input_grad[:2]
        parts, gb = [], None
        starts, step = _blocks(a.data, b.data)
        for s in starts:
            t = a[:, s:s + step].unsqueeze(2) - b.unsqueeze(1)  # (B, block, R, M)
            if p == 2:
                st = t
            elif p == 1:
                st = t.sign()
            elif math.isinf(p):
                st = t.sign() * T._wrap((np.abs(t.data) == d.data[:, s:s + step, :, None])
                                        .astype(t.data.dtype))
            else:
                at = t.abs()
                flat = at.data == 0
                st = t.sign() * where(flat, 0.0, where(flat, 1.0, at) ** (p - 1))
            term = st * coef[:, s:s + step].unsqueeze(-1)
            if need_a:
                parts.append(term.sum(2))
            if need_b:
                gb = -term.sum(1) if gb is None else gb - term.sum(1)
        ga = (parts[0] if len(parts) == 1 else concatenate(parts, 1)) if parts else None
        if need_a and ga is None:  # no rows
            ga = T._wrap(np.zeros_like(a.data))
        if need_b and gb is None:
            gb = T._wrap(np.zeros_like(b.data))
        return ga, gb


def row_distances(a: Tensor, b: Tensor, p: float) -> Tensor:
    """The distances between the rows of ``a`` (*, P, M) and ``b`` (*, R, M): (*, P, R),
    the batch dims broadcast."""
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    flat = math.prod(batch)
    a3 = a.expand(*batch, *a.shape[-2:]).reshape(flat, *a.shape[-2:])
    b3 = b.expand(*batch, *b.shape[-2:]).reshape(flat, *b.shape[-2:])
    return RowDistances.apply(a3, b3, p=p).reshape(*batch, a.shape[-2], b.shape[-2])
