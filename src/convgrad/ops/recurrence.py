"""Recurrent layers' kernels: one direction of one layer over a whole sequence, a NumPy
loop over the time steps (the ``recurrent`` family, algorithm ``numpy``), and its
back-propagation through time.  Gate order and arithmetic are torch's: ``gates = gx + (h
W_hh^T + b_hh)``, ``gx`` the input's share ``x W_ih^T + b_ih`` of the whole sequence.
The autograd node around them, and the same steps composed of differentiable Tensor
operations (for gradients of higher order), are :mod:`..tensor.recurrent`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .registry import family

__all__ = ["RECURRENT", "recurrence_backward", "recurrence_forward"]

RECURRENT = family("recurrent", ("numpy",))


def _sigmoid(v: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-v))``, torch's formula (SciPy's ``expit`` took twice as long on
    a cell's gates); exp's overflow for v below -88 (float32) or -709 gives 0, as it
    should."""
    with np.errstate(over="ignore"):
        e = np.exp(-v)
    e += 1
    return np.divide(1, e, out=e)


def recurrence_forward(gx: np.ndarray, h0: np.ndarray, c0: Any, w_hh: np.ndarray,
                       b_hh: Any, w_hr: Any, mode: str, reverse: bool) -> tuple:
    """The hidden states ``(L, N, H_out)`` flat, then (LSTM) the last cell state flat;
    and what :func:`recurrence_backward` needs of each step.  ``mode``: ``"LSTM"``,
    ``"GRU"``, ``"RNN_TANH"`` or ``"RNN_RELU"``; ``reverse``: from the last step back.
    A ``recurrence_forward`` event."""
    with RECURRENT.record("recurrence_forward", gx.shape, w_hh.shape) as rec:
        rec.algorithm = "numpy"
        steps = range(gx.shape[0] - 1, -1, -1) if reverse else range(gx.shape[0])
        h, c = h0, c0
        ys = np.empty((gx.shape[0], *h0.shape), gx.dtype)
        saved = []
        for t in steps:
            gates = h @ w_hh.T  # the hidden state's share (GRU: split before the sum)
            if b_hh is not None:
                gates += b_hh
            if mode != "GRU":
                gates = gx[t] + gates
            if mode == "LSTM":
                pi, pf, pg, po = np.split(gates, 4, 1)
                i, f, g, o = _sigmoid(pi), _sigmoid(pf), np.tanh(pg), _sigmoid(po)
                c_prev, c = c, f * c + i * g
                tc = np.tanh(c)
                raw = o * tc
                saved.append((h, c_prev, i, f, g, o, tc, raw))
                h = raw if w_hr is None else raw @ w_hr.T
            elif mode == "GRU":
                xr, xz, xn = np.split(gx[t], 3, 1)
                hr, hz, hn = np.split(gates, 3, 1)
                r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
                n = np.tanh(xn + r * hn)
                saved.append((h, r, z, n, hn))
                h = n + z * (h - n)
            else:
                h_prev = h
                h = np.tanh(gates) if mode == "RNN_TANH" else np.maximum(gates, 0)
                saved.append((h_prev, h))
            ys[t] = h
        if mode == "LSTM":
            out = np.concatenate([ys.reshape(-1), c.reshape(-1)])
        else:
            out = ys.reshape(-1)
    return out, saved


def recurrence_backward(g: np.ndarray, gx: np.ndarray, h0: np.ndarray, c0: Any,
                        w_hh: np.ndarray, b_hh: Any, w_hr: Any, mode: str, reverse: bool,
                        saved: list) -> tuple:
    """The gradients (gx, h0, c0, w_hh, b_hh, w_hr) at ``g`` (the flat output's) by
    back-propagation through time (None for an absent input).  A ``recurrence_backward``
    event."""
    with RECURRENT.record("recurrence_backward", gx.shape, w_hh.shape) as rec:
        rec.algorithm = "numpy"
        length = gx.shape[0]
        size = length * h0.size
        d_ys = g[:size].reshape(length, *h0.shape)
        d_gx = np.zeros_like(gx)
        d_whh = np.zeros_like(w_hh)
        d_whr = None if w_hr is None else np.zeros_like(w_hr)
        d_bhh = None if b_hh is None else np.zeros(w_hh.shape[0], gx.dtype)
        dh = np.zeros_like(h0)
        dc = g[size:].reshape(c0.shape).copy() if mode == "LSTM" else None
        order = range(length) if reverse else range(length - 1, -1, -1)
        for k, t in enumerate(order):
            s = saved[length - 1 - k]  # the step taken at time t
            dh = dh + d_ys[t]
            if mode == "LSTM":
                h_prev, c_prev, i, f, gg, o, tc, raw = s
                # h = (o tanh c) W_hr^T; c = f c_prev + i g; the gates' derivatives
                # sigmoid' = s (1 - s), tanh' = 1 - t^2
                if w_hr is not None:
                    d_whr += dh.T @ raw
                    dh = dh @ w_hr
                dc = dc + dh * o * (1 - tc * tc)
                d_pre = np.concatenate([dc * gg * i * (1 - i), dc * c_prev * f * (1 - f),
                                        dc * i * (1 - gg * gg), dh * tc * o * (1 - o)], 1)
                dc = dc * f
                d_gh = d_pre
            elif mode == "GRU":
                h_prev, r, z, nn, hn = s
                # h' = n + z (h - n); n = tanh(xn + r hn); r, z sigmoids
                dn = dh * (1 - z) * (1 - nn * nn)
                dz = dh * (h_prev - nn) * z * (1 - z)
                dr = dn * hn * r * (1 - r)
                d_pre = np.concatenate([dr, dz, dn], 1)
                d_gh = np.concatenate([dr, dz, dn * r], 1)
                dh_direct = dh * z
            else:
                h_prev, h = s
                # h' = act(pre): tanh' = 1 - h'^2, relu' = [pre > 0]
                d_pre = dh * (1 - h * h) if mode == "RNN_TANH" else dh * (h > 0)
                d_gh = d_pre
            d_gx[t] = d_pre
            d_whh += d_gh.T @ h_prev
            if d_bhh is not None:
                d_bhh += d_gh.sum(0)
            dh = d_gh @ w_hh + (dh_direct if mode == "GRU" else 0)
    return d_gx, dh, dc, d_whh, d_bhh, d_whr
