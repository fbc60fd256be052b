"""``convgrad.distributions``' further families against ``torch.distributions``:
log-probabilities, entropies, means and variances, KL divergences and their parameter
gradients in float64; float32 log-probabilities within twice torch's error; ``rsample``'s
reparameterisation by the gradient of a sample mean; sample moments; argument errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import convgrad as cg

D, TD = cg.distributions, torch.distributions
RNG = np.random.default_rng(42)


def _pos(*shape):
    return RNG.uniform(0.5, 3.0, shape)


def _spd(k, batch=()):
    a = RNG.standard_normal(batch + (k, k))
    return a @ np.swapaxes(a, -1, -2) + k * np.eye(k)


def _tril(k, batch=()):
    return np.tril(RNG.standard_normal(batch + (k, k)), -1) + np.diag(RNG.uniform(0.5, 2, k))


def _simplex(*shape):
    x = RNG.uniform(0.1, 1, shape)
    return x / x.sum(-1, keepdims=True)


def _onehot(k, n):
    return np.eye(k)[RNG.integers(0, k, n)]


# family name, parameter builder (kwargs of arrays), value builder, a second parameter set
CASES = {
    "Uniform": (lambda: dict(low=RNG.uniform(-2, 0, (3, 2)), high=RNG.uniform(1, 3, (2,))),
                lambda: RNG.uniform(0, 1, (3, 2))),
    "Exponential": (lambda: dict(rate=_pos(3, 2)), lambda: _pos(3, 2)),
    "Laplace": (lambda: dict(loc=RNG.standard_normal((3, 2)), scale=_pos(2)),
                lambda: RNG.standard_normal((3, 2))),
    "LogNormal": (lambda: dict(loc=RNG.standard_normal((3, 2)), scale=_pos(3, 2)),
                  lambda: _pos(3, 2)),
    "Gamma": (lambda: dict(concentration=_pos(3, 2), rate=_pos(3, 2)), lambda: _pos(3, 2)),
    "Beta": (lambda: dict(concentration1=_pos(3, 2), concentration0=_pos(2)),
             lambda: RNG.uniform(0.05, 0.95, (3, 2))),
    "Dirichlet": (lambda: dict(concentration=_pos(3, 4)), lambda: _simplex(3, 4)),
    "Poisson": (lambda: dict(rate=_pos(3, 2)),
                lambda: RNG.integers(0, 6, (3, 2)).astype(np.float64)),
    "Binomial": (lambda: dict(total_count=np.full((3, 2), 5.0), probs=RNG.uniform(.1, .9, (3, 2))),
                 lambda: RNG.integers(0, 6, (3, 2)).astype(np.float64)),
    "BinomialLogits": (lambda: dict(total_count=7.0, logits=RNG.standard_normal((3, 2))),
                       lambda: RNG.integers(0, 8, (3, 2)).astype(np.float64)),
    "OneHotCategorical": (lambda: dict(probs=_simplex(3, 4)), lambda: _onehot(4, 3)),
    "OneHotLogits": (lambda: dict(logits=RNG.standard_normal((3, 4))), lambda: _onehot(4, 3)),
    "MVNcov": (lambda: dict(loc=RNG.standard_normal((2, 3)), covariance_matrix=_spd(3)),
               lambda: RNG.standard_normal((4, 2, 3))),
    "MVNprec": (lambda: dict(loc=RNG.standard_normal(3), precision_matrix=_spd(3, (2,))),
                lambda: RNG.standard_normal((2, 3))),
    "MVNtril": (lambda: dict(loc=RNG.standard_normal((2, 3)), scale_tril=_tril(3)),
                lambda: RNG.standard_normal((2, 3))),
}
FAMILY = {"BinomialLogits": "Binomial", "OneHotLogits": "OneHotCategorical",
          "MVNcov": "MultivariateNormal", "MVNprec": "MultivariateNormal",
          "MVNtril": "MultivariateNormal"}
NO_GRAD = {"total_count"}
NO_ENTROPY = {"Poisson"}  # torch has none


def _build(case, params, dtype=np.float64):
    fam = FAMILY.get(case, case)
    ours = {k: cg.tensor(np.asarray(v, dtype), requires_grad=k not in NO_GRAD)
            for k, v in params.items()}
    theirs = {k: torch.tensor(np.asarray(v, dtype), requires_grad=k not in NO_GRAD)
              for k, v in params.items()}
    return getattr(D, fam)(**ours), getattr(TD, fam)(**theirs), ours, theirs


# torch's float64 trigamma (the derivative of digamma) is off by up to ~1e-9 relative
# (against mpmath; ours is within 1e-15), so gradients through a digamma are compared
# more loosely.
TRIGAMMA_RTOL = 1e-8


def _check(ours, theirs, ours_p, their_p, rtol=1e-10, grad_rtol=1e-10):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                               atol=1e-12)
    assert ours.dtype == cg.float64 and tuple(ours.shape) == tuple(theirs.shape)
    w = RNG.standard_normal(tuple(theirs.shape))
    wanted = [k for k in their_p if their_p[k].requires_grad]
    if not wanted:
        return
    tg = torch.autograd.grad((theirs * torch.tensor(w)).sum(), [their_p[k] for k in wanted],
                             allow_unused=True)
    (ours * cg.tensor(w)).sum().backward()
    for k, g in zip(wanted, tg):
        mine = ours_p[k].grad
        if g is None:
            assert mine is None or not np.any(mine.numpy())
            continue
        np.testing.assert_allclose(mine.numpy(), g.numpy(), rtol=grad_rtol,
                                   atol=1e-12 if grad_rtol <= 1e-10 else 1e-9,
                                   err_msg=k)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("what", ["log_prob", "entropy", "mean", "variance", "stddev"])
def test_values_and_gradients_equal_torchs(case, what):
    make, value = CASES[case]
    if what == "entropy" and case in NO_ENTROPY:
        pytest.skip("torch has no Poisson entropy")
    p, tp, ours, theirs = _build(case, make())
    if what == "log_prob":
        v = value()
        o, t = p.log_prob(cg.tensor(v)), tp.log_prob(torch.tensor(v))
    elif what == "entropy":
        o, t = p.entropy(), tp.entropy()
    else:
        o, t = getattr(p, what), getattr(tp, what)
    digamma = what == "entropy" and case in ("Gamma", "Beta", "Dirichlet")
    _check(o, t, ours, theirs, grad_rtol=TRIGAMMA_RTOL if digamma else 1e-10)
    assert tuple(p.batch_shape) == tuple(tp.batch_shape)
    assert tuple(p.event_shape) == tuple(tp.event_shape)


def test_second_order_gradient_of_gamma_log_prob():
    c, r, v = _pos(4), _pos(4), _pos(4)
    o_c, t_c = cg.tensor(c, requires_grad=True), torch.tensor(c, requires_grad=True)
    (go,) = cg.autograd.grad(D.Gamma(o_c, r).log_prob(v).sum(), [o_c], create_graph=True)
    (gt,) = torch.autograd.grad(TD.Gamma(t_c, torch.tensor(r)).log_prob(torch.tensor(v))
                                .sum(), [t_c], create_graph=True)
    go.sum().backward()
    gt.sum().backward()
    np.testing.assert_allclose(go.detach().numpy(), gt.detach().numpy(), rtol=1e-10)
    # the second derivative is trigamma's: torch's is off by ~1e-9
    np.testing.assert_allclose(o_c.grad.numpy(), t_c.grad.numpy(), rtol=TRIGAMMA_RTOL)


KL_CASES = ["Uniform", "Exponential", "Laplace", "Gamma", "Beta", "Dirichlet", "Poisson",
            "MVNcov", "MVNtril", "OneHotCategorical"]


@pytest.mark.parametrize("case", KL_CASES)
def test_kl_divergence_equals_torchs(case):
    make, _ = CASES[case]
    a, b = make(), make()
    if case == "Uniform":  # q covers p in some entries, not in others
        b = dict(low=a["low"] - RNG.uniform(-0.2, 1, a["low"].shape),
                 high=np.broadcast_to(a["high"], (3, 2)) + RNG.uniform(0.1, 1, (3, 2)))
        b["low"][0, 0] = a["low"][0, 0] + 0.1
    if case == "MVNtril":  # mixed parameterisations
        b = dict(loc=RNG.standard_normal((2, 3)), scale_tril=_tril(3, (2,)))
    p, tp, op, tpp = _build(case, a)
    q, tq, oq, tqp = _build(case, b)
    o, t = D.kl_divergence(p, q), TD.kl_divergence(tp, tq)
    if case == "Uniform":
        assert np.isinf(o.detach().numpy()[0, 0]) and np.isinf(t.detach().numpy()[0, 0])
        o, t = o[1:], t[1:]
    _check(o, t, {**op, **{k + "_q": v for k, v in oq.items()}},
           {**tpp, **{k + "_q": v for k, v in tqp.items()}},
           grad_rtol=TRIGAMMA_RTOL if case in ("Gamma", "Beta", "Dirichlet") else 1e-10)


def test_kl_of_independent_normals_and_mvn_with_precision():
    loc, scale = RNG.standard_normal((2, 3)), _pos(2, 3)
    o = [cg.tensor(x, requires_grad=True) for x in (loc, scale, loc[::-1].copy(), scale.T.T)]
    t = [torch.tensor(x.detach().numpy(), requires_grad=True) for x in o]
    ko = D.kl_divergence(D.Independent(D.Normal(o[0], o[1]), 1),
                         D.Independent(D.Normal(o[2], o[3]), 1))
    kt = TD.kl_divergence(TD.Independent(TD.Normal(t[0], t[1]), 1),
                          TD.Independent(TD.Normal(t[2], t[3]), 1))
    _check(ko, kt, dict(enumerate(o)), dict(enumerate(t)))
    ip = D.Independent(D.Normal(o[0], o[1]), 2)
    assert ip.batch_shape == () and ip.event_shape == (2, 3)
    _check(ip.log_prob(cg.tensor(loc)), TD.Independent(TD.Normal(t[0], t[1]), 2)
           .log_prob(torch.tensor(loc)), {}, {})
    a, b = dict(loc=loc[0], precision_matrix=_spd(3)), dict(loc=loc[1], covariance_matrix=_spd(3))
    p, tp, op, tpp = _build("MVNprec", a)
    q, tq, oq, tqp = _build("MVNcov", b)
    _check(D.kl_divergence(p, q), TD.kl_divergence(tp, tq), {**op, **{k + "q": v for k, v in
           oq.items()}}, {**tpp, **{k + "q": v for k, v in tqp.items()}})


@pytest.mark.parametrize("case", ["Uniform", "Exponential", "Laplace", "LogNormal",
                                  "MVNtril"])
def test_rsample_reparameterised_gradient_and_moments(case):
    cg.manual_seed(0)
    make, _ = CASES[case]
    params = make()
    if case == "LogNormal":  # light enough tails for the moments of 40000 draws
        params["scale"] = RNG.uniform(0.2, 0.6, (3, 2))
    p, tp, ours, theirs = _build(case, params)
    n = 40000
    s = p.rsample((n,))
    assert tuple(s.shape) == (n, *p.batch_shape, *p.event_shape) and s.dtype == cg.float64
    m = s.mean(0)
    np.testing.assert_allclose(m.detach().numpy(), tp.mean.detach().numpy(), rtol=0.05,
                               atol=0.05)
    np.testing.assert_allclose(s.detach().numpy().var(0), tp.variance.detach().numpy(),
                               rtol=0.1, atol=0.05)
    # the gradient of the sample mean through the draw is the analytic gradient of the mean
    w = RNG.standard_normal(tuple(m.shape))
    (m * cg.tensor(w)).sum().backward()
    tg = torch.autograd.grad((tp.mean * torch.tensor(w)).sum(), list(theirs.values()),
                             allow_unused=True)
    for (k, o), g in zip(ours.items(), tg):
        if k == "scale_tril":
            continue  # the mean does not depend on it; the draw's gradient is noise around 0
        want = np.zeros(o.shape) if g is None else g.numpy()
        np.testing.assert_allclose(o.grad.numpy(), want, rtol=0.05, atol=0.05, err_msg=k)


@pytest.mark.parametrize("case", ["Gamma", "Beta", "Dirichlet", "Poisson", "Binomial",
                                  "OneHotCategorical", "MVNcov"])
def test_sample_moments_and_shape(case):
    cg.manual_seed(1)
    make, _ = CASES[case]
    p, tp, _, _ = _build(case, make())
    s = p.sample((30000,))
    assert tuple(s.shape) == (30000, *tp.batch_shape, *tp.event_shape)
    assert s.dtype == cg.float64 and not s.requires_grad
    np.testing.assert_allclose(s.numpy().mean(0), tp.mean.detach().numpy(), rtol=0.05,
                               atol=0.03)
    np.testing.assert_allclose(s.numpy().var(0), tp.variance.detach().numpy(), rtol=0.1,
                               atol=0.03)


def test_sample_shape_int_and_sequence():
    cg.manual_seed(2)
    p = D.Independent(D.Laplace(cg.zeros(3, 2), cg.ones(2)), 1)
    assert tuple(p.sample(5).shape) == (5, 3, 2) and tuple(p.rsample([4, 1]).shape) == (4, 1, 3, 2)
    assert tuple(D.Dirichlet(cg.ones(2, 4)).sample(3).shape) == (3, 2, 4)
    assert tuple(D.OneHotCategorical(logits=cg.zeros(4)).sample().shape) == (4,)


def test_no_rsample_where_not_reparameterised():
    for p in (D.Gamma(1.0, 1.0), D.Beta(1.0, 2.0), D.Dirichlet(cg.ones(3)), D.Poisson(2.0)):
        assert not p.has_rsample
        with pytest.raises(NotImplementedError, match="rsample"):
            p.rsample()


@pytest.mark.parametrize("case", ["Uniform", "Exponential", "Laplace", "LogNormal", "Gamma",
                                  "Beta", "Dirichlet", "Poisson", "Binomial", "MVNcov"])
def test_float32_log_prob_within_twice_torchs_error(case):
    """float32 log_prob and parameter gradients against torch float64 on the same float32
    inputs, within twice torch float32's error (relative 2-norm over 100 random draws, so
    the measure is not one draw's luck)."""
    make, value = CASES[case]
    errors: dict = {}
    for _ in range(30 if case.startswith("MVN") else 100):
        params = {k: np.asarray(v, np.float32) for k, v in make().items()}
        v = np.asarray(value(), np.float32)
        p, tp, ours, theirs = _build(case, params, np.float32)
        _, tp64, _, theirs64 = _build(case, {k: x.astype(np.float64)
                                             for k, x in params.items()})
        o, t = p.log_prob(cg.tensor(v)), tp.log_prob(torch.tensor(v))
        ref = tp64.log_prob(torch.tensor(v, dtype=torch.float64))
        assert o.dtype == cg.float32
        w = RNG.standard_normal(tuple(t.shape))
        (o * cg.tensor(w.astype(np.float32))).sum().backward()
        tg = torch.autograd.grad((t * torch.tensor(w, dtype=torch.float32)).sum(),
                                 [x for x in theirs.values() if x.requires_grad])
        rg = torch.autograd.grad((ref * torch.tensor(w)).sum(),
                                 [x for x in theirs64.values() if x.requires_grad])
        found = [(o.detach().numpy(), t.detach().numpy(), ref.detach().numpy())]
        found += [(x.grad.numpy(), a.numpy(), b.numpy()) for x, a, b in
                  zip([x for x in ours.values() if x.requires_grad], tg, rg)]
        for i, (mine, theirs32, exact) in enumerate(found):
            e = errors.setdefault(i, np.zeros(3))
            e += [np.sum((mine.astype(np.float64) - exact) ** 2),
                  np.sum((theirs32.astype(np.float64) - exact) ** 2), np.sum(exact ** 2)]
    for i, (ours_sq, theirs_sq, scale_sq) in errors.items():
        err_o, err_t = np.sqrt(ours_sq / scale_sq), np.sqrt(theirs_sq / scale_sq)
        assert err_o <= 2 * max(err_t, 2.0 ** -24), (case, i, err_o, err_t)


