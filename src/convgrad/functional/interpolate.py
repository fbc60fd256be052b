"""``F.interpolate``: resample the spatial dims of ``(N, C, *spatial)`` input, as torch.

Arguments are checked and turned into an output size and a per-axis rule here (see
:mod:`.resampling` for the coordinate conventions).  Every mode is separable and
linear in the input, so each axis is one constant map and gradients of any order are
maps again:

* ``nearest`` / ``nearest-exact``: a selection along each axis;
* ``linear`` / ``bilinear`` / ``trilinear`` / ``bicubic``: a constant sparse matrix per
  axis (two or four taps per output).  An integer upsampling factor on every axis with
  ``align_corners=False`` can instead run as one convolution with a constant separable
  kernel over the edge-replicated input, through the convolution primitives (same
  values; ``UPSAMPLING_PATH["value"] = "conv"``); the per-axis matrices measured 1.5-3x
  faster on the NumPy engine, so they are the default;
* ``area``: adaptive average pooling.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..ops import resampling as K
from ..tensor import Tensor, as_tensor, cat
from ..tensor.axis_matrix import AxisMap, AxisMatrix
from ..tensor.resampling import Resample
from .adaptive_pooling import _adaptive_avg, check_output_size
from .conv import conv_general
from .resampling import cubic_matrix, linear_matrix, nearest_index, upsampling_kernel

__all__ = ["MODES", "interpolate"]

MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_INTERPOLATING = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}

# which implementation linear and cubic modes use for integer upsampling factors:
# "matrix" (a sparse map per axis) or "conv" (a convolution with a constant kernel)
UPSAMPLING_PATH = {"value": "matrix"}


def _sizes(fn: str, x: Tensor, size: Any, scale_factor: Any, recompute: Any,
           mode: str) -> tuple[tuple[int, ...], tuple]:
    """Output size per spatial dim, and the scale factor each axis's coordinates use."""
    nd = x.ndim - 2
    spatial = x.shape[2:]
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{fn}: size={size!r}, scale_factor={scale_factor!r}; give exactly "
                         "one of them")
    if recompute is not None and not isinstance(recompute, bool):
        raise TypeError(f"{fn}: recompute_scale_factor={recompute!r} must be a bool or None")
    if size is not None:
        if recompute:
            raise ValueError(f"{fn}: recompute_scale_factor=True is meaningless with an "
                             f"explicit size={size!r}")
        sizes = size if isinstance(size, tuple | list) else (size,) * nd
        if len(sizes) != nd or not all(isinstance(v, Integral) and not isinstance(v, bool)
                                       for v in sizes):
            raise ValueError(f"{fn}: size={size!r} must be an int or {nd} ints (one per "
                             f"spatial dim of the input of shape {x.shape})")
        out = tuple(int(v) for v in sizes)
        scales: tuple = (None,) * nd
    else:
        factors = scale_factor if isinstance(scale_factor, tuple | list) else (scale_factor,) * nd
        if len(factors) != nd or not all(isinstance(v, Real) and not isinstance(v, bool)
                                         for v in factors):
            raise ValueError(f"{fn}: scale_factor={scale_factor!r} must be a number or {nd} "
                             f"numbers (one per spatial dim of the input of shape {x.shape})")
        out = tuple(math.floor(n * float(f)) for n, f in zip(spatial, factors))
        scales = (None,) * nd if recompute or mode == "area" else tuple(map(float, factors))
    if min(out) < 1 or min(spatial) < 1:
        raise ValueError(f"{fn}: input spatial size {spatial} and output size {out} must be "
                         "positive")
    return out, scales


def _integer_factors(spatial: tuple, out: tuple, scales: tuple, cubic: bool) -> list | None:
    """The whole upsampling factor of each axis when every axis has one, else None."""
    factors = []
    for n, m, sf in zip(spatial, out, scales):
        s = m // n
        if m != s * n or (sf is not None and sf != s and not (m == n and not cubic)):
            return None
        factors.append(s)
    return factors


def _replicate(x: Tensor, axis: int, pad: int) -> Tensor:
    """``x`` with its first and last slices along ``axis`` repeated ``pad`` times."""
    lead = (slice(None),) * axis
    first, last = x[lead + (slice(0, 1),)], x[lead + (slice(-1, None),)]
    return cat([first] * pad + [x] + [last] * pad, axis)


