"""The ``norm`` kernel family (BatchNorm training on Numba's loops, oneDNN, the NumPy
chunked passes or the NumPy reference); oracle: torch (float64 for values and gradients,
its modules for running statistics)."""

from contextlib import nullcontext

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import convgrad as cg
import convgrad.functional as F
from convgrad import nn
from convgrad.functional.normalization import batch_norm_relu
from convgrad.ops import jit, layouts, onednn, prefer

needs_onednn = pytest.mark.skipif(not onednn.available(), reason="oneDNN unavailable")
#: the statistics and the backward by default: Numba's loops where it is installed
SUMS = "numba" if jit.enabled() else "chunked"


def _default_forward(algorithm: str) -> bool:
    """``algorithm`` is the forward's default: Numba's loops, else oneDNN's."""
    return algorithm == "numba" if jit.enabled() else algorithm.startswith("onednn:")
RNG = np.random.default_rng(7)


def _input(shape, channels_last, dtype=np.float32):
    x = layouts.empty(shape, channels_last, dtype)
    x[...] = 3 + 2 * RNG.standard_normal(shape)
    return x


def _torch_bn(x, w, b, g, relu=False, create_graph=False):
    xt, wt, bt = (None if a is None else torch.tensor(np.asarray(a), dtype=torch.float64,
                                                      requires_grad=True) for a in (x, w, b))
    y = TF.batch_norm(xt, None, None, wt, bt, training=True)
    if relu:
        y = torch.relu(y)
    grads = torch.autograd.grad(y, [t for t in (xt, wt, bt) if t is not None],
                                torch.tensor(g, dtype=torch.float64))
    return y.detach().numpy(), [a.numpy() for a in grads]


def _ours(x, w, b, g, fn=F.batch_norm):
    xs = cg.tensor(x, requires_grad=True)
    ws, bs = (None if a is None else cg.tensor(a, requires_grad=True) for a in (w, b))
    with cg.profile() as prof:
        if fn is F.batch_norm:
            y = F.batch_norm(xs, None, None, ws, bs, training=True)
        else:
            y = fn(xs, None, None, ws, bs)
        y.backward(cg.tensor(g))
    grads = [t.grad.data for t in (xs, ws, bs) if t is not None]
    return y.data, grads, {e.name: e.algorithm for e in prof.of("norm")}


def _close(ours, ref, tol):
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref)
    assert np.abs(ours - ref).max() <= tol * max(np.abs(ref).max(), 1.0)


SHAPES = [(6, 5), (3, 5, 7), (2, 3, 5, 7), (2, 4, 3, 5, 6), (8, 16, 9, 9), (1, 3, 1, 2)]


@needs_onednn
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_batch_norm_float32_matches_torch_on_the_default_kernels(shape, channels_last, affine):
    c = shape[1]
    x = _input(shape, channels_last)
    g = RNG.standard_normal(shape).astype(np.float32)
    w = (1 + 0.3 * RNG.standard_normal(c)).astype(np.float32) if affine != "none" else None
    b = (0.2 * RNG.standard_normal(c)).astype(np.float32) if affine == "both" else None
    y, grads, algo = _ours(x, w, b, g)
    y_ref, grads_ref = _torch_bn(x, w, b, g)
    _close(y, y_ref, 1e-5)
    for ours, ref in zip(grads, grads_ref):
        _close(ours, ref, 1e-4)
    assert _default_forward(algo["batch_norm_forward_training"])
    # oneDNN's own float32 sums miss torch's accuracy: the accurate sums run the
    # statistics and the backward
    assert algo["batch_norm_backward"] == algo["batch_stats"] == SUMS
    # the output keeps the input's layout
    assert layouts.is_channels_last(y) == layouts.is_channels_last(x)


