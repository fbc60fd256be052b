"""``Independent``: a distribution whose rightmost batch dims are read as event dims, so
``log_prob`` and ``entropy`` sum over them."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .base import Distribution

__all__ = ["Independent"]


def _sum_rightmost(t: Tensor, n: int) -> Tensor:
    return t.sum(tuple(range(-n, 0))) if n > 0 else t


class Independent(Distribution):
    """``base_distribution`` with ``reinterpreted_batch_ndims`` batch dims made event
    dims."""

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: Any = None) -> None:
        super().__init__(validate_args)
        if not isinstance(base_distribution, Distribution):
            raise TypeError("Independent: base_distribution must be a Distribution; got "
                            f"{type(base_distribution).__name__}")
        n = reinterpreted_batch_ndims
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"Independent: reinterpreted_batch_ndims={n!r} must be a "
                             "non-negative int")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        nb = len(base_distribution.batch_shape)
        if n > nb:
            raise ValueError(f"Independent: reinterpreted_batch_ndims={n} must be at most "
                             f"len(base_distribution.batch_shape)={nb}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        self.batch_shape = shape[:nb - n]
        self.event_shape = shape[nb - n:]

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    @property
    def stddev(self) -> Tensor:
        return self.base_dist.stddev

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """The base distribution's draw."""
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """The base distribution's reparameterised draw."""
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Any) -> Tensor:
        """The base log-probability summed over the reinterpreted dims."""
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        """The base entropy summed over the reinterpreted dims."""
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)
