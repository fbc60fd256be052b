"""Layers without convolution arithmetic: ``Linear``, activations, ``Flatten``, pools, ``Upsample``.

Constructor arguments, defaults and ``repr`` follow ``torch.nn``; each ``forward`` is
one call of :mod:`convgrad.functional` or a few Tensor operations.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..functional import activation as Fa
from ..functional import pooling as Fp
from ..tensor import Tensor, as_tensor
from ..tensor.tensor import _check_dtype
from . import init
from .conv import _positive_int
from .module import Module, Parameter

__all__ = ["AvgPool2d", "Flatten", "Identity", "LeakyReLU", "Linear", "MaxPool2d", "ReLU",
           "Sigmoid", "Tanh", "Upsample"]


class Identity(Module):
    """Returns its input."""

    def forward(self, x: Any) -> Any:
        return x


class Linear(Module):
    """``y = x @ weight.T + bias``; weight (out_features, in_features), PyTorch's init."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 dtype: Any = None, rng: Any = None) -> None:
        super().__init__()
        self.in_features = _positive_int("in_features", in_features, "Linear")
        self.out_features = _positive_int("out_features", out_features, "Linear")
        if not isinstance(bias, bool):
            raise TypeError(f"Linear: bias={bias!r} must be a bool")
        dt = np.dtype(np.float32) if dtype is None else _check_dtype("Linear", dtype)
        self.weight = Parameter(np.empty((out_features, in_features), dt))
        if bias:
            self.bias = Parameter(np.empty(out_features, dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(rng)

    def reset_parameters(self, rng: Any = None) -> None:
        """kaiming_uniform(a=sqrt(5)) weight and U(+-1/sqrt(in_features)) bias, as torch."""
        rng = init._generator(rng, "Linear")
        init.kaiming_uniform_(self.weight, a=math.sqrt(5), rng=rng)
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features)
            init.uniform_(self.bias, -bound, bound, rng)

    def forward(self, x: Any) -> Tensor:
        x = as_tensor(x)
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"Linear: input of shape {x.shape} must end with "
                             f"in_features={self.in_features}")
        y = x @ self.weight.T
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class ReLU(Module):
    """``max(x, 0)``.  ``inplace`` is accepted for compatibility; the result is a new Tensor."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Any) -> Tensor:
        return Fa.relu(x)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        if isinstance(negative_slope, bool) or not isinstance(negative_slope, Real):
            raise TypeError(f"LeakyReLU: negative_slope={negative_slope!r} must be a number")
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, x: Any) -> Tensor:
        return Fa.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class Sigmoid(Module):
    def forward(self, x: Any) -> Tensor:
        return Fa.sigmoid(x)


class Tanh(Module):
    def forward(self, x: Any) -> Tensor:
        return Fa.tanh(x)


class Flatten(Module):
    """Flatten dims ``start_dim`` .. ``end_dim`` into one (the batch dim stays by default)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Any) -> Tensor:
        return as_tensor(x).flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class _Pool2d(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """Max over windows (``dilation=1``, ``ceil_mode=False`` only)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        if dilation not in (1, (1, 1)) or return_indices or ceil_mode:
            raise ValueError(f"MaxPool2d: dilation={dilation!r}, return_indices="
                             f"{return_indices!r}, ceil_mode={ceil_mode!r}; only dilation=1, "
                             "return_indices=False and ceil_mode=False are supported")
        super().__init__(kernel_size, stride, padding)
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def forward(self, x: Any) -> Tensor:
        return Fp.max_pool2d(x, self.kernel_size, self.stride, self.padding)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", dilation={self.dilation}, ceil_mode={self.ceil_mode}"


class AvgPool2d(_Pool2d):
    """Mean over windows; zero padding counts (``count_include_pad=True``, as torch's default)."""

    def forward(self, x: Any) -> Tensor:
        return Fp.avg_pool2d(x, self.kernel_size, self.stride, self.padding)


def _integer_scale(value: Any, who: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Real) or value != int(value) \
            or value < 1:
        raise ValueError(f"{who}: scale_factor={value!r} must be a positive integer "
                         "(nearest upsampling by whole factors)")
    return int(value)


class Upsample(Module):
    """Nearest-neighbour upsampling by whole factors: each pixel becomes a block.

    ``scale_factor`` is an int (or an integral float) or one per spatial dim; ``size``
    may be given instead when it is a whole multiple of the input size.  The input is
    ``(N, C, *spatial)`` with 1, 2 or 3 spatial dims; the gradient sums each block.
    """

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: Any = None) -> None:
        super().__init__()
        if mode != "nearest":
            raise ValueError(f"Upsample: mode={mode!r}; only 'nearest' is supported")
        if align_corners is not None:
            raise ValueError("Upsample: align_corners only applies to interpolating modes, "
                             f"got align_corners={align_corners!r} with mode='nearest'")
        if (size is None) == (scale_factor is None):
            raise ValueError("Upsample: give exactly one of size and scale_factor")
        if scale_factor is not None:
            if isinstance(scale_factor, tuple | list):
                scale_factor = tuple(float(_integer_scale(s, "Upsample")) for s in scale_factor)
            else:
                scale_factor = float(_integer_scale(scale_factor, "Upsample"))
        self.size, self.scale_factor, self.mode = size, scale_factor, mode

    def _factors(self, x: Tensor) -> tuple[int, ...]:
        nd = x.ndim - 2
        if nd not in (1, 2, 3):
            raise ValueError(f"Upsample: input of shape {x.shape} must be (N, C, *spatial) "
                             "with 1 to 3 spatial dims")
        spatial = x.shape[2:]
        if self.scale_factor is not None:
            f = self.scale_factor
            factors = tuple(int(v) for v in f) if isinstance(f, tuple) else (int(f),) * nd
        else:
            size = (self.size,) * nd if isinstance(self.size, Integral) else tuple(self.size)
            if len(size) != nd or any(s % n for s, n in zip(size, spatial)):
                raise ValueError(f"Upsample: size={self.size!r} must be a whole multiple of the "
                                 f"input size {spatial} in each of its {nd} spatial dims")
            factors = tuple(s // n for s, n in zip(size, spatial))
        if len(factors) != nd:
            raise ValueError(f"Upsample: scale_factor={self.scale_factor!r} has {len(factors)} "
                             f"entries for an input with {nd} spatial dims")
        return factors

    def forward(self, x: Any) -> Tensor:
        x = as_tensor(x)
        factors = self._factors(x)
        n, c, *spatial = x.shape
        # (N, C, L1, 1, L2, 1, ...) broadcast to (N, C, L1, f1, L2, f2, ...), then merged
        split = [n, c] + [v for s in spatial for v in (s, 1)]
        blocks = [n, c] + [v for s, f in zip(spatial, factors) for v in (s, f)]
        out = [n, c] + [s * f for s, f in zip(spatial, factors)]
        return x.reshape(split).expand(blocks).reshape(out)

    def extra_repr(self) -> str:
        info = (f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None
                else f"size={self.size!r}")
        return info + f", mode={self.mode!r}"