@needs_onednn
@pytest.mark.parametrize("channels_last", [False, True])
def test_prefer_numpy_forces_the_reference_and_float64_stays_on_it(channels_last):
    shape = (4, 6, 5, 5)
    x32 = _input(shape, channels_last)
    g = RNG.standard_normal(shape)
    w, b = np.full(6, 1.5, np.float32), np.full(6, 0.25, np.float32)
    with prefer("numpy"):
        y, grads, algo = _ours(x32, w, b, g.astype(np.float32))
    assert set(algo.values()) == {"numpy"}
    y_ref, grads_ref = _torch_bn(x32, w, b, g)
    _close(y, y_ref, 1e-5)
    # float64: the reference, exact to float64 rounding
    x64 = x32.astype(np.float64, order="K")
    y, grads, algo = _ours(x64, w.astype(np.float64), b.astype(np.float64), g)
    assert set(algo.values()) == {"numpy"}
    y_ref, grads_ref = _torch_bn(x64, w, b, g)
    _close(y, y_ref, 1e-12)
    for ours, ref in zip(grads, grads_ref):
        _close(ours, ref, 1e-11)


@needs_onednn
def test_a_strided_view_runs_the_reference():
    base = _input((4, 6, 10, 10), False)
    g = RNG.standard_normal((4, 6, 5, 9)).astype(np.float32)
    xs = cg.tensor(base, requires_grad=True)
    with cg.profile() as prof:
        view = xs[:, :, ::2, 1:]
        assert not view.data.flags.c_contiguous and not layouts.is_channels_last(view.data)
        y = F.batch_norm(view, None, None, training=True)
        y.backward(cg.tensor(g))
    assert {e.algorithm for e in prof.of("norm")} == {"numpy"}
    y_ref, grads_ref = _torch_bn(base[:, :, ::2, 1:], None, None, g)
    _close(y.data, y_ref, 1e-5)
    _close(xs.grad.data[:, :, ::2, 1:], grads_ref[0], 1e-4)


@needs_onednn
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("pin", [None, "onednn", "chunked", "numpy"])
def test_batch_norm_relu_equals_batch_norm_then_relu(channels_last, pin):
    shape = (4, 8, 6, 5)
    x = _input(shape, channels_last)
    g = RNG.standard_normal(shape).astype(np.float32)
    w = (1 + 0.3 * RNG.standard_normal(8)).astype(np.float32)
    b = (0.5 * RNG.standard_normal(8)).astype(np.float32)
    with prefer(pin) if pin else nullcontext():
        y, grads, algo = _ours(x, w, b, g, fn=batch_norm_relu)
    y_ref, grads_ref = _torch_bn(x, w, b, g, relu=True)
    assert (y >= 0).all()
    _close(y, y_ref, 1e-5)
    for ours, ref in zip(grads, grads_ref):
        _close(ours, ref, 1e-4)
    fwd, bwd = algo["batch_norm_forward_training"], algo["batch_norm_backward"]
    assert fwd.startswith("onednn:") == (pin == "onednn" or pin is None and not jit.enabled())
    if pin == "chunked":  # the chunked forward, no oneDNN mask: the backward recomputes it
        assert fwd == "chunked"
    if pin is None:
        assert _default_forward(fwd)
    # pinned to oneDNN, the backward is oneDNN's own, reading the forward's ReLU mask
    # (its workspace); by default the accurate sums, recomputing the output for the mask
    assert bwd == {None: SUMS, "chunked": "chunked", "numpy": "numpy"}.get(pin, bwd)
    assert bwd.startswith("onednn:") == (pin == "onednn")


