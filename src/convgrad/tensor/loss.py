"""Loss terms that are one Function each: binary cross-entropy on probabilities, with
torch's clamped logs and gradient, and on logits; the pointwise regression losses
reduced to their mean or sum, where their compiled kernels run (elsewhere those, and
the other losses, are composed in :mod:`convgrad.functional`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function, is_grad_enabled
from ..ops import eltwise
from ..ops import losses as loss_kernels

Tensor = Any  # annotations: these rules see the tensor layer's Tensor

__all__ = ["BinaryCrossEntropy", "BinaryCrossEntropyWithLogits", "PointwiseLoss"]

_LOG_FLOOR = -100.0
_EPSILON = 1e-12


class BinaryCrossEntropy(Function):
    """``-(t log x + (1 - t) log(1 - x))`` elementwise, each log clamped at -100."""

    reads = {0: (0, 1), 1: (0,)}  # dx reads x and t, dt reads x

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, t: Any) -> np.ndarray:
        with np.errstate(divide="ignore"):
            log_x = np.maximum(np.log(x), _LOG_FLOOR)
            log_1mx = np.maximum(np.log1p(-x), _LOG_FLOOR)
        return (t - 1) * log_1mx - t * log_x

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        x, t = ctx.inputs
        need_x, need_t = ctx.needs_input_grad
        # d/dx = (x - t) / (x (1 - x)), the denominator kept >= 1e-12 (torch's rule)
        gx = g * (x - t) / (x * (1.0 - x)).clip(min=_EPSILON) if need_x else None
        # d/dt = log(1 - x) - log(x)
        gt = (g * ((1.0 - x).log() - x.log())).sum_to_size(np.shape(t)) if need_t else None
        return gx, gt


class BinaryCrossEntropyWithLogits(Function):
    """``-(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x)))`` elementwise from the logits,
    as ``max(x, 0) - x t + log1p(exp(-|x|))`` (no overflow for any x)."""

    reads = {0: (0, 1), 1: (0,)}  # dx reads x and t, dt reads x

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, t: Any) -> np.ndarray:
        def reference() -> np.ndarray:
            return np.maximum(x, 0) - x * t + np.log1p(np.exp(-np.abs(x)))

        return eltwise.bce_with_logits(x, t, reference)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        x, t = ctx.inputs
        need_x, need_t = ctx.needs_input_grad
        # d/dx [max(x, 0) - x t + log1p(e^-|x|)] = sigmoid(x) - t
        gx = g * (x.sigmoid() - t) if need_x else None
        # d/dt = -x
        gt = (-(g * x)).sum_to_size(np.shape(t)) if need_t else None
        return gx, gt


class PointwiseLoss(Function):
    """The mean (``mean``) or sum over every element of a pointwise loss of ``d = x - t``
    (``kind``: ``"mse"`` d^2, ``"l1"`` |d|, ``"smooth_l1"`` and ``"huber"`` with ``beta``,
    see :mod:`convgrad.ops.loss_loops`), one kernel each way (callers check
    :func:`convgrad.ops.losses.available`): the float64 sum rounded once; dx = ``c
    dl/dd`` with ``c = g / n`` or ``g``, dt = -dx."""

    reads = (0, 1)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, t: np.ndarray, *, kind: str, beta: float,
                mean: bool) -> np.ndarray:
        ctx.kind, ctx.beta, ctx.mean = kind, beta, mean
        t = loss_kernels.aligned(x, t)  # a target in another layout: copied once
        if any(ctx.needs_input_grad):
            ctx.target = t
        total = loss_kernels.pointwise_loss_sum(x, t, kind, beta)
        return np.asarray(total / x.size if mean else total, dtype=x.dtype)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        x, t = ctx.inputs
        need_x, need_t = ctx.needs_input_grad
        n = x.data.size if ctx.mean else 1
        if not is_grad_enabled():
            gx = loss_kernels.pointwise_loss_backward(x.data, ctx.target, ctx.kind, ctx.beta,
                                                      float(g.data) / n)
            return gx if need_x else None, -gx if need_t else None
        # create_graph: the same derivative as Tensor operations
        d = x - t
        beta = ctx.beta
        if ctx.kind == "mse":
            slope = d * 2.0
        elif ctx.kind == "l1":
            slope = d.sign()
        elif ctx.kind == "smooth_l1":
            slope = (d / beta).clamp(-1.0, 1.0)
        else:
            slope = d.clamp(-beta, beta)
        gx = slope * (g / n)
        return gx if need_x else None, -gx if need_t else None
