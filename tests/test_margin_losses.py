"""Margin, embedding and count losses against torch: torch float64 the oracle, convgrad's
float32 loss and every input's gradient within twice torch float32's error (relative
2-norm, against float64), for each reduction; the layers as the
functions; errors for shapes that do not fit."""

import numpy as np
import pytest
import torch

import convgrad as cg
import convgrad.functional as F

RNG = np.random.default_rng(17)
REDUCTIONS = ["mean", "sum", "none"]


def _sign(shape):
    return np.where(RNG.random(shape) < 0.5, -1.0, 1.0).astype(np.float32)


def _cases():
    x1, x2 = (RNG.standard_normal((6, 5)).astype(np.float32) for _ in range(2))
    return {
        "margin_ranking_loss": ((RNG.standard_normal(8).astype(np.float32),
                                 RNG.standard_normal(8).astype(np.float32), _sign(8)),
                                {"margin": 0.3}, (0, 1)),
        "hinge_embedding_loss": ((RNG.standard_normal((4, 5)).astype(np.float32),
                                  _sign((4, 5))), {"margin": 0.7}, (0,)),
        "soft_margin_loss": ((RNG.standard_normal((4, 5)).astype(np.float32), _sign((4, 5))),
                             {}, (0,)),
        "cosine_embedding_loss": ((x1, x2, _sign(6)), {"margin": 0.2}, (0, 1)),
        "triplet_margin_loss": ((x1, x2, RNG.standard_normal((6, 5)).astype(np.float32)),
                                {"margin": 1.5}, (0, 1, 2)),
        "triplet_margin_loss/swap": ((x1, x2, x1 + 0.1), {"swap": True, "p": 1.0},
                                     (0, 1, 2)),
        "multilabel_soft_margin_loss": ((RNG.standard_normal((4, 6)).astype(np.float32),
                                         (RNG.random((4, 6)) < 0.4).astype(np.float32)),
                                        {}, (0,)),
        "poisson_nll_loss": ((RNG.standard_normal((4, 5)).astype(np.float32),
                              RNG.poisson(2.0, (4, 5)).astype(np.float32)), {"full": True},
                             (0,)),
        "poisson_nll_loss/rate": ((RNG.uniform(0.2, 3.0, (4, 5)).astype(np.float32),
                                   RNG.poisson(2.0, (4, 5)).astype(np.float32)),
                                  {"log_input": False}, (0,)),
        "gaussian_nll_loss": ((RNG.standard_normal((6, 4)).astype(np.float32),
                               RNG.standard_normal((6, 4)).astype(np.float32),
                               RNG.uniform(0.1, 2.0, (6, 4)).astype(np.float32)),
                              {"full": True}, (0, 1, 2)),
        "gaussian_nll_loss/per_sample": ((RNG.standard_normal((6, 4)).astype(np.float32),
                                          RNG.standard_normal((6, 4)).astype(np.float32),
                                          np.concatenate([[0.0], RNG.uniform(0.1, 2.0, 5)])
                                          .astype(np.float32)), {}, (0, 2)),
    }


CASES = _cases()


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_loss_and_gradients_within_twice_torchs_error(case, reduction):
    args, kw, grad_args = CASES[case]
    name = case.split("/")[0]
    ts = [cg.tensor(a, requires_grad=i in grad_args) for i, a in enumerate(args)]
    out = getattr(F, name)(*ts, reduction=reduction, **kw)
    w = RNG.standard_normal(out.shape).astype(np.float32)
    (out * cg.tensor(w)).sum().backward()
    ref = {}
    for dtype in (torch.float64, torch.float32):
        tts = [torch.tensor(a, dtype=dtype, requires_grad=i in grad_args)
               for i, a in enumerate(args)]
        to = getattr(torch.nn.functional, name)(*tts, reduction=reduction, **kw)
        (to * torch.tensor(w, dtype=dtype)).sum().backward()
        ref[dtype] = [to.detach().double().numpy()] + [tts[i].grad.double().numpy()
                                                       for i in grad_args]
    ours = [out.numpy()] + [ts[i].grad.numpy() for i in grad_args]
    assert out.dtype == np.float32 and out.shape == ref[torch.float64][0].shape
    for o, exact, theirs in zip(ours, ref[torch.float64], ref[torch.float32]):
        scale = max(float(np.linalg.norm(exact)), 1e-30)  # relative 2-norm errors
        err = float(np.linalg.norm(o.astype(np.float64) - exact)) / scale
        torch_err = float(np.linalg.norm(theirs - exact)) / scale
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