@needs_onednn
def test_onednn_backward_pinned_is_close_to_torch():
    shape = (4, 8, 7, 7)
    for cl in (False, True):
        x = _input(shape, cl)
        g = RNG.standard_normal(shape).astype(np.float32)
        w, b = np.full(8, 0.7, np.float32), np.full(8, 0.1, np.float32)
        with prefer("onednn"):
            y, grads, algo = _ours(x, w, b, g)
        assert algo["batch_norm_backward"].startswith("onednn:")
        assert algo["batch_norm_backward"] != "chunked"
        _, grads_ref = _torch_bn(x, w, b, g)
        for ours, ref in zip(grads, grads_ref):
            _close(ours, ref, 1e-4)


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("channels_last", [False, True])
def test_module_running_statistics_follow_torch(momentum, channels_last):
    shape = (5, 4, 6, 3)
    ours, ref = nn.BatchNorm2d(4, momentum=momentum), torch.nn.BatchNorm2d(4, momentum=momentum)
    for _ in range(3):
        x = _input(shape, channels_last)
        ours(cg.tensor(x))
        ref(torch.from_numpy(np.ascontiguousarray(x)))
    np.testing.assert_allclose(np.asarray(ours.running_mean.data), ref.running_mean.numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ours.running_var.data), ref.running_var.numpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("relu", [False, True])
def test_double_backward_matches_torch(relu):
    shape = (3, 4, 5)
    x = 1 + RNG.standard_normal(shape)
    w, b, g = 1 + 0.2 * RNG.standard_normal(4), 0.3 * RNG.standard_normal(4), \
        RNG.standard_normal(shape)
    xs, ws, bs = (cg.tensor(a, requires_grad=True) for a in (x, w, b))
    y = (batch_norm_relu(xs, None, None, ws, bs) if relu
         else F.batch_norm(xs, None, None, ws, bs, training=True))
    gx, gw = cg.autograd.grad((y * cg.tensor(g)).sum(), [xs, ws], create_graph=True)
    (gx * gx).sum().add(gw.sum()).backward()

    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    yt = TF.batch_norm(xt, None, None, wt, bt, training=True)
    if relu:
        yt = torch.relu(yt)
    gxt, gwt = torch.autograd.grad((yt * torch.tensor(g)).sum(), [xt, wt], create_graph=True)
    ((gxt * gxt).sum() + gwt.sum()).backward()
    for ours, ref in ((gx, gxt), (xs.grad, xt.grad), (ws.grad, wt.grad)):
        np.testing.assert_allclose(np.asarray(ours.data), ref.detach().numpy(), rtol=1e-9,
                                   atol=1e-10)


@needs_onednn
@pytest.mark.parametrize("channels_last", [False, True])
def test_eval_mode_runs_one_inference_kernel_without_grad(channels_last):
    shape = (3, 5, 4, 6)
    ours, ref = nn.BatchNorm2d(5), torch.nn.BatchNorm2d(5)
    with torch.no_grad():
        ref.weight.copy_(torch.linspace(0.5, 1.5, 5))
        ref.bias.copy_(torch.linspace(-0.2, 0.3, 5))
    ours.weight.data[...] = ref.weight.detach().numpy()
    ours.bias.data[...] = ref.bias.detach().numpy()
    for _ in range(2):
        x = _input(shape, channels_last)
        ours(cg.tensor(x))
        ref(torch.from_numpy(np.ascontiguousarray(x)))
    ours.eval()
    ref.eval()
    x = _input(shape, channels_last)
    expected = ref(torch.from_numpy(np.ascontiguousarray(x))).detach().numpy()
    with cg.profile() as prof, cg.no_grad():
        y = ours(cg.tensor(x))
    assert [(e.name, _default_forward(e.algorithm)) for e in prof.of("norm")] == [
        ("batch_norm_forward_inference", True)]
    assert layouts.is_channels_last(y.data) == channels_last
    np.testing.assert_allclose(y.data, expected, rtol=1e-5, atol=1e-5)
    # with a gradient to compute: the same inference kernel (the same bits), then one
    # channel-affine pass back
    xs = cg.tensor(x, requires_grad=True)
    with cg.profile() as prof:
        yg = ours(xs)
        yg.sum().backward()
    assert [e.name for e in prof.of("norm")] == ["batch_norm_forward_inference",
                                                 "channel_affine_backward"]
    np.testing.assert_array_equal(yg.data, y.data)
    np.testing.assert_allclose(xs.grad.data, np.broadcast_to(
        (ref.weight / torch.sqrt(ref.running_var + ref.eps)).detach().numpy()[:, None, None],
        shape), rtol=1e-5)


