"""``convgrad.distributions``: the distributions training scripts use most, with
``torch.distributions``' names and arguments: ``Normal`` (``rsample`` differentiable by
the reparameterisation), ``Categorical`` (by ``probs`` or ``logits``), ``Bernoulli``
(by ``probs`` or ``logits``) and ``kl_divergence`` of two Normals or two Categoricals.
``log_prob`` and ``entropy`` are composed of differentiable operations, so they train
(the REINFORCE loss ``-log_prob(action) * reward``, a VAE's KL term).  Draws come from the
library's generator (``cg.manual_seed``).  Arguments are not validated against their
supports beyond shapes (torch's ``validate_args`` is accepted and ignored only when
False or None).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import random as _random
from .default_dtype import get_default_dtype
from .tensor import Tensor, as_tensor, where

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal", "kl_divergence"]


def _float(x: Any, like: Tensor | None = None) -> Tensor:
    t = as_tensor(x)
    if t.data.dtype.kind != "f":
        t = t.to(like.data.dtype if like is not None else get_default_dtype())
    return t


def _clamped(p: Tensor) -> Tensor:
    """Probabilities kept in [eps, 1 - eps] before a log (torch's ``clamp_probs``): a zero
    probability then has a finite logit, and no NaN reaches a gradient."""
    eps = float(np.finfo(p.data.dtype).eps)
    return p.clamp(eps, 1 - eps)


def _shape(sample_shape: Any) -> tuple:
    return tuple(sample_shape) if not isinstance(sample_shape, int) else (sample_shape,)


class Distribution:
    """What the distributions share: ``batch_shape``, ``sample`` without a gradient."""

    batch_shape: tuple

    def __init__(self, validate_args: Any = None) -> None:
        if validate_args:
            raise ValueError(f"{type(self).__name__}: validate_args=True is not supported; "
                             "pass None or False")

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A draw (no gradient)."""
        return self._draw(_shape(sample_shape)).detach()

    def _draw(self, shape: tuple) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_shape={self.batch_shape})"


class Normal(Distribution):
    """N(loc, scale^2), broadcast."""

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        super().__init__(validate_args)
        self.loc = _float(loc)
        self.scale = _float(scale, self.loc)
        self.batch_shape = np.broadcast_shapes(tuple(self.loc.shape), tuple(self.scale.shape))

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
        eps = _random.generator(None, "Normal").standard_normal(shape + self.batch_shape)
        return self.loc + self.scale * Tensor._wrap(eps.astype(self.loc.data.dtype))

    def log_prob(self, value: Any) -> Tensor:
        v = _float(value, self.loc)
        return (-((v - self.loc) ** 2) / (2 * self.scale ** 2) - self.scale.log()
                - 0.5 * math.log(2 * math.pi))

    def entropy(self) -> Tensor:
        return (0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()).expand(
            *self.batch_shape)


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
        rng = _random.generator(None, "Categorical")
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
        u = _random.generator(None, "Bernoulli").random(shape + self.batch_shape)
        return Tensor._wrap((u < self.probs.data).astype(self.probs.data.dtype))

    def log_prob(self, value: Any) -> Tensor:
        """``-binary_cross_entropy_with_logits(logits, value)``, stably."""
        v = _float(value, self.logits)
        x = self.logits
        return -(x.clamp(min=0) - x * v + (-(x.abs())).exp().log1p())

    def entropy(self) -> Tensor:
        p, x = self.probs, self.logits
        return x.clamp(min=0) - x * p + (-(x.abs())).exp().log1p()


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) for two Normals or two Categoricals."""
    if isinstance(p, Normal) and isinstance(q, Normal):
        var_ratio = (p.scale / q.scale) ** 2
        t1 = ((p.loc - q.loc) / q.scale) ** 2
        return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())
    if isinstance(p, Categorical) and isinstance(q, Categorical):
        t = p.probs * (p._finite_logits() - q.logits)  # 0 where p is 0; +inf where only q is
        return where(p.probs.data > 0, t, Tensor._wrap(np.zeros((), p.probs.data.dtype))).sum(-1)
    raise TypeError(f"kl_divergence: no rule for {type(p).__name__} and "
                              f"{type(q).__name__} (Normal/Normal and "
                              "Categorical/Categorical are)")
