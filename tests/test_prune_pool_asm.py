"""``cg.nn.utils.prune``, fractional max pooling and ``AdaptiveLogSoftmaxWithLoss``.
Oracle: torch (same weights; the same masks for the deterministic pruning methods, the
same pooling regions for the same ``_random_samples``; values and gradients)."""

import numpy as np
import pytest
import torch
import torch.nn.utils.prune as tprune

import convgrad as cg
from convgrad.nn.utils import prune


def _pair(seed=0, shape=(4, 6)):
    """A torch and a convgrad Linear with the same (tie-free) weights."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape)
    b = rng.standard_normal(shape[0])
    t = torch.nn.Linear(shape[1], shape[0]).double()
    c = cg.nn.Linear(shape[1], shape[0]).double()
    with torch.no_grad():
        t.weight.copy_(torch.tensor(w))
        t.bias.copy_(torch.tensor(b))
    c.weight.data[...] = w
    c.bias.data[...] = b
    return t, c


def _check_same(t, c, x, name="weight"):
    """Same state-dict keys and values, same output and gradient of ``<name>_orig``."""
    ts, cs = t.state_dict(), c.state_dict()
    assert list(ts) == list(cs)
    for k in ts:
        np.testing.assert_array_equal(cs[k], ts[k].numpy())
    r = np.random.default_rng(1).standard_normal((x.shape[0], t.out_features))
    yt = t(torch.tensor(x))
    yc = c(cg.tensor(x))
    np.testing.assert_allclose(yc.data, yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    (yt * torch.tensor(r)).sum().backward()
    (yc * cg.tensor(r)).sum().backward()
    tg = getattr(t, name + "_orig", None)
    tg = getattr(t, name) if tg is None else tg
    cgp = getattr(c, name + "_orig", None)
    cgp = getattr(c, name) if cgp is None else cgp
    np.testing.assert_allclose(cgp.grad.data, tg.grad.numpy(), rtol=1e-12, atol=1e-12)


X = np.random.default_rng(5).standard_normal((3, 6))


@pytest.mark.parametrize("amount", [0, 5, 0.3, 0.5, 1.0])
def test_l1_unstructured_matches_torch(amount):
    t, c = _pair()
    tprune.l1_unstructured(t, "weight", amount=amount)
    prune.l1_unstructured(c, "weight", amount=amount)
    assert prune.is_pruned(c) and tprune.is_pruned(t)
    _check_same(t, c, X)


@pytest.mark.parametrize("n,dim,amount", [(1, 0, 2), (2, -1, 0.5), (float("inf"), 1, 3),
                                          ("fro", 0, 0.25), (-float("inf"), 0, 1)])
def test_ln_structured_matches_torch(n, dim, amount):
    t, c = _pair()
    tprune.ln_structured(t, "weight", amount=amount, n=n, dim=dim)
    prune.ln_structured(c, "weight", amount=amount, n=n, dim=dim)
    _check_same(t, c, X)


def test_repeated_pruning_combines_masks_as_torch():
    t, c = _pair()
    for mod, pr in ((t, tprune), (c, prune)):
        pr.l1_unstructured(mod, "weight", amount=0.25)
        pr.ln_structured(mod, "weight", amount=1, n=2, dim=0)
        pr.l1_unstructured(mod, "weight", amount=3)
        pr.ln_structured(mod, "weight", amount=0.4, n=1, dim=1)
        pr.l1_unstructured(mod, "bias", amount=1)
        pr.identity(mod, "bias")
    hook = next(h for h in c._forward_pre_hooks.values() if h._tensor_name == "weight")
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 4
    _check_same(t, c, X)
    _check_same(t, c, X, name="bias")


def test_importance_scores_and_custom_mask_match_torch():
    t, c = _pair()
    s = np.random.default_rng(3).standard_normal((4, 6))
    m = (np.random.default_rng(4).random((4, 6)) > 0.3).astype(float)
    tprune.l1_unstructured(t, "weight", amount=7, importance_scores=torch.tensor(s))
    prune.l1_unstructured(c, "weight", amount=7, importance_scores=cg.tensor(s))
    tprune.custom_from_mask(t, "weight", torch.tensor(m))
    prune.custom_from_mask(c, "weight", m)
    _check_same(t, c, X)


def test_global_unstructured_matches_torch():
    t1, c1 = _pair(0)
    t2, c2 = _pair(1)
    tprune.l1_unstructured(t2, "weight", amount=4)
    prune.l1_unstructured(c2, "weight", amount=4)
    tprune.global_unstructured([(t1, "weight"), (t2, "weight"), (t2, "bias")],
                               tprune.L1Unstructured, amount=0.4)
    prune.global_unstructured([(c1, "weight"), (c2, "weight"), (c2, "bias")],
                              prune.L1Unstructured, amount=0.4)
    _check_same(t1, c1, X)
    _check_same(t2, c2, X)
    _check_same(t2, c2, X, name="bias")


def test_remove_makes_pruning_permanent_as_torch():
    t, c = _pair()
    for mod, pr in ((t, tprune), (c, prune)):
        pr.l1_unstructured(mod, "weight", amount=0.5)
        pr.remove(mod, "weight")
    assert not prune.is_pruned(c)
    assert isinstance(c.weight, cg.nn.Parameter)
    assert [k for k, _ in c.named_parameters()] == [k for k, _ in t.named_parameters()]
    _check_same(t, c, X)


def test_random_methods_prune_the_requested_count():
    cg.manual_seed(0)
    _, c = _pair()
    prune.random_unstructured(c, "weight", amount=0.25)
    assert c.weight_mask.sum() == 18 and c.weight_mask.dtype == np.float64
    np.testing.assert_array_equal(c.weight.data, c.weight_orig.data * c.weight_mask)
    _, c = _pair()
    prune.random_structured(c, "weight", amount=2, dim=1)
    cols = c.weight_mask.sum(axis=0)
    assert sorted(cols.tolist()) == [0, 0, 4, 4, 4, 4]
    prune.random_structured(c, "weight", amount=0.5, dim=1)  # half of the 4 left
    assert sorted(c.weight_mask.sum(axis=0).tolist()) == [0, 0, 0, 0, 4, 4]
    y = prune.RandomUnstructured(amount=3).prune(cg.ones(2, 5))
    assert y.data.sum() == 7


def test_the_hook_recomputes_the_weight_before_forward():
    _, c = _pair()
    prune.l1_unstructured(c, "weight", amount=6)
    c.weight_orig.data[...] = 2.0
    c(cg.tensor(X))
    np.testing.assert_array_equal(c.weight.data, 2.0 * c.weight_mask)


def test_prune_errors():
    _, c = _pair()
    with pytest.raises(ValueError, match="amount=-1"):
        prune.l1_unstructured(c, "weight", amount=-1)
    with pytest.raises(ValueError, match="amount=1.5"):
        prune.l1_unstructured(c, "weight", amount=1.5)
    with pytest.raises(TypeError, match="amount='a'"):
        prune.l1_unstructured(c, "weight", amount="a")
    with pytest.raises(ValueError, match="amount=25"):
        prune.l1_unstructured(c, "weight", amount=25)
    with pytest.raises(ValueError, match="no parameter named 'nope'"):
        prune.l1_unstructured(c, "nope", amount=1)
    with pytest.raises(ValueError, match="at least 2 dims"):
        prune.ln_structured(c, "bias", amount=1, n=2, dim=0)
    with pytest.raises(ValueError, match="dim=2"):
        prune.ln_structured(c, "weight", amount=1, n=2, dim=2)
    with pytest.raises(ValueError, match="importance_scores of shape"):
        prune.l1_unstructured(c, "weight", amount=1, importance_scores=np.ones(3))
    with pytest.raises(ValueError, match="has to be pruned"):
        prune.remove(c, "weight")
    with pytest.raises(ValueError, match="PRUNING_TYPE 'unstructured'"):
        prune.global_unstructured([(c, "weight")], prune.LnStructured, amount=1, n=2)
    with pytest.raises(TypeError, match="parameters="):
        prune.global_unstructured(3, prune.L1Unstructured, amount=1)
    assert "weight" in c._parameters and not prune.is_pruned(c)  # failures changed nothing


# -- fractional max pooling ------------------------------------------------------------

FMP_CASES = [  # (nd, input spatial, kernel, output_size, output_ratio)
    (2, (9, 11), 2, (4, 6), None), (2, (7, 7), (3, 2), None, (0.5, 0.6)), (2, (10, 6), 1, (10, 3),
                                                                    None),
    (2, (8, 9), 3, (1, 7), None), (3, (6, 7, 8), 2, (3, 4, 5), None),
    (3, (9, 5, 6), (1, 2, 3), None, (0.7, 0.5, 0.4)),
]


def _fmp(nd, lib):
    if lib is torch:
        f = torch.nn.functional
    else:
        f = cg.nn.functional
    return f.fractional_max_pool2d if nd == 2 else f.fractional_max_pool3d


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nd,spatial,k,out,ratio", FMP_CASES)
def test_fractional_max_pool_matches_torch(nd, spatial, k, out, ratio, dtype):
    rng = np.random.default_rng(sum(spatial))
    x = rng.standard_normal((2, 3) + spatial).astype(dtype)
    s = rng.random((2, 3, nd)).astype(dtype)
    xt = torch.tensor(x, requires_grad=True)
    xc = cg.tensor(x, requires_grad=True)
    yt, it = _fmp(nd, torch)(xt, k, output_size=out, output_ratio=ratio, return_indices=True,
                             _random_samples=torch.tensor(s))
    yc, ic = _fmp(nd, cg)(xc, k, output_size=out, output_ratio=ratio, return_indices=True,
                          _random_samples=s)
    np.testing.assert_array_equal(ic.data, it.numpy())
    assert ic.dtype == np.int64
    np.testing.assert_array_equal(yc.data, yt.detach().numpy())
    assert yc.dtype == dtype
    r = rng.standard_normal(yt.shape).astype(dtype)
    (yt * torch.tensor(r)).sum().backward()
    (yc * cg.tensor(r)).sum().backward()
    np.testing.assert_array_equal(xc.grad.data, xt.grad.numpy())


def test_fractional_max_pool_second_order_and_nan():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 7, 8))
    x[0, 1, 3, 4] = np.nan
    s = rng.random((1, 2, 2))
    xt = torch.tensor(x, requires_grad=True)
    xc = cg.tensor(x, requires_grad=True)
    yt, it = torch.nn.functional.fractional_max_pool2d_with_indices(
        xt, 3, output_size=(3, 4), _random_samples=torch.tensor(s))
    yc, ic = cg.nn.functional.fractional_max_pool2d_with_indices(
        xc, 3, output_size=(3, 4), _random_samples=s)
    np.testing.assert_array_equal(ic.data, it.numpy())
    np.testing.assert_array_equal(yc.data, yt.detach().numpy())
    # second order: d/dx of sum(grad(sum(y^3 masked)) * v)
    fin_t, fin_c = torch.isfinite(yt), np.isfinite(yc.data)
    gt, = torch.autograd.grad((yt[fin_t] ** 3).sum(), xt, create_graph=True)
    gc, = cg.autograd.grad((yc[fin_c] ** 3).sum(), xc, create_graph=True)
    np.testing.assert_allclose(gc.data, gt.detach().numpy(), rtol=1e-12)
    v = rng.standard_normal(x.shape)
    ht, = torch.autograd.grad((gt * torch.tensor(v)).sum(), xt)
    hc, = cg.autograd.grad((gc * cg.tensor(v)).sum(), xc)
    np.testing.assert_allclose(hc.data, np.nan_to_num(ht.numpy()), rtol=1e-12)


def test_fractional_max_pool_layers_and_unbatched():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 9, 9)).astype(np.float32)
    s = rng.random((1, 3, 2)).astype(np.float32)
    tm = torch.nn.FractionalMaxPool2d(2, output_ratio=0.5, return_indices=True,
                                      _random_samples=torch.tensor(s))
    cm = cg.nn.FractionalMaxPool2d(2, output_ratio=0.5, return_indices=True,
                                   _random_samples=s)
    assert list(cm.state_dict()) == list(tm.state_dict()) == ["_random_samples"]
    (yt, it), (yc, ic) = tm(torch.tensor(x)), cm(cg.tensor(x))
    np.testing.assert_array_equal(ic.data, it.numpy())
    np.testing.assert_array_equal(yc.data, yt.numpy())
    assert list(cg.nn.FractionalMaxPool3d(2, output_size=2).state_dict()) == []
    from convgrad.nn.modules import pooling
    assert pooling.FractionalMaxPool3d is cg.nn.FractionalMaxPool3d


def test_fractional_max_pool_without_samples_uses_the_seeded_generator():
    x = cg.tensor(np.random.default_rng(2).standard_normal((2, 2, 5, 6, 7)))
    cg.manual_seed(3)
    y1, i1 = cg.nn.functional.fractional_max_pool3d(x, 2, output_size=(3, 3, 4),
                                                    return_indices=True)
    cg.manual_seed(3)
    y2 = cg.nn.FractionalMaxPool3d(2, output_size=(3, 3, 4))(x)
    np.testing.assert_array_equal(y1.data, y2.data)
    assert y1.shape == (2, 2, 3, 3, 4)
    np.testing.assert_array_equal(y1.data, x.data.reshape(2, 2, -1)[
        np.arange(2)[:, None, None], np.arange(2)[None, :, None],
        i1.data.reshape(2, 2, -1)].reshape(y1.shape))


def test_fractional_max_pool_errors():
    x = cg.ones(1, 2, 6, 6)
    F = cg.nn.functional
    with pytest.raises(ValueError, match="output_size or output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(ValueError, match="output_ratio=1.5"):
        F.fractional_max_pool2d(x, 2, output_ratio=1.5)
    with pytest.raises(ValueError, match="too large"):
        F.fractional_max_pool2d(x, 3, output_size=5)
    with pytest.raises(ValueError, match="too large"):
        F.fractional_max_pool3d(cg.ones(1, 1, 4, 4, 4), 2, output_size=3)  # torch: < in 3-d
    with pytest.raises(ValueError, match="_random_samples of shape"):
        F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=np.zeros((1, 2, 3),
                                                                               np.float32))
    with pytest.raises(TypeError, match="_random_samples of dtype"):
        F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match="input of shape"):
        F.fractional_max_pool2d(cg.ones(6, 6), 2, output_size=3)
    with pytest.raises(TypeError, match="kernel_size"):
        cg.nn.FractionalMaxPool2d("a", output_size=3)
    with pytest.raises(ValueError, match="output_size or an output_ratio"):
        cg.nn.FractionalMaxPool3d(2)


def test_fractional_max_pool_ties_pick_the_first_as_torch():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3, (2, 2, 8, 9)).astype(np.float64)
    s = rng.random((2, 2, 2))
    _, it = torch.nn.functional.fractional_max_pool2d(
        torch.tensor(x), 3, output_size=(4, 5), return_indices=True,
        _random_samples=torch.tensor(s))
    _, ic = cg.nn.functional.fractional_max_pool2d(cg.tensor(x), 3, output_size=(4, 5),
                                                   return_indices=True, _random_samples=s)
    np.testing.assert_array_equal(ic.data, it.numpy())


# -- AdaptiveLogSoftmaxWithLoss --------------------------------------------------------


def _ti(v):
    return cg.tensor(v, dtype=cg.int64)


def _asm_pair(dtype=torch.float64, head_bias=True, cutoffs=(3, 7, 12), n_classes=20,
              in_features=16, div_value=2.0):
    torch.manual_seed(0)
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, list(cutoffs),
                                            div_value=div_value, head_bias=head_bias,
                                            dtype=dtype)
    c = cg.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, list(cutoffs),
                                         div_value=div_value, head_bias=head_bias,
                                         dtype=np.float64 if dtype == torch.float64
                                         else np.float32)
    sd = t.state_dict()
    assert list(c.state_dict()) == list(sd)
    c.load_state_dict({k: v.numpy() for k, v in sd.items()})
    return t, c


def _grads(mod):
    return {k: p.grad.numpy() if isinstance(p, torch.Tensor) else p.grad.data
            for k, p in mod.named_parameters()}


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_matches_torch(head_bias):
    t, c = _asm_pair(head_bias=head_bias)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((11, 16))
    y = np.array([0, 2, 3, 5, 7, 11, 12, 19, 1, 15, 6])
    xt = torch.tensor(x, requires_grad=True)
    xc = cg.tensor(x, requires_grad=True)
    ot = t(xt, torch.tensor(y))
    oc = c(xc, _ti(y))
    assert type(oc).__name__ == "_ASMoutput" and oc._fields == ("output", "loss")
    np.testing.assert_allclose(oc.output.data, ot.output.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(oc.loss.data, ot.loss.detach().numpy(), rtol=1e-13)
    r = rng.standard_normal(11)
    ((ot.output * torch.tensor(r)).sum() + ot.loss).backward()
    ((oc.output * cg.tensor(r)).sum() + oc.loss).backward()
    np.testing.assert_allclose(xc.grad.data, xt.grad.numpy(), rtol=1e-11, atol=1e-13)
    gt, gc = _grads(t), _grads(c)
    for k in gt:
        np.testing.assert_allclose(gc[k], gt[k], rtol=1e-11, atol=1e-13)
    lt, lc = t.log_prob(torch.tensor(x)), c.log_prob(cg.tensor(x))
    np.testing.assert_allclose(lc.data, lt.detach().numpy(), rtol=1e-13)
    pt, pc = t.predict(torch.tensor(x)), c.predict(cg.tensor(x))
    np.testing.assert_array_equal(pc.data, pt.numpy())
    assert pc.dtype == np.int64


def test_adaptive_log_softmax_second_order_and_unbatched():
    t, c = _asm_pair(cutoffs=(4,), n_classes=9, in_features=8)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 8))
    y = np.array([0, 5, 8, 3, 4, 7])
    xt = torch.tensor(x, requires_grad=True)
    xc = cg.tensor(x, requires_grad=True)
    gt, = torch.autograd.grad(t(xt, torch.tensor(y)).loss, xt, create_graph=True)
    gc, = cg.autograd.grad(c(xc, _ti(y)).loss, xc, create_graph=True)
    np.testing.assert_allclose(gc.data, gt.detach().numpy(), rtol=1e-11)
    v = rng.standard_normal(x.shape)
    ht, = torch.autograd.grad((gt * torch.tensor(v)).sum(), xt)
    hc, = cg.autograd.grad((gc * cg.tensor(v)).sum(), xc)
    np.testing.assert_allclose(hc.data, ht.numpy(), rtol=1e-10, atol=1e-13)
    ot = t(torch.tensor(x[2]), torch.tensor(8))
    oc = c(cg.tensor(x[2]), _ti(8))
    assert oc.output.shape == tuple(ot.output.shape) == ()
    np.testing.assert_allclose(oc.output.data, ot.output.detach().numpy(), rtol=1e-13)
    with pytest.raises(ValueError, match=r"must be \(N, 8\)"):  # torch too takes 2-d only
        c.log_prob(cg.tensor(x[1]))


def test_adaptive_log_softmax_float32_within_twice_torchs_error():
    t32, c32 = _asm_pair(dtype=torch.float32)
    t64, _ = _asm_pair(dtype=torch.float64)
    t64.load_state_dict({k: v.double() for k, v in t32.state_dict().items()})
    rng = np.random.default_rng(2)
    x = rng.standard_normal((9, 16)).astype(np.float32)
    y = np.array([0, 2, 3, 5, 7, 11, 12, 19, 1])
    ref = t64(torch.tensor(x, dtype=torch.float64), torch.tensor(y)).output.detach().numpy()
    theirs = t32(torch.tensor(x), torch.tensor(y)).output.detach().numpy()
    ours = c32(cg.tensor(x), _ti(y)).output
    assert ours.dtype == np.float32
    assert np.abs(ours.data - ref).max() <= 2 * np.abs(theirs - ref).max() + 1e-7


def test_adaptive_log_softmax_errors():
    A = cg.nn.AdaptiveLogSoftmaxWithLoss
    with pytest.raises(ValueError, match="cutoffs="):
        A(8, 10, [5, 3])
    with pytest.raises(ValueError, match="cutoffs="):
        A(8, 10, [3, 10])
    with pytest.raises(ValueError, match="cutoffs="):
        A(8, 10, [0, 3])
    with pytest.raises(ValueError, match="div_value=-1"):
        A(8, 10, [3], div_value=-1)
    with pytest.raises(ValueError, match="in_features=0"):
        A(0, 10, [3])
    m = A(8, 10, [3])
    x = cg.ones(4, 8)
    with pytest.raises(ValueError, match="target values must be in"):
        m(x, _ti(np.array([0, 1, 10, 2])))
    with pytest.raises(ValueError, match="same batch size"):
        m(x, _ti(np.array([0, 1])))
    with pytest.raises(ValueError, match="1-d target needs a 2-d input"):
        m(cg.ones(8), _ti(np.array([0])))
    with pytest.raises(ValueError, match="multi-target"):
        m(x, _ti(np.zeros((4, 2), np.int64)))
    with pytest.raises(TypeError, match="must be integer"):
        m(x, cg.tensor(np.zeros(4)))
    with pytest.raises(ValueError, match="input of shape"):
        m.log_prob(cg.ones(4, 7))
