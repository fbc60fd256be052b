"""Differentiable convolutions: three primitives closed under differentiation, and the bias.

``Conv`` (forward, with optional bias), ``ConvInputGrad`` and ``ConvWeightGrad`` are
bilinear maps and each one's backward is made of the others, so gradients of any
order are convolutions again:

* ``y = conv(x, w)``:            dx = input_grad(g, w),   dw = weight_grad(x, g)
* ``gx = input_grad(gy, w)``:    d gy = conv(h, w),       dw = weight_grad(h, gy)
  (``<input_grad(gy, w), h> = <gy, conv(h, w)>``)
* ``gw = weight_grad(x, gy)``:   dx = input_grad(gy, h),  d gy = conv(x, h)
  (``<weight_grad(x, gy), h> = <gy, conv(x, h)>``)
* bias: ``gb = bias_grad(g)``, whose own gradient broadcasts back (``BiasExpand``);
  ``AddBias`` adds a bias to an existing output (a transposed convolution's).
* ``ConvReLU``: ``relu(conv(x, w) + b)``: a leaky ReLU (slope > 0) in one oneDNN
  primitive, a ReLU by the compiled loop on the result in place; its backward masks ``g``
  by the output (with a bias, a ReLU's mask and the bias gradient in one compiled pass),
  then is ``Conv``'s.

Each backward asks ``ctx.needs_input_grad`` and runs only the kernels needed.  The
arguments arrive validated (the edge, :mod:`convgrad.functional.conv_args`, applied the
shape rule once), so the unchecked kernels of :mod:`convgrad.ops.kernels` run them.  A
transposed convolution is ``ConvInputGrad`` of the convolution it transposes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import OUTPUT, Context, Function, is_grad_enabled
from ..autograd.deferred import Deferred
from ..ops import eltwise, layouts, route
from ..ops.spec import ConvSpec
from . import deferral
from .elementwise import Where, fast_grad
from .memory_format import channels_last, channels_last_3d

__all__ = ["AddBias", "BiasExpand", "Conv", "ConvBiasGrad", "ConvInputGrad", "ConvReLU",
           "ConvWeightGrad"]

Tensor = Any  # annotations: these rules see the tensor layer's Tensor


class Conv(Function):
    """``y = conv(x, w) + b`` (``b`` may be None) of shape ``y_shape``."""

    reads = (0, 1)  # dx needs w, dw needs x; torch saves both whatever is needed

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, w: np.ndarray, b: np.ndarray | None,
                spec: ConvSpec, y_shape: tuple) -> np.ndarray:
        ctx.spec = spec
        return route.conv_forward(x, w, spec, y_shape, b)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        return _conv_grads(ctx, g)


def _conv_grads(ctx: Context, g: Tensor) -> tuple:
    """(dx, dw, db) of ``conv(x, w) + b`` for the output gradient ``g``."""
    x, w = ctx.inputs[:2]
    spec, need = ctx.spec, ctx.needs_input_grad
    if sum(need) > 1:
        g = _dense_slice(g)
    gx = ConvInputGrad.apply(g, w, spec=spec, x_shape=x.shape) if need[0] else None
    gw = _weight_grad(ctx, 1, x, g, x, spec, w.shape) if need[1] else None
    gb = ConvBiasGrad.apply(g) if need[2] else None
    return gx, gw, gb


def _weight_grad(ctx: Context, i: int, x: Tensor, gy: Tensor, activation: Tensor,
                 spec: ConvSpec, w_shape: tuple) -> Any:
    """``weight_grad(x, gy)``, the gradient of input ``i`` of ``ctx``'s node, or where
    :func:`.deferral.allowed` (``activation``: the forward's input among the two) a
    :class:`Deferred` of it, run when the weight's ``.grad`` is read (a GAN's generator
    step never reads the discriminator's)."""
    if deferral.allowed(ctx, i, activation, x.data, gy.data):
        x, gy = type(x)._wrap(x.data), type(gy)._wrap(gy.data)  # the values, not the graph
        return Deferred(lambda: ConvWeightGrad.apply(x, gy, spec=spec, w_shape=w_shape),
                        (x, gy))
    return ConvWeightGrad.apply(x, gy, spec=spec, w_shape=w_shape)


def _dense_slice(g: Tensor) -> Tensor:
    """``g``, or where it is a channel slice of a channels-last gradient (a concatenation's
    backward hands each part so: a U-Net's up-convolution), one channels-last copy of it
    (the compiled row copy) for every pass to read: each oneDNN pass reordered the slice
    to its blocks itself and the bias gradient summed it at its pitch (a 3-D U-Net's
    (2, 16, 64, 64, 64): 4.1-4.6 ms a reorder, 5.6 ms the sum; the copy 4.0-5.7 ms, the
    sum after it 2.4 ms)."""
    a = g.data
    if (not isinstance(a, np.ndarray) or a.ndim not in (4, 5) or layouts.is_channels_last(a)
            or not layouts.channels_innermost(a)):
        return g
    return g.contiguous(memory_format=channels_last if a.ndim == 4 else channels_last_3d)


class ConvReLU(Function):
    """``z = relu(conv(x, w) + b)``, ``slope * y`` below zero (0: a ReLU; a slope >= 0, so
    that ``z > 0`` exactly where the pre-activation is)."""

    reads = (0, 1, OUTPUT)  # Conv's, and the output for the activation's derivative

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, w: np.ndarray, b: np.ndarray | None,
                spec: ConvSpec, y_shape: tuple, slope: float) -> np.ndarray:
        ctx.spec, ctx.slope = spec, slope
        return route.conv_forward(x, w, spec, y_shape, b, slope)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        z, slope = ctx.output, ctx.slope
        # d relu(y)/dy = 1 where y > 0 (where z > 0), else slope: the ReLU and LeakyReLU
        # Functions' rules, read from the output (ReLU's passes a NaN's gradient on), run
        # by the eltwise family's kernels (one compiled pass; the mask and product as
        # NumPy passes took 1.5 ms on DCGAN's (32, 64, 32, 32))
        if slope == 0:
            need = ctx.needs_input_grad
            if need[2] and not is_grad_enabled():
                # the ReLU's gradient and its sum over batch and pixels (the bias
                # gradient, ConvBiasGrad's bits) in one compiled pass
                fused = eltwise.relu_grad_with_sums(g.data, z.data, (0, *range(2, z.ndim)))
                if fused is not None:
                    gy, gb = (type(g)._wrap(a) for a in fused)
                    x, w, spec = *ctx.inputs[:2], ctx.spec
                    gx = ConvInputGrad.apply(gy, w, spec=spec, x_shape=x.shape) if need[0] else None
                    gw = _weight_grad(ctx, 1, x, gy, x, spec, w.shape) if need[1] else None
                    return gx, gw, gb
            gy = fast_grad("relu", g, z, lambda: Where.apply(~(z.data <= 0), g, 0.0))
        else:
            gy = fast_grad("leaky_relu", g, z, lambda: g * np.where(
                z.data > 0, 1.0, slope).astype(g.dtype), alpha=slope)
        return _conv_grads(ctx, gy)


