"""Recurrent layers' time steps: each step composed of differentiable Tensor operations
(:data:`STEPS`), and :class:`Recurrence`, one direction of one layer over a whole
sequence as one node, whose kernels (a NumPy loop over the steps, and back-propagation
through time) are :mod:`..ops.recurrence`'s.  Under ``create_graph`` its backward
differentiates the composed steps instead, so gradients of every order exist.

``gx`` is the input's share of the gates, ``x W_ih^T + b_ih`` for the whole sequence;
each step adds the hidden state's share ``h W_hh^T + b_hh``.  Gate order and arithmetic
are torch's.  Measured on a (T=32, N=16) bidirectional LSTM(32, 48) of a small CRNN:
its forward took 20 ms as composed steps (a dozen Tensor operations a step, ~30 us
each), 5 ms as one node a direction; the training step's backward 67 ms against 16
(torch: 8 ms for the whole training step).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function, grad, is_grad_enabled
from ..ops.recurrence import recurrence_backward, recurrence_forward
from .tensor import Tensor, stack
from .tensor import concatenate as cat

__all__ = ["STEPS", "Recurrence", "gru_step", "lstm_step", "rnn_step"]


def _hidden_share(h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    gh = h @ w_hh.T
    return gh if b_hh is None else gh + b_hh


def rnn_step(gx: Tensor, state: tuple, w_hh: Tensor, b_hh: Tensor | None,
             nonlinearity: str) -> tuple:
    """``h' = act(gx + h W_hh^T + b_hh)``, act tanh or relu; ``state`` is ``(h,)``."""
    z = gx + _hidden_share(state[0], w_hh, b_hh)
    return (z.tanh() if nonlinearity == "tanh" else z.relu(),)


def lstm_step(gx: Tensor, state: tuple, w_hh: Tensor, b_hh: Tensor | None,
              w_hr: Tensor | None) -> tuple:
    """Gates ``i, f, g, o`` (that order along the last dim) from ``gx + h W_hh^T + b_hh``:
    ``c' = sigmoid(f) c + sigmoid(i) tanh(g)``, ``h' = sigmoid(o) tanh(c')``, then
    ``h' W_hr^T`` with a projection; ``state`` is ``(h, c)``."""
    h, c = state
    i, f, g, o = (gx + _hidden_share(h, w_hh, b_hh)).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    return (h if w_hr is None else h @ w_hr.T, c)


def gru_step(gx: Tensor, state: tuple, w_hh: Tensor, b_hh: Tensor | None) -> tuple:
    """Gates ``r, z, n`` (that order): ``r = sigmoid(gx_r + gh_r)``, ``z = sigmoid(gx_z +
    gh_z)``, ``n = tanh(gx_n + r gh_n)``, ``h' = n + z (h - n)`` (torch's form of
    ``(1 - z) n + z h``); ``state`` is ``(h,)``."""
    h = state[0]
    xr, xz, xn = gx.chunk(3, -1)
    hr, hz, hn = _hidden_share(h, w_hh, b_hh).chunk(3, -1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return (n + z * (h - n),)


#: each mode's step and its gate count (rows of W_ih per hidden unit)
STEPS = {"RNN_TANH": (rnn_step, 1), "RNN_RELU": (rnn_step, 1), "LSTM": (lstm_step, 4),
         "GRU": (gru_step, 3)}


def _kept(new: Tensor, old: Tensor) -> Tensor:
    """``new`` for the first rows (those that took the step), ``old`` for the rest."""
    return new if new.shape[0] == old.shape[0] else cat([new, old[new.shape[0]:]], 0)


def composed(mode: str, gx: Tensor, h0: Tensor, c0: Tensor | None, w_hh: Tensor,
             b_hh: Tensor | None, w_hr: Tensor | None, reverse: bool,
             batch_sizes: Any = None) -> Tensor:
    """:class:`Recurrence`'s output from the composed steps (differentiable)."""
    step = STEPS[mode][0]
    if mode == "LSTM":
        state, args = (h0, c0), (w_hh, b_hh, w_hr)
    else:
        state = (h0,)
        args = (w_hh, b_hh) + (("relu" if mode == "RNN_RELU" else "tanh",)
                               if mode.startswith("RNN") else ())
    shares = gx.unbind(0)
    ys: list = [None] * len(shares)
    n = h0.shape[0]
    for t in (reversed(range(len(shares))) if reverse else range(len(shares))):
        b = n if batch_sizes is None else int(batch_sizes[t])
        new = step(shares[t][:b], tuple(v[:b] for v in state), *args)
        state = tuple(_kept(v, old) for v, old in zip(new, state))
        y = new[0]
        ys[t] = y if b == n else cat([y, y.new_zeros((n - b, *y.shape[1:]))], 0)

    out = stack(ys, 0).reshape(-1)
    return cat([out, state[1].reshape(-1)], 0) if mode == "LSTM" else out


class Recurrence(Function):
    """One direction of one recurrent layer over the whole sequence: the hidden states
    ``(L, N, H_out)``, flat, then (LSTM) the last cell state ``(N, H)``, flat.  Inputs
    ``gx, h0, c0, w_hh, b_hh, w_hr`` (c0, b_hh, w_hr may be None); ``batch_sizes``: the
    rows each step takes (a packed batch, longest sequences first), None: all."""

    reads = (0, 1, 2, 3, 4, 5)

    @staticmethod
    def forward(ctx: Context, gx: np.ndarray, h0: np.ndarray, c0: Any, w_hh: np.ndarray,
                b_hh: Any, w_hr: Any, mode: str, reverse: bool,
                batch_sizes: Any = None) -> np.ndarray:
        ctx.mode, ctx.reverse, ctx.batch_sizes = mode, reverse, batch_sizes
        out, ctx.saved_steps = recurrence_forward(gx, h0, c0, w_hh, b_hh, w_hr, mode, reverse,
                                                  batch_sizes)
        return out

    @staticmethod
    def backward(ctx: Context, g_out: Tensor) -> tuple:
        inputs = ctx.inputs
        if is_grad_enabled():  # create_graph: the composed steps, differentiated
            tensors = [t if isinstance(t, Tensor) else None for t in inputs]
            wanted = [t for t, need in zip(tensors, ctx.needs_input_grad) if need]
            out = composed(ctx.mode, *tensors, ctx.reverse, ctx.batch_sizes)
            found = iter(grad(out, wanted, g_out, create_graph=True, allow_unused=True))
            return tuple(next(found) if need else None for need in ctx.needs_input_grad)
        arrays = [getattr(t, "data", t) for t in inputs]
        grads = recurrence_backward(g_out.data, *arrays, ctx.mode, ctx.reverse,
                                    ctx.saved_steps, ctx.batch_sizes)
        needs = ctx.needs_input_grad
        return tuple(Tensor._wrap(v) if need and v is not None else None
                     for v, need in zip(grads, needs))

