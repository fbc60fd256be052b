"""2-D average and max pooling with ``torch.nn.functional``'s semantics (ceil_mode=False).

Padding goes through ``F.pad`` (zeros for the average, which counts them, as torch's
count_include_pad=True; -inf for the max).  Windows are strided views, never a loop over
pixels; the average's adjoint loops over the kernel taps only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..autograd import Context, Function
from ..tensor import Tensor, as_tensor
from .padding import pad as _pad

__all__ = ["avg_pool2d", "max_pool2d"]


def _pair(who: str, name: str, value: Any, low: int) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int | np.integer) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int | np.integer) and not isinstance(v, bool)
                                 and v >= low for v in pair):
        raise ValueError(f"{who}: {name}={value!r} must be an int >= {low} or a pair of them")
    return int(pair[0]), int(pair[1])


def _args(who: str, x: Tensor, kernel_size: Any, stride: Any, padding: Any) -> tuple:
    if x.ndim not in (3, 4):
        raise ValueError(f"{who}: input of shape {x.shape} must be (N, C, H, W) or (C, H, W)")
    k = _pair(who, "kernel_size", kernel_size, 1)
    s = k if stride is None else _pair(who, "stride", stride, 1)
    p = _pair(who, "padding", padding, 0)
    if p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise ValueError(f"{who}: padding={padding!r} must be at most half of "
                         f"kernel_size={kernel_size!r}")
    for n, kk, pp, name in zip(x.shape[-2:], k, p, ("H", "W")):
        if n + 2 * pp < kk:
            raise ValueError(f"{who}: kernel_size={kernel_size!r} is larger than the padded "
                             f"input ({name}={n} + 2 * {pp})")
    return k, s, p


def _taps(kernel: tuple, stride: tuple, out_hw: tuple) -> list[tuple]:
    """For each kernel tap (i, j): the strided slice of the input it reads for every window."""
    (kh, kw), (sh, sw), (oh, ow) = kernel, stride, out_hw
    return [(..., slice(i, i + sh * (oh - 1) + 1, sh), slice(j, j + sw * (ow - 1) + 1, sw))
            for i in range(kh) for j in range(kw)]


class AvgPool2d(Function):
    """Mean over each (kh, kw) window, windows ``stride`` apart (no padding here)."""

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, kernel: tuple, stride: tuple) -> np.ndarray:
        ctx.kernel, ctx.stride = kernel, stride
        windows = sliding_window_view(x, kernel, axis=(-2, -1))[..., ::stride[0], ::stride[1], :, :]
        return windows.mean(axis=(-2, -1), dtype=x.dtype)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # y = sum over a window / (kh kw)  =>  each element of a window gets g / (kh kw)
        return AvgPool2dAdjoint.apply(grad, kernel=ctx.kernel, stride=ctx.stride,
                                      shape=ctx.inputs[0].shape)


class AvgPool2dAdjoint(Function):
    """Spread each g / (kh kw) over its window (summing overlaps): AvgPool2d's adjoint."""

    @staticmethod
    def forward(ctx: Context, g: np.ndarray, kernel: tuple, stride: tuple, shape: tuple
                ) -> np.ndarray:
        ctx.kernel, ctx.stride = kernel, stride
        out = np.zeros(shape, g.dtype)
        share = g / (kernel[0] * kernel[1])
        for tap in _taps(kernel, stride, g.shape[-2:]):
            out[tap] += share
        return out

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # the adjoint of a linear map's adjoint is the map itself
        return AvgPool2d.apply(grad, kernel=ctx.kernel, stride=ctx.stride)


def avg_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Tensor:
    """Average over windows; padding zeros count in the average (count_include_pad=True)."""
    x = as_tensor(x)
    k, s, p = _args("avg_pool2d", x, kernel_size, stride, padding)
    if p != (0, 0):
        x = _pad(x, (p[1], p[1], p[0], p[0]))
    return AvgPool2d.apply(x, kernel=k, stride=s)


def max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Tensor:
    """Max over windows (padding is -inf); the gradient goes to the first max of each window."""
    x = as_tensor(x)
    (kh, kw), (sh, sw), (ph, pw) = _args("max_pool2d", x, kernel_size, stride, padding)
    if (ph, pw) != (0, 0):
        x = _pad(x, (pw, pw, ph, ph), value=-np.inf)
    *lead, h, w = x.shape
    windows = sliding_window_view(x.data, (kh, kw), axis=(-2, -1))[..., ::sh, ::sw, :, :]
    oh, ow = windows.shape[-4:-2]
    first_max = windows.reshape(*windows.shape[:-2], kh * kw).argmax(axis=-1)
    ki, kj = np.divmod(first_max, kw)
    rows = np.arange(oh)[:, None] * sh + ki
    cols = np.arange(ow)[None, :] * sw + kj
    plane = np.arange(int(np.prod(lead))).reshape(*lead, 1, 1) * (h * w)
    # gather the winners from the flattened input: its gradient is a scatter-add back
    return x.reshape(-1)[plane + rows * w + cols]