@pytest.mark.parametrize("layer, name, kw", [
    ("MarginRankingLoss", "margin_ranking_loss", {"margin": 0.3}),
    ("HingeEmbeddingLoss", "hinge_embedding_loss", {"margin": 0.7}),
    ("SoftMarginLoss", "soft_margin_loss", {}),
    ("CosineEmbeddingLoss", "cosine_embedding_loss", {"margin": 0.2}),
    ("TripletMarginLoss", "triplet_margin_loss", {"margin": 1.5}),
    ("MultiLabelSoftMarginLoss", "multilabel_soft_margin_loss", {}),
    ("PoissonNLLLoss", "poisson_nll_loss", {"full": True}),
    ("GaussianNLLLoss", "gaussian_nll_loss", {"full": True})])
def test_layers_equal_their_functions(layer, name, kw):
    args = [cg.tensor(a) for a in CASES[name][0]]
    for reduction in REDUCTIONS:
        m = getattr(cg.nn, layer)(reduction=reduction, **kw)
        np.testing.assert_array_equal(m(*args).numpy(),
                                      getattr(F, name)(*args, reduction=reduction, **kw)
                                      .numpy())
    assert repr(getattr(cg.nn, layer)(**kw)) == repr(getattr(torch.nn, layer)(**kw))