class ConvInputGrad(Function):
    """``gx = input_grad(gy, w)`` for an input of shape ``x_shape``: the adjoint of
    ``conv(., w)``."""

    reads = {0: (1,), 1: (0,)}  # d gy needs w, dw needs gy

    @staticmethod
    def forward(ctx: Context, gy: np.ndarray, w: np.ndarray, spec: ConvSpec,
                x_shape: tuple) -> np.ndarray:
        ctx.spec = spec
        return route.conv_input_grad(gy, w, spec, x_shape)

    @staticmethod
    def backward(ctx: Context, h: Tensor) -> tuple:
        gy, w = ctx.inputs
        spec, need = ctx.spec, ctx.needs_input_grad
        if all(need):
            h = _dense_slice(h)
        # <input_grad(gy, w), h> = <gy, conv(h, w)>
        ggy = Conv.apply(h, w, None, spec=spec, y_shape=gy.shape) if need[0] else None
        gw = _weight_grad(ctx, 1, h, gy, gy, spec, w.shape) if need[1] else None
        return ggy, gw


class ConvWeightGrad(Function):
    """``gw = weight_grad(x, gy)`` for a weight of shape ``w_shape``: the adjoint of
    ``conv(x, .)``."""

    reads = {0: (1,), 1: (0,)}  # dx needs gy, d gy needs x

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, gy: np.ndarray, spec: ConvSpec,
                w_shape: tuple) -> np.ndarray:
        ctx.spec = spec
        return route.conv_weight_grad(x, gy, spec, w_shape)

    @staticmethod
    def backward(ctx: Context, h: Tensor) -> tuple:
        x, gy = ctx.inputs
        spec, need = ctx.spec, ctx.needs_input_grad
        # <weight_grad(x, gy), h> = <gy, conv(x, h)>
        gx = ConvInputGrad.apply(gy, h, spec=spec, x_shape=x.shape) if need[0] else None
        ggy = Conv.apply(x, h, None, spec=spec, y_shape=gy.shape) if need[1] else None
        return gx, ggy


class ConvBiasGrad(Function):
    """``gb[o] = sum_{n,p} gy[n, o, p]``."""

    reads = ()

    @staticmethod
    def forward(ctx: Context, gy: np.ndarray) -> np.ndarray:
        ctx.shape = gy.shape
        return route.conv_bias_grad(gy)

    @staticmethod
    def backward(ctx: Context, h: Tensor) -> tuple:
        # the adjoint of a sum over batch and pixels broadcasts back
        return (BiasExpand.apply(h, shape=ctx.shape),)


class BiasExpand(Function):
    """``h`` (C,) broadcast to ``shape`` (N, C, *spatial): the adjoint of the bias sum."""

    reads = ()

    @staticmethod
    def forward(ctx: Context, h: np.ndarray, shape: tuple) -> np.ndarray:
        return np.broadcast_to(h.reshape((1, -1) + (1,) * (len(shape) - 2)), shape).copy()

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        return (ConvBiasGrad.apply(g),)


class AddBias(Function):
    """``y + b`` with ``b`` (C,) over the channel dim of ``y`` (N, C, *spatial)."""

    reads = ()

    @staticmethod
    def forward(ctx: Context, y: np.ndarray, b: np.ndarray) -> np.ndarray:
        # an ndarray's layout kept (channels-last); a dask array copies lazily
        return route.add_bias(y.copy(order="K") if isinstance(y, np.ndarray) else y.copy(), b)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        # dy = g; db = the sum of g over batch and pixels
        need = ctx.needs_input_grad
        if all(need):  # read here and by the transposed convolution's passes
            g = _dense_slice(g)
        return (g if need[0] else None), (ConvBiasGrad.apply(g) if need[1] else None)
