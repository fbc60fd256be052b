"""Oracle: torch.nn.utils (torch 2.13) on the same weights and inputs: parametrize
(register/remove/cached/right_inverse), parametrizations.weight_norm and spectral_norm,
the hook-style weight_norm/spectral_norm, batch-norm fusion, functional_call and the
small helpers.  Outputs and parameter gradients are compared over a few SGD steps; the
power iteration starts from torch's own u/v (copied in through torch's state dict)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import convgrad as cg  # noqa: E402
from convgrad import nn  # noqa: E402
from convgrad.nn.utils import parametrizations as PZ  # noqa: E402
from convgrad.nn.utils import parametrize as P  # noqa: E402

TP = torch.nn.utils.parametrize
TPZ = torch.nn.utils.parametrizations
RNG = np.random.default_rng(5)
TOL64 = dict(rtol=1e-11, atol=1e-13)


def _state(tm):
    return {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}


def _load(cm, tm):
    cm.load_state_dict(_state(tm))


def _compare_steps(cm, tm, shape, steps=3, lr=0.1, tol=TOL64, dtype=np.float64):
    """Forward, backward of a random weighting, compare, SGD step; ``steps`` times."""
    for _ in range(steps):
        x = RNG.standard_normal(shape).astype(dtype)
        yt, yc = tm(torch.tensor(x)), cm(cg.tensor(x))
        np.testing.assert_allclose(yc.numpy(), yt.detach().numpy(), **tol)
        w = RNG.standard_normal(tuple(yt.shape)).astype(dtype)
        (yt * torch.tensor(w)).sum().backward()
        (yc * cg.tensor(w)).sum().backward()
        tp, cp = dict(tm.named_parameters()), dict(cm.named_parameters())
        assert list(tp) == list(cp)
        for k in tp:
            np.testing.assert_allclose(cp[k].grad.numpy(), tp[k].grad.numpy(), **tol,
                                       err_msg=k)
        with torch.no_grad():
            for p in tp.values():
                p -= lr * p.grad
                p.grad = None
        for p in cp.values():
            p.data -= lr * p.grad.data
            p.grad = None
        ts, cs = tm.state_dict(), cm.state_dict()
        assert list(ts) == list(cs)
        for k in ts:
            np.testing.assert_allclose(cs[k], ts[k].detach().numpy(), **tol, err_msg=k)


def _pair(make_t, make_c):
    tm, cm = make_t().double(), make_c().double()
    _load(cm, tm)
    return tm, cm


# ---- parametrize -------------------------------------------------------------------------

class TSym(torch.nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)


class CSym(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)


class CFlat(nn.Module):
    def forward(self, x):
        return x.reshape(-1)


class TDouble(torch.nn.Module):
    def forward(self, x):
        return 2 * x

    def right_inverse(self, x):
        return x / 2


class CDouble(nn.Module):
    def forward(self, x):
        return 2 * x

    def right_inverse(self, x):
        return x / 2


def test_register_parametrization_trains_as_torch():
    tm, cm = _pair(lambda: torch.nn.Linear(4, 4), lambda: nn.Linear(4, 4))
    TP.register_parametrization(tm, "weight", TSym())
    P.register_parametrization(cm, "weight", CSym())
    assert type(cm).__name__ == "ParametrizedLinear"
    assert isinstance(cm, nn.Linear)
    assert P.type_before_parametrizations(cm) is nn.Linear
    assert P.is_parametrized(cm) and P.is_parametrized(cm, "weight")
    assert not P.is_parametrized(cm, "bias") and not P.is_parametrized(nn.Linear(2, 2))
    assert list(cm.state_dict()) == list(tm.state_dict()) == [
        "bias", "parametrizations.weight.original"]
    np.testing.assert_allclose(cm.weight.numpy(), tm.weight.detach().numpy(), **TOL64)
    _compare_steps(cm, tm, (3, 4))


def test_right_inverse_chain_and_assignment():
    tm, cm = _pair(lambda: torch.nn.Linear(3, 4), lambda: nn.Linear(3, 4))
    for _ in range(2):  # the second one's right_inverse is not applied on registration
        TP.register_parametrization(tm, "weight", TDouble())
        P.register_parametrization(cm, "weight", CDouble())
    for name in ("weight", "parametrizations.weight.original"):
        t = tm.get_parameter(name) if "." in name else tm.weight
        c = cm.parametrizations.weight.original if "." in name else cm.weight
        np.testing.assert_allclose(c.numpy(), t.detach().numpy(), **TOL64)
    x = RNG.standard_normal((4, 3))
    tm.weight = torch.tensor(x)
    original = cm.parametrizations.weight.original
    cm.weight = cg.tensor(x)
    assert cm.parametrizations.weight.original is original  # stored in place
    np.testing.assert_allclose(original.numpy(),
                               tm.parametrizations.weight.original.detach().numpy(), **TOL64)
    np.testing.assert_allclose(cm.weight.numpy(), x, **TOL64)
    _compare_steps(cm, tm, (2, 3))


def test_load_torch_state_dict_and_remove():
    tm = torch.nn.Linear(3, 4).double()
    TP.register_parametrization(tm, "weight", TDouble())
    cm = nn.Linear(3, 4).double()
    P.register_parametrization(cm, "weight", CDouble())
    _load(cm, tm)
    np.testing.assert_allclose(cm.weight.numpy(), tm.weight.detach().numpy(), **TOL64)
    original = cm.parametrizations.weight.original
    P.remove_parametrizations(cm, "weight")
    TP.remove_parametrizations(tm, "weight")
    assert type(cm) is nn.Linear and not hasattr(cm, "parametrizations")
    assert cm.weight is original  # the same Parameter, now holding the parametrized value
    np.testing.assert_allclose(cm.weight.numpy(), tm.weight.detach().numpy(), **TOL64)
    assert list(cm.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    # leave_parametrized=False: the original comes back
    P.register_parametrization(cm, "weight", CDouble())
    before = cm.parametrizations.weight.original.numpy().copy()
    P.remove_parametrizations(cm, "weight", leave_parametrized=False)
    np.testing.assert_array_equal(cm.weight.numpy(), before)


def test_parametrize_buffer_and_cached():
    tm, cm = torch.nn.BatchNorm1d(3).double(), nn.BatchNorm1d(3).double()
    TP.register_parametrization(tm, "running_var", TDouble())
    P.register_parametrization(cm, "running_var", CDouble())
    assert list(cm.state_dict()) == list(tm.state_dict())
    _load(cm, tm)
    np.testing.assert_allclose(cm.running_var.numpy(), tm.running_var.numpy())
    lin = nn.Linear(2, 2)
    P.register_parametrization(lin, "weight", CSym())
    with P.cached():
        a, b = lin.weight, lin.weight
        assert a is b
    assert lin.weight is not lin.weight


def test_parametrize_errors():
    lin = nn.Linear(3, 4)
    with pytest.raises(ValueError, match="no parameter, buffer or parametrized element "
                                         "named 'foo'"):
        P.register_parametrization(lin, "foo", CSym())
    with pytest.raises(TypeError, match="parametrization must be a Module"):
        P.register_parametrization(lin, "weight", lambda x: x)
    with pytest.raises(ValueError, match=r"changes 'weight' from shape \(4, 3\) and dtype "
                                         r"float32 to shape \(12,\)"):
        P.register_parametrization(lin, "weight", CFlat())
    assert type(lin) is nn.Linear and isinstance(lin.weight, nn.Parameter)
    with pytest.raises(ValueError, match="has no parametrization on 'bias'"):
        P.remove_parametrizations(lin, "bias")
    PZ.weight_norm(lin)
    with pytest.raises(ValueError, match="sequence of tensors"):
        P.remove_parametrizations(lin, "weight", leave_parametrized=False)
    P.register_parametrization(lin, "bias", CSym(), unsafe=True)  # (a 1-D triu is itself)
    sq = nn.Linear(3, 3)
    P.register_parametrization(sq, "weight", CSym())
    with pytest.raises(RuntimeError, match="CSym does not implement right_inverse"):
        sq.weight = cg.zeros(3, 3)


# ---- parametrizations.weight_norm / spectral_norm ---------------------------------------

@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_parametrization(dim):
    tm, cm = _pair(lambda: torch.nn.Conv2d(3, 4, 3), lambda: nn.Conv2d(3, 4, 3))
    TPZ.weight_norm(tm, dim=dim)
    PZ.weight_norm(cm, dim=dim)
    assert list(cm.state_dict()) == list(tm.state_dict())
    g = cm.parametrizations.weight.original0
    assert g.shape == tuple(tm.parametrizations.weight.original0.shape)
    _compare_steps(cm, tm, (2, 3, 5, 5))
    TP.remove_parametrizations(tm, "weight")
    P.remove_parametrizations(cm, "weight")
    assert list(cm.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(cm.weight.numpy(), tm.weight.detach().numpy(), **TOL64)


def test_weight_norm_loads_torch_state_and_second_order():
    """Second order against torch's composite formula: torch's fused ``_weight_norm``
    (what its parametrization calls) fails ``gradgradcheck`` in torch 2.13."""
    tm = TPZ.weight_norm(torch.nn.Linear(3, 4).double())
    cm = PZ.weight_norm(nn.Linear(3, 4).double())
    _load(cm, tm)
    x = RNG.standard_normal((5, 3))
    pl = tm.parametrizations.weight
    g = pl.original0.detach().clone().requires_grad_()
    v = pl.original1.detach().clone().requires_grad_()
    weight = v * (g / v.norm(dim=(1,), keepdim=True))
    yt = torch.tensor(x) @ weight.T + tm.bias.detach()
    np.testing.assert_allclose(cm(cg.tensor(x)).numpy(), yt.detach().numpy(), **TOL64)
    gt = torch.autograd.grad((yt ** 2).sum(), v, create_graph=True)[0]
    gc = cg.grad((cm(cg.tensor(x)) ** 2).sum(), cm.parametrizations.weight.original1,
                 create_graph=True)[0]
    np.testing.assert_allclose(gc.numpy(), gt.detach().numpy(), **TOL64)
    w = RNG.standard_normal((4, 3))
    (gt * torch.tensor(w)).sum().backward()
    (gc * cg.tensor(w)).sum().backward()
    for k, t in (("original0", g), ("original1", v)):
        np.testing.assert_allclose(getattr(cm.parametrizations.weight, k).grad.numpy(),
                                   t.grad.numpy(), **TOL64)


def test_weight_norm_float32_within_twice_torchs_error():
    x = RNG.standard_normal((6, 5)).astype(np.float32)
    w0 = RNG.standard_normal((4, 5)).astype(np.float32)
    found = []
    for lib, dt in ((torch, torch.float64), (torch, torch.float32), (cg, cg.float32)):
        m = (torch.nn.Linear(5, 4, bias=False) if lib is torch
             else nn.Linear(5, 4, bias=False)).to(dt)
        if lib is torch:
            with torch.no_grad():
                m.weight.copy_(torch.tensor(w0))
            TPZ.weight_norm(m)
        else:
            m.weight.data[...] = w0
            PZ.weight_norm(m)
        y = m(lib.tensor(x.astype(np.float64 if dt == torch.float64 else np.float32)))
        y.sum().backward()
        pl = m.parametrizations.weight
        found.append([np.asarray(a, np.float64) for a in (
            y.detach().numpy(), pl.original0.grad.numpy(), pl.original1.grad.numpy())])
    exact, theirs, ours = found
    for e, t, o in zip(exact, theirs, ours):
        s = np.linalg.norm(e)
        assert np.linalg.norm(o - e) / s <= 2 * max(np.linalg.norm(t - e) / s, 2.0 ** -24)


@pytest.mark.parametrize("case", ["linear", "conv", "convT", "conv_dim2"])
def test_spectral_norm_parametrization(case):
    make = {"linear": (lambda: torch.nn.Linear(5, 4), lambda: nn.Linear(5, 4), (3, 5), {}),
            "conv": (lambda: torch.nn.Conv2d(3, 4, 3), lambda: nn.Conv2d(3, 4, 3),
                     (2, 3, 5, 5), {}),
            "convT": (lambda: torch.nn.ConvTranspose2d(3, 4, 2),
                      lambda: nn.ConvTranspose2d(3, 4, 2), (2, 3, 4, 4), {}),
            "conv_dim2": (lambda: torch.nn.Conv2d(3, 4, 3), lambda: nn.Conv2d(3, 4, 3),
                          (2, 3, 5, 5), {"dim": 2, "n_power_iterations": 2})}[case]
    tm, cm = _pair(make[0], make[1])
    TPZ.spectral_norm(tm, **make[3])
    PZ.spectral_norm(cm, **make[3])
    assert list(cm.state_dict()) == list(tm.state_dict())
    assert "parametrizations.weight.0._u" in cm.state_dict()
    _load(cm, tm)  # torch's u and v
    _compare_steps(cm, tm, make[2])
    tm.eval()
    cm.eval()
    u = cm.parametrizations.weight[0]._u.copy()
    _compare_steps(cm, tm, make[2], steps=2)
    np.testing.assert_array_equal(cm.parametrizations.weight[0]._u, u)  # eval: no update


def test_spectral_norm_1d_and_errors():
    tm = TPZ.spectral_norm(torch.nn.Linear(3, 4).double(), name="bias")
    cm = PZ.spectral_norm(nn.Linear(3, 4).double(), name="bias")
    _load(cm, tm)
    _compare_steps(cm, tm, (2, 3))
    lin = nn.Linear(3, 4)
    with pytest.raises(ValueError, match="n_power_iterations=0 must be positive"):
        PZ.spectral_norm(lin, n_power_iterations=0)
    with pytest.raises(ValueError, match="no parameter or buffer named 'foo'"):
        PZ.spectral_norm(lin, name="foo")
    with pytest.raises(ValueError, match="dim=2 is out of range"):
        PZ.spectral_norm(lin, dim=2)
    with pytest.raises(ValueError, match="dim=3 is out of range for a 2-d weight"):
        PZ.weight_norm(lin, dim=3)
    with pytest.raises(ValueError, match="eps=-1.0 must be a positive number"):
        PZ.spectral_norm(lin, eps=-1.0)


# ---- hook-style weight_norm / spectral_norm ---------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, None])
def test_hook_weight_norm(dim):
    tm, cm = _pair(lambda: torch.nn.Conv2d(3, 4, 3), lambda: nn.Conv2d(3, 4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.nn.utils.weight_norm(tm, dim=dim)
    nn.utils.weight_norm(cm, dim=dim)
    assert list(cm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in cm.named_parameters()] == ["bias", "weight_g", "weight_v"]
    _compare_steps(cm, tm, (2, 3, 5, 5))
    np.testing.assert_allclose(cm.weight.numpy(), tm.weight.detach().numpy(), **TOL64)
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        nn.utils.weight_norm(cm, dim=dim)
    torch.nn.utils.remove_weight_norm(tm)
    nn.utils.remove_weight_norm(cm)
    assert list(cm.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(cm.weight.numpy(), tm.weight.detach().numpy(), **TOL64)
    _compare_steps(cm, tm, (2, 3, 5, 5), steps=1)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in Conv2d"):
        nn.utils.remove_weight_norm(cm)


@pytest.mark.parametrize("case", ["linear", "convT"])
def test_hook_spectral_norm(case):
    if case == "linear":
        tm, cm = _pair(lambda: torch.nn.Linear(5, 4), lambda: nn.Linear(5, 4))
        shape = (3, 5)
    else:
        tm, cm = _pair(lambda: torch.nn.ConvTranspose2d(3, 4, 2),
                       lambda: nn.ConvTranspose2d(3, 4, 2))
        shape = (2, 3, 4, 4)
    torch.nn.utils.spectral_norm(tm, n_power_iterations=2)
    nn.utils.spectral_norm(cm, n_power_iterations=2)
    assert list(cm.state_dict()) == list(tm.state_dict()) == [
        "bias", "weight_orig", "weight_u", "weight_v"]
    assert [n for n, _ in cm.named_parameters()] == ["bias", "weight_orig"]
    assert cm.weight_u.shape == tuple(tm.weight_u.shape)
    _load(cm, tm)  # torch's u and v
    _compare_steps(cm, tm, shape)
    tm.eval()
    cm.eval()
    _compare_steps(cm, tm, shape, steps=2)
    with pytest.raises(RuntimeError, match="two spectral_norm hooks"):
        nn.utils.spectral_norm(cm)
    torch.nn.utils.remove_spectral_norm(tm)
    nn.utils.remove_spectral_norm(cm)
    assert list(cm.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(cm.weight.numpy(), tm.weight.detach().numpy(), **TOL64)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(cm)
    with pytest.raises(ValueError, match="no parameter named 'foo'"):
        nn.utils.spectral_norm(cm, name="foo")
    with pytest.raises(ValueError, match="n_power_iterations=-1 must be positive"):
        nn.utils.spectral_norm(cm, n_power_iterations=-1)


# ---- fusion --------------------------------------------------------------------------------

def _bn_pair(tbn, cbn):
    tbn.double()
    cbn.double()
    n = tbn.num_features
    with torch.no_grad():
        for t in (tbn.weight, tbn.bias, tbn.running_mean):
            t.copy_(torch.tensor(RNG.standard_normal(n)))
        tbn.running_var.copy_(torch.tensor(RNG.uniform(0.5, 2.0, n)))
    _load(cbn, tbn)
    tbn.eval()
    cbn.eval()


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval(transpose):
    if transpose:
        tc, cc = _pair(lambda: torch.nn.ConvTranspose2d(3, 4, 2),
                       lambda: nn.ConvTranspose2d(3, 4, 2))
    else:
        tc, cc = _pair(lambda: torch.nn.Conv2d(3, 4, 3), lambda: nn.Conv2d(3, 4, 3))
    tbn, cbn = torch.nn.BatchNorm2d(4), nn.BatchNorm2d(4)
    _bn_pair(tbn, cbn)
    tc.eval()
    cc.eval()
    tf = torch.nn.utils.fuse_conv_bn_eval(tc, tbn, transpose=transpose)
    cf = nn.utils.fuse_conv_bn_eval(cc, cbn, transpose=transpose)
    assert cf is not cc and isinstance(cf.weight, nn.Parameter)
    x = RNG.standard_normal((2, 3, 5, 5))
    np.testing.assert_allclose(cf(cg.tensor(x)).numpy(), tf(torch.tensor(x)).detach().numpy(),
                               **TOL64)
    np.testing.assert_allclose(cf.weight.numpy(), tf.weight.detach().numpy(), **TOL64)
    cc.train()
    with pytest.raises(ValueError, match="eval mode only"):
        nn.utils.fuse_conv_bn_eval(cc, cbn)
    w, b = nn.utils.fuse_conv_bn_weights(cc.weight, None, cbn.running_mean, cbn.running_var,
                                         1e-5, None, None, transpose)
    tw, tb = torch.nn.utils.fuse_conv_bn_weights(
        tc.weight, None, tbn.running_mean, tbn.running_var, 1e-5, None, None, transpose)
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), **TOL64)
    np.testing.assert_allclose(b.numpy(), tb.detach().numpy(), **TOL64)


def test_fuse_linear_bn_eval():
    tl, cl = _pair(lambda: torch.nn.Linear(3, 4), lambda: nn.Linear(3, 4))
    tbn, cbn = torch.nn.BatchNorm1d(4), nn.BatchNorm1d(4)
    _bn_pair(tbn, cbn)
    tl.eval()
    cl.eval()
    tf, cf = torch.nn.utils.fuse_linear_bn_eval(tl, tbn), nn.utils.fuse_linear_bn_eval(cl, cbn)
    x = RNG.standard_normal((5, 3))
    np.testing.assert_allclose(cf(cg.tensor(x)).numpy(), tf(torch.tensor(x)).detach().numpy(),
                               **TOL64)
    with pytest.raises(ValueError, match="linear.out_features=4 must equal bn.num_features=3"):
        nn.utils.fuse_linear_bn_eval(cl, nn.BatchNorm1d(3).eval())


# ---- functional_call and the small helpers -------------------------------------------------

def test_functional_call():
    tm, cm = _pair(lambda: torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                                               torch.nn.Linear(4, 2)),
                   lambda: nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)))
    new = {k: RNG.standard_normal(v.shape) for k, v in tm.state_dict().items()
           if k.startswith("0.")}
    tvals = {k: torch.tensor(v, requires_grad=True) for k, v in new.items()}
    cvals = {k: cg.tensor(v, requires_grad=True) for k, v in new.items()}
    x = RNG.standard_normal((5, 3))
    yt = torch.func.functional_call(tm, tvals, (torch.tensor(x),))
    yc = cg.func.functional_call(cm, cvals, cg.tensor(x))
    np.testing.assert_allclose(yc.numpy(), yt.detach().numpy(), **TOL64)
    w = RNG.standard_normal((5, 2))
    (yt * torch.tensor(w)).sum().backward()
    (yc * cg.tensor(w)).sum().backward()
    for k in new:
        np.testing.assert_allclose(cvals[k].grad.numpy(), tvals[k].grad.numpy(), **TOL64)
    assert cm[0].weight.grad is None and cm[2].weight.grad is not None
    # the module's own tensors are back
    np.testing.assert_allclose(cm(cg.tensor(x)).numpy(), tm(torch.tensor(x)).detach().numpy(),
                               **TOL64)
    y2 = nn.utils.stateless.functional_call(cm, cvals, args=(cg.tensor(x),))
    np.testing.assert_allclose(y2.numpy(), yc.numpy())
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        cg.func.functional_call(cm, (cvals, cvals), (cg.tensor(x),))
    with pytest.raises(ValueError, match="missing key\\(s\\): '2.bias', '2.weight'"):
        cg.func.functional_call(cm, cvals, (cg.tensor(x),), strict=True)


def test_functional_call_tied_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3, bias=False)
            self.b = nn.Linear(3, 3, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied().double()
    w = cg.tensor(RNG.standard_normal((3, 3)))
    x = cg.tensor(RNG.standard_normal((2, 3)))
    expect = x @ w.T @ w.T
    got = cg.func.functional_call(m, {"a.weight": w}, (x,))
    np.testing.assert_allclose(got.numpy(), expect.numpy(), rtol=1e-12)
    untied = cg.func.functional_call(m, {"a.weight": w}, (x,), tie_weights=False)
    np.testing.assert_allclose(untied.numpy(), (x @ w.T @ m.a.weight.T).numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="tied weights"):
        cg.func.functional_call(m, {"a.weight": w, "b.weight": w * 1}, (x,))


def test_small_helpers():
    p = nn.Parameter(np.ones(3))
    p.grad = cg.tensor(np.full(3, 4.0))
    with pytest.warns(FutureWarning, match="deprecated in favor of"):
        total = nn.utils.clip_grad_norm([p], 1.0)
    np.testing.assert_allclose(float(total), np.sqrt(48.0))
    np.testing.assert_allclose(np.linalg.norm(p.grad.numpy()), 1.0, rtol=1e-5)
    seq = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Conv3d(3, 2, 2))
    assert nn.utils.convert_conv2d_weight_memory_format(seq, cg.channels_last) is seq
    t = torch.nn.Conv2d(2, 3, 3).to(memory_format=torch.channels_last)
    assert seq[0].weight.data.strides == tuple(4 * s for s in t.weight.stride())
    assert seq[1].weight.data.flags.c_contiguous
    nn.utils.convert_conv3d_weight_memory_format(seq, cg.channels_last_3d)
    assert not seq[1].weight.data.flags.c_contiguous
    with pytest.raises(RuntimeError, match="rank 5"):  # (torch's error and type)
        nn.utils.convert_conv2d_weight_memory_format(seq, cg.channels_last_3d)
    lin = nn.utils.skip_init(nn.Linear, 3, 4)
    assert isinstance(lin, nn.Linear) and lin.weight.shape == (4, 3)
    with pytest.raises(TypeError, match="module_cls must be a Module subclass"):
        nn.utils.skip_init(len, 3)


# ---- parametrizations.orthogonal -----------------------------------------------------------

@pytest.mark.parametrize("shape,kw", [
    ((4, 4), {}), ((5, 3), {}), ((3, 5), {}), ((4, 4), {"orthogonal_map": "cayley"}),
    ((3, 5), {"orthogonal_map": "matrix_exp"}), ((5, 3), {"orthogonal_map": "cayley"}),
    ((4, 4), {"orthogonal_map": "householder"}), ((4, 4), {"use_trivialization": False}),
    ((5, 3), {"orthogonal_map": "householder", "use_trivialization": False}),
    ((3, 5), {"orthogonal_map": "householder", "use_trivialization": False})])
def test_orthogonal(shape, kw):
    tm, cm = _pair(lambda: torch.nn.Linear(shape[1], shape[0]),
                   lambda: nn.Linear(shape[1], shape[0]))
    TPZ.orthogonal(tm, **kw)
    PZ.orthogonal(cm, **kw)
    assert list(cm.state_dict()) == list(tm.state_dict())
    if shape[0] == shape[1] or not kw.get("use_trivialization", True):  # nothing random
        np.testing.assert_allclose(cm.weight.numpy(), tm.weight.detach().numpy(), **TOL64)
    _load(cm, tm)  # (a rectangular base is completed at random: torch's)
    _compare_steps(cm, tm, (2, shape[1]))
    w = cm.weight.numpy()
    small = w @ w.T if shape[0] <= shape[1] else w.T @ w
    np.testing.assert_allclose(small, np.eye(min(shape)), atol=1e-12)


def test_orthogonal_assignment_and_errors():
    cm = PZ.orthogonal(nn.Linear(4, 4).double())
    q = np.linalg.qr(RNG.standard_normal((4, 4)))[0]
    cm.weight = cg.tensor(q)
    np.testing.assert_allclose(cm.weight.numpy(), q, atol=1e-13)
    with pytest.raises(ValueError, match=r"expected a matrix \(or batch\) of shape \(4, 4\)"):
        cm.weight = cg.zeros(4, 3, dtype=cg.float64)
    lin = PZ.orthogonal(nn.Linear(4, 4), use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=True"):
        lin.weight = cg.zeros(4, 4)
    with pytest.raises(ValueError, match="expected a matrix or a batch of matrices, got a 1-d"):
        PZ.orthogonal(nn.Linear(4, 4), name="bias")
    with pytest.raises(ValueError, match="orthogonal_map='qr'"):
        PZ.orthogonal(nn.Linear(4, 4), orthogonal_map="qr")


def test_orthogonal_householder_of_triangular_weight():
    """Reflectors that are the identity (LAPACK's tau = 0) flip the sign on the diagonal."""
    tm, cm = _pair(lambda: torch.nn.Linear(3, 4), lambda: nn.Linear(3, 4))
    w = np.triu(RNG.uniform(0.5, 1.5, (4, 3)))
    w[1, 1] = -w[1, 1]
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w))
    cm.weight.data[...] = w
    TPZ.orthogonal(tm, orthogonal_map="householder", use_trivialization=False)
    PZ.orthogonal(cm, orthogonal_map="householder", use_trivialization=False)
    np.testing.assert_allclose(cm.parametrizations.weight.original.numpy(),
                               tm.parametrizations.weight.original.detach().numpy(), **TOL64)
    np.testing.assert_allclose(cm.weight.numpy(), tm.weight.detach().numpy(), **TOL64)
