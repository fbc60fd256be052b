"""Standardisation, the one Function behind every normalisation layer, and the
statistics it standardises by.

``batch_norm``, ``instance_norm``, ``group_norm`` and ``layer_norm``
(:mod:`convgrad.functional.normalization`) each standardise over some dims,
``(x - mean) / sqrt(var + eps)`` with the biased variance, then scale and shift.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function, is_grad_enabled
from ..ops import reduction

Tensor = Any  # annotations: these rules see the tensor layer's Tensor

__all__ = ["Standardize", "moments"]


def moments(x: np.ndarray, dims: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Mean and biased variance over ``dims`` (kept as size-1 dims): two passes, the
    variance as the mean of squared deviations (never E[x^2] - E[x]^2, which cancels)."""
    mu = reduction.mean(x, axis=dims, keepdims=True)
    d = x - mu
    return mu, reduction.mean(d * d, axis=dims, keepdims=True)


def _inv_std(x: Tensor, dims: tuple, eps: float) -> Tensor:
    """``(var(x) + eps) ** -1/2`` over ``dims`` as recorded Tensor operations."""
    d = x - x.mean(dims, keepdim=True)
    return ((d * d).mean(dims, keepdim=True) + eps) ** -0.5


class Standardize(Function):
    """``y = (x - mean) * inv`` with ``mean``, ``inv = (var + eps)^-1/2`` of x over ``dims``.

    ``mean`` and ``var`` come in precomputed (the caller also needs them for running
    statistics); they are x's own moments, so the rule below differentiates through them.
    The rule reads x, not the output, as torch's: an in-place activation applied to the
    output (``relu_``) is harmless.
    """

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, dims: tuple, eps: float, mean: np.ndarray,
                var: np.ndarray) -> np.ndarray:
        ctx.dims, ctx.eps, ctx.mean = dims, eps, mean
        ctx.inv = 1.0 / np.sqrt(var + eps)
        return (x - mean) * ctx.inv

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x, dims = ctx.inputs[0], ctx.dims
        if is_grad_enabled():  # create_graph: mean and inv as recorded functions of x
            inv = _inv_std(x, dims, ctx.eps)
            y = (x - x.mean(dims, keepdim=True)) * inv
        else:
            inv = type(g)._wrap(ctx.inv)
            y = type(g)._wrap((x.data - ctx.mean) * ctx.inv)
        # y = (x - m) s, m = mean(x), s = (mean((x - m)^2) + eps)^-1/2:
        # dx = s (g - mean(g) - y mean(g y))
        return inv * (g - g.mean(dims, keepdim=True) - y * (g * y).mean(dims, keepdim=True))


# ----------------------------------------------------------------------------- arguments
