"""The CTC negative log-likelihood of each sample (see :mod:`..functional.ctc_loss` for
the loss around it): the forward variables ``alpha`` composed of differentiable Tensor
operations (:func:`composed_nll`), and :class:`CTCNegLogLikelihood`, the same as one
node: NumPy's forward recursion, and for its gradient the backward variables ``beta``
and each step's label occupation (Graves et al. 2006, eq. 14-16).  Under
``create_graph`` its backward differentiates :func:`composed_nll` instead, so gradients
of every order exist.

The blank-extended targets ``ext`` (N, 2S+1) hold blank, l1, blank, l2, ..., blank;
``skip[n, s]``: state s may follow s - 2 (a label unlike the one two states back);
``il``, ``tl``: input and target lengths.  log(0) is the finite :data:`NEG`, so that no
gradient is NaN; a likelihood at that scale means no alignment.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Context, Function, grad, is_grad_enabled
from .operands import where
from .tensor import Tensor

__all__ = ["NEG", "CTCNegLogLikelihood", "composed_nll"]

NEG = -1e300


def _lse3(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    """``log(e^a + e^b + e^c)`` shifted by their (constant) maximum: the gradient is the
    three softmax weights, as if unshifted."""
    m = Tensor(np.maximum(np.maximum(a.data, b.data), c.data))
    return m + ((a - m).exp() + (b - m).exp() + (c - m).exp()).log()


def _moved(alpha: Tensor, k: int) -> Tensor:
    """``alpha`` (N, states) moved ``k`` states along, NEG coming in."""
    from .tensor import concatenate

    return concatenate([Tensor(np.full((alpha.shape[0], k), NEG)),
                        alpha[:, :alpha.shape[1] - k]], 1)


def composed_nll(x: Tensor, ext: np.ndarray, skip: np.ndarray, il: np.ndarray,
                 tl: np.ndarray) -> Tensor:
    """Each sample's ``-log p(target | x)`` from float64 log-probabilities ``x`` (T, N,
    C), differentiable (NEG-scale where no alignment fits; no step: 0)."""
    steps, n = x.shape[:2]
    states = ext.shape[1]
    emit = x.gather(2, np.broadcast_to(ext, (steps, n, states)).copy())
    start = np.zeros((n, states), bool)
    start[:, 0], start[:, 1] = True, tl > 0
    alpha = where(start, emit[0], NEG)
    for t in range(1, steps):
        a2 = where(skip, _moved(alpha, 2), NEG)
        new = emit[t] + _lse3(alpha, _moved(alpha, 1), a2)
        alpha = where((t < il)[:, None], new, alpha)  # a finished sample keeps its last
    last = alpha.gather(1, np.stack([2 * tl, np.maximum(2 * tl - 1, 0)], 1))
    last = where(np.stack([np.ones(n, bool), tl > 0], 1), last, NEG)
    return -_lse3(last[:, 0], last[:, 1], Tensor(np.full(n, NEG)))


def _lse(*arrays: np.ndarray) -> np.ndarray:
    m = np.maximum.reduce(arrays)
    return m + np.log(sum(np.exp(a - m) for a in arrays))


def _moved_np(a: np.ndarray, k: int) -> np.ndarray:
    out = np.full_like(a, NEG)
    if k > 0:
        out[:, k:] = a[:, :-k]
    else:
        out[:, :k] = a[:, -k:]
    return out


class CTCNegLogLikelihood(Function):
    """:func:`composed_nll` as one node (float64 ``x``; the targets as keywords)."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, ext: np.ndarray, skip: np.ndarray,
                il: np.ndarray, tl: np.ndarray) -> np.ndarray:
        ctx.ext, ctx.skip, ctx.il, ctx.tl = ext, skip, il, tl
        steps, n = x.shape[:2]
        states = ext.shape[1]
        emit = np.take_along_axis(x, np.broadcast_to(ext, (steps, n, states)), 2)
        alpha = np.full((max(steps, 1), n, states), NEG)
        if steps:
            alpha[0, :, 0] = emit[0, :, 0]
            alpha[0, :, 1] = np.where(tl > 0, emit[0, :, 1], NEG)
        for t in range(1, steps):
            new = emit[t] + _lse(alpha[t - 1], _moved_np(alpha[t - 1], 1),
                                 np.where(skip, _moved_np(alpha[t - 1], 2), NEG))
            alpha[t] = np.where((t < il)[:, None], new, alpha[t - 1])
        rows = np.arange(n)
        end = alpha[-1]
        ll = _lse(end[rows, 2 * tl], np.where(tl > 0, end[rows, np.maximum(2 * tl - 1, 0)],
                                               NEG), np.full(n, NEG))
        ctx.emit, ctx.alpha, ctx.ll = emit, alpha, ll
        return -ll

    @staticmethod
    def backward(ctx: Context, g_out: Tensor) -> Tensor:
        if is_grad_enabled():  # create_graph: the composed recursion, differentiated
            x = ctx.inputs[0]
            nll = composed_nll(x, ctx.ext, ctx.skip, ctx.il, ctx.tl)
            return grad(nll, [x], g_out, create_graph=True)[0]
        emit, alpha, ll, ext, skip = ctx.emit, ctx.alpha, ctx.ll, ctx.ext, ctx.skip
        il, tl = ctx.il, ctx.tl
        steps, n, states = emit.shape
        rows = np.arange(n)
        # beta_t(s): log p(the rest of the target from state s at step t), emission at t
        # included; it starts at each sample's last step, in its last two states
        beta = np.full((steps, n, states), NEG)
        nxt = np.full((n, states), NEG)
        skip_next = np.zeros_like(skip)
        skip_next[:, :-2] = skip[:, 2:]  # s + 2 may follow s
        for t in range(steps - 1, -1, -1):
            cur = emit[t] + _lse(nxt, _moved_np(nxt, -1),
                                 np.where(skip_next, _moved_np(nxt, -2), NEG))
            first = np.full((n, states), NEG)  # t is the sample's last step
            first[rows, 2 * tl] = emit[t, rows, 2 * tl]
            has = tl > 0
            first[rows[has], 2 * tl[has] - 1] = emit[t, rows[has], 2 * tl[has] - 1]
            cur = np.where((t == il - 1)[:, None], first,
                           np.where((t < il - 1)[:, None], cur, NEG))
            beta[t] = nxt = cur
        # d(-ll)/dx[t, n, k] = -sum over states s of label k of exp(alpha + beta - emit - ll)
        occupation = np.exp(alpha + beta - emit - ll[None, :, None])
        occupation[:, ~np.isfinite(ll) | (ll <= -1e299), :] = np.nan
        g = g_out.data
        weight = -np.where(g == 0, 0.0, g)[None, :, None] * np.nan_to_num(
            occupation, nan=0.0)
        weight = np.where(np.isnan(occupation) & (g != 0)[None, :, None], np.nan, weight)
        dx = np.zeros(ctx.inputs[0].shape)
        t_idx, n_idx = np.indices((steps, n), sparse=True)
        for s in range(states):
            np.add.at(dx, (t_idx, n_idx, ext[None, :, s]), weight[:, :, s])
        return Tensor._wrap(dx)
