"""The four convolution kernels, unchecked: callers pass validated arrays, spec and shapes.

These are the only places that do convolution arithmetic: each pass asks the dispatch
point (:func:`.dispatch.choose`) how to run and records one profiler event.  The public,
checked versions are in :mod:`.conv`; the autograd Functions call these directly, since
the edge (:mod:`convgrad.functional.conv_args`) has already applied the shape rule once.
The transpose rules that turn each pass into a convolution are in :mod:`.lowering`.
In-memory arrays only: :mod:`.route` sends dask arrays to :mod:`.dask.kernels`, which
computes each chunk with these kernels.
"""

from __future__ import annotations

import numpy as np

from . import eltwise
from .dispatch import CONV, choose
from .reduction import total
from .spec import ConvSpec, Pass

__all__ = ["add_bias", "conv_bias_grad", "conv_forward", "conv_input_grad", "conv_weight_grad",
           "relu"]


def _run(name: str, pass_: Pass, lhs: np.ndarray, rhs: np.ndarray, out_shape: tuple,
         spec: ConvSpec, bias: np.ndarray | None = None,
         relu_slope: float | None = None) -> np.ndarray:
    with CONV.record(name, lhs.shape, rhs.shape, tuple(out_shape)) as rec:
        p = choose(pass_, lhs, rhs, out_shape, spec, bias, relu_slope)
        rec.algorithm = p.name + ("+relu" if p.fused_relu else "")
        rec.flops = p.run()
    out = p.out
    if bias is not None and not p.fused_bias:
        out = add_bias(out, bias)
    if relu_slope is not None and not p.fused_relu:
        out = relu(out, relu_slope)
    return out


def relu(y: np.ndarray, slope: float) -> np.ndarray:
    """``y`` where ``y > 0``, else ``slope * y`` (``max(y, 0)`` for slope 0), in place: as
    the ReLU and LeakyReLU Functions compute it."""
    if slope == 0:  # the compiled loop on every core where it runs, else NumPy's one
        return y if eltwise.relu_in_place(y) else np.maximum(y, 0, out=y)
    np.copyto(y, y * slope, where=~(y > 0))
    return y


def add_bias(y: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``y + b`` over the channel dim, in place when the dtype allows."""
    if np.result_type(b, y) != y.dtype:
        y = y.astype(np.result_type(b, y))
    y += b.reshape((1, -1) + (1,) * (y.ndim - 2))
    return y


def conv_forward(x: np.ndarray, w: np.ndarray, spec: ConvSpec, y_shape: tuple,
                 bias: np.ndarray | None = None, relu_slope: float | None = None
                 ) -> np.ndarray:
    """``y = conv(x, w) + bias`` of shape ``y_shape`` (the shape rule's result), then
    ``relu(y)`` with slope ``relu_slope`` below zero when it is not None; the bias and
    the activation are applied inside the convolution when the backend can."""
    return _run("conv_forward", Pass.FORWARD, x, w, y_shape, spec, bias, relu_slope)


def conv_input_grad(gy: np.ndarray, w: np.ndarray, spec: ConvSpec, x_shape: tuple
                    ) -> np.ndarray:
    """``d(sum(conv(x, w) * gy)) / dx`` for an input of shape ``x_shape``."""
    return _run("conv_input_grad", Pass.INPUT_GRAD, gy, w, x_shape, spec)


def conv_weight_grad(x: np.ndarray, gy: np.ndarray, spec: ConvSpec, w_shape: tuple
                     ) -> np.ndarray:
    """``d(sum(conv(x, w) * gy)) / dw`` for a weight of shape ``w_shape``."""
    return _run("conv_weight_grad", Pass.WEIGHT_GRAD, x, gy, w_shape, spec)


def conv_bias_grad(gy: np.ndarray) -> np.ndarray:
    """Sum of ``gy`` (N, C_out, *spatial) over the batch and spatial dims: shape (C_out,)."""
    with CONV.record("conv_bias_grad", gy.shape, flops=gy.size) as rec:
        rec.algorithm = "reduce"
        return total(gy, axis=(0, *range(2, gy.ndim)))
