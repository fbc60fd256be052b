"""Oracle: torch 2.13 (torch.nn.functional and torch.nn norm layers) with the same weights,
inputs and running statistics: outputs, gradients, running statistics, state dicts."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad import nn

from .torch_agreement import TORCH_DTYPE, agree, check

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(11)
DTYPES = [np.float64, np.float32]


def rand(*shape):
    return RNG.standard_normal(shape) * 1.5 + 0.3


def _randomise(ours: nn.Module) -> None:
    for p in ours.parameters():
        p.data[...] = RNG.standard_normal(p.shape) * 0.5 + 1.0


def _sync(ours: nn.Module, theirs, dtype) -> None:
    ours.to(dtype)
    theirs.to(TORCH_DTYPE[np.dtype(dtype)])
    theirs.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in
                            ours.state_dict().items()})


def _step(name, ours, theirs, x, dtype, seed=0):
    """One forward/backward of both modules: output, input and parameter gradients."""
    xs = cg.tensor(x.astype(dtype), requires_grad=True)
    xt = torch.tensor(x.astype(dtype), requires_grad=True)
    ys, yt = ours(xs), theirs(xt)
    agree(name, ys, yt, dtype)
    v = np.random.default_rng(seed).standard_normal(ys.shape).astype(dtype)
    ours.zero_grad()
    theirs.zero_grad()
    (ys * v).sum().backward()
    (yt * torch.from_numpy(v)).sum().backward()
    agree(name, xs.grad, xt.grad, dtype, "input grad")
    theirs_params = dict(theirs.named_parameters())
    for pname, p in ours.named_parameters():
        agree(name, p.grad, theirs_params[pname].grad, dtype, f"grad of {pname}")


def _same_state(name, ours, theirs, dtype):
    theirs_state = theirs.state_dict()
    ours_state = ours.state_dict()
    assert list(ours_state) == list(theirs_state)
    for k, v in ours_state.items():
        if k == "num_batches_tracked":
            assert v.dtype == np.int64 and int(v) == int(theirs_state[k])
        else:
            agree(name, v, theirs_state[k], dtype, k)


# ----------------------------------------------------------------------------- batch norm
BN_CASES = [
    # (ours, torch, input shape)
    ("BatchNorm1d", dict(), (6, 3)),
    ("BatchNorm1d", dict(momentum=0.3), (4, 3, 5)),
    ("BatchNorm2d", dict(), (3, 4, 5, 3)),
    ("BatchNorm2d", dict(momentum=None), (2, 3, 3, 5)),
    ("BatchNorm2d", dict(affine=False), (2, 3, 4, 4)),
    ("BatchNorm2d", dict(bias=False, eps=1e-3), (2, 3, 4, 4)),
    ("BatchNorm2d", dict(track_running_stats=False), (2, 3, 3, 3)),
    ("BatchNorm3d", dict(), (2, 2, 3, 4, 3)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cls,kwargs,shape", BN_CASES)
def test_batch_norm_modules_train_then_eval(cls, kwargs, shape, dtype):
    c = shape[1]
    ours, theirs = getattr(nn, cls)(c, **kwargs), getattr(torch.nn, cls)(c, **kwargs)
    _randomise(ours)
    _sync(ours, theirs, dtype)
    name = f"{cls}{kwargs}"
    for step in range(3):  # running statistics move with each training step
        _step(name, ours, theirs, rand(*shape) * (step + 1), dtype, seed=step)
        _same_state(name, ours, theirs, dtype)
    ours.eval()
    theirs.eval()
    _step(name + " eval", ours, theirs, rand(*shape), dtype)
    _same_state(name, ours, theirs, dtype)
    assert repr(ours) == repr(theirs)


def test_batch_norm_functional_double_backward_and_running_stats():
    x, w, b = rand(4, 3, 5), rand(3), rand(3)
    for training in (True, False):
        rm, rv = rand(3), np.abs(rand(3)) + 0.5
        rm_t, rv_t = torch.tensor(rm), torch.tensor(rv)
        check(f"batch_norm training={training}",
              lambda x, w, b, rm=rm, rv=rv, tr=training:
              F.batch_norm(x, rm, rv, w, b, tr, 0.2, 1e-4),
              lambda x, w, b, rm=rm_t, rv=rv_t, tr=training:
              TF.batch_norm(x, rm, rv, w, b, tr, 0.2, 1e-4),
              [x, w, b], np.float64, double=True)
        # check calls each side once: in training both moved their statistics once
        agree("batch_norm running_mean", rm, rm_t, np.float64, "running_mean")
        agree("batch_norm running_var", rv, rv_t, np.float64, "running_var")


def test_batch_norm_running_stats_as_tensors_are_updated_in_place():
    rm, rv = cg.zeros(3), cg.ones(3)
    x = rand(5, 3).astype(np.float32)
    F.batch_norm(x, rm, rv, training=True, momentum=0.5)
    xt = torch.tensor(x)
    rm_t, rv_t = torch.zeros(3), torch.ones(3)
    TF.batch_norm(xt, rm_t, rv_t, training=True, momentum=0.5)
    agree("batch_norm running_mean", rm, rm_t, np.float32)
    agree("batch_norm running_var", rv, rv_t, np.float32)


def test_batch_norm_state_dict_round_trip_with_torch():
    theirs = torch.nn.BatchNorm2d(3)
    theirs.train()
    for _ in range(2):
        theirs(torch.randn(4, 3, 2, 2) * 3 + 1)
    ours = nn.BatchNorm2d(3)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert int(np.asarray(ours.num_batches_tracked)) == 2
    assert np.asarray(ours.num_batches_tracked).dtype == np.int64
    ours.eval()
    theirs.eval()
    x = rand(2, 3, 4, 4).astype(np.float32)
    agree("BatchNorm2d loaded", ours(x), theirs(torch.tensor(x)), np.float32)
    assert [k for k, _ in ours.named_buffers()] == ["running_mean", "running_var",
                                                     "num_batches_tracked"]


# ----------------------------------------------------------------------------- instance norm
IN_CASES = [
    # (layer, kwargs, channels, input shape)
    ("InstanceNorm1d", dict(), 2, (3, 2, 7)),
    ("InstanceNorm1d", dict(affine=True), 2, (2, 7)),  # unbatched
    ("InstanceNorm2d", dict(affine=True, track_running_stats=True, momentum=0.4), 3,
     (2, 3, 4, 5)),
    ("InstanceNorm2d", dict(affine=True, bias=False), 3, (3, 4, 5)),
    ("InstanceNorm3d", dict(track_running_stats=True), 2, (2, 2, 3, 2, 4)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cls,kwargs,c,shape", IN_CASES)
def test_instance_norm_modules(cls, kwargs, c, shape, dtype):
    ours, theirs = getattr(nn, cls)(c, **kwargs), getattr(torch.nn, cls)(c, **kwargs)
    _randomise(ours)
    _sync(ours, theirs, dtype)
    name = f"{cls}{kwargs}"
    for step in range(2):
        _step(name, ours, theirs, rand(*shape) * (step + 1), dtype, seed=step)
        _same_state(name, ours, theirs, dtype)
    ours.eval()
    theirs.eval()
    _step(name + " eval", ours, theirs, rand(*shape), dtype)
    assert repr(ours) == repr(theirs)


def test_instance_norm_functional_double_backward():
    check("instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b, eps=1e-3),
          lambda x, w, b: TF.instance_norm(x, weight=w, bias=b, eps=1e-3),
          [rand(2, 3, 6), rand(3), rand(3)], np.float64, double=True)


# ----------------------------------------------------------------------------- group / layer
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("groups,shape,affine", [(1, (2, 4, 3), True), (2, (3, 4, 5, 3), True),
                                                 (4, (2, 4, 3, 2, 2), False),
                                                 (3, (2, 6, 5, 5), True)])
def test_group_norm(groups, shape, affine, dtype):
    c = shape[1]
    ours, theirs = nn.GroupNorm(groups, c, affine=affine), torch.nn.GroupNorm(groups, c,
                                                                             affine=affine)
    _randomise(ours)
    _sync(ours, theirs, dtype)
    _step(f"GroupNorm({groups}, {c})", ours, theirs, rand(*shape), dtype)
    assert repr(ours) == repr(theirs)


def test_group_norm_functional_double_backward():
    check("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b),
          lambda x, w, b: TF.group_norm(x, 2, w, b),
          [rand(2, 4, 3, 3), rand(4), rand(4)], np.float64, double=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("normalized,shape,kwargs", [
    (5, (3, 5), {}), ((4, 5), (2, 3, 4, 5), {}), ([3], (2, 7, 3), dict(bias=False)),
    ((2, 3), (4, 2, 3), dict(elementwise_affine=False, eps=1e-2))])
def test_layer_norm(normalized, shape, kwargs, dtype):
    ours, theirs = nn.LayerNorm(normalized, **kwargs), torch.nn.LayerNorm(normalized, **kwargs)
    _randomise(ours)
    _sync(ours, theirs, dtype)
    _step(f"LayerNorm({normalized})", ours, theirs, rand(*shape), dtype)
    assert repr(ours) == repr(theirs)


def test_layer_norm_functional_double_backward():
    check("layer_norm", lambda x, w, b: F.layer_norm(x, (3, 4), w, b),
          lambda x, w, b: TF.layer_norm(x, (3, 4), w, b),
          [rand(2, 3, 4), rand(3, 4), rand(3, 4)], np.float64, double=True)


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("call,exc,pattern", [
    (lambda: nn.BatchNorm2d(3)(cg.randn(2, 4, 3, 3)), ValueError, "num_features=3"),
    (lambda: nn.BatchNorm2d(3)(cg.randn(2, 3, 3)), ValueError, r"\(N, C, H, W\)"),
    (lambda: nn.BatchNorm1d(3)(cg.randn(1, 3)), ValueError, "more than 1 value per channel"),
    (lambda: nn.BatchNorm2d(0), ValueError, "num_features=0"),
    (lambda: nn.BatchNorm2d(3, momentum=2), ValueError, "momentum=2"),
    (lambda: nn.GroupNorm(3, 4), ValueError, "num_groups=3 must divide num_channels=4"),
    (lambda: F.group_norm(cg.randn(2, 4, 3), 3), ValueError, "num_groups=3 must divide"),
    (lambda: nn.GroupNorm(2, 4)(cg.randn(2, 6, 3)), ValueError, "num_channels=4"),
    (lambda: F.layer_norm(cg.randn(2, 4, 3), (4,)), ValueError, r"normalized_shape=\(4,\)"),
    (lambda: nn.LayerNorm(0), ValueError, "normalized_shape=0"),
    (lambda: nn.InstanceNorm2d(3, affine=True)(cg.randn(2, 4, 3, 3)), ValueError,
     "num_features=3"),
    (lambda: F.instance_norm(cg.randn(2, 3, 1)), ValueError, "more than 1 spatial element"),
    (lambda: F.batch_norm(cg.randn(4, 3), np.zeros(4), np.ones(4), training=True), ValueError,
     r"running_mean of shape \(4,\)"),
    (lambda: F.batch_norm(cg.randn(4, 3), None, None), ValueError, "training=False"),
    (lambda: F.batch_norm(cg.randn(4, 3), None, None, weight=np.ones(2), training=True),
     ValueError, r"weight of shape \(2,\)"),
])
def test_errors_name_the_argument(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_instance_norm_warns_on_channel_mismatch_without_affine():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.InstanceNorm1d(3)(cg.randn(2, 4, 5))
    assert any("num_features=3" in str(w.message) for w in caught)


def test_buffers_follow_the_module_and_persistence():
    m = nn.Sequential(nn.BatchNorm1d(2))
    m[0].register_buffer("scratch", np.zeros(2, np.float32), persistent=False)
    assert "0.scratch" not in m.state_dict()
    assert "0.running_mean" in m.state_dict()
    assert [k for k, _ in m.named_buffers()] == ["0.running_mean", "0.running_var",
                                                  "0.num_batches_tracked", "0.scratch"]
    m.double()
    assert m[0].running_mean.dtype == np.float64 and m[0].scratch.dtype == np.float64
    assert np.asarray(m[0].num_batches_tracked).dtype == np.int64
    with pytest.raises(ValueError, match="running_var"):
        m.load_state_dict({k: v[:1] if k.endswith("running_var") else v
                           for k, v in m.state_dict().items()})
