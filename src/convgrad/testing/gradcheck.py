"""Finite-difference verification of every differentiable operation, in float64.

For ``y = fn(*inputs)`` and a fixed random cotangent ``v``, the analytic gradient of
``sum(y * v)`` (the engine's vector-Jacobian product) is compared with central
differences ``(L(x + eps) - L(x - eps)) / (2 eps)`` for every element of every input that
requires grad.  ``order=2`` does the same for ``sum(grad(sum(y * v)) * u)``, which checks
the backward rules' own gradients (``create_graph=True``).

The max relative error is the max absolute error divided by the largest numerical
gradient.  ``convgrad gradcheck`` runs these checks over a sweep of every operation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..autograd import enable_grad, grad
from ..tensor import Tensor, tensor

__all__ = ["CheckResult", "check", "gradcheck", "gradgradcheck"]


class CheckResult(NamedTuple):
    max_abs: float  # max |analytic - numerical|
    max_rel: float  # max_abs / max |numerical|
    passed: bool  # |analytic - numerical| <= atol + rtol |numerical| everywhere


def _scalar_loss(fn: Callable, inputs: Sequence[Any], wrt: list[Tensor], order: int,
                 seed: int) -> Callable[[], Tensor]:
    """L(inputs) = sum(fn * v) (order 1) or sum(grad(sum(fn * v)) * u) (order 2)."""
    rng = np.random.default_rng(seed)
    with enable_grad():
        shape = fn(*inputs).shape
    v = rng.standard_normal(shape)
    if order == 1:
        return lambda: (fn(*inputs) * v).sum()
    us = [rng.standard_normal(t.shape) for t in wrt]

    def loss() -> Tensor:
        gs = grad((fn(*inputs) * v).sum(), wrt, create_graph=True, allow_unused=True)
        terms = [(g * u).sum() for g, u in zip(gs, us) if g is not None]
        return sum(terms[1:], terms[0]) if terms else tensor(0.0, dtype=np.float64)

    return loss


def check(fn: Callable[..., Tensor], inputs: Sequence[Any], eps: float = 1e-6,
          atol: float = 1e-5, rtol: float = 1e-4, order: int = 1, seed: int = 0,
          max_elements: int | None = None) -> CheckResult:
    """Compare the analytic and numerical gradients of ``fn`` at ``inputs`` (see module doc).

    Only inputs that are Tensors requiring grad are perturbed; use float64 inputs.
    ``max_elements`` bounds the cost: check that many random elements of each input.
    """
    if order not in (1, 2):
        raise ValueError(f"check: order={order} must be 1 or 2")
    wrt = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not wrt:
        raise ValueError("check: no input is a Tensor that requires grad")
    loss = _scalar_loss(fn, inputs, wrt, order, seed)
    with enable_grad():
        out = loss()
        analytic = grad(out, wrt, allow_unused=True) if out.requires_grad else [None] * len(wrt)
        worst_abs, scale, passed = 0.0, 0.0, True
        for t, g in zip(wrt, analytic):
            where = list(np.ndindex(t.shape))
            if max_elements is not None and len(where) > max_elements:
                pick = np.random.default_rng(seed).choice(len(where), max_elements, False)
                where = [where[i] for i in pick]
            numerical = np.zeros(t.shape)
            checked = np.zeros(t.shape, bool)
            for idx in where:  # perturb one element at a time, in place
                orig = t.data[idx]
                t.data[idx] = orig + eps
                plus = loss().item()
                t.data[idx] = orig - eps
                minus = loss().item()
                t.data[idx] = orig
                numerical[idx] = (plus - minus) / (2 * eps)
                checked[idx] = True
            a = np.zeros(t.shape) if g is None else g.data
            err = np.where(checked, np.abs(a - numerical), 0.0)
            worst_abs = max(worst_abs, float(err.max(initial=0.0)))
            scale = max(scale, float(np.abs(numerical).max(initial=0.0)))
            passed &= bool(np.all(err <= atol + rtol * np.abs(numerical)))
    return CheckResult(worst_abs, worst_abs / scale if scale > 0 else worst_abs, passed)


def gradcheck(fn: Callable[..., Tensor], inputs: Sequence[Any], eps: float = 1e-6,
              atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """True if the first-order gradients of ``fn`` match central differences."""
    return check(fn, inputs, eps, atol, rtol, order=1).passed


def gradgradcheck(fn: Callable[..., Tensor], inputs: Sequence[Any], eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """True if the second-order gradients of ``fn`` match central differences."""
    return check(fn, inputs, eps, atol, rtol, order=2).passed
