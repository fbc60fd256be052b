"""The public convolution kernels on ndarrays, with their checks.

``conv_forward``, ``conv_input_grad``, ``conv_weight_grad`` and ``conv_bias_grad`` check
their arguments (types, dtypes, the spec and the shape rule) and call the unchecked
kernels of :mod:`.kernels`, where the arithmetic happens.  Dask arrays go through
:mod:`.route` to :mod:`.dask.kernels` (chunk by chunk, lazily), which checks them itself.
"""

from __future__ import annotations

import numpy as np

from ..arraytypes import is_dask_array
from . import kernels, route
from .spec import ConvSpec, check_float_array, is_int

__all__ = ["conv_forward", "conv_input_grad", "conv_weight_grad", "conv_bias_grad"]


def _check_spec(spec: object, fn: str) -> ConvSpec:
    if not isinstance(spec, ConvSpec):
        raise TypeError(f"{fn}: spec must be a ConvSpec, got {type(spec).__name__}")
    return spec


def _check_shape(name: str, shape: object, ndim: int, fn: str) -> tuple[int, ...]:
    if not isinstance(shape, tuple | list) or not all(is_int(s) for s in shape):
        raise TypeError(f"{fn}: {name}={shape!r} must be a shape tuple of ints")
    out = tuple(int(s) for s in shape)
    if len(out) != ndim or any(s < 0 for s in out):
        raise ValueError(f"{fn}: {name}={out} must be {ndim} non-negative ints")
    return out


def _check_gy(gy: np.ndarray, y_shape: tuple, fn: str) -> None:
    if gy.shape != y_shape:
        raise ValueError(f"{fn}: gy has shape {gy.shape}; the convolution's output is {y_shape}")


def conv_forward(x: np.ndarray, w: np.ndarray, spec: ConvSpec) -> np.ndarray:
    """``y = conv(x, w)`` per ``spec``; x (N, C_in, *L), w (C_out, C_in/G, *K), no bias."""
    if type(x) is not np.ndarray and is_dask_array(x):
        return route.dask_kernels().conv_forward(x, w, spec)
    fn = "conv_forward"
    spec = _check_spec(spec, fn)
    x, w = check_float_array("x", x, fn), check_float_array("weight", w, fn)
    return kernels.conv_forward(x, w, spec, spec.output_shape(x.shape, w.shape, fn))


def conv_input_grad(gy: np.ndarray, w: np.ndarray, x_shape: tuple, spec: ConvSpec) -> np.ndarray:
    """``d(sum(conv(x, w) * gy)) / dx`` for an input of shape ``x_shape``."""
    if type(gy) is not np.ndarray and is_dask_array(gy):
        return route.dask_kernels().conv_input_grad(gy, w, spec, x_shape)
    fn = "conv_input_grad"
    spec = _check_spec(spec, fn)
    gy, w = check_float_array("gy", gy, fn), check_float_array("weight", w, fn)
    x_shape = _check_shape("x_shape", x_shape, spec.ndim + 2, fn)
    _check_gy(gy, spec.output_shape(x_shape, w.shape, fn), fn)
    return kernels.conv_input_grad(gy, w, spec, x_shape)


def conv_weight_grad(x: np.ndarray, gy: np.ndarray, w_shape: tuple, spec: ConvSpec) -> np.ndarray:
    """``d(sum(conv(x, w) * gy)) / dw`` for a weight of shape ``w_shape``."""
    if is_dask_array(x) or is_dask_array(gy):
        return route.dask_kernels().conv_weight_grad(x, gy, spec, w_shape)
    fn = "conv_weight_grad"
    spec = _check_spec(spec, fn)
    x, gy = check_float_array("x", x, fn), check_float_array("gy", gy, fn)
    w_shape = _check_shape("w_shape", w_shape, spec.ndim + 2, fn)
    _check_gy(gy, spec.output_shape(x.shape, w_shape, fn), fn)
    return kernels.conv_weight_grad(x, gy, spec, w_shape)


def conv_bias_grad(gy: np.ndarray) -> np.ndarray:
    """Sum of ``gy`` (N, C_out, *spatial) over the batch and spatial dims: shape (C_out,)."""
    if type(gy) is not np.ndarray and is_dask_array(gy):
        return route.dask_kernels().conv_bias_grad(gy)
    fn = "conv_bias_grad"
    gy = check_float_array("gy", gy, fn)
    if gy.ndim < 3:
        raise ValueError(f"{fn}: gy must have shape (N, C_out, *spatial), got {gy.shape}")
    return kernels.conv_bias_grad(gy)