def _upsample_by_convolution(x: Tensor, factors: list, cubic: bool) -> Tensor:
    """Integer-factor linear/cubic upsampling as one constant-kernel convolution."""
    n, c, *spatial = x.shape
    kernels, pads = [], []
    xp = x.reshape(n * c, 1, *spatial)
    for a, (s, length) in enumerate(zip(factors, spatial)):
        if s == 1:
            kernels.append(np.ones(1))
            pads.append((0, 0))
            continue
        kernel, pad, lo = upsampling_kernel(s, cubic)
        xp = _replicate(xp, 2 + a, pad)
        dilated = (length + 2 * pad - 1) * s + 1
        pads.append((lo, s * length - dilated - lo + kernel.size - 1))
        kernels.append(kernel)
    weight = kernels[0]
    for k in kernels[1:]:
        weight = np.multiply.outer(weight, k)
    weight = weight.reshape(1, 1, *weight.shape).astype(x.dtype)
    y = conv_general(xp, weight, padding=tuple(pads), input_dilation=tuple(factors))
    return y.reshape(n, c, *y.shape[2:])


def _nearest(x: Tensor, out: tuple, scales: tuple, exact: bool) -> Tensor:
    spatial = x.shape[2:]
    shortcut = len(spatial) == 2 and not exact
    y = x
    for a, (n, m, sf) in enumerate(zip(spatial, out, scales)):
        index = nearest_index(n, m, sf, exact, x.dtype, shortcut)
        if not np.array_equal(index, np.arange(n)):
            y = AxisMap.apply(y, matrix=AxisMatrix(index[:, None], None, n), axis=2 + a)
    return y


def interpolate(input: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resample ``input`` (N, C, *spatial) with 1-3 spatial dims to ``size``, or by
    ``scale_factor`` (output length ``floor(n * scale_factor)``).

    ``mode``: ``nearest``, ``nearest-exact``, ``linear`` (1-d), ``bilinear`` and
    ``bicubic`` (2-d), ``trilinear`` (3-d) or ``area``.  ``align_corners`` (interpolating
    modes only, default False) maps the corner samples onto each other.
    ``recompute_scale_factor=True`` places samples by the output size instead of the
    given factor.  ``antialias`` must be False.
    """
    fn = "interpolate"
    x = as_tensor(input)
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"{fn}: mode={mode!r} is not supported; expected one of {MODES}")
    nd = x.ndim - 2
    if nd not in (1, 2, 3):
        raise ValueError(f"{fn}: input of shape {x.shape} must be (N, C, *spatial) with 1 to 3 "
                         "spatial dims")
    if mode in _INTERPOLATING:
        if _INTERPOLATING[mode] != nd:
            raise ValueError(f"{fn}: mode={mode!r} needs {_INTERPOLATING[mode] + 2}-d input, "
                             f"got input of shape {x.shape}")
        if align_corners is None:
            align_corners = False
        elif not isinstance(align_corners, bool):
            raise TypeError(f"{fn}: align_corners={align_corners!r} must be a bool or None")
    elif align_corners is not None:
        raise ValueError(f"{fn}: align_corners={align_corners!r} only applies to the "
                         f"interpolating modes {tuple(_INTERPOLATING)}, not mode={mode!r}")
    if antialias:
        raise ValueError(f"{fn}: antialias={antialias!r} is not supported; expected False")
    out, scales = _sizes(fn, x, size, scale_factor, recompute_scale_factor, mode)
    check_output_size(fn, x, out)
    spatial = x.shape[2:]

    if mode == "area":
        return _adaptive_avg(fn, nd, x, out)
    fast = ("nearest" if mode == "nearest" else "linear" if mode in (
        "linear", "bilinear", "trilinear") else None)
    if fast and K.choose(fast, x.data, out, scales, bool(align_corners)) == "onednn":
        return Resample.apply(x, y_shape=(*x.shape[:2], *out), mode=fast)
    if mode in ("nearest", "nearest-exact"):
        return _nearest(x, out, scales, mode == "nearest-exact")
    cubic = mode == "bicubic"
    if not align_corners and UPSAMPLING_PATH["value"] == "conv":
        factors = _integer_factors(spatial, out, scales, cubic)
        if factors is not None and max(factors) > 1:
            return _upsample_by_convolution(x, factors, cubic)
    y = x
    for a, (n, m, sf) in enumerate(zip(spatial, out, scales)):
        matrix = (cubic_matrix(n, m, sf, align_corners) if cubic
                  else linear_matrix(n, m, sf, align_corners))
        if matrix is not None:
            y = AxisMap.apply(y, matrix=matrix, axis=2 + a)
    return y
