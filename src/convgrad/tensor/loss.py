"""Loss terms that are one Function each: binary cross-entropy on probabilities, with
torch's clamped logs and gradient, and on logits (the reductions and the other losses
are composed in :mod:`convgrad.functional`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function
from ..ops import eltwise

Tensor = Any  # annotations: these rules see the tensor layer's Tensor

__all__ = ["BinaryCrossEntropy", "BinaryCrossEntropyWithLogits"]

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
