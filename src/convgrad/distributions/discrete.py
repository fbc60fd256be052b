"""The discrete families: ``Categorical``, ``OneHotCategorical``, ``Bernoulli``,
``Binomial`` and ``Poisson``.  Their log-probabilities and entropies are composed of
differentiable operations in ``probs``/``logits``/``rate``; draws carry no gradient."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import special
from ..tensor import Tensor, arange
from .base import Distribution, _clamped, _float, _params, _rng, _wrap

__all__ = ["Bernoulli", "Binomial", "Categorical", "OneHotCategorical", "Poisson"]


class Categorical(Distribution):
    """Categories 0..K-1 along the last dim of ``probs`` (normalised) or ``logits``."""

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Any = None
                 ) -> None:
        super().__init__(validate_args)
        if (probs is None) == (logits is None):
            raise ValueError("Categorical: pass exactly one of probs and logits")
        if probs is not None:
            p = _float(probs)
            self.probs = p / p.sum(-1, keepdim=True)
            self.logits = _clamped(self.probs).log()  # torch's probs_to_logits
        else:
            lg = _float(logits)
            self.logits = lg - lg.logsumexp(-1, keepdim=True)
            self.probs = self.logits.exp()
        if self.probs.ndim < 1:
            raise ValueError("Categorical: probs or logits must have a category dim")
        self.batch_shape = tuple(self.probs.shape[:-1])

    @property
    def param_shape(self) -> tuple:
        return tuple(self.probs.shape)

    def _draw(self, shape: tuple) -> Tensor:
        p = np.asarray(self.probs.data, np.float64)
        k = p.shape[-1]
        rows = p.reshape(-1, k)
        rng = _rng("Categorical")
        n = int(np.prod(shape)) if shape else 1
        cum = np.cumsum(rows, axis=1)
        u = rng.random((n, rows.shape[0], 1)) * cum[:, -1:]
        idx = np.minimum((u >= cum[None]).sum(-1), k - 1)  # the first category past u
        return Tensor._wrap(idx.reshape(shape + self.batch_shape).astype(np.int64))

    def log_prob(self, value: Any) -> Tensor:
        """The log-probability of the categories ``value`` (int64, broadcast against the
        batch shape)."""
        v = np.asarray(getattr(value, "data", value)).astype(np.int64)
        shape = np.broadcast_shapes(v.shape, self.batch_shape)
        logits = self.logits.expand(*shape, self.logits.shape[-1])
        return logits.gather(-1, np.broadcast_to(v, shape)[..., None].copy()).squeeze(-1)

    def _finite_logits(self) -> Tensor:
        """The logits with -inf (a zero probability) raised to the dtype's lowest value,
        as torch: p log p is then 0 there, and so is its gradient (not NaN)."""
        return self.logits.clamp(min=float(np.finfo(self.logits.data.dtype).min))

    def entropy(self) -> Tensor:
        """``-sum p log p`` (0 log 0 taken as 0)."""
        return -(self.probs * self._finite_logits()).sum(-1)


class Bernoulli(Distribution):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Any = None
                 ) -> None:
        super().__init__(validate_args)
        if (probs is None) == (logits is None):
            raise ValueError("Bernoulli: pass exactly one of probs and logits")
        if probs is not None:
            self.probs = _float(probs)
            c = _clamped(self.probs)
            self.logits = c.log() - (1 - c).log()  # torch's probs_to_logits
        else:
            self.logits = _float(logits)
            self.probs = self.logits.sigmoid()
        self.batch_shape = tuple(self.probs.shape)

    def _draw(self, shape: tuple) -> Tensor:
        u = _rng("Bernoulli").random(shape + self.batch_shape)
        return Tensor._wrap((u < self.probs.data).astype(self.probs.data.dtype))

    def log_prob(self, value: Any) -> Tensor:
        """``-binary_cross_entropy_with_logits(logits, value)``, stably."""
        v = _float(value, self.logits)
        x = self.logits
        return -(x.clamp(min=0) - x * v + (-(x.abs())).exp().log1p())

    def entropy(self) -> Tensor:
        p, x = self.probs, self.logits
        return x.clamp(min=0) - x * p + (-(x.abs())).exp().log1p()


class OneHotCategorical(Distribution):
    """A ``Categorical`` whose draws are one-hot vectors along the last dim."""

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Any = None
                 ) -> None:
        super().__init__(validate_args)
        if (probs is None) == (logits is None):
            raise ValueError("OneHotCategorical: pass exactly one of probs and logits")
        self._categorical = Categorical(probs=probs, logits=logits)
        self.batch_shape = self._categorical.batch_shape
        self.event_shape = tuple(self._categorical.param_shape[-1:])

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def _draw(self, shape: tuple) -> Tensor:
        idx = self._categorical._draw(shape).data
        k = self.event_shape[0]
        return _wrap(np.arange(k) == idx[..., None], self.probs.data.dtype)

    def log_prob(self, value: Any) -> Tensor:
        """The categorical log-probability of the hot index of ``value``."""
        v = np.asarray(getattr(value, "data", value))
        if v.ndim < 1 or v.shape[-1] != self.event_shape[0]:
            raise ValueError(f"OneHotCategorical.log_prob: value.shape={v.shape} must end "
                             f"in the {self.event_shape[0]} categories")
        return self._categorical.log_prob(v.argmax(-1))

    def entropy(self) -> Tensor:
        """The categorical entropy."""
        return self._categorical.entropy()


class Poisson(Distribution):
    """Counts with mean ``rate``."""

    def __init__(self, rate: Any, validate_args: Any = None) -> None:
        super().__init__(validate_args)
        self.rate, self.batch_shape = _params("Poisson", rate=rate)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def variance(self) -> Tensor:
        return self.rate

    def _draw(self, shape: tuple) -> Tensor:
        n = _rng("Poisson").poisson(self.rate.data, self._extended(shape))
        return _wrap(n, self.rate.data.dtype)

    def log_prob(self, value: Any) -> Tensor:
        """``value log rate - rate - lgamma(value + 1)``."""
        v = _float(value, self.rate)
        return special.xlogy(v, self.rate) - self.rate - (v + 1).lgamma()


class Binomial(Distribution):
    """Successes in ``total_count`` trials of probability ``probs`` (or
    ``sigmoid(logits)``)."""

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: Any = None) -> None:
        super().__init__(validate_args)
        if (probs is None) == (logits is None):
            raise ValueError("Binomial: pass exactly one of probs and logits")
        if probs is not None:
            p, n, self.batch_shape = _params("Binomial", probs=probs, total_count=total_count)
            self.probs, self.total_count = p, n.to(p.data.dtype)
            c = _clamped(p)
            self.logits = c.log() - (1 - c).log()
        else:
            lg, n, self.batch_shape = _params("Binomial", logits=logits,
                                              total_count=total_count)
            self.logits, self.total_count = lg, n.to(lg.data.dtype)
            self.probs = lg.sigmoid()
        tc = self.total_count.data
        if np.any(tc < 0) or np.any(tc != np.round(tc)):
            raise ValueError(f"Binomial: total_count={tc} must be non-negative integers")

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def _draw(self, shape: tuple) -> Tensor:
        n = self.total_count.data.astype(np.int64)
        k = _rng("Binomial").binomial(n, self.probs.data, self._extended(shape))
        return _wrap(k, self.probs.data.dtype)

    def log_prob(self, value: Any) -> Tensor:
        """``log C(n, k) + k logits - n log(1 + exp(logits))``, stably."""
        k = _float(value, self.logits)
        n, x = self.total_count, self.logits
        log_norm = n * (x.clamp(min=0) + (-(x.abs())).exp().log1p())
        return (n + 1).lgamma() - (k + 1).lgamma() - (n - k + 1).lgamma() + k * x - log_norm

    def entropy(self) -> Tensor:
        """``-sum_k p(k) log p(k)`` over k = 0..n (one ``total_count`` for the batch, as
        torch requires)."""
        tc = np.unique(self.total_count.data)
        if tc.size > 1:
            raise NotImplementedError("Binomial.entropy: total_count must be the same "
                                      f"everywhere; got {tc}")
        n = int(tc[0]) if tc.size else 0
        ks = arange(n + 1, dtype=self.logits.dtype).reshape(-1, *[1] * len(self.batch_shape))
        lp = self.log_prob(ks)
        return -(lp.exp() * lp).sum(0)
