"""``Gamma``, ``Beta`` and ``Dirichlet``: log-densities and entropies composed of
``lgamma``/``digamma``, so they differentiate in the concentrations.  Draws come from
NumPy's gamma sampler and carry no gradient (``has_rsample`` is False: torch's implicit
reparameterisation of the gamma draw is not implemented)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import special
from ..tensor import Tensor, stack
from .base import Distribution, _float, _params, _rng, _wrap

__all__ = ["Beta", "Dirichlet", "Gamma"]


class Gamma(Distribution):
    """Density ``rate^c x^(c-1) exp(-rate x) / Gamma(c)`` with ``c = concentration``."""

    def __init__(self, concentration: Any, rate: Any, validate_args: Any = None) -> None:
        super().__init__(validate_args)
        self.concentration, self.rate, self.batch_shape = _params(
            "Gamma", concentration=concentration, rate=rate)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate ** 2

    def _draw(self, shape: tuple) -> Tensor:
        dt = self.rate.data.dtype
        g = _rng("Gamma").standard_gamma(self.concentration.data, self._extended(shape))
        g = np.maximum(g / self.rate.data, np.finfo(dt).tiny)  # torch clamps to tiny too
        return _wrap(g, dt)

    def log_prob(self, value: Any) -> Tensor:
        """``c log rate + (c - 1) log value - rate value - lgamma(c)``."""
        v = _float(value, self.rate)
        c = self.concentration
        return (special.xlogy(c, self.rate) + special.xlogy(c - 1, v) - self.rate * v
                - c.lgamma())

    def entropy(self) -> Tensor:
        """``c - log rate + lgamma(c) + (1 - c) digamma(c)``."""
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()


class Dirichlet(Distribution):
    """On the simplex along the last dim of ``concentration``."""

    def __init__(self, concentration: Any, validate_args: Any = None) -> None:
        super().__init__(validate_args)
        self.concentration = _float(concentration)
        if self.concentration.ndim < 1:
            raise ValueError("Dirichlet: concentration must have at least one dim; got "
                             f"shape {tuple(self.concentration.shape)}")
        self.batch_shape = tuple(self.concentration.shape[:-1])
        self.event_shape = tuple(self.concentration.shape[-1:])

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0 ** 2 * (c0 + 1))

    def _draw(self, shape: tuple) -> Tensor:
        dt = self.concentration.data.dtype
        g = _rng("Dirichlet").standard_gamma(self.concentration.data, self._extended(shape))
        g = np.maximum(g, np.finfo(dt).tiny)
        return _wrap(g / g.sum(-1, keepdims=True), dt)

    def log_prob(self, value: Any) -> Tensor:
        """``sum (c - 1) log value + lgamma(sum c) - sum lgamma(c)``."""
        v = _float(value, self.concentration)
        c = self.concentration
        return (special.xlogy(c - 1, v).sum(-1) + c.sum(-1).lgamma()
                - c.lgamma().sum(-1))

    def entropy(self) -> Tensor:
        """``sum lgamma(c) - lgamma(c0) - (k - c0) digamma(c0) - sum (c - 1) digamma(c)``."""
        c = self.concentration
        k = c.shape[-1]
        c0 = c.sum(-1)
        return (c.lgamma().sum(-1) - c0.lgamma() - (k - c0) * c0.digamma()
                - ((c - 1.0) * c.digamma()).sum(-1))


class Beta(Distribution):
    """Density ``x^(a-1) (1-x)^(b-1) / B(a, b)``, a = ``concentration1``, b =
    ``concentration0``."""

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: Any = None) -> None:
        super().__init__(validate_args)
        self.concentration1, self.concentration0, self.batch_shape = _params(
            "Beta", concentration1=concentration1, concentration0=concentration0)
        self._dirichlet = Dirichlet(stack([self.concentration1, self.concentration0], -1))

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        t = a + b
        return a * b / (t ** 2 * (t + 1))

    def _draw(self, shape: tuple) -> Tensor:
        return self._dirichlet._draw(shape)[..., 0]

    def log_prob(self, value: Any) -> Tensor:
        """``(a-1) log x + (b-1) log(1-x) - lgamma(a) - lgamma(b) + lgamma(a+b)``."""
        v = _float(value, self.concentration1)
        a, b = self.concentration1, self.concentration0
        return (special.xlogy(a - 1, v) + special.xlog1py(b - 1, -v)
                + (a + b).lgamma() - a.lgamma() - b.lgamma())

    def entropy(self) -> Tensor:
        """The entropy of the two-category Dirichlet."""
        return self._dirichlet.entropy()
