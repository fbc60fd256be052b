"""2-D average and max pooling with ``torch.nn.functional``'s semantics (ceil_mode=False).

The average is a depthwise convolution with a constant kernel (zero padding counts in
the average, as torch's count_include_pad=True).  The max pads with -inf through
``F.pad`` and reads its windows as strided views, never a loop over pixels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..tensor import Tensor, as_tensor
from .conv import conv2d
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


def avg_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Tensor:
    """Average over windows; padding zeros count in the average (count_include_pad=True)."""
    x = as_tensor(x)
    k, s, p = _args("avg_pool2d", x, kernel_size, stride, padding)
    # a depthwise convolution with a constant 1/(kh kw) kernel (measured 2x faster than
    # strided views for fwd+bwd on (4, 3, 256, 256)); the window never gets a gradient
    c = x.shape[-3]
    window = np.full((c, 1, *k), 1.0 / (k[0] * k[1]), dtype=x.dtype)
    return conv2d(x, window, stride=s, padding=p, groups=c)


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
