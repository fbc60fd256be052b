"""``convgrad.distributions`` against ``torch.distributions``: log-probabilities,
entropies and KL divergences, with their gradients, in float64; samples by their
statistics and the library's seed; ``rsample``'s gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import convgrad as cg

D, TD = cg.distributions, torch.distributions
RNG = np.random.default_rng(8)


def _same(ours, theirs, ours_leaves, their_leaves):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-14)
    w = RNG.standard_normal(tuple(theirs.shape))
    (theirs * torch.tensor(w)).sum().backward()
    (ours * cg.tensor(w)).sum().backward()
    for a, b in zip(ours_leaves, their_leaves):
        if a.grad is None or b.grad is None:  # no dependency (an entropy on loc)
            for g in (a.grad, b.grad):
                assert g is None or not np.any(np.asarray(g.detach().numpy()))
            continue
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-14)


def _leaves(*arrays):
    return ([cg.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def test_normal_equals_torchs():
    loc, scale, v = RNG.standard_normal((3, 2)), RNG.uniform(0.5, 2, (3, 2)), RNG.standard_normal(2)
    for what in ("log_prob", "entropy", "kl"):
        ours_l, their_l = _leaves(loc, scale)
        p, tp = D.Normal(*ours_l), TD.Normal(*their_l)
        if what == "log_prob":
            _same(p.log_prob(cg.tensor(v)), tp.log_prob(torch.tensor(v)), ours_l, their_l)
        elif what == "entropy":
            _same(p.entropy(), tp.entropy(), ours_l, their_l)
        else:
            q, tq = D.Normal(cg.tensor(0.3), cg.tensor(1.7)), TD.Normal(torch.tensor(0.3),
                                                                         torch.tensor(1.7))
            _same(D.kl_divergence(p, q), TD.kl_divergence(tp, tq), ours_l, their_l)
    p = D.Normal(cg.tensor(loc), cg.tensor(scale))
    np.testing.assert_array_equal(p.mean.numpy(), loc)
    np.testing.assert_allclose(p.variance.numpy(), scale ** 2)


def test_categorical_and_bernoulli_equal_torchs():
    logits, act = RNG.standard_normal((4, 5)), RNG.integers(0, 5, 4)
    ours_l, their_l = _leaves(logits)
    c, tc = D.Categorical(logits=ours_l[0]), TD.Categorical(logits=their_l[0])
    _same(c.log_prob(act) * 2 + c.entropy(), tc.log_prob(torch.tensor(act)) * 2 + tc.entropy(),
          ours_l, their_l)
    p, q = RNG.uniform(0.1, 1, (2, 3)), RNG.uniform(0.1, 1, (2, 3))
    ours_l, their_l = _leaves(p, q)
    cp, cq = D.Categorical(probs=ours_l[0]), D.Categorical(probs=ours_l[1])
    tp, tq = TD.Categorical(probs=their_l[0]), TD.Categorical(probs=their_l[1])
    _same(D.kl_divergence(cp, cq), TD.kl_divergence(tp, tq), ours_l, their_l)
    assert cp.batch_shape == tuple(tp.batch_shape)
    bp, bv = RNG.uniform(0.05, 0.95, 5), (RNG.random(5) < 0.5).astype(float)
    for kind in ("probs", "logits"):
        ours_l, their_l = _leaves(bp)
        b, tb = D.Bernoulli(**{kind: ours_l[0]}), TD.Bernoulli(**{kind: their_l[0]})
        _same(b.log_prob(cg.tensor(bv)) + b.entropy(),
              tb.log_prob(torch.tensor(bv)) + tb.entropy(), ours_l, their_l)


def test_samples_follow_the_distribution_and_the_seed():
    cg.manual_seed(0)
    cat = D.Categorical(probs=cg.tensor(np.array([0.1, 0.6, 0.3])))
    s = cat.sample((30000,)).numpy()
    assert s.dtype == np.int64 and s.shape == (30000,)
    np.testing.assert_allclose(np.bincount(s, minlength=3) / 30000, [0.1, 0.6, 0.3], atol=0.01)
    batch = D.Categorical(logits=cg.tensor(np.log(np.array([[1.0, 0.0], [0.0, 1.0]]) + 1e-30)))
    np.testing.assert_array_equal(batch.sample((5,)).numpy(), np.tile([0, 1], (5, 1)))
    normal = D.Normal(cg.tensor(1.0), cg.tensor(2.0)).sample((40000,)).numpy()
    assert abs(normal.mean() - 1) < 0.05 and abs(normal.std() - 2) < 0.05
    bern = D.Bernoulli(probs=cg.tensor(np.full(30000, 0.25))).sample().numpy()
    assert abs(bern.mean() - 0.25) < 0.01
    cg.manual_seed(0)
    np.testing.assert_array_equal(cat.sample((30000,)).numpy(), s)


def test_rsample_is_differentiable_and_sample_is_not():
    loc = cg.tensor(np.array([0.5, -1.0]), requires_grad=True)
    scale = cg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    n = D.Normal(loc, scale)
    draws = n.rsample((1000,))
    draws.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [1000.0, 1000.0])
    eps = (draws.detach().numpy() - loc.data) / scale.data
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0))
    assert not n.sample((3,)).requires_grad


def test_wrong_arguments_name_themselves():
    with pytest.raises(ValueError, match="exactly one of probs and logits"):
        D.Categorical()
    with pytest.raises(ValueError, match="exactly one of probs and logits"):
        D.Bernoulli(probs=cg.tensor([0.5]), logits=cg.tensor([0.0]))
    with pytest.raises(ValueError, match="validate_args"):
        D.Normal(cg.tensor(0.0), cg.tensor(1.0), validate_args=True)
    with pytest.raises(TypeError, match="no rule for Normal and Categorical"):
        D.kl_divergence(D.Normal(cg.tensor(0.0), cg.tensor(1.0)),
                        D.Categorical(probs=cg.tensor([0.5, 0.5])))


def test_zero_probabilities_give_torchs_finite_gradients():
    """A zero probability has torch's clamped logit: entropy, KL and log-probabilities and
    their gradients are finite and equal torch's (no 0 * -inf)."""
    p = np.array([[0.0, 0.3, 0.7], [0.5, 0.5, 0.0]])
    q = np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])
    ours_l, their_l = _leaves(p)
    found = []
    for lib, mod, leaf in ((cg, D, ours_l[0]), (torch, TD, their_l[0])):
        c = mod.Categorical(probs=leaf)
        other = mod.Categorical(probs=lib.tensor(q))
        out = c.entropy() + mod.kl_divergence(c, other) + c.log_prob(lib.tensor(np.array([1, 0])))
        found.append(out)
    _same(found[0], found[1], ours_l, their_l)
    assert np.isfinite(ours_l[0].grad.numpy()).all()