def test_shapes_that_do_not_fit():
    a = cg.tensor(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"cosine_embedding_loss: target of shape \(2,\) "
                                         r"must be \(3,\)"):
        F.cosine_embedding_loss(a, a, cg.tensor(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match=r"margin_ranking_loss: the shapes .* do not broadcast"):
        F.margin_ranking_loss(a, a, cg.tensor(np.ones(5, np.float32)))
    with pytest.raises(ValueError, match=r"triplet_margin_loss: anchor \(3, 4\), positive"):
        F.triplet_margin_loss(a, a, cg.tensor(np.ones((3, 4, 1), np.float32)))
    with pytest.raises(ValueError, match=r"reduction='avg' must be one of"):
        F.soft_margin_loss(a, a, reduction="avg")
    with pytest.raises(ValueError, match=r"gaussian_nll_loss: var of shape \(4,\) does not "
                                         r"fit the input of shape \(3, 4\)"):
        F.gaussian_nll_loss(a, a, cg.tensor(np.ones(4, np.float32)))
    with pytest.raises(ValueError, match=r"gaussian_nll_loss: var has negative entries"):
        F.gaussian_nll_loss(a, a, cg.tensor(-np.ones((3, 4), np.float32)))


def _within_twice_torchs_error(out, x, ref: dict) -> None:
    """convgrad's float32 loss and input gradient within twice torch float32's error, both
    against torch float64 (``ref``: dtype -> [loss, gradient])."""
    assert out.dtype == np.float32 and out.shape == ref[torch.float64][0].shape
    for o, exact, theirs in zip([out.numpy(), x.grad.numpy()], ref[torch.float64],
                                ref[torch.float32]):
        scale = max(float(np.linalg.norm(exact)), 1e-30)
        err = float(np.linalg.norm(o.astype(np.float64) - exact)) / scale
        torch_err = float(np.linalg.norm(theirs - exact)) / scale
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multi_margin_loss_within_twice_torchs_error(p, weighted, reduction):
    x = RNG.standard_normal((16, 7)).astype(np.float32)
    y = RNG.integers(0, 7, 16)
    w = RNG.uniform(0.2, 2.0, 7).astype(np.float32) if weighted else None
    kw = {"p": p, "margin": 0.8, "reduction": reduction}
    ours_x = cg.tensor(x, requires_grad=True)
    out = F.multi_margin_loss(ours_x, y, weight=w, **kw)
    r = RNG.standard_normal(out.shape).astype(np.float32)
    (out * cg.tensor(r)).sum().backward()
    ref = {}
    for dtype in (torch.float64, torch.float32):
        tx = torch.tensor(x, dtype=dtype, requires_grad=True)
        tw = None if w is None else torch.tensor(w, dtype=dtype)
        to = torch.nn.functional.multi_margin_loss(tx, torch.tensor(y), weight=tw, **kw)
        (to * torch.tensor(r, dtype=dtype)).sum().backward()
        ref[dtype] = [to.detach().double().numpy(), tx.grad.double().numpy()]
    _within_twice_torchs_error(out, ours_x, ref)
    layer = cg.nn.MultiMarginLoss(p=p, margin=0.8, weight=w, reduction=reduction)
    np.testing.assert_array_equal(layer(cg.tensor(x), y).numpy(),
                                  F.multi_margin_loss(cg.tensor(x), y, weight=w, **kw).numpy())
    # unbatched: one sample, a 0-d target
    one = F.multi_margin_loss(cg.tensor(x[0]), y[0], weight=w, **kw).numpy()
    theirs = torch.nn.functional.multi_margin_loss(
        torch.tensor(x[0]), torch.tensor(y[0]), weight=None if w is None else torch.tensor(w),
        **kw).numpy()
    np.testing.assert_allclose(one, theirs, rtol=1e-6, atol=1e-7)


def test_multi_margin_loss_arguments():
    a = cg.tensor(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match="p=3 must be 1 or 2"):
        F.multi_margin_loss(a, [0, 1, 2], p=3)
    with pytest.raises(ValueError, match="target of 2 class indices for an input of 3"):
        F.multi_margin_loss(a, [0, 1])
    with pytest.raises(IndexError, match="index 4 is out of range"):
        F.multi_margin_loss(a, [0, 1, 4])
    with pytest.raises(ValueError, match=r"weight of shape \(3,\) must be \(4,\)"):
        F.multi_margin_loss(a, [0, 1, 2], weight=np.ones(3, np.float32))
    assert repr(cg.nn.MultiMarginLoss(p=2, margin=0.5)) == repr(
        torch.nn.MultiMarginLoss(p=2, margin=0.5))


def _multilabel_targets(n, c):
    """Rows of class indices, each ended by a -1 (or full), with repeats and empty rows."""
    y = np.full((n, c), -1, np.int64)
    for i in range(n):
        k = int(RNG.integers(0, c + 1))
        y[i, :k] = RNG.integers(0, c, k)
        if k < c:
            y[i, k + 1:] = RNG.integers(0, c, c - k - 1)  # after the -1: ignored
    return y


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_within_twice_torchs_error(reduction):
    x = RNG.standard_normal((12, 6)).astype(np.float32)
    y = _multilabel_targets(12, 6)
    ours_x = cg.tensor(x, requires_grad=True)
    out = F.multilabel_margin_loss(ours_x, cg.tensor(y, dtype=cg.int64), reduction=reduction)
    r = RNG.standard_normal(out.shape).astype(np.float32)
    (out * cg.tensor(r)).sum().backward()
    ref = {}
    for dtype in (torch.float64, torch.float32):
        tx = torch.tensor(x, dtype=dtype, requires_grad=True)
        to = torch.nn.functional.multilabel_margin_loss(tx, torch.tensor(y),
                                                         reduction=reduction)
        (to * torch.tensor(r, dtype=dtype)).sum().backward()
        ref[dtype] = [to.detach().double().numpy(), tx.grad.double().numpy()]
    _within_twice_torchs_error(out, ours_x, ref)
    layer = cg.nn.MultiLabelMarginLoss(reduction=reduction)
    np.testing.assert_array_equal(layer(cg.tensor(x), y).numpy(), out.detach().numpy())
    one = F.multilabel_margin_loss(cg.tensor(x[0]), y[0]).numpy()
    theirs = torch.nn.functional.multilabel_margin_loss(torch.tensor(x[0]),
                                                        torch.tensor(y[0])).numpy()
    np.testing.assert_allclose(one, theirs, rtol=1e-6, atol=1e-7)
    assert repr(layer) == repr(torch.nn.MultiLabelMarginLoss(reduction=reduction))


def test_multilabel_margin_loss_float64_and_kinks_as_torch():
    """float64 to rounding; a term at exactly 0 (x[y] - x[i] = 1) gives no gradient."""
    x = np.array([[0.5, -0.5, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    y = np.array([[0, 2, -1, 3], [1, -1, 0, 0]])
    xt, xc = torch.tensor(x, requires_grad=True), cg.tensor(x, requires_grad=True)
    torch.nn.functional.multilabel_margin_loss(xt, torch.tensor(y), reduction="sum").backward()
    F.multilabel_margin_loss(xc, cg.tensor(y, dtype=cg.int64), reduction="sum").backward()
    np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_multilabel_margin_loss_arguments():
    a = cg.tensor(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"target of shape \(3, 2\) must have the input's"):
        F.multilabel_margin_loss(a, np.zeros((3, 2), np.int64))
    with pytest.raises(IndexError, match=r"outside \[-1, 3\]"):
        F.multilabel_margin_loss(a, np.full((3, 4), 4))
    with pytest.raises(TypeError, match="not whole"):
        F.multilabel_margin_loss(a, np.full((3, 4), 0.5))
    with pytest.raises(ValueError, match="must be \\(N, C\\) or \\(C,\\)"):
        F.multilabel_margin_loss(cg.tensor(np.ones((2, 3, 4))), np.zeros((2, 3, 4)))
