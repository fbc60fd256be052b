"""The fractional max pooling layers ``FractionalMaxPool2d``/``FractionalMaxPool3d``
(torch's constructor arguments; :mod:`convgrad.functional.fractional_pooling` does the
work)."""

from __future__ import annotations

from typing import Any

from ..functional import fractional_pooling as Ff
from ..functional.conv_args import per_dim
from .module import Module

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


class _FractionalMaxPoolNd(Module):
    _nd: int

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Any = None) -> None:
        super().__init__()
        name = type(self).__name__
        per_dim("kernel_size", kernel_size, self._nd, name)
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output_size or an "
                             "output_ratio, got neither")
        if output_size is not None and output_ratio is not None:
            raise ValueError(f"{name}: only one of output_size={output_size!r} and "
                             f"output_ratio={output_ratio!r} may be given")
        if output_size is not None:
            per_dim("output_size", output_size, self._nd, name)
        else:
            ratios = output_ratio if isinstance(output_ratio, tuple | list) else (
                (output_ratio,) * self._nd)
            if not all(isinstance(r, int | float) and not isinstance(r, bool)
                       and 0 < r < 1 for r in ratios) or len(ratios) != self._nd:
                raise ValueError(f"{name}: output_ratio={output_ratio!r} must be a float "
                                 f"(or {self._nd} floats) in (0, 1)")
        self.kernel_size = kernel_size
        self.output_size = output_size
        self.output_ratio = output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input: Any) -> Any:
        return Ff._fractional_max_pool(type(self).__name__, self._nd, input, self.kernel_size,
                                       self.output_size, self.output_ratio,
                                       self.return_indices, self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of ``(N, C, H, W)`` input (see
    :func:`convgrad.functional.fractional_max_pool2d`)."""

    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of ``(N, C, T, H, W)`` input (see
    :func:`convgrad.functional.fractional_max_pool3d`)."""

    _nd = 3
