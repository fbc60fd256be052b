"""Oracle: torch 2.13 activations and losses (torch.nn.functional, torch.nn) on the same
inputs: values, gradients of every input, second-order gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad import nn

from .torch_agreement import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(9)
DTYPES = [np.float64, np.float32]


def rand(*shape, scale=2.0):
    return RNG.standard_normal(shape) * scale


# ----------------------------------------------------------------------------- activations
ACTIVATIONS = [
    ("gelu", F.gelu, TF.gelu),
    ("gelu tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: TF.gelu(x, approximate="tanh")),
    ("silu", F.silu, TF.silu),
    ("elu", F.elu, TF.elu),
    ("elu alpha=0.3", lambda x: F.elu(x, 0.3), lambda x: TF.elu(x, 0.3)),
    ("softplus", F.softplus, TF.softplus),
    ("softplus beta=2 threshold=3", lambda x: F.softplus(x, 2.0, 3.0),
     lambda x: TF.softplus(x, 2.0, 3.0)),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,ours,theirs", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations_match_torch(name, ours, theirs, dtype):
    x = rand(4, 7, scale=3.0)
    x[0, :3] = (-40.0, 0.0, 40.0)  # far tails and the kink
    check(name, ours, theirs, [x], dtype, double=dtype == np.float64)


def test_activation_modules_and_repr():
    pairs = [(nn.GELU(), torch.nn.GELU()), (nn.GELU("tanh"), torch.nn.GELU("tanh")),
             (nn.SiLU(), torch.nn.SiLU()), (nn.ELU(0.5), torch.nn.ELU(0.5)),
             (nn.Softplus(0.5, 10), torch.nn.Softplus(0.5, 10)),
             (nn.Softmax(1), torch.nn.Softmax(1)), (nn.Softmax(-1), torch.nn.Softmax(-1)),
             (nn.Identity(), torch.nn.Identity())]
    for ours, theirs in pairs:
        check(repr(ours), ours, theirs, [rand(3, 4, 2)], np.float64)
        assert repr(ours) == repr(theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape in [(5,), (3, 4), (2, 3, 4), (2, 3, 4, 2)]:  # torch's implicit dims
            check("Softmax(dim=None)", nn.Softmax(), torch.nn.Softmax(), [rand(*shape)],
                  np.float64)


# ----------------------------------------------------------------------------- losses
def _targets(n, c, *spatial, ignore=None):
    t = RNG.integers(0, c, (n, *spatial))
    if ignore is not None:
        t.flat[::3] = ignore
    return t


CE_CASES = [
    ("plain", (5, 4), {}),
    ("spatial", (2, 4, 3, 2), {}),
    ("weight", (6, 3), dict(weight=True)),
    ("ignore_index", (6, 3), dict(ignore_index=1)),
    ("ignore -100 + weight", (6, 4), dict(ignore=-100, weight=True)),
    ("label_smoothing", (5, 4), dict(label_smoothing=0.1)),
    ("smoothing + weight + ignore", (2, 4, 3), dict(label_smoothing=0.3, weight=True,
                                                    ignore=-100)),
    ("unbatched", (4,), {}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,shape,opts", CE_CASES, ids=[c[0] for c in CE_CASES])
def test_cross_entropy_and_nll_with_class_indices(name, shape, opts, reduction, dtype):
    c = shape[1] if len(shape) > 1 else shape[0]
    if len(shape) == 1:
        t = np.array(RNG.integers(0, c))
    else:
        t = _targets(shape[0], c, *shape[2:], ignore=opts.get("ignore"))
    kw = dict(reduction=reduction)
    if "ignore_index" in opts:
        kw["ignore_index"] = opts["ignore_index"]
    weight = RNG.uniform(0.2, 2.0, c) if opts.get("weight") else None
    ls = opts.get("label_smoothing", 0.0)
    wt = None if weight is None else torch.tensor(weight.astype(dtype))
    tt = torch.tensor(t)
    check(f"cross_entropy {name}",
          lambda x: F.cross_entropy(x, t, weight, label_smoothing=ls, **kw),
          lambda x: TF.cross_entropy(x, tt, wt, label_smoothing=ls, **kw), [rand(*shape)], dtype,
          double=dtype == np.float64)
    check(f"nll_loss {name}", lambda x: F.nll_loss(F.log_softmax(x, min(1, len(shape) - 1)), t,
                                                   weight, **kw),
          lambda x: TF.nll_loss(TF.log_softmax(x, min(1, len(shape) - 1)), tt, wt, **kw),
          [rand(*shape)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ls,weight", [(0.0, False), (0.2, False), (0.1, True)])
def test_cross_entropy_with_probability_targets(ls, weight, reduction, dtype):
    p = np.abs(rand(3, 4, 2))
    p /= p.sum(1, keepdims=True)
    w = RNG.uniform(0.5, 2, 4) if weight else None
    wt = None if w is None else torch.tensor(w.astype(dtype))
    check("cross_entropy probabilities",
          lambda x, p: F.cross_entropy(x, p, w, reduction=reduction, label_smoothing=ls),
          lambda x, p: TF.cross_entropy(x, p, wt, reduction=reduction, label_smoothing=ls),
          [rand(3, 4, 2), p], dtype, double=dtype == np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(reduction, dtype):
    # (torch's second derivative adds 1e-12 to x and 1 - x in its denominators, a relative
    # change of 1e-12 / x: inputs near 0 or 1 would differ from the exact one by > 1e-10)
    x = RNG.uniform(0.05, 0.95, (4, 3))
    t = RNG.uniform(0, 1, (4, 3))
    w = RNG.uniform(0.5, 2, (3,))
    check("binary_cross_entropy", lambda x, t: F.binary_cross_entropy(x, t, reduction=reduction),
          lambda x, t: TF.binary_cross_entropy(x, t, reduction=reduction), [x, t], dtype,
          double=dtype == np.float64)
    check("binary_cross_entropy weight",
          lambda x: F.binary_cross_entropy(x, t, w, reduction=reduction),
          lambda x: TF.binary_cross_entropy(x, torch.tensor(t.astype(dtype)),
                                            torch.tensor(w.astype(dtype)), reduction=reduction),
          [x], dtype)


def test_binary_cross_entropy_clamps_its_logs_at_minus_100():
    x, t = np.array([0.0, 1.0, 0.5]), np.array([1.0, 0.0, 0.0])
    check("binary_cross_entropy edges", lambda x: F.binary_cross_entropy(x, t, reduction="none"),
          lambda x: TF.binary_cross_entropy(x, torch.tensor(t), reduction="none"), [x],
          np.float64, grads=False)
    # at x in {0, 1} the gradient is (x - t) / 1e-12; torch's floor there is 1e-12 rounded
    # through float32 when the output gradient is not all ones, hence the looser tolerance
    v = RNG.standard_normal(3)
    xs = cg.tensor(x, requires_grad=True)
    (g,) = cg.grad((F.binary_cross_entropy(xs, t, reduction="none") * v).sum(), [xs])
    xt = torch.tensor(x, requires_grad=True)
    (gt,) = torch.autograd.grad((TF.binary_cross_entropy(xt, torch.tensor(t), reduction="none")
                                 * torch.tensor(v)).sum(), [xt])
    np.testing.assert_allclose(g.data, gt.numpy(), rtol=1e-8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits(reduction, dtype):
    x = rand(4, 3, scale=4.0)
    x[0] = (-60.0, 0.0, 60.0)  # large logits stay finite
    t = RNG.uniform(0, 1, (4, 3))
    w, pw = RNG.uniform(0.5, 2, (4, 1)), RNG.uniform(0.5, 3, (3,))
    for weight, pos_weight in [(None, None), (w, None), (None, pw), (w, pw)]:
        wt = None if weight is None else torch.tensor(weight.astype(dtype))
        pwt = None if pos_weight is None else torch.tensor(pos_weight.astype(dtype))
        check("binary_cross_entropy_with_logits",
              lambda x, t, weight=weight, pos_weight=pos_weight:
              F.binary_cross_entropy_with_logits(x, t, weight, reduction=reduction,
                                                 pos_weight=pos_weight),
              lambda x, t, wt=wt, pwt=pwt: TF.binary_cross_entropy_with_logits(
                  x, t, wt, reduction=reduction, pos_weight=pwt),
              [x, t], dtype, double=dtype == np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses(reduction, dtype):
    a, b = rand(4, 5), rand(4, 5)
    w = RNG.uniform(0.1, 2, (4, 5))
    wt = torch.tensor(w.astype(dtype))
    cases = [
        ("smooth_l1_loss", lambda x, y: F.smooth_l1_loss(x, y, reduction=reduction),
         lambda x, y: TF.smooth_l1_loss(x, y, reduction=reduction)),
        ("smooth_l1_loss beta=0.5", lambda x, y: F.smooth_l1_loss(x, y, reduction=reduction,
                                                                  beta=0.5),
         lambda x, y: TF.smooth_l1_loss(x, y, reduction=reduction, beta=0.5)),
        ("smooth_l1_loss beta=0", lambda x, y: F.smooth_l1_loss(x, y, reduction=reduction,
                                                                beta=0.0),
         lambda x, y: TF.smooth_l1_loss(x, y, reduction=reduction, beta=0.0)),
        ("huber_loss", lambda x, y: F.huber_loss(x, y, reduction),
         lambda x, y: TF.huber_loss(x, y, reduction)),
        ("huber_loss delta=2 weight", lambda x, y: F.huber_loss(x, y, reduction, 2.0, w),
         lambda x, y: TF.huber_loss(x, y, reduction, 2.0, wt)),
        ("mse_loss weight", lambda x, y: F.mse_loss(x, y, reduction=reduction, weight=w),
         lambda x, y: TF.mse_loss(x, y, reduction=reduction, weight=wt)),
        ("l1_loss weight", lambda x, y: F.l1_loss(x, y, reduction=reduction, weight=w),
         lambda x, y: TF.l1_loss(x, y, reduction=reduction, weight=wt)),
    ]
    for name, ours, theirs in cases:
        check(name, ours, theirs, [a, b], dtype, double=dtype == np.float64)


def test_legacy_size_average_and_reduce():
    a, b = rand(3, 4), rand(3, 4)
    for size_average, reduce in [(False, None), (None, False), (True, True)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check("mse_loss legacy",
                  lambda x, y, s=size_average, r=reduce: F.mse_loss(x, y, s, r),
                  lambda x, y, s=size_average, r=reduce: TF.mse_loss(x, y, s, r), [a, b],
                  np.float64)


def test_loss_modules_and_buffers():
    x, y = rand(4, 3), rand(4, 3)
    t = RNG.integers(0, 3, 4)
    w = RNG.uniform(0.5, 2, 3)
    pw = RNG.uniform(0.5, 2, 3)
    pairs = [
        (nn.MSELoss(), torch.nn.MSELoss(), (x, y)),
        (nn.L1Loss(reduction="sum"), torch.nn.L1Loss(reduction="sum"), (x, y)),
        (nn.SmoothL1Loss(beta=0.3), torch.nn.SmoothL1Loss(beta=0.3), (x, y)),
        (nn.HuberLoss(delta=0.7), torch.nn.HuberLoss(delta=0.7), (x, y)),
        (nn.CrossEntropyLoss(w, label_smoothing=0.1),
         torch.nn.CrossEntropyLoss(torch.tensor(w), label_smoothing=0.1), (x, t)),
        (nn.NLLLoss(w, ignore_index=2), torch.nn.NLLLoss(torch.tensor(w), ignore_index=2),
         (x, t)),
        (nn.BCELoss(), torch.nn.BCELoss(), (1 / (1 + np.exp(-x)), np.abs(np.tanh(y)))),
        (nn.BCEWithLogitsLoss(pos_weight=pw), torch.nn.BCEWithLogitsLoss(
            pos_weight=torch.tensor(pw)), (x, np.abs(np.tanh(y)))),
    ]
    for ours, theirs, (a, b) in pairs:
        if b.dtype.kind == "i":
            check(repr(ours), lambda a, m=ours, b=b: m(a, b),
                  lambda a, m=theirs, b=b: m(a, torch.tensor(b)), [a], np.float64)
        else:
            check(repr(ours), ours, theirs, [a, b], np.float64)
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize("num_classes", [-1, 5])
def test_one_hot(num_classes):
    t = RNG.integers(0, 4, (3, 2))
    ours = F.one_hot(t, num_classes)
    theirs = TF.one_hot(torch.tensor(t), num_classes)
    assert ours.data.dtype == np.int64 and np.array_equal(ours.data, theirs.numpy())
    assert np.array_equal(F.one_hot(cg.tensor([1, 0, 2])).data,
                          TF.one_hot(torch.tensor([1, 0, 2])).numpy())


@pytest.mark.parametrize("call,pattern", [
    (lambda: F.gelu(cg.randn(3), approximate="fast"), "approximate='fast'"),
    (lambda: nn.GELU("erf"), "approximate='erf'"),
    (lambda: F.elu(cg.randn(3), alpha="1"), "alpha='1'"),
    (lambda: F.softplus(cg.randn(3), beta=0), "beta=0"),
    (lambda: F.cross_entropy(cg.randn(2, 3), np.array([0, 3])), r"\[0, 3\)"),
    (lambda: F.cross_entropy(cg.randn(2, 3), np.array([0, 1, 2])), "target shape"),
    (lambda: F.cross_entropy(cg.randn(2, 3), np.array([0.5, 1.0])), "integer class"),
    (lambda: F.cross_entropy(cg.randn(2, 3), np.array([0, 1]), label_smoothing=1.5),
     "label_smoothing=1.5"),
    (lambda: F.cross_entropy(cg.randn(2, 3), np.array([0, 1]), weight=np.ones(2)),
     r"weight of shape \(2,\)"),
    (lambda: F.nll_loss(cg.randn(2, 3), np.array([0, 1]), reduction="avg"), "reduction='avg'"),
    (lambda: F.binary_cross_entropy(cg.tensor([0.5, 1.5]), cg.tensor([0.0, 1.0])),
     r"in \[0, 1\]"),
    (lambda: F.binary_cross_entropy(cg.tensor([0.5, 0.5]), cg.tensor([1.0])), "target shape"),
    (lambda: F.binary_cross_entropy_with_logits(cg.randn(2, 3), cg.randn(2, 3),
                                                pos_weight=np.ones(2)), "pos_weight"),
    (lambda: F.smooth_l1_loss(cg.randn(3), cg.randn(3), beta=-1), "beta=-1"),
    (lambda: F.huber_loss(cg.randn(3), cg.randn(3), delta=0), "delta=0"),
    (lambda: F.mse_loss(cg.randn(3), cg.randn(3), weight=np.ones(2)), "weight of shape"),
    (lambda: F.one_hot(np.array([0, 3]), 3), "num_classes=3"),
    (lambda: F.one_hot(np.array([0, -1])), "non-negative"),
    (lambda: F.one_hot(np.array([0.5])), "integer class"),
])
def test_errors_name_the_argument(call, pattern):
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()


def test_nn_functional_is_the_functional_package():
    assert nn.functional.gelu is F.gelu and nn.functional.interpolate is F.interpolate
    assert set(F.__all__) <= set(dir(nn.functional))
