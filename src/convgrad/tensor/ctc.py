"""The CTC negative log-likelihood of each sample (see :mod:`..functional.ctc_loss` for
the loss around it): the forward variables ``alpha`` composed of differentiable Tensor
operations (:func:`composed_nll`), and :class:`CTCNegLogLikelihood`, the same as one
node, whose kernels (the forward recursion; the gradient from the backward variables)
are :mod:`..ops.ctc`'s.  Under ``create_graph`` its backward differentiates
:func:`composed_nll` instead, so gradients of every order exist.  The arguments
(``ext``, ``skip``, ``il``, ``tl``, log(0) as ``NEG``) are the kernels'.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Context, Function, grad, is_grad_enabled
from ..ops.ctc import NEG, ctc_backward, ctc_forward
from .operands import where
from .tensor import Tensor, concatenate

__all__ = ["NEG", "CTCNegLogLikelihood", "composed_nll"]


def _lse3(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    """``log(e^a + e^b + e^c)`` shifted by their (constant) maximum: the gradient is the
    three softmax weights, as if unshifted."""
    m = Tensor(np.maximum(np.maximum(a.data, b.data), c.data))
    return m + ((a - m).exp() + (b - m).exp() + (c - m).exp()).log()


def _moved(alpha: Tensor, k: int) -> Tensor:
    """``alpha`` (N, states) moved ``k`` states along, NEG coming in."""
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


class CTCNegLogLikelihood(Function):
    """:func:`composed_nll` as one node (float64 ``x``; the targets as keywords)."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, ext: np.ndarray, skip: np.ndarray,
                il: np.ndarray, tl: np.ndarray) -> np.ndarray:
        ctx.ext, ctx.skip, ctx.il, ctx.tl = ext, skip, il, tl
        nll, ctx.saved_steps = ctc_forward(x, ext, skip, il, tl)
        return nll

    @staticmethod
    def backward(ctx: Context, g_out: Tensor) -> Tensor:
        if is_grad_enabled():  # create_graph: the composed recursion, differentiated
            x = ctx.inputs[0]
            nll = composed_nll(x, ctx.ext, ctx.skip, ctx.il, ctx.tl)
            return grad(nll, [x], g_out, create_graph=True)[0]
        return Tensor._wrap(ctc_backward(g_out.data, ctx.ext, ctx.skip, ctx.il, ctx.tl,
                                         ctx.saved_steps, ctx.inputs[0].shape[2]))
