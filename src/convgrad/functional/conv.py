"""Differentiable convolutions: three primitives closed under differentiation.

``Conv`` (forward, with optional bias), ``ConvInputGrad`` and ``ConvWeightGrad`` are
bilinear maps and each one's backward is made of the others, so gradients of any
order are convolutions again:

* ``y = conv(x, w)``:            dx = input_grad(g, w),   dw = weight_grad(x, g)
* ``gx = input_grad(gy, w)``:    d gy = conv(h, w),       dw = weight_grad(h, gy)
  (``<input_grad(gy, w), h> = <gy, conv(h, w)>``)
* ``gw = weight_grad(x, gy)``:   dx = input_grad(gy, h),  d gy = conv(x, h)
  (``<weight_grad(x, gy), h> = <gy, conv(x, h)>``)
* bias: ``gb = bias_grad(g)``, whose own gradient broadcasts back (``BiasExpand``).

Each backward asks ``ctx.needs_input_grad`` and runs only the kernels needed.  The
user-facing functions below only normalise arguments (:mod:`convgrad.functional.conv_args`)
and call these primitives; a transposed convolution is ``Conv`` with a transposed
spec and the weight's channel axes swapped per group.
"""

from __future__ import annotations

from dataclasses import replace
from math import prod
from typing import Any

import numpy as np

from ..autograd import Function
from ..ops import ConvSpec, conv_bias_grad, conv_forward, conv_input_grad, conv_weight_grad
from ..tensor import Tensor, tensor
from .conv_args import conv_spec, general_spec, transpose_spec
from .padding import pad as _pad

