"""Each convolution pass routed once: dask arrays to the chunked kernels of
:mod:`.dask.kernels`, ndarrays to the in-memory kernels of :mod:`.kernels`.

The same unchecked signatures as :mod:`.kernels` (callers pass validated arguments; the
dask kernels check their chunking themselves).  The autograd Functions call these; dask
is imported only when a dask array arrives.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arraytypes import is_dask_array
from . import kernels
from .spec import ConvSpec

__all__ = ["add_bias", "conv_bias_grad", "conv_forward", "conv_input_grad",
           "conv_weight_grad", "dask_kernels"]

add_bias = kernels.add_bias


def dask_kernels() -> Any:
    """The kernels on dask arrays (dask is imported on the first call)."""
    from .dask import kernels as lazy

    return lazy


def _lazy(a: Any) -> bool:
    return type(a) is not np.ndarray and is_dask_array(a)


def conv_forward(x: Any, w: np.ndarray, spec: ConvSpec, y_shape: tuple,
                 bias: np.ndarray | None = None, relu_slope: float | None = None) -> Any:
    if _lazy(x):
        y = dask_kernels().conv_forward(x, w, spec)
        y = y if bias is None else add_bias(y, bias)  # dask: a new array, never in place
        if relu_slope is None:
            return y
        return y.map_blocks(lambda b: kernels.relu(b.copy(), relu_slope), dtype=y.dtype)
    return kernels.conv_forward(x, w, spec, y_shape, bias, relu_slope)


def conv_input_grad(gy: Any, w: np.ndarray, spec: ConvSpec, x_shape: tuple) -> Any:
    if _lazy(gy):
        return dask_kernels().conv_input_grad(gy, w, spec, x_shape)
    return kernels.conv_input_grad(gy, w, spec, x_shape)


def conv_weight_grad(x: Any, gy: Any, spec: ConvSpec, w_shape: tuple) -> Any:
    if _lazy(x) or _lazy(gy):
        return dask_kernels().conv_weight_grad(x, gy, spec, w_shape)
    return kernels.conv_weight_grad(x, gy, spec, w_shape)


def conv_bias_grad(gy: Any) -> Any:
    if _lazy(gy):
        return dask_kernels().conv_bias_grad(gy)
    return kernels.conv_bias_grad(gy)
