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
