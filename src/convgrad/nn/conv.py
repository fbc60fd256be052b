"""Convolution layers: ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``.

Constructor arguments, attribute names, weight layouts, default initialisation and
``repr`` follow ``torch.nn``; ``forward`` calls the matching function of
:mod:`convgrad.functional.conv`.  As in torch, ``stride``, ``padding``, ``dilation``,
``groups``, ``padding_mode`` (and ``output_padding``) are read on every call, so a
script may change them after construction (``model.conv1.stride = (1, 1)``): the
normalised :class:`ConvArgs` are cached, keyed on those values (about a microsecond
per call to compare them).  Two keyword-only additions: ``dtype`` (float32 by
default, or float64) and ``rng`` (a NumPy Generator or int seed for the initial
weights; see :mod:`convgrad.nn.init`).
"""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..devices import check_device
from ..functional.conv import convolve
from ..functional.conv_args import conv_args, per_dim, transpose_args
from ..ops import fft, jit, onednn
from ..ops.dispatch import FFT_MIN_TAPS
from ..tensor import Tensor
from ..tensor.args import check_dtype
from . import init
from .module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]


def _positive_int(name: str, value: Any, fn: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{fn}: {name}={value!r} must be an int")
    if value <= 0:
        raise ValueError(f"{fn}: {name}={value} must be a positive int")
    return int(value)


class _ConvNd(Module):
    """What convolutions and transposed convolutions share: channels, groups, parameters."""

    _nd: int
    transposed: bool

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, groups: int, bias: bool, padding_mode: str,
                 dtype: Any, rng: Any) -> None:
        super().__init__()
        fn, nd = type(self).__name__, self._nd
        self.in_channels = _positive_int("in_channels", in_channels, fn)
        self.out_channels = _positive_int("out_channels", out_channels, fn)
        self.groups = _positive_int("groups", groups, fn)
        # a network is being built: its kernels load, in the order a first step meets
        # them (a fused ReLU and the bias gradient, Winograd's forward where it is the
        # default, sums, layout copies, Winograd's weight gradient; the direct loops where
        # the dispatch may choose them, one channel in and out per group)
        one_channel = in_channels == out_channels == groups
        jit.warm_up("eltwise", "dispatch.winograd", "reduction", "copy_loops",
                    "dispatch.winograd_weight", *(("direct",) if one_channel else ()))
        onednn.warm_up()
        if in_channels % groups:
            raise ValueError(f"{fn}: groups={groups} must divide in_channels={in_channels}")
        if out_channels % groups:
            raise ValueError(f"{fn}: groups={groups} must divide out_channels={out_channels}")
        self.kernel_size = per_dim("kernel_size", kernel_size, nd, fn)
        if math.prod(self.kernel_size) >= FFT_MIN_TAPS:  # its cost model reads FFT lengths
            fft.preload()
        self.stride = per_dim("stride", stride, nd, fn)
        self.dilation = per_dim("dilation", dilation, nd, fn)
        self.padding_mode = padding_mode
        self.padding = padding
        if not isinstance(bias, bool):
            raise TypeError(f"{fn}: bias={bias!r} must be a bool")
        dt = get_default_dtype() if dtype is None else check_dtype(fn, dtype)
        if self.transposed:
            w_shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            w_shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(np.empty(w_shape, dt))
        if bias:
            self.bias = Parameter(np.empty(out_channels, dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(rng)

    def _current_args(self) -> Any:
        """The ``ConvArgs`` of the hyper-parameters as they are now (cached on their values)."""
        key = self._args_key()
        if key != self._cached_key:
            self._cached_args, self._cached_key = self._make_args(), key
        return self._cached_args

    def __getstate__(self) -> dict:
        # a pickled layer (``save(model, path)``) holds its hyper-parameters, not the
        # arguments cached from them (remade on the first call)
        state = self.__dict__.copy()
        state["_cached_key"] = None
        state.pop("_cached_args", None)
        return state

    def reset_parameters(self, rng: Any = None) -> None:
        """PyTorch's default: kaiming_uniform(a=sqrt(5)) weights, U(+-1/sqrt(fan_in)) bias.

        Both bounds are ``1 / sqrt(fan_in)`` with ``fan_in = weight.shape[1] * prod(K)``.
        """
        rng = init._generator(rng, type(self).__name__)
        init.kaiming_uniform_(self.weight, a=math.sqrt(5), rng=rng)
        if self.bias is not None:
            fan_in, _ = init.calculate_fan_in_and_fan_out(self.weight.shape)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound, rng)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.transposed and self.output_padding != (0,) * self._nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None, *,
                 rng: Any = None) -> None:
        fn, nd = type(self).__name__, self._nd
        check_device(fn, device)
        if not isinstance(padding, str):
            padding = per_dim("padding", padding, nd, fn, minimum=0)
        conv_args(nd, per_dim("kernel_size", kernel_size, nd, fn), stride, padding, dilation,
                  groups, padding_mode, fn)  # checked here first, so a bad layer is never made
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, dtype, rng)
        self._cached_key = None

    def _args_key(self) -> tuple:
        return (self.stride, self.padding, self.dilation, self.groups, self.padding_mode,
                self.weight.shape)

    def _make_args(self) -> Any:
        fn, nd = type(self).__name__, self._nd
        padding = self.padding
        if not isinstance(padding, str):
            padding = per_dim("padding", padding, nd, fn, minimum=0)
        return conv_args(nd, tuple(self.weight.shape[2:]), self.stride, padding, self.dilation,
                         self.groups, self.padding_mode, fn)

    def forward(self, x: Any) -> Tensor:
        return convolve(x, self.weight, self.bias, self._current_args(), type(self).__name__)

    def forward_activation(self, x: Any, activation: float) -> Tensor:
        """``forward`` followed by a (leaky) ReLU of slope ``activation`` >= 0, in one
        kernel."""
        return convolve(x, self.weight, self.bias, self._current_args(), type(self).__name__,
                        relu_slope=activation)

    fuses_activation_after = forward  # see convgrad.nn.fusion

    def accepts_activation(self, activation: float | str) -> bool:
        """A leaky ReLU (oneDNN's post-op) or a ReLU (the compiled ReLU on the result in
        place: oneDNN's ReLU post-op turns a NaN into 0)."""
        return isinstance(activation, float) and activation >= 0


