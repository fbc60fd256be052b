"""One time step of each recurrent layer, from the input's share of its gates.

Every step is composed of differentiable Tensor operations (a matrix product, sums,
products, sigmoid and tanh), so its gradients, of any order, are those operations' own
rules: nothing here has a backward of its own.  ``gx`` is ``x W_ih^T + b_ih``, the
input's share of the gates, made for a whole sequence by one matrix product (see
:mod:`.recurrent`); the hidden state's share ``h W_hh^T + b_hh`` is made here, each step.
The gate order and the arithmetic are torch's (``gates = gx + gh``, then as below).
"""

from __future__ import annotations

from ..tensor import Tensor

__all__ = ["STEPS", "gru_step", "lstm_step", "rnn_step"]


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


#: each mode's step, its gate count (rows of W_ih per hidden unit) and its state's size
STEPS = {"RNN_TANH": (rnn_step, 1), "RNN_RELU": (rnn_step, 1), "LSTM": (lstm_step, 4),
         "GRU": (gru_step, 3)}
