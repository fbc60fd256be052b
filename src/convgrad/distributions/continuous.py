"""``Uniform``, ``Exponential`` and ``Laplace``: reparameterised one-parameter-location /
scale families."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from .base import Distribution, _float, _params, _rng, _wrap

__all__ = ["Exponential", "Laplace", "Uniform"]


class Uniform(Distribution):
    """Uniform on [low, high), broadcast."""

    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: Any = None) -> None:
        super().__init__(validate_args)
        self.low, self.high, self.batch_shape = _params("Uniform", low=low, high=high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 / 12

    def _draw(self, shape: tuple) -> Tensor:
        u = _wrap(_rng("Uniform").random(self._extended(shape)), self.low.data.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Any) -> Tensor:
        """``-log(high - low)`` inside [low, high), ``-inf`` outside."""
        v = _float(value, self.low)
        inside = (self.low.data <= v.data) & (v.data < self.high.data)
        with np.errstate(divide="ignore"):
            mask = _wrap(np.log(inside.astype(self.low.data.dtype)), self.low.data.dtype)
        return mask - (self.high - self.low).log()

    def entropy(self) -> Tensor:
        """``log(high - low)``."""
        return (self.high - self.low).log()


class Exponential(Distribution):
    """Density ``rate * exp(-rate x)`` on x >= 0."""

    has_rsample = True

    def __init__(self, rate: Any, validate_args: Any = None) -> None:
        super().__init__(validate_args)
        self.rate, self.batch_shape = _params("Exponential", rate=rate)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate ** -2

    def _draw(self, shape: tuple) -> Tensor:
        e = _rng("Exponential").standard_exponential(self._extended(shape))
        return _wrap(e, self.rate.data.dtype) / self.rate

    def log_prob(self, value: Any) -> Tensor:
        """``log rate - rate * value``."""
        v = _float(value, self.rate)
        return self.rate.log() - self.rate * v

    def entropy(self) -> Tensor:
        """``1 - log rate``."""
        return 1.0 - self.rate.log()


class Laplace(Distribution):
    """Density ``exp(-|x - loc| / scale) / (2 scale)``."""

    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        super().__init__(validate_args)
        self.loc, self.scale, self.batch_shape = _params("Laplace", loc=loc, scale=scale)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return 2 ** 0.5 * self.scale

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale ** 2

    def _draw(self, shape: tuple) -> Tensor:
        dt = self.loc.data.dtype
        tiny = float(np.finfo(dt).eps)
        u = _rng("Laplace").uniform(tiny - 1, 1, self._extended(shape)).astype(dt)
        # loc - scale * sign(u) * log(1 - |u|): inverse of the CDF at (u + 1) / 2
        return self.loc - self.scale * _wrap(np.sign(u) * np.log1p(-np.abs(u)), dt)

    def log_prob(self, value: Any) -> Tensor:
        """``-log(2 scale) - |value - loc| / scale``."""
        v = _float(value, self.loc)
        return -(2 * self.scale).log() - (v - self.loc).abs() / self.scale

    def entropy(self) -> Tensor:
        """``1 + log(2 scale)``."""
        return 1 + (2 * self.scale).log()