class Conv1d(_Conv):
    """1-D convolution layer, ``torch.nn.Conv1d``: weight (C_out, C_in / groups, K)."""

    _nd = 1


class Conv2d(_Conv):
    """2-D convolution layer, ``torch.nn.Conv2d``: weight (C_out, C_in / groups, KH, KW)."""

    _nd = 2


class Conv3d(_Conv):
    """3-D convolution layer, ``torch.nn.Conv3d``: weight (C_out, C_in / groups, KD, KH, KW)."""

    _nd = 3


class _ConvTranspose(_ConvNd):
    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None, *, rng: Any = None) -> None:
        fn = type(self).__name__
        check_device(fn, device)
        if padding_mode != "zeros":
            raise ValueError(f"{fn}: padding_mode={padding_mode!r}; only 'zeros' is supported "
                             "for transposed convolutions")
        if isinstance(padding, str):
            raise ValueError(f"{fn}: padding={padding!r} must be an int or {self._nd} ints "
                             "(no string paddings for transposed convolutions)")
        padding = per_dim("padding", padding, self._nd, fn, minimum=0)
        transpose_args(self._nd, stride, padding, output_padding, groups, dilation, fn)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, dtype, rng)
        self.output_padding = per_dim("output_padding", output_padding, self._nd, fn, minimum=0)
        self._cached_key = None

    def _args_key(self) -> tuple:
        return (self.stride, self.padding, self.output_padding, self.groups, self.dilation)

    def _make_args(self) -> Any:
        return transpose_args(self._nd, self.stride, self.padding, self.output_padding,
                              self.groups, self.dilation, type(self).__name__)

    def _output_padding(self, x: Any, output_size: Any) -> tuple[int, ...]:
        """``output_padding``, or the one that gives ``output_size`` (as torch computes it)."""
        if output_size is None:
            return self.output_padding
        fn, nd = type(self).__name__, self._nd
        size = tuple(int(s) for s in output_size)
        if len(size) == np.ndim(x):
            size = size[-nd:]
        if len(size) != nd:
            raise ValueError(f"{fn}: output_size={tuple(output_size)} must have {nd} or "
                             f"{np.ndim(x)} entries")
        spatial, kernel = np.shape(x)[-nd:], self.weight.shape[2:]
        stride, padding, dilation = (per_dim(name, getattr(self, name), nd, fn, minimum)
                                     for name, minimum in (("stride", 1), ("padding", 0),
                                                           ("dilation", 1)))
        lo = [(spatial[d] - 1) * stride[d] - 2 * padding[d]
              + dilation[d] * (kernel[d] - 1) + 1 for d in range(nd)]
        hi = [lo[d] + stride[d] - 1 for d in range(nd)]
        if any(not lo[d] <= size[d] <= hi[d] for d in range(nd)):
            raise ValueError(f"{fn}: requested output_size={size}, but valid sizes range from "
                             f"{tuple(lo)} to {tuple(hi)} (for an input of {tuple(spatial)})")
        return tuple(size[d] - lo[d] for d in range(nd))

    def forward(self, x: Any, output_size: Any = None) -> Tensor:
        fn = type(self).__name__
        args = self._current_args()
        if output_size is not None:  # another output padding: the spec of that size
            args = transpose_args(self._nd, self.stride, self.padding,
                                  self._output_padding(x, output_size), self.groups,
                                  self.dilation, fn)
        return convolve(x, self.weight, self.bias, args, fn)


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution, ``torch.nn.ConvTranspose1d``: weight (C_in, C_out/G, K)."""

    _nd = 1


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution, ``torch.nn.ConvTranspose2d``: weight (C_in, C_out/G, KH, KW)."""

    _nd = 2


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution, ``torch.nn.ConvTranspose3d``: weight (C_in, C_out/G, *K)."""

    _nd = 3
