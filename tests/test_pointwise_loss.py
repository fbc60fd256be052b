"""The pointwise regression losses' own kernels (convgrad.ops.losses, Numba's loops):
MSE, L1, smooth L1 and Huber reduced to a mean or sum against torch in float64 and
within twice torch float32's error, the profiler naming them, a target in another
layout, zeros and NaN as torch differentiates them, double backward, the bits
independent of the thread count, and the composed path where they do not apply."""

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad.ops import jit, layouts, parallel

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="Numba is not installed")
RNG = np.random.default_rng(23)

LOSSES = {  # name -> (ours, torch), each (input, target, reduction)
    "mse": (lambda x, t, r: F.mse_loss(x, t, reduction=r),
            lambda x, t, r: TF.mse_loss(x, t, reduction=r)),
    "l1": (lambda x, t, r: F.l1_loss(x, t, reduction=r),
           lambda x, t, r: TF.l1_loss(x, t, reduction=r)),
    "smooth_l1": (lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.5),
                  lambda x, t, r: TF.smooth_l1_loss(x, t, reduction=r, beta=0.5)),
    "huber": (lambda x, t, r: F.huber_loss(x, t, reduction=r, delta=0.7),
              lambda x, t, r: TF.huber_loss(x, t, reduction=r, delta=0.7)),
}


def _torch(name, x, t, reduction, dtype, g=1.0):
    xt = torch.tensor(np.ascontiguousarray(x), dtype=dtype, requires_grad=True)
    tt = torch.tensor(np.ascontiguousarray(t), dtype=dtype, requires_grad=True)
    loss = LOSSES[name][1](xt, tt, reduction)
    (loss * g).backward()
    return [np.float64(loss.item()), xt.grad.double().numpy(), tt.grad.double().numpy()]


def _ours(name, x, t, reduction, g=1.0):
    xs, ts = cg.tensor(x, requires_grad=True), cg.tensor(t, requires_grad=True)
    with cg.profile() as prof:
        loss = LOSSES[name][0](xs, ts, reduction)
        (loss * g).backward()
    return prof, [np.float64(loss.item()), np.asarray(xs.grad.data, np.float64),
                  np.asarray(ts.grad.data, np.float64)]


def _within_torch(ours, exact, theirs):
    for k, (o, e, t) in enumerate(zip(ours, exact, theirs)):
        scale = np.abs(e).max()
        err, torch_err = np.abs(o - e).max() / scale, np.abs(t - e).max() / scale
        assert err <= 2 * max(torch_err, 2.0 ** -24), (k, err, torch_err)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("name", list(LOSSES))
def test_losses_are_as_accurate_as_torch(name, reduction):
    """A network's channels-last output against an NCHW target (the target copied into
    the output's layout once, for both passes), 1.5 million elements (many blocks), an
    offset so that the sum is large: loss and both gradients within twice torch float32's
    error."""
    shape = (8, 3, 256, 256)
    x = layouts.empty(shape, channels_last=True)
    x[...] = 0.5 + RNG.standard_normal(shape)
    t = RNG.standard_normal(shape).astype(np.float32)
    prof, ours = _ours(name, x, t, reduction, g=0.75)
    assert [(e.name, e.algorithm) for e in prof.of("eltwise")
            if e.name.startswith("pointwise")] == [("pointwise_loss_forward", "numba"),
                                                    ("pointwise_loss_backward", "numba")]
    assert [e.name for e in prof.of("layout")] == ["copy"]  # kept for the backward
    exact = _torch(name, x, t, reduction, torch.float64, 0.75)
    theirs = _torch(name, x, t, reduction, torch.float32, 0.75)
    _within_torch(ours, exact, theirs)


