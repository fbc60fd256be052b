"""Activations that are one Function each (the piecewise-linear ones, ReLU and its kin,
are in :mod:`.elementwise`; the ones that are products of existing operations, as
``silu`` and ``gelu``, are composed in :mod:`convgrad.functional.smooth_activation`).

Each rule is written in Tensor operations of the input, so it is differentiable again,
and reads the input, never the output (an in-place edit of an output is harmless).
The normal CDF needs ``erf``, which comes from SciPy (imported on first use).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd import Context, Function
from .elementwise import Where

Tensor = Any  # annotations: these rules see the tensor layer's Tensor

__all__ = ["ELU", "LogSigmoid", "NormalCDF", "Softplus"]


class NormalCDF(Function):
    """``Phi(x) = (1 + erf(x / sqrt 2)) / 2``, the standard normal distribution function."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        from scipy.special import erfc

        return 0.5 * erfc(x * -math.sqrt(0.5))

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]
        # dPhi/dx = phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
        return g * (x * x * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi))


class ELU(Function):
    reads = (0,)  # the input, not the output: an in-place edit of the output is harmless

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, alpha: float) -> np.ndarray:
        ctx.alpha = alpha
        return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]
        # d elu/dx = 1 for x > 0, alpha e^x otherwise (e^min(x, 0): no overflow on the
        # branch not taken; recorded from x, so its own derivative flows on)
        return g * Where.apply(x.data > 0, 1.0, x.clip(max=0.0).exp() * ctx.alpha)


class Softplus(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
        ctx.beta, ctx.threshold = beta, threshold
        bx = x * beta
        return np.where(bx > threshold, x, np.logaddexp(0.0, bx) / beta)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]
        # d/dx log(1 + e^(b x)) / b = sigmoid(b x); 1 where b x > threshold (the linear part)
        return g * Where.apply(x.data * ctx.beta > ctx.threshold, 1.0, (x * ctx.beta).sigmoid())


class LogSigmoid(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return -np.logaddexp(0.0, -x)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        # d log(sigmoid x)/dx = 1 - sigmoid(x) = sigmoid(-x)
        return g * (-ctx.inputs[0]).sigmoid()