@needs_onednn
@pytest.mark.parametrize("channels_last", [False, True])
def test_float32_error_within_twice_torchs_with_a_large_mean(channels_last):
    # mean/std = 50: a rule that subtracted the mean after scaling would cancel
    shape = (8, 16, 24, 24)
    x = layouts.empty(shape, channels_last)
    x[...] = 50 + RNG.standard_normal(shape)
    g = RNG.standard_normal(shape).astype(np.float32)
    w = (1 + 0.1 * RNG.standard_normal(16)).astype(np.float32)
    b = (0.1 * RNG.standard_normal(16)).astype(np.float32)
    y, grads, algo = _ours(x, w, b, g)
    assert algo["batch_norm_backward"] == SUMS
    ref64 = _torch_bn(x, w, b, g)
    xt, wt, bt = (torch.tensor(np.ascontiguousarray(a), requires_grad=True) for a in (x, w, b))
    yt = TF.batch_norm(xt, None, None, wt, bt, training=True)
    ref32 = [yt.detach().numpy(), torch.autograd.grad(yt, [xt, wt, bt], torch.tensor(g))]

    def err(a, r):
        return np.abs(np.asarray(a, np.float64) - r).max() / np.abs(r).max()
    for ours, t32, t64 in zip([y, *grads], [ref32[0], *[a.numpy() for a in ref32[1]]],
                              [ref64[0], *ref64[1]]):
        assert err(ours, t64) <= 2 * max(err(t32, t64), 2 ** -24)


NORMS_ON_A_VIEW = {
    "group_norm": (lambda x, w, b: F.group_norm(x, 3, w, b), lambda x, w, b: TF.group_norm(
        x, 3, w, b), (6,)),
    "instance_norm": (lambda x, w, b: F.instance_norm(x, None, None, w, b),
                      lambda x, w, b: TF.instance_norm(x, None, None, w, b), (6,)),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, x.shape[2:], w, b),
                   lambda x, w, b: TF.layer_norm(x, x.shape[2:], w, b), None),
}


@needs_onednn
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("norm", list(NORMS_ON_A_VIEW))
def test_group_instance_layer_norm_run_batch_norm_on_a_view(norm, channels_last):
    shape = (3, 6, 5, 7)
    ours_fn, torch_fn, pshape = NORMS_ON_A_VIEW[norm]
    pshape = pshape or shape[2:]
    x = _input(shape, channels_last)
    g = RNG.standard_normal(shape).astype(np.float32)
    w = (1 + 0.2 * RNG.standard_normal(pshape)).astype(np.float32)
    b = (0.2 * RNG.standard_normal(pshape)).astype(np.float32)
    xs, ws, bs = (cg.tensor(a, requires_grad=True) for a in (x, w, b))
    with cg.profile() as prof:
        y = ours_fn(xs, ws, bs)
        y.backward(cg.tensor(g))
    algos = {e.name: e.algorithm for e in prof.of("norm")}
    if norm != "layer_norm" and jit.enabled():  # their own kernels, in x's layout
        assert algos["group_norm_forward"] == algos["group_norm_backward"] == "numba"
        assert "batch_norm_forward_training" not in algos
        assert layouts.is_channels_last(y.data) == channels_last
    elif norm == "layer_norm" and jit.enabled() and not channels_last:  # its own kernels
        assert algos == {"layer_norm_forward": "numba", "layer_norm_backward": "numba"}
    else:
        assert _default_forward(algos["batch_norm_forward_training"])
        assert algos["batch_norm_backward"] == SUMS
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b)]
    yt = torch_fn(*ts)
    yt.backward(torch.tensor(g, dtype=torch.float64))
    _close(y.data, yt.detach().numpy(), 1e-5)
    for ours, ref in zip((xs, ws, bs), ts):
        _close(ours.grad.data, ref.grad.numpy(), 1e-4)
    with prefer("numpy"), cg.profile() as prof:
        ours_fn(cg.tensor(x), w, b)
    assert {e.algorithm for e in prof.of("norm")} == {"numpy"}