@pytest.mark.parametrize("name", list(LOSSES))
def test_zeros_and_nan_are_differentiated_as_torch(name):
    """Differences of -0, +0, NaN, inside and outside the quadratic zone: torch's loss
    and gradients, signs of zero and NaN included."""
    x = np.array([np.nan, -0.0, 0.0, 0.2, -0.3, 2.0, -5.0, 0.7], np.float32)
    t = np.zeros_like(x)
    _, ours = _ours(name, x, t, "sum")
    theirs = _torch(name, x, t, "sum", torch.float32)
    np.testing.assert_array_equal(np.signbit(ours[1]), np.signbit(theirs[1]))
    for o, e in zip(ours, theirs):
        np.testing.assert_allclose(o, e, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", list(LOSSES))
def test_double_backward_in_float32(name):
    """The create_graph path (Tensor operations): the gradient of a function of the first
    gradient matches torch's (second derivatives of the pointwise losses are 0 or
    constants)."""
    x = RNG.standard_normal((4, 50)).astype(np.float32)
    t = RNG.standard_normal((4, 50)).astype(np.float32)
    v = RNG.standard_normal((4, 50)).astype(np.float32)
    xs = cg.tensor(x, requires_grad=True)
    (gx,) = cg.autograd.grad(LOSSES[name][0](xs, cg.tensor(t), "mean"), [xs],
                             create_graph=True)
    (gx * cg.tensor(v)).sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    (gxt,) = torch.autograd.grad(LOSSES[name][1](xt, torch.tensor(t), "mean"), [xt],
                                 create_graph=True)
    np.testing.assert_allclose(gx.data, gxt.detach().numpy(), rtol=1e-6, atol=1e-9)
    if gxt.requires_grad:
        (gxt * torch.tensor(v)).sum().backward()
        np.testing.assert_allclose(0 if xs.grad is None else xs.grad.data,
                                   xt.grad.numpy(force=True), rtol=1e-6, atol=1e-9)
    else:
        assert xs.grad is None or not np.any(xs.grad.data)


def test_the_sum_does_not_depend_on_the_thread_count(monkeypatch):
    x = RNG.standard_normal((3, 400_000)).astype(np.float32)
    t = RNG.standard_normal((3, 400_000)).astype(np.float32)
    runs = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(parallel, "num_threads", lambda n=threads: n)
        runs.append(_ours("mse", x, t, "mean")[1])
    for one, *others in zip(*runs):
        for other in others:
            np.testing.assert_array_equal(one, other)


@pytest.mark.parametrize("case", ["none", "weight", "broadcast", "float64"])
def test_the_composed_loss_runs_where_the_kernels_do_not(case):
    """reduction="none", an elementwise weight, a broadcast target and float64 take the
    composed operations: no pointwise kernel, torch's values."""
    x = RNG.standard_normal((6, 5)).astype(np.float64 if case == "float64" else np.float32)
    t = RNG.standard_normal((1, 5) if case == "broadcast" else (6, 5)).astype(x.dtype)
    with cg.profile() as prof, pytest.warns(UserWarning) if case == "broadcast" else \
            _nothing():
        if case == "weight":
            w = np.abs(RNG.standard_normal((6, 5))).astype(np.float32)
            ours = F.mse_loss(cg.tensor(x), cg.tensor(t), weight=cg.tensor(w))
            want = float(((x - t) ** 2 * w).sum() / w.sum())
        else:
            ours = F.mse_loss(cg.tensor(x), cg.tensor(t),
                              reduction="none" if case == "none" else "mean")
            want = TF.mse_loss(torch.tensor(x), torch.tensor(t).expand(6, 5),
                               reduction="none" if case == "none" else "mean").numpy()
    assert not [e for e in prof.of("eltwise") if e.name.startswith("pointwise")]
    np.testing.assert_allclose(ours.data, want, rtol=1e-5)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_while_the_loops_load_the_loss_is_composed(monkeypatch):
    """A first call while the warm-up thread still loads the loops (``jit.ready``): the
    composed loss, no wait, torch's value."""
    monkeypatch.setattr(jit, "still_loading", lambda kernel: kernel == "losses")
    x = RNG.standard_normal((6, 50)).astype(np.float32)
    t = RNG.standard_normal((6, 50)).astype(np.float32)
    with cg.profile() as prof:
        loss = F.mse_loss(cg.tensor(x), cg.tensor(t))
    assert not [e for e in prof.of("eltwise") if e.name.startswith("pointwise")]
    np.testing.assert_allclose(loss.item(), TF.mse_loss(torch.tensor(x), torch.tensor(t)).item(),
                               rtol=1e-6)
