"""``MultivariateNormal`` by ``loc`` and one of ``covariance_matrix``,
``precision_matrix`` or ``scale_tril``: log-density, entropy and ``rsample`` through the
lower Cholesky factor (``convgrad.linalg.cholesky`` / ``solve_triangular``), so all of
them differentiate in every parameter."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import linalg
from ..tensor import Tensor
from .base import Distribution, _float, _rng, _wrap

__all__ = ["MultivariateNormal"]


def _batch_mv_solve(tril: Tensor, x: Tensor) -> Tensor:
    """``tril^-1 x`` over the last dim of ``x``, both broadcast."""
    shape = tuple(np.broadcast_shapes(tuple(tril.shape[:-2]), tuple(x.shape[:-1])))
    k = x.shape[-1]
    t = tril.expand(*shape, k, k)
    return linalg.solve_triangular(t, x.expand(*shape, k).unsqueeze(-1),
                                   upper=False).squeeze(-1)


class MultivariateNormal(Distribution):
    """N(loc, Sigma) with ``Sigma = scale_tril scale_tril^T``."""

    has_rsample = True

    def __init__(self, loc: Any, covariance_matrix: Any = None, precision_matrix: Any = None,
                 scale_tril: Any = None, validate_args: Any = None) -> None:
        super().__init__(validate_args)
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("MultivariateNormal: pass exactly one of covariance_matrix, "
                             f"precision_matrix and scale_tril; got {[n for n, _ in given]}")
        self.loc = _float(loc)
        if self.loc.ndim < 1:
            raise ValueError("MultivariateNormal: loc must be at least one-dimensional; got "
                             f"shape {tuple(self.loc.shape)}")
        name, m = given[0]
        m = _float(m, self.loc)
        k = self.loc.shape[-1]
        if m.ndim < 2 or tuple(m.shape[-2:]) != (k, k):
            raise ValueError(f"MultivariateNormal: {name}.shape={tuple(m.shape)} must end in "
                             f"({k}, {k}) to match loc.shape={tuple(self.loc.shape)}")
        try:
            self.batch_shape = tuple(np.broadcast_shapes(tuple(m.shape[:-2]),
                                                         tuple(self.loc.shape[:-1])))
        except ValueError:
            raise ValueError(f"MultivariateNormal: loc.shape={tuple(self.loc.shape)} and "
                             f"{name}.shape={tuple(m.shape)} have batch shapes that do not "
                             "broadcast") from None
        self.event_shape = (k,)
        self._given = name
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = m
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = linalg.cholesky(m)
        else:
            self._unbroadcasted_scale_tril = linalg.cholesky(linalg.inv(m))
        self._matrix = m
        self.loc = self.loc.expand(*self.batch_shape, k)

    @property
    def scale_tril(self) -> Tensor:
        k = self.event_shape[0]
        return self._unbroadcasted_scale_tril.expand(*self.batch_shape, k, k)

    @property
    def covariance_matrix(self) -> Tensor:
        if self._given == "covariance_matrix":
            return self._matrix.expand(*self.batch_shape, *self.event_shape * 2)
        t = self.scale_tril
        return t @ t.transpose(-1, -2)

    @property
    def precision_matrix(self) -> Tensor:
        if self._given == "precision_matrix":
            return self._matrix.expand(*self.batch_shape, *self.event_shape * 2)
        return linalg.inv(self.covariance_matrix)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return (self.scale_tril ** 2).sum(-1)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def _draw(self, shape: tuple) -> Tensor:
        eps = _wrap(_rng("MultivariateNormal").standard_normal(self._extended(shape)),
                    self.loc.data.dtype)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Any) -> Tensor:
        """``-(k log(2 pi) + |L^-1 (value - loc)|^2) / 2 - log det L``."""
        diff = _float(value, self.loc) - self.loc
        m = (_batch_mv_solve(self._unbroadcasted_scale_tril, diff) ** 2).sum(-1)
        k = self.event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        """``k (1 + log(2 pi)) / 2 + log det L``."""
        k = self.event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(*self.batch_shape)
