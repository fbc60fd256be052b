"""The convolutions of ``torch.nn.functional``, plus ``conv_general``.

Each function normalises its arguments once (:mod:`.conv_args`), applies the shape rule
once (:func:`.conv_args.output_shape`) and records one primitive of
:mod:`convgrad.tensor.conv`: ``Conv`` for a convolution, ``ConvInputGrad`` for a
transposed convolution (the input gradient of the convolution it transposes; its
weight is that convolution's weight as it is, so nothing is rearranged).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from ..tensor.conv import AddBias, Conv, ConvInputGrad, ConvReLU
from .conv_args import ConvArgs, conv_args, general_args, output_shape, transpose_args
from .layer_input import constant, layer_input, layer_weight
from .padding import pad as _pad

__all__ = ["conv_general", "conv1d", "conv2d", "conv3d",
           "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolve"]


def _prepare(x, weight, bias, nd: int, fn: str):
    """Tensors for (x, weight, bias) with a batch dim; ``unbatched`` as PyTorch allows."""
    x = layer_input(fn, x, weight)
    weight = layer_weight(fn, weight, x)
    if bias is not None:
        bias = layer_weight(fn, bias, x, "bias")
        if bias.dtype != x.dtype:
            raise TypeError(f"{fn}: bias has dtype {bias.dtype} but the input has dtype "
                            f"{x.dtype}; expected the same dtype")
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


def convolve(x: Any, weight: Any, bias: Any, args: ConvArgs, fn: str,
             relu_slope: float | None = None) -> Tensor:
    """The convolution ``args`` describes (normalised by :mod:`.conv_args`) of ``x``;
    with ``relu_slope`` (>= 0), followed by a (leaky) ReLU of that slope in the same
    kernel (see :mod:`convgrad.nn.fusion`)."""
    nd = args.spec.ndim
    x, weight, bias, unbatched = _prepare(x, weight, bias, nd, fn)
    y_shape = output_shape(args, x.shape, weight.shape,
                           np.result_type(x.dtype, weight.dtype), fn)
    _check_bias(bias, y_shape[1], fn)
    if args.transposed:
        y = ConvInputGrad.apply(x, weight, spec=args.spec, x_shape=y_shape)
        if bias is not None:
            y = AddBias.apply(y, bias)
    else:
        if args.mode_pads is not None:
            flat = tuple(v for lo_hi in reversed(args.mode_pads) for v in lo_hi)  # last dim 1st
            # an empty batch (or C_in = 0) reads no value: zeros, which any size allows
            x = _pad(x, flat, mode=args.padding_mode if x.numel() else "constant")
        if relu_slope is None:
            y = Conv.apply(x, weight, bias, spec=args.spec, y_shape=y_shape)
        else:
            y = ConvReLU.apply(x, weight, bias, spec=args.spec, y_shape=y_shape,
                               slope=relu_slope)
    return y.reshape(*y.shape[1:]) if unbatched else y


def conv_general(x, weight, bias=None, *, stride=1, padding=0, kernel_dilation=1,
                 input_dilation=1, groups=1, flip=False) -> Tensor:
    """General N-d convolution; ``x`` (N, C_in, *L), ``weight`` (C_out, C_in/G, *K).

    ``padding``: an int, one int per dim, or one ``(lo, hi)`` pair per dim (negative
    crops); ``input_dilation`` inserts ``d - 1`` zeros between input samples;
    ``flip=True`` reverses the kernel (a true convolution).
    """
    fn = "conv_general"
    w_nd = np.ndim(weight) if not isinstance(weight, Tensor) else weight.ndim
    if w_nd < 3:
        raise ValueError(f"{fn}: weight must have >= 3 dims (C_out, C_in/groups, *kernel), "
                         f"got {w_nd}")
    args = general_args(w_nd - 2, stride, padding, kernel_dilation, input_dilation, groups,
                        flip, fn)
    return convolve(x, weight, bias, args, fn)


def _conv_nd(nd: int, fn: str, x, weight, bias, stride, padding, dilation, groups,
             padding_mode) -> Tensor:
    w_shape = weight.shape if isinstance(weight, Tensor) else constant(fn, weight).shape
    if len(w_shape) != nd + 2:
        raise ValueError(f"{fn}: weight must have {nd + 2} dims for a {nd}-d convolution, "
                         f"got shape {tuple(w_shape)}")
    if w_shape[0] == 0:  # as torch (conv_general allows it)
        raise ValueError(f"{fn}: weight of shape {tuple(w_shape)} has C_out=0; "
                         "expected C_out >= 1")
    args = conv_args(nd, tuple(w_shape[2:]), stride, padding, dilation, groups, padding_mode, fn)
    return convolve(x, weight, bias, args, fn)


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
    args = transpose_args(nd, stride, padding, output_padding, groups, dilation, fn)
    return convolve(x, weight, bias, args, fn)


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
