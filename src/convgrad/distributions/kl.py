"""``kl_divergence(p, q)``: KL(p || q) in closed form for pairs of the same family, each
composed of differentiable operations."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import linalg
from ..tensor import Tensor, where
from .base import Distribution
from .continuous import Exponential, Laplace, Uniform
from .discrete import Categorical, OneHotCategorical, Poisson
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent, _sum_rightmost
from .multivariate import MultivariateNormal, _batch_mv_solve
from .normal import Normal

__all__ = ["kl_divergence"]


def _normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


def _categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p._finite_logits() - q.logits)  # 0 where p is 0; +inf where only q is
    return where(p.probs.data > 0, t, Tensor._wrap(np.zeros((), p.probs.data.dtype))).sum(-1)


def _uniform(p: Uniform, q: Uniform) -> Tensor:
    """``log((q.high - q.low) / (p.high - p.low))``; +inf where q does not cover p."""
    r = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low.data > p.low.data) | (q.high.data < p.high.data)
    return where(outside, Tensor._wrap(np.full((), np.inf, r.data.dtype)), r)


def _exponential(p: Exponential, q: Exponential) -> Tensor:
    ratio = q.rate / p.rate
    return ratio - ratio.log() - 1


def _laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    d = (p.loc - q.loc).abs()
    return -scale_ratio.log() + d / q.scale + scale_ratio * (-d / p.scale).exp() - 1


def _gamma(p: Gamma, q: Gamma) -> Tensor:
    pc, qc = p.concentration, q.concentration
    return (qc * (p.rate / q.rate).log() + qc.lgamma() - pc.lgamma()
            + (pc - qc) * pc.digamma() + (q.rate - p.rate) * (pc / p.rate))


def _beta(p: Beta, q: Beta) -> Tensor:
    p1, p0, q1, q0 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    sp, sq = p1 + p0, q1 + q0
    return (q1.lgamma() + q0.lgamma() + sp.lgamma() - p1.lgamma() - p0.lgamma() - sq.lgamma()
            + (p1 - q1) * p1.digamma() + (p0 - q0) * p0.digamma()
            + (sq - sp) * sp.digamma())


def _dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    pc, qc = p.concentration, q.concentration
    sp, sq = pc.sum(-1), qc.sum(-1)
    return (sp.lgamma() - sq.lgamma() - (pc.lgamma() - qc.lgamma()).sum(-1)
            + ((pc - qc) * (pc.digamma() - sp.digamma().unsqueeze(-1))).sum(-1))


def _poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


def _mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    """``log det Lq - log det Lp + (|Lq^-1 Lp|_F^2 + |Lq^-1 (mq - mp)|^2 - k) / 2``."""
    if p.event_shape != q.event_shape:
        raise ValueError("kl_divergence: the two MultivariateNormals have event shapes "
                         f"{p.event_shape} and {q.event_shape}; they must be equal")
    k = p.event_shape[0]
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    shape = tuple(np.broadcast_shapes(tuple(lp.shape[:-2]), tuple(lq.shape[:-2])))
    t2 = linalg.solve_triangular(lq.expand(*shape, k, k), lp.expand(*shape, k, k),
                                 upper=False)
    t2 = (t2 ** 2).sum((-2, -1))
    t3 = (_batch_mv_solve(lq, q.loc - p.loc) ** 2).sum(-1)
    return q._half_log_det() - p._half_log_det() + 0.5 * (t2 + t3 - k)


def _independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError(
            "kl_divergence: Independents with reinterpreted_batch_ndims "
            f"{p.reinterpreted_batch_ndims} and {q.reinterpreted_batch_ndims} differ")
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist),
                          p.reinterpreted_batch_ndims)


def _onehot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _categorical(p._categorical, q._categorical)


_RULES: dict[type, Callable] = {
    Normal: _normal, Categorical: _categorical, Uniform: _uniform,
    Exponential: _exponential, Laplace: _laplace, Gamma: _gamma, Beta: _beta,
    Dirichlet: _dirichlet, Poisson: _poisson, MultivariateNormal: _mvn,
    Independent: _independent, OneHotCategorical: _onehot,
}


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) for two distributions of the same family: Normal, Categorical, Uniform,
    Exponential, Laplace, Gamma, Beta, Dirichlet, Poisson, MultivariateNormal,
    Independent or OneHotCategorical.  Other pairs are a TypeError."""
    rule = _RULES.get(type(p)) if type(p) is type(q) else None
    if rule is None:
        raise TypeError(f"kl_divergence: no rule for {type(p).__name__} and "
                        f"{type(q).__name__} (pairs of one family are: "
                        f"{', '.join(sorted(c.__name__ for c in _RULES))})")
    return rule(p, q)