@pytest.mark.parametrize("pin", ["numba", "numpy"])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("norm", ["group_norm", "instance_norm"])
def test_the_affine_step_is_one_kernel_as_accurate_as_torch(norm, channels_last, pin):
    """Group and instance norm's per-channel ``y w + b``: one ``channel_affine`` kernel
    each way (compiled, or NumPy's broadcasting pinned), within twice torch float32's
    error against torch float64 (floor: one float32 rounding)."""
    if pin == "numba" and not jit.enabled():
        pytest.skip("Numba is not installed")
    shape = (4, 6, 33, 35)
    ours_fn, torch_fn, pshape = NORMS_ON_A_VIEW[norm]
    x = _input(shape, channels_last)
    g = layouts.empty(shape, channels_last, np.float32)
    g[...] = RNG.standard_normal(shape)
    w = (1 + 0.2 * RNG.standard_normal(pshape)).astype(np.float32)
    b = (0.2 * RNG.standard_normal(pshape)).astype(np.float32)
    xs, ws, bs = (cg.tensor(a, requires_grad=True) for a in (x, w, b))
    with cg.profile() as prof:
        with prefer(pin):
            y = ours_fn(xs, ws, bs)
            y.backward(cg.tensor(g))
    ran = {e.name: e.algorithm for e in prof.of("norm")}
    if pin == "numba":  # Numba's group norm kernels, the affine step fused in
        assert ran["group_norm_forward"] == ran["group_norm_backward"] == pin
    else:
        assert ran["channel_affine"] == ran["channel_affine_backward"] == pin

    def torch_run(dtype):
        ts = [torch.tensor(np.ascontiguousarray(a), dtype=dtype, requires_grad=True)
              for a in (x, w, b)]
        yt = torch_fn(*ts)
        yt.backward(torch.tensor(np.ascontiguousarray(g), dtype=dtype))
        return [t.detach().double().numpy() for t in (yt, *(t.grad for t in ts))]

    exact, theirs = torch_run(torch.float64), torch_run(torch.float32)
    ours = [y.data, xs.grad.data, ws.grad.data, bs.grad.data]
    for name, o, e, t in zip(("y", "gx", "gw", "gb"), ours, exact, theirs):
        scale = np.abs(e).max()
        err, torch_err = np.abs(o - e).max() / scale, np.abs(t - e).max() / scale
        assert err <= 2 * max(torch_err, 2.0 ** -24), (name, err, torch_err)


def test_the_affine_step_differentiates_twice():
    x, w, b, g = (RNG.standard_normal(s) for s in ((3, 4, 5), (4,), (4,), (3, 4, 5)))
    xs, ws, bs = (cg.tensor(a, requires_grad=True) for a in (x, w, b))
    gx, gw = cg.autograd.grad((F.group_norm(xs, 2, ws, bs) * cg.tensor(g)).sum(), [xs, ws],
                              create_graph=True)
    ((gx * gx).sum() + (gw * gw).sum()).backward()
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    gxt, gwt = torch.autograd.grad((TF.group_norm(xt, 2, wt, bt) * torch.tensor(g)).sum(),
                                   [xt, wt], create_graph=True)
    ((gxt * gxt).sum() + (gwt * gwt).sum()).backward()
    for ours, ref in ((xs.grad, xt.grad), (ws.grad, wt.grad)):
        np.testing.assert_allclose(np.asarray(ours.data), ref.numpy(), rtol=1e-9, atol=1e-10)