def test_argument_errors():
    with pytest.raises(ValueError, match="exactly one of covariance_matrix"):
        D.MultivariateNormal(cg.zeros(2))
    with pytest.raises(ValueError, match="exactly one of covariance_matrix"):
        D.MultivariateNormal(cg.zeros(2), covariance_matrix=cg.eye(2), scale_tril=cg.eye(2))
    with pytest.raises(ValueError, match=r"scale_tril.shape=\(3, 3\).*\(2, 2\)"):
        D.MultivariateNormal(cg.zeros(2), scale_tril=cg.eye(3))
    with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
        D.MultivariateNormal(cg.tensor(0.0), covariance_matrix=cg.eye(1))
    with pytest.raises(ValueError, match=r"low.shape=\(3,\), high.shape=\(2,\)"):
        D.Uniform(cg.zeros(3), cg.ones(2))
    with pytest.raises(ValueError, match="exactly one of probs and logits"):
        D.Binomial(3)
    with pytest.raises(ValueError, match="exactly one of probs and logits"):
        D.OneHotCategorical()
    with pytest.raises(ValueError, match="total_count"):
        D.Binomial(cg.tensor([2.5]), probs=cg.tensor([0.5]))
    with pytest.raises(ValueError, match="concentration must have at least one dim"):
        D.Dirichlet(cg.tensor(1.0))
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims=2 must be at most"):
        D.Independent(D.Normal(cg.zeros(3), 1.0), 2)
    with pytest.raises(TypeError, match="base_distribution must be a Distribution"):
        D.Independent(cg.zeros(3), 1)
    with pytest.raises(ValueError, match="validate_args=True"):
        D.Gamma(1.0, 1.0, validate_args=True)
    with pytest.raises(TypeError, match="no rule for Gamma and Beta"):
        D.kl_divergence(D.Gamma(1.0, 1.0), D.Beta(1.0, 1.0))
    with pytest.raises(TypeError, match="sample_shape"):
        D.Exponential(1.0).sample("x")
    with pytest.raises(ValueError, match="value.shape=.*categories"):
        D.OneHotCategorical(probs=cg.ones(3)).log_prob(cg.ones(2))
