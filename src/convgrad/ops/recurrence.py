"""Recurrent layers' kernels: one direction of one layer over a whole sequence, a NumPy
loop over the time steps (the ``recurrent`` family, algorithm ``numpy``), and its
back-propagation through time.  Gate order and arithmetic are torch's: ``gates = gx + (h
W_hh^T + b_hh)``, ``gx`` the input's share ``x W_ih^T + b_ih`` of the whole sequence.
The autograd node around them, and the same steps composed of differentiable Tensor
operations (for gradients of higher order), are :mod:`..tensor.recurrent`'s.

A packed batch (sequences of different lengths, longest first) gives ``batch_sizes``:
at step ``t`` only the first ``batch_sizes[t]`` rows take the step, the others keep their
state (a finished sequence its last one, one not yet started in a reverse pass its
initial one) and output zeros; in the backward a kept row's gradient passes unchanged.
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


def _rows(batch_sizes: Any, t: int, n: int) -> int:
    """The rows that take step ``t``."""
    return n if batch_sizes is None else int(batch_sizes[t])


def _kept(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """``new`` for the first rows (those that took the step), ``old`` for the rest."""
    if new.shape[0] == old.shape[0]:
        return new
    out = old.copy()
    out[:new.shape[0]] = new
    return out


def recurrence_forward(gx: np.ndarray, h0: np.ndarray, c0: Any, w_hh: np.ndarray,
                       b_hh: Any, w_hr: Any, mode: str, reverse: bool,
                       batch_sizes: Any = None) -> tuple:
    """The hidden states ``(L, N, H_out)`` flat, then (LSTM) the last cell state flat;
    and what :func:`recurrence_backward` needs of each step.  ``mode``: ``"LSTM"``,
    ``"GRU"``, ``"RNN_TANH"`` or ``"RNN_RELU"``; ``reverse``: from the last step back;
    ``batch_sizes``: the rows each step takes (a packed batch), None: all.
    A ``recurrence_forward`` event."""
    with RECURRENT.record("recurrence_forward", gx.shape, w_hh.shape) as rec:
        rec.algorithm = "numpy"
        steps = range(gx.shape[0] - 1, -1, -1) if reverse else range(gx.shape[0])
        batch = h0.shape[0]
        h_all, c_all = h0, c0
        ys = np.empty((gx.shape[0], *h0.shape), gx.dtype)
        saved = []
        for t in steps:
            b = _rows(batch_sizes, t, batch)
            h = h_all[:b]
            c = None if c_all is None else c_all[:b]
            gates = h @ w_hh.T  # the hidden state's share (GRU: split before the sum)
            if b_hh is not None:
                gates += b_hh
            if mode != "GRU":
                gates = gx[t, :b] + gates
            if mode == "LSTM":
                pi, pf, pg, po = np.split(gates, 4, 1)
                i, f, g, o = _sigmoid(pi), _sigmoid(pf), np.tanh(pg), _sigmoid(po)
                c_prev, c = c, f * c + i * g
                tc = np.tanh(c)
                raw = o * tc
                saved.append((h, c_prev, i, f, g, o, tc, raw))
                h = raw if w_hr is None else raw @ w_hr.T
            elif mode == "GRU":
                xr, xz, xn = np.split(gx[t, :b], 3, 1)
                hr, hz, hn = np.split(gates, 3, 1)
                r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
                n = np.tanh(xn + r * hn)
                saved.append((h, r, z, n, hn))
                h = n + z * (h - n)
            else:
                h_prev = h
                h = np.tanh(gates) if mode == "RNN_TANH" else np.maximum(gates, 0)
                saved.append((h_prev, h))
            ys[t, :b] = h
            ys[t, b:] = 0
            h_all = _kept(h, h_all)
            if mode == "LSTM":
                c_all = _kept(c, c_all)
        if mode == "LSTM":
            out = np.concatenate([ys.reshape(-1), c_all.reshape(-1)])
        else:
            out = ys.reshape(-1)
    return out, saved


def recurrence_backward(g: np.ndarray, gx: np.ndarray, h0: np.ndarray, c0: Any,
                        w_hh: np.ndarray, b_hh: Any, w_hr: Any, mode: str, reverse: bool,
                        saved: list, batch_sizes: Any = None) -> tuple:
    """The gradients (gx, h0, c0, w_hh, b_hh, w_hr) at ``g`` (the flat output's) by
    back-propagation through time (None for an absent input); ``batch_sizes`` as the
    forward's.  A ``recurrence_backward`` event."""
    with RECURRENT.record("recurrence_backward", gx.shape, w_hh.shape) as rec:
        rec.algorithm = "numpy"
        length = gx.shape[0]
        size = length * h0.size
        d_ys = g[:size].reshape(length, *h0.shape)
        d_gx = np.zeros_like(gx)
        d_whh = np.zeros_like(w_hh)
        d_whr = None if w_hr is None else np.zeros_like(w_hr)
        d_bhh = None if b_hh is None else np.zeros(w_hh.shape[0], gx.dtype)
        dh_all = np.zeros_like(h0)
        dc_all = g[size:].reshape(c0.shape).copy() if mode == "LSTM" else None
        order = range(length) if reverse else range(length - 1, -1, -1)
        for k, t in enumerate(order):
            s = saved[length - 1 - k]  # the step taken at time t
            b = _rows(batch_sizes, t, h0.shape[0])  # the rest kept their state: dh passes
            dh = dh_all[:b] + d_ys[t, :b]
            dc = None if dc_all is None else dc_all[:b]
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
            d_gx[t, :b] = d_pre
            d_whh += d_gh.T @ h_prev
            if d_bhh is not None:
                d_bhh += d_gh.sum(0)
            dh_all = _kept(d_gh @ w_hh + (dh_direct if mode == "GRU" else 0), dh_all)
            if mode == "LSTM":
                dc_all = _kept(dc, dc_all)
    return d_gx, dh_all, dc_all, d_whh, d_bhh, d_whr