__all__ = ["conv_general", "conv1d", "conv2d", "conv3d",
           "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


class Conv(Function):
    """``y = conv(x, w) + b`` (``b`` may be None)."""

    @staticmethod
    def forward(ctx, x, w, b, spec: ConvSpec):
        ctx.spec = spec
        y = conv_forward(x, w, spec)
        if b is not None:
            if b.dtype != y.dtype and np.result_type(b, y) != y.dtype:
                y = y.astype(np.result_type(b, y))
            y += b.reshape((1, -1) + (1,) * spec.ndim)
        return y

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.inputs
        spec, need = ctx.spec, ctx.needs_input_grad
        gx = ConvInputGrad.apply(g, w, x_shape=x.shape, spec=spec) if need[0] else None
        gw = ConvWeightGrad.apply(x, g, w_shape=w.shape, spec=spec) if need[1] else None
        gb = ConvBiasGrad.apply(g) if need[2] else None
        return gx, gw, gb


class ConvInputGrad(Function):
    """``gx = input_grad(gy, w)``: the adjoint of ``conv(., w)``."""

    @staticmethod
    def forward(ctx, gy, w, x_shape, spec):
        ctx.spec, ctx.x_shape = spec, x_shape
        return conv_input_grad(gy, w, x_shape, spec)

    @staticmethod
    def backward(ctx, h):
        gy, w = ctx.inputs
        spec, need = ctx.spec, ctx.needs_input_grad
        # <input_grad(gy, w), h> = <gy, conv(h, w)>
        ggy = Conv.apply(h, w, None, spec=spec) if need[0] else None
        gw = ConvWeightGrad.apply(h, gy, w_shape=w.shape, spec=spec) if need[1] else None
        return ggy, gw


class ConvWeightGrad(Function):
    """``gw = weight_grad(x, gy)``: the adjoint of ``conv(x, .)``."""

    @staticmethod
    def forward(ctx, x, gy, w_shape, spec):
        ctx.spec = spec
        return conv_weight_grad(x, gy, w_shape, spec)

    @staticmethod
    def backward(ctx, h):
        x, gy = ctx.inputs
        spec, need = ctx.spec, ctx.needs_input_grad
        # <weight_grad(x, gy), h> = <gy, conv(x, h)>
        gx = ConvInputGrad.apply(gy, h, x_shape=x.shape, spec=spec) if need[0] else None
        ggy = Conv.apply(x, h, None, spec=spec) if need[1] else None
        return gx, ggy


class ConvBiasGrad(Function):
    """``gb[o] = sum_{n,p} gy[n, o, p]``."""

    @staticmethod
    def forward(ctx, gy):
        ctx.shape = gy.shape
        return conv_bias_grad(gy)

    @staticmethod
    def backward(ctx, h):
        return (BiasExpand.apply(h, shape=ctx.shape),)


class BiasExpand(Function):
    """``h`` (C,) broadcast to ``shape`` (N, C, *spatial): the adjoint of the bias sum."""

    @staticmethod
    def forward(ctx, h, shape):
        return np.broadcast_to(h.reshape((1, -1) + (1,) * (len(shape) - 2)), shape).copy()

    @staticmethod
    def backward(ctx, g):
        return (ConvBiasGrad.apply(g),)


# ---------------------------------------------------------------- user-facing functions

def _as_tensor(a: Any, name: str, fn: str) -> Tensor:
    if isinstance(a, Tensor):
        return a
    if not isinstance(a, np.ndarray | np.generic | list | tuple | int | float):
        raise TypeError(f"{fn}: {name} must be a Tensor or numpy.ndarray, got {type(a).__name__}")
    try:
        kind = a.dtype.kind if isinstance(a, np.ndarray | np.generic) else np.asarray(a).dtype.kind
    except (ValueError, TypeError) as e:  # e.g. a ragged nested list
        raise ValueError(f"{fn}: {name} cannot be made into an array: {e}") from None
    if kind not in "fiub":
        dtype = a.dtype if isinstance(a, np.ndarray | np.generic) else np.asarray(a).dtype
        raise TypeError(f"{fn}: {name} has dtype {dtype}; expected a float array "
                        "(int and bool arrays become float32)")
    return tensor(a)


def _prepare(x, weight, bias, nd: int, fn: str):
    """Tensors for (x, weight, bias) with a batch dim; ``unbatched`` as PyTorch allows."""
    x = _as_tensor(x, "input", fn)
    weight = _as_tensor(weight, "weight", fn)
    if bias is not None:
        bias = _as_tensor(bias, "bias", fn)
    if weight.ndim != nd + 2:
        raise ValueError(
            f"{fn}: weight must have {nd + 2} dims for a {nd}-d convolution, "
            f"got shape {tuple(weight.shape)}"
        )
    unbatched = x.ndim == nd + 1
    if unbatched:
        x = x.reshape(1, *x.shape)
    elif x.ndim != nd + 2:
        raise ValueError(
            f"{fn}: input must have {nd + 2} dims (N, C, {nd} spatial) or {nd + 1} (unbatched), "
            f"got shape {tuple(x.shape)}"
        )
    if 0 in x.shape[2:]:  # as torch: only the batch and channel dims may be empty
        raise ValueError(f"{fn}: input of shape {tuple(x.shape)} has a zero-length spatial "
                         "dim; expected every spatial dim >= 1")
    return x, weight, bias, unbatched


def _check_bias(bias: Tensor | None, c_out: int, fn: str) -> None:
    if bias is not None and tuple(bias.shape) != (c_out,):
        raise ValueError(f"{fn}: bias must have shape ({c_out},) (C_out), got {tuple(bias.shape)}")


def _checked_output_shape(spec: ConvSpec, x: Tensor, weight: Tensor, fn: str) -> tuple:
    """The shape rule, plus: the output must be an array NumPy can describe."""
    y_shape = spec.output_shape(x.shape, weight.shape, fn)
    nbytes = prod(y_shape) * np.result_type(x.dtype, weight.dtype).itemsize
    if nbytes > np.iinfo(np.intp).max:
        raise ValueError(f"{fn}: the output of shape {y_shape} would need {nbytes} bytes, "
                         "more than any array can hold")
    return y_shape


def _run(x: Tensor, weight: Tensor, bias, spec: ConvSpec, unbatched: bool, fn: str) -> Tensor:
    y_shape = _checked_output_shape(spec, x, weight, fn)  # validates before any work
    _check_bias(bias, y_shape[1], fn)
    y = Conv.apply(x, weight, bias, spec=spec)
    return y.reshape(*y.shape[1:]) if unbatched else y


def conv_general(x, weight, bias=None, *, stride=1, padding=0, kernel_dilation=1,
                 input_dilation=1, groups=1, flip=False) -> Tensor:
    """General N-d convolution (see API.md); ``x`` (N, C_in, *L), ``weight`` (C_out, C_in/G, *K)."""
    fn = "conv_general"
    w_nd = np.ndim(weight) if not isinstance(weight, Tensor) else weight.ndim
    nd = w_nd - 2
    if nd < 1:
        raise ValueError(f"conv_general: weight must have >= 3 dims (C_out, C_in/groups, *kernel), "
                         f"got {w_nd}")
    x, weight, bias, unbatched = _prepare(x, weight, bias, nd, fn)
    spec = general_spec(nd, stride, padding, kernel_dilation, input_dilation, groups, flip, fn)
    return _run(x, weight, bias, spec, unbatched, fn)


def _check_mode_pads(x_shape: tuple, pads: tuple, padding: Any, mode: str, fn: str) -> None:
    """torch's limits: reflect pads < the input size, circular pads <= it."""
    if mode == "replicate":
        return
    for d, (lo, hi) in enumerate(pads):
        n = x_shape[2 + d]
        if max(lo, hi) > (n - 1 if mode == "reflect" else n):
            rel = "<" if mode == "reflect" else "<="
            raise ValueError(
                f"{fn}: padding={padding!r} (pads {(lo, hi)} in spatial dim {d}) with "
                f"padding_mode={mode!r} must be {rel} the input size {n} there "
                f"(input shape {tuple(x_shape)})"
            )


def _conv_nd(nd: int, fn: str, x, weight, bias, stride, padding, dilation, groups, padding_mode):
    x, weight, bias, unbatched = _prepare(x, weight, bias, nd, fn)
    spec, mode_pads = conv_spec(nd, weight.shape, stride, padding, dilation, groups,
                                padding_mode, fn)
    if weight.shape[0] == 0:  # as torch (conv_general allows it)
        raise ValueError(f"{fn}: weight of shape {tuple(weight.shape)} has C_out=0; "
                         "expected C_out >= 1")
    if mode_pads is not None and any(lo or hi for lo, hi in mode_pads):
        _check_mode_pads(x.shape, mode_pads, padding, padding_mode, fn)
        _checked_output_shape(replace(spec, padding=mode_pads), x, weight, fn)  # before padding
        flat = tuple(v for lo_hi in reversed(mode_pads) for v in lo_hi)  # last dim first
        # an empty batch (or C_in = 0) reads no value: pad it with zeros, which any size allows
        x = _pad(x, flat, mode=padding_mode if x.numel() else "constant")
    return _run(x, weight, bias, spec, unbatched, fn)


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros") -> Tensor:
    """1-D convolution with ``torch.nn.functional.conv1d`` semantics plus ``padding_mode``."""
    return _conv_nd(1, "conv1d", x, weight, bias, stride, padding, dilation, groups, padding_mode)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros") -> Tensor:
    """2-D convolution with ``torch.nn.functional.conv2d`` semantics plus ``padding_mode``."""
    return _conv_nd(2, "conv2d", x, weight, bias, stride, padding, dilation, groups, padding_mode)


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros") -> Tensor:
    """3-D convolution with ``torch.nn.functional.conv3d`` semantics plus ``padding_mode``."""
    return _conv_nd(3, "conv3d", x, weight, bias, stride, padding, dilation, groups, padding_mode)


def _conv_transpose_nd(nd: int, fn: str, x, weight, bias, stride, padding, output_padding,
                       groups, dilation) -> Tensor:
    x, weight, bias, unbatched = _prepare(x, weight, bias, nd, fn)
    spec = transpose_spec(nd, weight.shape, stride, padding, output_padding, groups, dilation, fn)
    c_in, og, *k = weight.shape
    g = spec.groups
    if c_in == 0 or og == 0:  # as torch (conv_general allows it)
        raise ValueError(f"{fn}: weight of shape {tuple(weight.shape)} (C_in, C_out/groups, "
                         "*kernel) has no channels; expected C_in >= 1 and C_out/groups >= 1")
    if x.shape[1] != c_in:
        raise ValueError(f"{fn}: weight.shape[0]={c_in} must equal C_in={x.shape[1]} "
                         f"(input shape {tuple(x.shape)})")
    if c_in % g:
        raise ValueError(f"{fn}: groups={g} must divide C_in={c_in}")
    # (C_in, C_out/G, *K) -> (C_out, C_in/G, *K): swap the channel axes within each group
    w = weight.reshape(g, c_in // g, og, *k).transpose(1, 2).reshape(g * og, c_in // g, *k)
    return _run(x, w, bias, spec, unbatched, fn)


def conv_transpose1d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    """1-D transposed convolution, ``torch.nn.functional.conv_transpose1d`` semantics."""
    return _conv_transpose_nd(1, "conv_transpose1d", x, weight, bias, stride, padding,
                              output_padding, groups, dilation)


def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    """2-D transposed convolution, ``torch.nn.functional.conv_transpose2d`` semantics."""
    return _conv_transpose_nd(2, "conv_transpose2d", x, weight, bias, stride, padding,
                              output_padding, groups, dilation)


def conv_transpose3d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    """3-D transposed convolution, ``torch.nn.functional.conv_transpose3d`` semantics."""
    return _conv_transpose_nd(3, "conv_transpose3d", x, weight, bias, stride, padding,
                              output_padding, groups, dilation)
