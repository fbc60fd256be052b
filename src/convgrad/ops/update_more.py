"""Optimiser updates of Adagrad, Adamax, NAdam, RAdam, Rprop and ASGD: elementwise rules
on ndarrays, run by :func:`convgrad.ops.update.step` (whole or in chunks on the pool).

As in :mod:`.update`, each rule takes the arrays of one parameter (or one chunk of it),
that parameter's scalars and a :class:`~.update.Scratch`, and follows torch's
single-tensor CPU order of floating-point operations in the parameter's dtype, with
Python-float scalars rounded to that dtype where torch's kernels round them; torch's
fused multiply-adds (``add(..., alpha=)``, ``lerp``, ``addcmul``) round once through
:func:`~.update.fma`.  Scratch slots 0-2 belong to :mod:`.update`'s helpers (``fma``,
``_lerp``, ``_decayed``); the rules here keep their own temporaries in slots 3 and up.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .update import Scratch, _decayed, _lerp, fma

__all__ = ["adagrad", "adamax", "asgd", "nadam", "radam", "rprop"]


def _addcmul_sq(v: np.ndarray, g: np.ndarray, value: float, scratch: Scratch) -> None:
    """``v.addcmul_(g, g, value=value)``: ``v + (value * g) * g``, the last step fused."""
    g2 = np.multiply(v.dtype.type(value), g, out=scratch.take(1, v))
    fma(v, g2, g, v, scratch)


def _addcdiv(p: np.ndarray, num: np.ndarray, den: np.ndarray, value: float,
             scratch: Scratch) -> None:
    """``p.addcdiv_(num, den, value=value)``: ``p + (value * num) / den``."""
    q = np.multiply(p.dtype.type(value), num, out=scratch.take(1, p))
    q /= den
    p += q


def adagrad(arrays: Sequence[np.ndarray | None], h: tuple, scratch: Scratch) -> None:
    """``p, grad, s``; ``h = (lr, lr_decay, weight_decay, eps, step)``: ``g = grad + wd *
    p``; ``s = s + g * g``; ``p -= lr / (1 + (step - 1) lr_decay) * g / (sqrt(s) + eps)``."""
    p, grad, s = arrays
    lr, lr_decay, wd, eps, step = h
    g = _decayed(p, grad, wd, scratch)
    clr = lr / (1 + (step - 1) * lr_decay)
    fma(s, g, g, s, scratch)  # s.addcmul_(g, g, value=1)
    std = np.sqrt(s, out=scratch.take(3, p))
    std += p.dtype.type(eps)
    _addcdiv(p, g, std, -clr, scratch)


def adamax(arrays: Sequence[np.ndarray | None], h: tuple, scratch: Scratch) -> None:
    """``p, grad, m, u``; ``h = (lr, beta1, beta2, eps, weight_decay, step)``: ``g = grad +
    wd * p``; ``m = lerp(m, g, 1 - beta1)``; ``u = max(beta2 * u, |g| + eps)``;
    ``p -= lr / (1 - beta1^t) * m / u``."""
    p, grad, m, u = arrays
    lr, beta1, beta2, eps, wd, step = h
    dt = p.dtype.type
    g = _decayed(p, grad, wd, scratch)
    _lerp(m, g, 1 - beta1, scratch)
    u *= dt(beta2)
    a = np.abs(g, out=scratch.take(3, p))
    a += dt(eps)
    np.maximum(u, a, out=u)
    clr = lr / (1 - beta1**step)
    _addcdiv(p, m, u, -clr, scratch)


def nadam(arrays: Sequence[np.ndarray | None], h: tuple, scratch: Scratch) -> None:
    """``p, grad, m, v``; ``h = (lr, beta1, beta2, eps, weight_decay, decoupled, step,
    c_grad, c_avg)``: ``g = grad + wd * p`` (or, decoupled, ``p *= 1 - lr * wd``);
    ``m = lerp(m, g, 1 - beta1)``; ``v = beta2 * v + (1 - beta2) * g * g``;
    ``d = sqrt(v / (1 - beta2^t)) + eps``; ``p += c_grad * g / d``; ``p += c_avg * m / d``
    (the momentum-schedule coefficients, computed by the optimiser)."""
    p, grad, m, v = arrays
    lr, beta1, beta2, eps, wd, decoupled, step, c_grad, c_avg = h
    dt = p.dtype.type
    bias_correction2 = 1 - beta2**step
    g = grad
    if wd != 0:
        if decoupled:
            p *= dt(1 - lr * wd)
        else:
            g = _decayed(p, grad, wd, scratch)
    _lerp(m, g, 1 - beta1, scratch)
    v *= dt(beta2)
    _addcmul_sq(v, g, 1 - beta2, scratch)
    denom = np.divide(v, dt(bias_correction2), out=scratch.take(3, p))
    np.sqrt(denom, out=denom)
    denom += dt(eps)
    _addcdiv(p, g, denom, c_grad, scratch)
    _addcdiv(p, m, denom, c_avg, scratch)


def radam(arrays: Sequence[np.ndarray | None], h: tuple, scratch: Scratch) -> None:
    """``p, grad, m, v``; ``h = (lr, beta1, beta2, eps, weight_decay, decoupled, step)``:
    Adam's moments; ``rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)`` with ``rho_inf =
    2 / (1 - beta2) - 1``; where ``rho_t > 5``, ``p -= m / (1 - beta1^t) * lr *
    (sqrt(1 - beta2^t) / (sqrt(v) + eps)) * rect``, else ``p -= m / (1 - beta1^t) * lr``."""
    p, grad, m, v = arrays
    lr, beta1, beta2, eps, wd, decoupled, step = h
    dt = p.dtype.type
    g = grad
    if wd != 0:
        if decoupled:
            p *= dt(1 - lr * wd)
        else:
            g = _decayed(p, grad, wd, scratch)
    _lerp(m, g, 1 - beta1, scratch)
    v *= dt(beta2)
    _addcmul_sq(v, g, 1 - beta2, scratch)
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    upd = np.divide(m, dt(bias_correction1), out=scratch.take(3, p))
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
    upd *= dt(lr)
    if rho_t > 5.0:
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        adaptive = np.sqrt(v, out=scratch.take(4, p))
        adaptive += dt(eps)
        np.reciprocal(adaptive, out=adaptive)  # torch: scalar / t == t.reciprocal() * scalar
        adaptive *= dt(bias_correction2**0.5)
        upd *= adaptive
        upd *= dt(rect)
    p -= upd  # p.add_(upd, alpha=-1)


def rprop(arrays: Sequence[np.ndarray | None], h: tuple, scratch: Scratch) -> None:
    """``p, grad, prev, step_size``; ``h = (etaminus, etaplus, step_size_min,
    step_size_max)``: where ``grad * prev`` is positive the step size grows by ``etaplus``,
    where negative it shrinks by ``etaminus`` (and that gradient counts as 0), clamped to
    ``[min, max]``; ``p -= sign(grad) * step_size``; ``prev = grad``."""
    p, grad, prev, step_size = arrays
    etaminus, etaplus, lo, hi = h
    dt = p.dtype.type
    factor = np.multiply(grad, prev, out=scratch.take(3, p))
    np.sign(factor, out=factor)
    np.copyto(factor, dt(etaplus), where=factor > 0)
    np.copyto(factor, dt(etaminus), where=factor < 0)
    np.copyto(factor, dt(1), where=factor == 0)
    step_size *= factor
    np.minimum(np.maximum(step_size, dt(lo), out=step_size), dt(hi), out=step_size)
    g = scratch.take(4, p)
    np.copyto(g, grad)
    g[factor == dt(etaminus)] = 0
    move = np.sign(g, out=scratch.take(5, p))
    move *= step_size
    p -= move  # p.addcmul_(sign(g), step_size, value=-1)
    np.copyto(prev, g)


def asgd(arrays: Sequence[np.ndarray | None], h: tuple, scratch: Scratch) -> None:
    """``p, grad, ax``; ``h = (eta, lambd, weight_decay, mu)``: ``g = grad + wd * p``;
    ``p *= 1 - lambd * eta``; ``p -= eta * g``; the average ``ax += mu * (p - ax)``, or
    ``ax = p`` while ``mu == 1``."""
    p, grad, ax = arrays
    eta, lambd, wd, mu = h
    dt = p.dtype.type
    g = _decayed(p, grad, wd, scratch)
    p *= dt(1 - lambd * eta)
    fma(p, g, np.float64(dt(-eta)), p, scratch)  # p.add_(g, alpha=-eta)
    if mu != 1:
        d = np.subtract(p, ax, out=scratch.take(3, p))
        d *= dt(mu)
        ax += d
    else:
        np.copyto(ax, p)
