"""The CTC negative log-likelihood's kernels (the ``ctc`` family, algorithm ``numpy``):
the forward variables ``alpha`` step by step, and the gradient from the backward
variables ``beta`` and each step's label occupation (Graves et al. 2006, eq. 14-16), in
float64.  The autograd node around them, and the recursion composed of differentiable
Tensor operations (for gradients of higher order), are :mod:`..tensor.ctc`'s.

The blank-extended targets ``ext`` (N, 2S+1) hold blank, l1, blank, l2, ..., blank;
``skip[n, s]``: state s may follow s - 2 (a label unlike the one two states back);
``il``, ``tl``: input and target lengths.  log(0) is the finite :data:`NEG`, so that no
gradient is NaN; a likelihood at :data:`IMPOSSIBLE` or below means no alignment.
"""

from __future__ import annotations

import numpy as np

from .registry import family

__all__ = ["CTC", "IMPOSSIBLE", "NEG", "ctc_backward", "ctc_forward"]

CTC = family("ctc", ("numpy",))
NEG = -1e300
IMPOSSIBLE = 1e299


def _lse(*arrays: np.ndarray) -> np.ndarray:
    m = np.maximum.reduce(arrays)
    return m + np.log(sum(np.exp(a - m) for a in arrays))


def _moved(a: np.ndarray, k: int) -> np.ndarray:
    """``a`` (N, states) moved ``k`` states along (back for k < 0), NEG coming in."""
    out = np.full_like(a, NEG)
    if k > 0:
        out[:, k:] = a[:, :-k]
    else:
        out[:, :k] = a[:, -k:]
    return out


def ctc_forward(x: np.ndarray, ext: np.ndarray, skip: np.ndarray, il: np.ndarray,
                tl: np.ndarray) -> tuple[np.ndarray, tuple]:
    """Each sample's ``-log p(target | x)`` from float64 log-probabilities ``x`` (T, N,
    C), and what :func:`ctc_backward` needs.  A ``ctc_forward`` event."""
    with CTC.record("ctc_forward", x.shape, ext.shape) as rec:
        rec.algorithm = "numpy"
        steps, n = x.shape[:2]
        states = ext.shape[1]
        emit = np.take_along_axis(x, np.broadcast_to(ext, (steps, n, states)), 2)
        alpha = np.full((max(steps, 1), n, states), NEG)
        if steps:
            alpha[0, :, 0] = emit[0, :, 0]
            alpha[0, :, 1] = np.where(tl > 0, emit[0, :, 1], NEG)
        for t in range(1, steps):
            new = emit[t] + _lse(alpha[t - 1], _moved(alpha[t - 1], 1),
                                 np.where(skip, _moved(alpha[t - 1], 2), NEG))
            alpha[t] = np.where((t < il)[:, None], new, alpha[t - 1])  # finished: kept
        rows = np.arange(n)
        end = alpha[-1]
        ll = _lse(end[rows, 2 * tl], np.where(tl > 0, end[rows, np.maximum(2 * tl - 1, 0)],
                                               NEG), np.full(n, NEG))
    return -ll, (emit, alpha, ll)


def ctc_backward(g: np.ndarray, ext: np.ndarray, skip: np.ndarray, il: np.ndarray,
                 tl: np.ndarray, saved: tuple, classes: int) -> np.ndarray:
    """The gradient (T, N, ``classes``) of ``sum(g * nll)`` with respect to ``x``: NaN
    for a sample with no alignment and a non-zero ``g``.  A ``ctc_backward`` event."""
    emit, alpha, ll = saved
    with CTC.record("ctc_backward", emit.shape, ext.shape) as rec:
        rec.algorithm = "numpy"
        steps, n, states = emit.shape
        rows = np.arange(n)
        # beta_t(s): log p(the rest of the target from state s at step t), emission at t
        # included; it starts at each sample's last step, in its last two states
        beta = np.full((steps, n, states), NEG)
        nxt = np.full((n, states), NEG)
        skip_next = np.zeros_like(skip)
        skip_next[:, :-2] = skip[:, 2:]  # s + 2 may follow s
        has = tl > 0
        for t in range(steps - 1, -1, -1):
            cur = emit[t] + _lse(nxt, _moved(nxt, -1), np.where(skip_next, _moved(nxt, -2),
                                                                NEG))
            first = np.full((n, states), NEG)  # t is the sample's last step
            first[rows, 2 * tl] = emit[t, rows, 2 * tl]
            first[rows[has], 2 * tl[has] - 1] = emit[t, rows[has], 2 * tl[has] - 1]
            cur = np.where((t == il - 1)[:, None], first,
                           np.where((t < il - 1)[:, None], cur, NEG))
            beta[t] = nxt = cur
        # d(-ll)/dx[t, n, k] = -sum over the states s of label k of
        # exp(alpha_t(s) + beta_t(s) - emit_t(s) - ll): the paths through (t, s)
        weight = -g[None, :, None] * np.exp(alpha + beta - emit - ll[None, :, None])
        weight[:, g == 0, :] = 0.0
        weight[:, (ll <= -IMPOSSIBLE) & (g != 0), :] = np.nan
        dx = np.zeros((steps, n, classes))
        t_idx, n_idx = np.indices((steps, n), sparse=True)
        for s in range(states):  # (each (t, n) once per state: a plain indexed add)
            dx[t_idx, n_idx, ext[None, :, s]] += weight[:, :, s]
    return dx
