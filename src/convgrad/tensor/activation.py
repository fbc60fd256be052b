"""Activations that are one Function each (the piecewise-linear ones, ReLU and its kin,
are in :mod:`.elementwise`).

Each forward and backward runs in the ``eltwise`` kernel family (:mod:`convgrad.ops.eltwise`:
oneDNN's eltwise primitive for large float32 arrays, else the NumPy code written here).
Each rule is written in Tensor operations of the input, so it is differentiable again
(under ``create_graph`` the rule itself is recorded), and reads the input, never the
output (an in-place edit of an output is harmless).  The normal CDF needs ``erf``, which
comes from SciPy (imported on first use).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd import Context, Function
from ..ops import eltwise
from .elementwise import Where, fast_grad

Tensor = Any  # annotations: these rules see the tensor layer's Tensor

__all__ = ["ELU", "GELU", "GELUTanh", "Hardswish", "LogSigmoid", "NormalCDF", "SiLU",
           "Softplus"]


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
        return eltwise.activation("elu", x, lambda: np.where(
            x > 0, x, alpha * np.expm1(np.minimum(x, 0))), alpha=alpha)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]
        # d elu/dx = 1 for x > 0, alpha e^x otherwise (e^min(x, 0): no overflow on the
        # branch not taken; recorded from x, so its own derivative flows on)
        return fast_grad("elu", g, x, lambda: g * Where.apply(
            x.data > 0, 1.0, x.clip(max=0.0).exp() * ctx.alpha), alpha=ctx.alpha)


class Softplus(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
        ctx.beta, ctx.threshold = beta, threshold

        def reference() -> np.ndarray:
            bx = x * beta
            return np.where(bx > threshold, x, np.logaddexp(0.0, bx) / beta)

        return eltwise.activation("softplus", x, reference, alpha=beta,
                                  supported=Softplus._onednn(threshold))

    @staticmethod
    def _onednn(threshold: float) -> bool:
        """oneDNN's soft_relu is log(1 + e^(b x)) / b everywhere: torch's linear part
        above ``threshold`` agrees with it to within rounding where e^-threshold is below
        half an ulp of float32 (threshold >= 17), and torch's own formula does not
        overflow below it (threshold <= 80)."""
        return 17.0 <= threshold <= 80.0

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]
        # d/dx log(1 + e^(b x)) / b = sigmoid(b x); 1 where b x > threshold (the linear part)
        return fast_grad("softplus", g, x, lambda: g * Where.apply(
            x.data * ctx.beta > ctx.threshold, 1.0, (x * ctx.beta).sigmoid()),
            alpha=ctx.beta, supported=Softplus._onednn(ctx.threshold))


class LogSigmoid(Function):
    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return eltwise.log_sigmoid(x, lambda: -np.logaddexp(0.0, -x))

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        # d log(sigmoid x)/dx = 1 - sigmoid(x) = sigmoid(-x)
        return g * (-ctx.inputs[0]).sigmoid()


class SiLU(Function):
    """``x sigmoid(x)`` (swish)."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        def reference() -> np.ndarray:
            # scipy.special is imported only when NumPy runs it (~70 ms, once)
            from scipy.special import expit

            return x * expit(x)

        return eltwise.activation("silu", x, reference, alpha=1.0)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]
        # d x s(x)/dx = s + x s (1 - s), s = sigmoid(x)
        def rule() -> Tensor:
            s = x.sigmoid()
            return g * (s * (x * (1.0 - s) + 1.0))

        return fast_grad("silu", g, x, rule, alpha=1.0)


class GELU(Function):
    """``x Phi(x)``, ``Phi`` the standard normal distribution function."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return eltwise.activation("gelu", x, lambda: x * NormalCDF.forward(ctx, x))

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]
        # d x Phi(x)/dx = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
        return fast_grad("gelu", g, x, lambda: g * (NormalCDF.apply(x) + x * (
            x * x * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi))))


_C = math.sqrt(2.0 / math.pi)


class GELUTanh(Function):
    """``x (1 + tanh(u)) / 2``, ``u = sqrt(2/pi) (x + 0.044715 x^3)``."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        def reference() -> np.ndarray:
            inner = (x + x * x * x * 0.044715) * _C
            return x * 0.5 * (np.tanh(inner) + 1.0)

        return eltwise.activation("gelu_tanh", x, reference)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]

        # d/dx = (1 + t) / 2 + x (1 - t^2) u' / 2, t = tanh(u), u' = sqrt(2/pi) (1 + 3 k x^2)
        def rule() -> Tensor:
            t = ((x + x * x * x * 0.044715) * _C).tanh()
            du = (x * x * (3.0 * 0.044715) + 1.0) * _C
            return g * ((t + 1.0) * 0.5 + x * (1.0 - t * t) * du * 0.5)

        return fast_grad("gelu_tanh", g, x, rule)


class Hardswish(Function):
    """``x relu6(x + 3) / 6``."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return eltwise.activation("hardswish", x, lambda: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
                                  alpha=1.0 / 6.0, beta=0.5)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x = ctx.inputs[0]
        # d/dx = 0 for x < -3, (2x + 3)/6 for -3 <= x <= 3, 1 above (torch's boundaries)
        def rule() -> Tensor:
            xd = x.data
            inner = Where.apply(xd < -3.0, 0.0, x * (1.0 / 3.0) + 0.5)
            return g * Where.apply(xd > 3.0, 1.0, inner)

        return fast_grad("hardswish", g, x, rule, alpha=1.0 / 6.0, beta=0.5)
