"""Pooling layers: ``MaxPool1d/2d/3d``, ``AvgPool1d/2d/3d``, ``AdaptiveAvgPool1d/2d/3d``,
``AdaptiveMaxPool1d/2d/3d``.

Constructor arguments, stored attributes and ``repr`` follow ``torch.nn``; arguments are
checked when the layer is built, and ``forward`` calls :mod:`convgrad.functional`.
"""

from __future__ import annotations

from typing import Any

from ..functional import adaptive_pooling as Fa
from ..functional import pooling as Fp
from ..functional import unpooling as Fu
from ..functional.conv_args import per_dim
from ..ops import jit
from .module import Module

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "MaxPool1d", "MaxPool2d", "MaxPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


def _check_window(fn: str, nd: int, kernel_size: Any, stride: Any, padding: Any,
                  dilation: Any = 1) -> None:
    k = per_dim("kernel_size", kernel_size, nd, fn)
    per_dim("stride", stride, nd, fn)
    p = per_dim("padding", padding, nd, fn, minimum=0)
    per_dim("dilation", dilation, nd, fn)
    if any(2 * pp > kk for pp, kk in zip(p, k)):
        raise ValueError(f"{fn}: padding={padding!r} must be at most half of "
                         f"kernel_size={kernel_size!r} in every dim")


class _MaxPoolNd(Module):
    _nd: int

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        jit.warm_up("pool_loops")  # a network is being built: its kernels load
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode
        _check_window(type(self).__name__, self._nd, kernel_size, self.stride, padding, dilation)

    def forward(self, input: Any) -> Any:
        return Fp._max_pool(type(self).__name__, self._nd, input, self.kernel_size, self.stride,
                            self.padding, self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over windows of ``(N, C, L)`` input (see :func:`convgrad.functional.max_pool1d`)."""

    _nd = 1


class MaxPool2d(_MaxPoolNd):
    """Max over windows of ``(N, C, H, W)`` input (see
    :func:`convgrad.functional.max_pool2d`)."""

    _nd = 2


class MaxPool3d(_MaxPoolNd):
    """Max over windows of ``(N, C, D, H, W)`` input (see
    :func:`convgrad.functional.max_pool3d`)."""

    _nd = 3


class _AvgPoolNd(Module):
    _nd: int

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override
        _check_window(type(self).__name__, self._nd, kernel_size, self.stride, padding)

    def forward(self, input: Any) -> Any:
        return Fp._avg_pool(type(self).__name__, self._nd, input, self.kernel_size,
                            self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Mean over windows of ``(N, C, L)`` input (see :func:`convgrad.functional.avg_pool1d`);
    its sizes are kept as 1-tuples, as torch's."""

    _nd = 1

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        one = lambda v: tuple(v) if isinstance(v, tuple | list) else (v,)
        super().__init__(one(kernel_size), one(stride if stride is not None else kernel_size),
                         one(padding), ceil_mode, count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """Mean over windows of ``(N, C, H, W)`` input (see
    :func:`convgrad.functional.avg_pool2d`)."""

    _nd = 2


class AvgPool3d(_AvgPoolNd):
    """Mean over windows of ``(N, C, D, H, W)`` input (see
    :func:`convgrad.functional.avg_pool3d`)."""

    _nd = 3


class _AdaptivePoolNd(Module):
    _nd: int

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size
        Fa.output_size_arg(type(self).__name__, output_size, (1,) * self._nd)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptivePoolNd):
    def forward(self, input: Any) -> Any:
        return Fa._adaptive_avg(type(self).__name__, self._nd, input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average ``(N, C, L)`` input to length ``output_size``."""

    _nd = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average ``(N, C, H, W)`` input to ``output_size`` (``None`` keeps a dim)."""

    _nd = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average ``(N, C, D, H, W)`` input to ``output_size``."""

    _nd = 3


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Any) -> Any:
        return Fa._adaptive_max(type(self).__name__, self._nd, input, self.output_size,
                                self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max of ``(N, C, L)`` input over adaptive windows."""

    _nd = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max of ``(N, C, H, W)`` input over adaptive windows."""

    _nd = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max of ``(N, C, D, H, W)`` input over adaptive windows."""

    _nd = 3


class _MaxUnpoolNd(Module):
    """Max pooling's partial inverse: ``forward(input, indices, output_size=None)`` (see
    :func:`convgrad.functional.max_unpool2d`)."""

    _nd: int

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        fn, nd = type(self).__name__, self._nd
        self.kernel_size = per_dim("kernel_size", kernel_size, nd, fn)
        self.stride = self.kernel_size if stride is None else per_dim("stride", stride, nd, fn)
        self.padding = per_dim("padding", padding, nd, fn, minimum=0)

    def forward(self, input: Any, indices: Any, output_size: Any = None) -> Any:
        return Fu._max_unpool(type(self).__name__, self._nd, input, indices, self.kernel_size,
                              self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Max unpooling of ``(N, C, L)`` input."""

    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """Max unpooling of ``(N, C, H, W)`` input."""

    _nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """Max unpooling of ``(N, C, D, H, W)`` input."""

    _nd = 3


class _LPPoolNd(Module):
    """``(sum of x^p over each window)^(1/p)`` (see :func:`convgrad.functional.lp_pool2d`)."""

    _nd: int

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Any) -> Any:
        return Fu._lp_pool(type(self).__name__, self._nd, input, self.norm_type,
                           self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling of ``(N, C, L)`` input."""

    _nd = 1


class LPPool2d(_LPPoolNd):
    """Power-average pooling of ``(N, C, H, W)`` input."""

    _nd = 2


class LPPool3d(_LPPoolNd):
    """Power-average pooling of ``(N, C, D, H, W)`` input."""

    _nd = 3
