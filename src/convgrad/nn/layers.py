"""Layers without convolution arithmetic: ``Identity``, ``Linear``, activations, ``Flatten``,
``Unfold`` and ``Fold``.

Constructor arguments, defaults and ``repr`` follow ``torch.nn``; each ``forward`` is
one call of :mod:`convgrad.functional` or a few Tensor operations.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..devices import check_device
from ..functional import activation as Fa
from ..functional.linear import bilinear as _bilinear
from ..functional.linear import linear as _linear
from ..functional.unfold import fold as _fold
from ..functional.unfold import unfold as _unfold
from ..tensor import Tensor, as_tensor
from ..tensor.args import check_dtype
from . import init
from .conv import _positive_int
from .module import Module, Parameter

__all__ = ["Bilinear", "Flatten", "Fold", "Identity", "LeakyReLU", "Linear", "ReLU", "Sigmoid",
           "Tanh", "Unflatten", "Unfold"]


class Identity(Module):
    """Returns its input."""

    def forward(self, x: Any) -> Any:
        return x


def _weight_and_bias(layer: Module, shape: tuple, bias: bool, dt: np.dtype) -> None:
    """``layer.weight`` of ``shape`` and ``layer.bias`` of its first dim (or None),
    uninitialised: the layer's ``reset_parameters`` fills them."""
    layer.weight = Parameter(np.empty(shape, dt))
    if bias:
        layer.bias = Parameter(np.empty(shape[0], dt))
    else:
        layer.register_parameter("bias", None)


class Bilinear(Module):
    """``y = x1^T W x2 + b`` (``F.bilinear``): weight ``(out_features, in1_features,
    in2_features)`` and bias ``(out_features,)`` drawn from U(+-1/sqrt(in1_features)),
    as torch."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None, *,
                 rng: Any = None) -> None:
        super().__init__()
        fn = "Bilinear"
        check_device(fn, device)
        self.in1_features = _positive_int("in1_features", in1_features, fn)
        self.in2_features = _positive_int("in2_features", in2_features, fn)
        self.out_features = _positive_int("out_features", out_features, fn)
        dt = get_default_dtype() if dtype is None else check_dtype(fn, dtype)
        _weight_and_bias(self, (out_features, in1_features, in2_features), bias, dt)
        self.reset_parameters(rng)

    def reset_parameters(self, rng: Any = None) -> None:
        rng = init._generator(rng, "Bilinear")
        bound = 1 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound, rng)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound, rng)

    def forward(self, input1: Any, input2: Any) -> Tensor:
        return _bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Linear(Module):
    """``y = x @ weight.T + bias``; weight (out_features, in_features), PyTorch's init."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None, *, rng: Any = None) -> None:
        super().__init__()
        check_device("Linear", device)
        self.in_features = _positive_int("in_features", in_features, "Linear")
        self.out_features = _positive_int("out_features", out_features, "Linear")
        if not isinstance(bias, bool):
            raise TypeError(f"Linear: bias={bias!r} must be a bool")
        dt = get_default_dtype() if dtype is None else check_dtype("Linear", dtype)
        _weight_and_bias(self, (out_features, in_features), bias, dt)
        self.reset_parameters(rng)

    def reset_parameters(self, rng: Any = None) -> None:
        """kaiming_uniform(a=sqrt(5)) weight and U(+-1/sqrt(in_features)) bias, as torch."""
        rng = init._generator(rng, "Linear")
        init.kaiming_uniform_(self.weight, a=math.sqrt(5), rng=rng)
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features)
            init.uniform_(self.bias, -bound, bound, rng)

    def forward(self, input: Any) -> Tensor:  # noqa: A002 (torch's name)
        return _linear(input, self.weight, self.bias)  # (its checks name in_features)

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

    activation_of = forward  # see convgrad.nn.fusion

    def fused_activation(self) -> float:
        return 0.0

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

    activation_of = forward  # see convgrad.nn.fusion

    def fused_activation(self) -> float | None:
        # read live; a negative slope flips the sign test, and a zero one is not a ReLU
        # (its -0 below zero and its gradient g * 0 at a NaN: a fused ReLU gives +0 and g)
        s = self.negative_slope
        return float(s) if s > 0 else None

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


class Unflatten(Module):
    """Dim ``dim`` reshaped to ``unflattened_size`` (the inverse of :class:`Flatten`; one
    entry may be -1, inferred)."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        fn = "Unflatten"
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"{fn}: dim={dim!r} must be an int")
        try:
            size = tuple(unflattened_size)
        except TypeError:
            raise TypeError(f"{fn}: unflattened_size={unflattened_size!r} must be a tuple of "
                            "ints") from None
        if (not size or any(isinstance(n, bool) or not isinstance(n, int) for n in size)
                or any(n < -1 for n in size) or sum(n == -1 for n in size) > 1):
            raise ValueError(f"{fn}: unflattened_size={unflattened_size!r} must be a non-empty "
                             "tuple of ints >= 0, at most one of them -1")
        self.dim, self.unflattened_size = dim, size

    def forward(self, input: Any) -> Tensor:
        x = as_tensor(input)
        fn, size = "Unflatten", self.unflattened_size
        if not -x.ndim <= self.dim < x.ndim:
            raise ValueError(f"{fn}: dim={self.dim} is out of range for an input of shape "
                             f"{x.shape}")
        d = self.dim % x.ndim
        n, known = x.shape[d], math.prod(k for k in size if k != -1)
        if (n != known if -1 not in size else known == 0 or n % known):
            raise ValueError(f"{fn}: unflattened_size={size} does not fit dim {self.dim} of "
                             f"size {n} (input shape {x.shape})")
        size = tuple(n // known if k == -1 else k for k in size)
        return x.reshape(x.shape[:d] + size + x.shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Unfold(Module):
    """Every sliding block as a column: :func:`convgrad.functional.unfold`."""

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Any) -> Tensor:  # noqa: A002 (torch's name)
        return _unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """Columns summed back into an image: :func:`convgrad.functional.fold`."""

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1,
                 padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.output_size, self.kernel_size, self.dilation = output_size, kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Any) -> Tensor:  # noqa: A002 (torch's name)
        return _fold(input, self.output_size, self.kernel_size, self.dilation,
                       self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
