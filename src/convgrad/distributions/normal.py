"""``Normal`` and ``LogNormal``: reparameterised (``rsample`` is ``loc + scale * eps``,
exponentiated for the log-normal)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..tensor import Tensor
from .base import Distribution, _float, _rng, _shape, _wrap

__all__ = ["LogNormal", "Normal"]


class Normal(Distribution):
    """N(loc, scale^2), broadcast."""

    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        super().__init__(validate_args)
        self.loc = _float(loc)
        self.scale = _float(scale, self.loc)
        try:
            self.batch_shape = np.broadcast_shapes(tuple(self.loc.shape),
                                                   tuple(self.scale.shape))
        except ValueError:
            raise ValueError(f"{type(self).__name__}: loc.shape={tuple(self.loc.shape)} and "
                             f"scale.shape={tuple(self.scale.shape)} must broadcast") from None

    @property
    def mean(self) -> Tensor:
        return self.loc.expand(*self.batch_shape)

    @property
    def stddev(self) -> Tensor:
        return self.scale.expand(*self.batch_shape)

    @property
    def variance(self) -> Tensor:
        return self.stddev ** 2

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``loc + scale * eps``, eps ~ N(0, 1): differentiable in loc and scale."""
        return self._draw(_shape(sample_shape))

    def _draw(self, shape: tuple) -> Tensor:
        eps = _rng("Normal").standard_normal(shape + tuple(self.batch_shape))
        return self.loc + self.scale * _wrap(eps, self.loc.data.dtype)

    def log_prob(self, value: Any) -> Tensor:
        """The log-density at ``value``."""
        v = _float(value, self.loc)
        return (-((v - self.loc) ** 2) / (2 * self.scale ** 2) - self.scale.log()
                - 0.5 * math.log(2 * math.pi))

    def entropy(self) -> Tensor:
        """``0.5 + 0.5 log(2 pi) + log scale``."""
        return (0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()).expand(
            *self.batch_shape)


class LogNormal(Normal):
    """``exp(X)`` for X ~ N(loc, scale^2); ``loc`` and ``scale`` are X's."""

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale ** 2 / 2).exp().expand(*self.batch_shape)

    @property
    def variance(self) -> Tensor:
        s2 = self.scale ** 2
        return (s2.expm1() * (2 * self.loc + s2).exp()).expand(*self.batch_shape)

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def _draw(self, shape: tuple) -> Tensor:
        return super()._draw(shape).exp()

    def log_prob(self, value: Any) -> Tensor:
        """The normal log-density of ``log value`` less ``log value``."""
        lv = _float(value, self.loc).log()
        return super().log_prob(lv) - lv

    def entropy(self) -> Tensor:
        """The normal entropy plus ``loc``."""
        return super().entropy() + self.loc
