"""torch's other names for the functional operations: the in-place activations
(``relu_``, ``leaky_relu_``, ``elu_``, ``celu_``, ``selu_``, ``hardtanh_``, ``threshold_``,
``rrelu_``: the activation written into the input, which is returned, as torch), the
deprecated ``upsample``, ``upsample_nearest`` and ``upsample_bilinear`` (``interpolate``)
and the pooling functions that always return their indices
(``max_pool1d_with_indices`` ... ``adaptive_max_pool3d_with_indices``)."""

from __future__ import annotations

import warnings
from typing import Any

from ..tensor import Tensor, as_tensor
from .activation import leaky_relu, relu
from .adaptive_pooling import adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d
from .interpolate import interpolate
from .piecewise_activation import hardtanh, rrelu
from .piecewise_activation import threshold as _threshold
from .pooling import max_pool1d, max_pool2d, max_pool3d
from .smooth_activation import celu, elu, selu

__all__ = ["adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "celu_", "elu_", "hardtanh_", "leaky_relu_",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "relu_", "rrelu_", "selu_", "threshold_", "upsample", "upsample_bilinear",
           "upsample_nearest"]


def _in_place(fn: str, input: Any, f: Any) -> Tensor:  # noqa: A002
    x = as_tensor(input)
    return x._apply_(fn, f)


def relu_(input: Any) -> Tensor:  # noqa: A002
    return _in_place("relu_", input, relu)


def leaky_relu_(input: Any, negative_slope: float = 0.01) -> Tensor:  # noqa: A002
    return _in_place("leaky_relu_", input, lambda t: leaky_relu(t, negative_slope))


def elu_(input: Any, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return _in_place("elu_", input, lambda t: elu(t, alpha))


def celu_(input: Any, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return _in_place("celu_", input, lambda t: celu(t, alpha))


def selu_(input: Any) -> Tensor:  # noqa: A002
    return _in_place("selu_", input, selu)


def hardtanh_(input: Any, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:  # noqa: A002
    return _in_place("hardtanh_", input, lambda t: hardtanh(t, min_val, max_val))


def threshold_(input: Any, threshold: float, value: float) -> Tensor:  # noqa: A002
    return _in_place("threshold_", input, lambda t: _threshold(t, threshold, value))


def rrelu_(input: Any, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False) -> Tensor:
    return _in_place("rrelu_", input, lambda t: rrelu(t, lower, upper, training))


def _deprecated(fn: str) -> None:
    warnings.warn(f"{fn} is deprecated (as in torch): use interpolate", stacklevel=3)


def upsample(input: Any, size: Any = None, scale_factor: Any = None,  # noqa: A002
             mode: str = "nearest", align_corners: bool | None = None) -> Tensor:
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Any, size: Any = None, scale_factor: Any = None) -> Tensor:  # noqa: A002
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input: Any, size: Any = None, scale_factor: Any = None) -> Tensor:  # noqa: A002
    """``interpolate(..., mode="bilinear", align_corners=True)``, as torch's."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, "bilinear", True)


def max_pool1d_with_indices(input: Any, kernel_size: Any, stride: Any = None,  # noqa: A002
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple:
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Any, kernel_size: Any, stride: Any = None,  # noqa: A002
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple:
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Any, kernel_size: Any, stride: Any = None,  # noqa: A002
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple:
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input: Any, output_size: Any,  # noqa: A002
                                     return_indices: bool = False) -> tuple:
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Any, output_size: Any,  # noqa: A002
                                     return_indices: bool = False) -> tuple:
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Any, output_size: Any,  # noqa: A002
                                     return_indices: bool = False) -> tuple:
    return adaptive_max_pool3d(input, output_size, True)
