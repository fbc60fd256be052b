"""Conv + (Leaky)ReLU in a Sequential run as one operation: a leaky ReLU as oneDNN's post-op,
a ReLU by the compiled loop on the convolution's result (with a bias, its backward and the
bias gradient in one pass); same bits as the unfused pair, less work."""

import contextlib

import numpy as np
import pytest
import torch

import convgrad as cg
from convgrad import nn
from convgrad.ops import jit, onednn_available, prefer

RNG = np.random.default_rng(7)
CONVS = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
TORCH_CONVS = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}


def _input(nd, dtype=np.float32, channels_last=False):
    x = RNG.standard_normal((2, 6) + (7,) * nd).astype(dtype)
    if channels_last:
        perm = (0, *range(2, nd + 2), 1)
        x = np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))
    return x


def _act(slope):
    if slope == "silu":
        return nn.SiLU()
    return nn.ReLU() if slope == 0 else nn.LeakyReLU(slope)


def _run(model, x_np, unfused=False):
    """(output, [x's gradient, then each parameter's], the profiler) of one step of the
    loss sum(y^2), fused through the Sequential or ``model[1](model[0](x))``."""
    x = cg.tensor(x_np, requires_grad=True)
    model.zero_grad()
    with cg.profile() as prof:
        y = model[1](model[0](x)) if unfused else model(x)
        (y * y).sum().backward()
    grads = [x.grad.data.copy()] + [p.grad.data.copy() for p in model.parameters()]
    return y.data.copy(), grads, prof


def _conv_run(model, x_np, unfused=False):
    y, grads, prof = _run(model, x_np, unfused)
    return y, grads, [e.algorithm for e in prof.of("conv")]


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("slope", [0.0, 0.2])
@pytest.mark.parametrize("channels_last", [False, True])
def test_fused_equals_unfused_bit_for_bit_and_ran_fused(nd, slope, channels_last):
    model = nn.Sequential(CONVS[nd](6, 5, 3, padding=1, rng=1), _act(slope))
    x = _input(nd, channels_last=channels_last)
    x[0, 1, 2] = np.nan  # a NaN must come through as the unfused pair lets it
    y, grads, algos = _conv_run(model, x)
    y0, grads0, algos0 = _conv_run(model, x, unfused=True)
    assert np.isnan(y0).any()
    np.testing.assert_array_equal(y, y0)
    for g, g0 in zip(grads, grads0):
        np.testing.assert_array_equal(g, g0)
    if onednn_available():
        # a plain ReLU is not oneDNN's post-op (which turns NaN into 0)
        fused = algos[0].startswith("onednn") and algos[0].endswith("+relu")
        assert fused == (slope > 0), algos
    assert not any(a.endswith("+relu") for a in algos0)


def _events(prof):
    return [(e.name, e.algorithm) for e in prof.events if e.family in ("conv", "eltwise")]


@pytest.mark.skipif(not (onednn_available() and jit.enabled()),
                    reason="the fused backward is the compiled loop after oneDNN's pass")
@pytest.mark.parametrize("channels_last", [False, True])
def test_a_relu_after_a_convolution_takes_the_bias_gradient_in_its_backward(channels_last):
    """Conv2d + ReLU: one ConvReLU node; its backward's ReLU mask and the bias gradient in
    one compiled pass (``relu_bias_backward``, no ``relu_backward`` or ``conv_bias_grad``
    of their own) where the gradient is channels-last, the two kernels otherwise; the
    unfused pair's bits either way (a NaN in the output passes its gradient), torch's
    float64 values."""
    rng = np.random.default_rng(11)
    model = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1, rng=2), nn.ReLU())
    x = rng.standard_normal((2, 8, 32, 32)).astype(np.float32)
    if channels_last:
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    x[1, 3, 5, 7] = np.nan
    y, grads, prof = _run(model, x)
    y0, grads0, prof0 = _run(model, x, unfused=True)
    assert np.isnan(y).any()
    np.testing.assert_array_equal(y, y0)
    for g, g0 in zip(grads, grads0):
        np.testing.assert_array_equal(g, g0)
    ran, ran0 = _events(prof), _events(prof0)
    assert ("relu_backward", "numba") in ran0 and ("conv_bias_grad", "reduce") in ran0
    fused = ("relu_bias_backward", "numba") in ran
    assert fused == channels_last, ran  # the sums' compiled pass: channels-last gradients
    assert (("relu_backward", "numba") in ran) != fused
    assert (("conv_bias_grad", "reduce") in ran) != fused
    assert [n for n, _ in ran].count("relu_forward") == 1  # in place, after the conv
    assert ("relu_forward", "numba") in ran
    # against torch float64 on the same values without the NaN: within twice torch
    # float32's own error
    x[1, 3, 5, 7] = 0.5
    y, grads, _ = _run(model, x)

    def torch_run(dtype):
        tm = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU())
        tm = tm.to(dtype)
        with torch.no_grad():
            tm[0].weight.copy_(torch.from_numpy(model[0].weight.data))
            tm[0].bias.copy_(torch.from_numpy(model[0].bias.data))
        tx = torch.from_numpy(x).to(dtype).requires_grad_()
        ty = tm(tx)
        (ty * ty).sum().backward()
        return [a.detach().double().numpy() for a in (ty, tx.grad, tm[0].weight.grad,
                                                       tm[0].bias.grad)]

    ref, t32 = torch_run(torch.float64), torch_run(torch.float32)
    for ours, theirs, want in zip([y, *grads], t32, ref):
        err = np.abs(ours - want).max() / np.abs(want).max()
        floor = np.finfo(np.float32).eps
        assert err <= 2 * max(np.abs(theirs - want).max() / np.abs(want).max(), floor), err


@pytest.mark.parametrize("slope", [0.0, 0.2])
def test_the_fused_backward_runs_the_activations_kernel(slope):
    """A large fused pair's backward masks the gradient with the eltwise family's kernel
    (the compiled loop where Numba is installed): against torch, and equal bit for bit
    to the unfused pair, whose activation's backward runs the same rule on its own node.
    The loss sum(y v) with a random v gives every element a gradient, masked or not."""
    from convgrad.ops import jit

    model = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1, rng=2), _act(slope))
    x = RNG.standard_normal((4, 8, 32, 32)).astype(np.float32)  # NaNs: the tests above
    v = RNG.standard_normal((4, 16, 32, 32)).astype(np.float32)

    def run(unfused):
        xt = cg.tensor(x, requires_grad=True)
        model.zero_grad()
        with cg.profile() as prof:
            y = model[1](model[0](xt)) if unfused else model(xt)
            (y * cg.tensor(v)).sum().backward()
        return [xt.grad.data, model[0].weight.grad.data, model[0].bias.grad.data], prof

    grads, prof = run(False)
    grads0, prof0 = run(True)
    for g, g0 in zip(grads, grads0):
        np.testing.assert_array_equal(g, g0)
    # oracle: torch float64; within twice torch float32's own error on the same values
    refs = {}
    for dtype in (torch.float64, torch.float32):
        tm = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1),
                                 torch.nn.ReLU() if slope == 0 else torch.nn.LeakyReLU(slope))
        tm = tm.to(dtype)
        with torch.no_grad():
            tm[0].weight.copy_(torch.from_numpy(model[0].weight.data))
            tm[0].bias.copy_(torch.from_numpy(model[0].bias.data))
        tx = torch.from_numpy(x).to(dtype).requires_grad_()
        (tm(tx) * torch.from_numpy(v).to(dtype)).sum().backward()
        refs[dtype] = [t.grad.double().numpy() for t in (tx, tm[0].weight, tm[0].bias)]
    for ours, ref, t32 in zip(grads, refs[torch.float64], refs[torch.float32]):
        err, terr = (np.abs(a - ref).max() for a in (ours, t32))
        assert err <= 2 * max(terr, 1e-7 * np.abs(ref).max()), (err, terr)
    name = "relu_backward" if slope == 0 else "leaky_relu_backward"
    ran = [e.algorithm for e in prof.of("eltwise") if e.name == name]
    # without Numba: oneDNN's ReLU backward; LeakyReLU's is NumPy's rule (oneDNN's leaves
    # a NaN input's gradient unscaled)
    want = "numba" if jit.enabled() else ("onednn" if onednn_available() and slope == 0
                                          else "numpy")
    assert ran == [want], [(e.name, e.algorithm) for e in prof.of("eltwise")]
    assert ran == [e.algorithm for e in prof0.of("eltwise") if e.name == name]


@pytest.mark.skipif(not onednn_available(), reason="the post-op is oneDNN's")
def test_the_kernel_keeps_nan_for_every_slope():
    from convgrad.ops import ConvSpec
    from convgrad.ops.kernels import conv_forward

    x = _input(2)
    x[0, 0, 3, 3] = np.nan
    w = RNG.standard_normal((4, 6, 3, 3)).astype(np.float32)
    spec = ConvSpec(stride=(1, 1), padding=((1, 1), (1, 1)), kernel_dilation=(1, 1),
                    input_dilation=(1, 1))
    y_shape = (2, 4, 7, 7)
    plain = conv_forward(x, w, spec, y_shape)
    for slope in (0.0, 0.1):
        with cg.profile() as prof:
            y = conv_forward(x, w, spec, y_shape, relu_slope=slope)
        want = np.where(plain > 0, plain, plain * np.float32(slope)) if slope else \
            np.maximum(plain, 0)
        np.testing.assert_array_equal(y, want)
        assert np.isnan(y).sum() == np.isnan(plain).sum() > 0
        assert prof.of("conv")[0].algorithm.endswith("+relu") == (slope > 0)


@pytest.mark.parametrize("slope", [0.0, 0.01])
def test_fused_sequential_matches_torch(slope):
    nd = 2
    model = nn.Sequential(nn.Conv2d(6, 5, 3, stride=2, padding=1, rng=3), _act(slope))
    tm = torch.nn.Sequential(TORCH_CONVS[nd](6, 5, 3, stride=2, padding=1),
                             torch.nn.ReLU() if slope == 0 else torch.nn.LeakyReLU(slope))
    with torch.no_grad():
        tm[0].weight.copy_(torch.from_numpy(model[0].weight.data))
        tm[0].bias.copy_(torch.from_numpy(model[0].bias.data))
    x = _input(nd).astype(np.float64)
    tm = tm.double()
    model = model.to(cg.float64)
    y, grads, _ = _conv_run(model, x)
    tx = torch.from_numpy(x).requires_grad_()
    ty = tm(tx)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    for g, t in zip(grads, [tx.grad, tm[0].weight.grad, tm[0].bias.grad]):
        np.testing.assert_allclose(g, t.numpy(), rtol=1e-10, atol=1e-12)


def test_float64_and_pinned_numpy_apply_the_activation_after_the_convolution():
    model = nn.Sequential(nn.Conv2d(6, 5, 3, rng=2), nn.LeakyReLU(0.1))
    for x, pin in ((_input(2, np.float64), None), (_input(2), "numpy")):
        if x.dtype == np.float64:
            model = model.to(cg.float64)
        else:
            model = model.to(cg.float32)
        ctx = prefer(pin) if pin else _null()
        with ctx:
            y, grads, algos = _conv_run(model, x)
            y0, grads0, _ = _conv_run(model, x, unfused=True)
        assert not any(a.endswith("+relu") for a in algos)
        assert np.array_equal(y, y0) and all(np.array_equal(a, b) for a, b in zip(grads, grads0))


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _fused_ran(model, x):
    with cg.profile() as prof:
        model(cg.tensor(x))
    return any(e.algorithm.endswith("+relu") for e in prof.of("conv"))


@pytest.mark.skipif(not onednn_available(), reason="fusion is oneDNN's post-op")
def test_nothing_observable_is_fused_away():
    x = _input(2)
    assert not _fused_ran(nn.Sequential(nn.Conv2d(6, 5, 3, rng=2), nn.ReLU()), x)
    model = nn.Sequential(nn.Conv2d(6, 5, 3, rng=2), nn.LeakyReLU(0.2))
    assert _fused_ran(model, x)
    seen = []
    handle = model[0].register_forward_hook(lambda m, i, o: seen.append(o.shape))
    assert not _fused_ran(model, x) and seen == [(2, 5, 5, 5)]
    handle.remove()
    handle = model[1].register_forward_pre_hook(lambda m, i: seen.append("act"))
    assert not _fused_ran(model, x) and seen[-1] == "act"
    handle.remove()
    assert _fused_ran(model, x)

    class MyConv(nn.Conv2d):
        def forward(self, x):
            return super().forward(x) * 2.0

    mine = nn.Sequential(MyConv(6, 5, 3, rng=2), nn.LeakyReLU(0.2))
    assert not _fused_ran(mine, x)
    leaky = nn.Sequential(nn.Conv2d(6, 5, 3, rng=2), nn.LeakyReLU(0.1))
    assert _fused_ran(leaky, x)
    leaky[1].negative_slope = -0.5  # read live: a negative slope is not fused
    assert not _fused_ran(leaky, x)
    leaky[1].negative_slope = 0.0  # nor a zero one (a ReLU)
    assert not _fused_ran(leaky, x)
    leaky[1].negative_slope = -0.5
    y = leaky(cg.tensor(x)).data
    pre = leaky[0](cg.tensor(x)).data
    assert np.array_equal(y, np.where(pre > 0, pre, pre * np.float32(-0.5)))


def test_an_in_place_edit_of_the_fused_output_is_refused():
    model = nn.Sequential(nn.Conv2d(6, 5, 3, rng=2), nn.LeakyReLU(0.2))
    y = model(cg.tensor(_input(2), requires_grad=True))
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_second_order_gradients_through_the_fused_pair():
    model = nn.Sequential(nn.Conv2d(6, 5, 3, rng=4), nn.LeakyReLU(0.3)).to(cg.float64)
    x_np = _input(2, np.float64)
    out = []
    for unfused in (False, True):
        x = cg.tensor(x_np, requires_grad=True)
        y = model[1](model[0](x)) if unfused else model(x)
        (gx,) = cg.autograd.grad((y * y).sum(), x, create_graph=True)
        (ggx,) = cg.autograd.grad((gx * gx).sum(), x)
        out.append((gx.data, ggx.data))
    assert np.array_equal(out[0][0], out[1][0]) and np.array_equal(out[0][1], out[1][1])


# ------------------------------------------------------------------ BatchNorm + ReLU
def _bn_run(model, x_np, unfused=False):
    """:func:`_run` of BatchNorm + activation, with the running buffers after the step
    and the names of the kernels that ran."""
    y, grads, prof = _run(model, x_np, unfused)
    bn = model[0]
    state = [np.array(bn.running_mean.data), np.array(bn.running_var.data),
             np.array(bn.num_batches_tracked.data)] if bn.running_mean is not None else []
    return y, grads, state, [e.name for e in prof.events]


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("channels_last", [False, True])
def test_batchnorm_relu_fused_equals_unfused_bit_for_bit(nd, momentum, channels_last):
    bns = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}
    x = _input(nd, channels_last=channels_last) * 3.0 + 1.0
    runs = []
    for unfused in (False, True):
        model = nn.Sequential(bns[nd](6, momentum=momentum), nn.ReLU())
        model[0].weight.data[...] = np.linspace(0.5, 1.5, 6, dtype=np.float32)
        model[0].bias.data[...] = np.linspace(-0.3, 0.3, 6, dtype=np.float32)
        runs.append([_bn_run(model, x, unfused) for _ in range(2)])  # two steps
    for (y, grads, state, names), (y0, grads0, state0, names0) in zip(*runs):
        np.testing.assert_array_equal(y, y0)
        for a, b in zip(grads + state, grads0 + state0):
            np.testing.assert_array_equal(a, b)
        assert "relu_forward" in names0 and "relu_forward" not in names, names


def test_batchnorm_relu_is_not_fused_in_eval_mode_or_with_hooks():
    x = _input(2)
    model = nn.Sequential(nn.BatchNorm2d(6), nn.ReLU())
    model.eval()
    y, _, _, names = _bn_run(model, x)
    y0, _, _, _ = _bn_run(model, x, unfused=True)
    np.testing.assert_array_equal(y, y0)
    assert "relu_forward" in names
    model.train()
    assert "relu_forward" not in _bn_run(model, x)[3]
    model[1].register_forward_hook(lambda m, i, o: None)
    assert "relu_forward" in _bn_run(model, x)[3]
    # a leaky ReLU: fused where the compiled loops normalise, its own operation where
    # oneDNN does (it fuses a plain ReLU only)
    leaky = nn.Sequential(nn.BatchNorm2d(6), nn.LeakyReLU(0.2))
    assert ("leaky_relu_forward" in _bn_run(leaky, x)[3]) != bn_loops_run()
    with prefer("onednn"):
        assert "leaky_relu_forward" in _bn_run(leaky, x)[3]


def bn_loops_run():
    from convgrad.ops.normalization import fuses_leaky_relu

    return fuses_leaky_relu(np.zeros((2, 6, 3), np.float32))


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("slope", [0.01, 0.2])
@pytest.mark.parametrize("channels_last", [False, True])
def test_batchnorm_leaky_relu_fused_equals_unfused_bit_for_bit(nd, slope, channels_last):
    """DCGAN's discriminator block: the compiled loops apply the leaky ReLU as they write
    y and recompute where it scaled g in both backward passes; output, every gradient
    and the running buffers are the unfused pair's, bit for bit (a NaN channel and the
    sign of zero included), and no activation kernel ran; NumPy's pinned path runs the
    pair unfused, to the same values."""
    if not bn_loops_run():
        pytest.skip("the fused leaky ReLU needs the compiled loops (Numba)")
    bns = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}
    x = _input(nd, channels_last=channels_last) * 3.0 + 1.0
    x[1, 4] = np.nan  # channel 4's statistics NaN: its y and gradients NaN, as unfused
    runs = []
    for unfused in (False, True):
        model = nn.Sequential(bns[nd](6), nn.LeakyReLU(slope))
        model[0].weight.data[...] = np.linspace(0.5, 1.5, 6, dtype=np.float32)
        model[0].bias.data[...] = np.linspace(-0.8, 0.8, 6, dtype=np.float32)
        runs.append([_bn_run(model, x, unfused) for _ in range(2)])  # two steps
    for (y, grads, state, names), (y0, grads0, state0, names0) in zip(*runs):
        assert np.isnan(y0).any() and (y0 < 0).any()
        for a, b in zip([y, *grads, *state], [y0, *grads0, *state0]):
            np.testing.assert_array_equal(a, b)
            assert np.array_equal(np.signbit(a), np.signbit(b))
        assert {"leaky_relu_forward", "leaky_relu_backward"} <= set(names0)
        assert not any(n.startswith("leaky_relu") for n in names), names
    with prefer("numpy"):
        model = nn.Sequential(bns[nd](6), nn.LeakyReLU(slope))
        model[0].weight.data[...] = np.linspace(0.5, 1.5, 6, dtype=np.float32)
        model[0].bias.data[...] = np.linspace(-0.8, 0.8, 6, dtype=np.float32)
        y, grads, _, names = _bn_run(model, x)
    assert "leaky_relu_forward" in names
    np.testing.assert_allclose(y, runs[0][0][0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pin", ["numpy", "onednn", "chunked"])
def test_a_fused_leaky_pair_differentiates_under_another_pin(pin):
    """The forward fused on the compiled loops, the backward pinned elsewhere (no fused
    leaky ReLU there): the activation's derivative is applied as its own step. Oracle:
    torch float64's gradients; ours within twice torch float32's error, on the
    channels-last layout the fused forward produced."""
    if not bn_loops_run():
        pytest.skip("the fused leaky ReLU needs the compiled loops (Numba)")
    if pin == "onednn" and not onednn_available():
        pytest.skip("oneDNN unavailable")
    x_np = _input(2, channels_last=True) * 3.0 + 1.0
    model = nn.Sequential(nn.BatchNorm2d(6), nn.LeakyReLU(0.2))
    x = cg.tensor(x_np, requires_grad=True)
    with cg.profile() as prof:
        y = model(x)
        with prefer(pin):
            (y * y).sum().backward()
    ran = {(e.name, e.algorithm) for e in prof.of("norm")}
    assert ("batch_norm_forward_training", "numba") in ran
    assert not any(n == "batch_norm_backward" and a == "numba" for n, a in ran), ran
    out = {}
    for dtype in (torch.float64, torch.float32):
        tm = torch.nn.Sequential(torch.nn.BatchNorm2d(6), torch.nn.LeakyReLU(0.2)).to(dtype)
        tx = _torch_input(x_np, dtype, 2, True)
        ty = tm(tx)
        (ty * ty).sum().backward()
        out[dtype] = [t.detach().double().numpy() for t in
                      (ty, tx.grad, tm[0].weight.grad, tm[0].bias.grad)]
    ours = [y.data, x.grad.data, model[0].weight.grad.data, model[0].bias.grad.data]
    for a, exact, theirs in zip(ours, out[torch.float64], out[torch.float32]):
        scale = np.abs(exact).max()
        err = np.abs(a - exact).max() / scale
        torch_err = np.abs(theirs - exact).max() / scale
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


@pytest.mark.parametrize("pin", [None, "numpy", "onednn"])
def test_the_kernel_s_leaky_forward_is_the_plain_forward_then_the_activation(pin):
    """batch_norm_forward(relu=True, slope=s) on any algorithm: the plain forward's
    output on the same algorithm with y < 0 (and -0, NaN kept) times float32(s)."""
    from convgrad.ops.normalization import batch_norm_forward, batch_stats

    if pin == "onednn" and not onednn_available():
        pytest.skip("oneDNN unavailable")
    x = _input(2, channels_last=True) * 3.0 + 1.0
    x[0, 2] = np.nan
    w, b = np.linspace(0.5, 1.5, 6, dtype=np.float32), np.linspace(-1, 1, 6, dtype=np.float32)
    with prefer(pin) if pin else contextlib.nullcontext():
        mean, var = batch_stats(x)
        plain, _ = batch_norm_forward(x, mean, var, w, b, 1e-5)
        with cg.profile() as prof:
            leaky, _ = batch_norm_forward(x, mean, var, w, b, 1e-5, relu=True, slope=0.2)
    expected = np.where(plain > 0, plain, plain * np.float32(0.2))
    assert expected.dtype == np.float32 and (expected < 0).any() and np.isnan(expected).any()
    assert np.array_equal(leaky.view(np.uint32), expected.view(np.uint32))
    ran = {e.algorithm for e in prof.of("norm")}
    if pin is None and bn_loops_run():
        assert ran == {"numba"}
    else:
        assert "numba" not in ran, ran


@pytest.mark.parametrize("channels_last", [False, True])
def test_batchnorm_leaky_relu_fused_matches_torch_float64(channels_last):
    """Oracle: torch float64; the fused float32 pair within twice torch float32's error
    in the same layout, output and every gradient (second order through the recorded
    rule too)."""
    if not bn_loops_run():
        pytest.skip("the fused leaky ReLU needs the compiled loops (Numba)")
    model = nn.Sequential(nn.BatchNorm2d(6), nn.LeakyReLU(0.2))
    model[0].weight.data[...] = np.linspace(0.5, 1.5, 6, dtype=np.float32)
    model[0].bias.data[...] = np.linspace(-0.8, 0.8, 6, dtype=np.float32)

    def torch_model(dtype):
        tm = torch.nn.Sequential(torch.nn.BatchNorm2d(6), torch.nn.LeakyReLU(0.2))
        with torch.no_grad():
            tm[0].weight.copy_(torch.from_numpy(model[0].weight.data))
            tm[0].bias.copy_(torch.from_numpy(model[0].bias.data))
        return tm.to(dtype)

    _two_orders_match_torch(model, "BatchNormReLU", torch_model,
                            _input(2, channels_last=channels_last) * 3.0 + 1.0, channels_last)


def _two_orders_match_torch(model, fused, torch_model, x_np, channels_last):
    """``model`` records the fused node ``fused``; its output, the gradient of sum(y^2)
    and (create_graph) the gradient of that gradient's sum of squares are within twice
    torch float32's error of torch float64's (``torch_model(dtype)``, same layout)."""
    x = cg.tensor(x_np, requires_grad=True)
    y = model(x)
    assert y.grad_fn.op.__name__ == fused  # the fused node was recorded
    (gx,) = cg.autograd.grad((y * y).sum(), x, create_graph=True)
    (ggx,) = cg.autograd.grad((gx * gx).sum(), x)
    out = {}
    for dtype in (torch.float64, torch.float32):
        tm = torch_model(dtype)
        tx = _torch_input(x_np, dtype, x_np.ndim - 2, channels_last)
        ty = tm(tx)
        (tgx,) = torch.autograd.grad((ty * ty).sum(), tx, create_graph=True)
        (tggx,) = torch.autograd.grad((tgx * tgx).sum(), tx)
        out[dtype] = [t.detach().double().numpy() for t in (ty, tgx, tggx)]
    for ours, exact, theirs in zip((y.data, gx.data, ggx.data), out[torch.float64],
                                   out[torch.float32]):
        scale = np.abs(exact).max()
        err = np.abs(ours - exact).max() / scale
        torch_err = np.abs(theirs - exact).max() / scale
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


# --------------------------------------------------- GroupNorm / InstanceNorm + (leaky) ReLU
NORMS = {
    "group": lambda nd: nn.GroupNorm(3, 6),
    "instance": lambda nd: {1: nn.InstanceNorm1d, 2: nn.InstanceNorm2d, 3: nn.InstanceNorm3d}[
        nd](6, affine=True, track_running_stats=True),
}


def _norm_act(kind, nd, slope):
    model = nn.Sequential(NORMS[kind](nd), _act(slope))
    model[0].weight.data[...] = np.linspace(0.5, 1.5, 6, dtype=np.float32)
    model[0].bias.data[...] = np.linspace(-0.8, 0.8, 6, dtype=np.float32)
    return model


def _norm_run(model, x_np, unfused=False):
    """:func:`_run` of a norm + activation pair, with the running buffers after the step
    (instance norm's) and the (name, algorithm) of every kernel that ran."""
    y, grads, prof = _run(model, x_np, unfused)
    norm = model[0]
    state = ([np.array(norm.running_mean.data), np.array(norm.running_var.data)]
             if getattr(norm, "running_mean", None) is not None else [])
    return y, grads, state, [(e.name, e.algorithm) for e in prof.events]


@pytest.mark.parametrize("kind", list(NORMS))
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("slope", [0.0, 0.01, 0.3])
@pytest.mark.parametrize("channels_last", [False, True])
def test_norm_activation_fused_equals_unfused_bit_for_bit(kind, nd, slope, channels_last):
    """The group norm kernels apply the activation as they write y and scale g by where
    it passed y: the output, every gradient and the running statistics are the unfused
    pair's, bit for bit (a NaN's group included), and the activation ran no kernel of
    its own."""
    if not group_norm_kernels_run():
        pytest.skip("the group norm kernels need Numba")
    x = _input(nd, channels_last=channels_last) * 2.0 + 0.3
    x[1, 4] = np.nan  # one (sample, group) NaN: y and its gradient NaN there, as unfused
    runs = []
    for unfused in (False, True):
        model = _norm_act(kind, nd, slope)
        runs.append([_norm_run(model, x, unfused) for _ in range(2)])  # two steps
    for (y, grads, state, ran), (y0, grads0, state0, ran0) in zip(*runs):
        assert np.isnan(y0).any() and (y0 < 0).any() == (slope > 0)
        for a, b in zip([y, *grads, *state], [y0, *grads0, *state0]):
            np.testing.assert_array_equal(a, b)
            assert np.array_equal(np.signbit(a), np.signbit(b))  # ReLU's +0, leaky's -0
        act = "relu" if slope == 0 else "leaky_relu"
        assert f"{act}_forward" in dict(ran0) and f"{act}_backward" in dict(ran0)
        assert not any(name.startswith(act) for name, _ in ran), ran
        assert dict(ran)["group_norm_forward"] == dict(ran)["group_norm_backward"] == "numba"


def group_norm_kernels_run():
    from convgrad.ops import group_norm

    return group_norm.available(np.zeros((2, 6, 3), np.float32))


TORCH_NORMS = {
    "group": lambda nd: torch.nn.GroupNorm(3, 6),
    "instance": lambda nd: {1: torch.nn.InstanceNorm1d, 2: torch.nn.InstanceNorm2d,
                            3: torch.nn.InstanceNorm3d}[nd](6, affine=True,
                                                            track_running_stats=True),
}


def _torch_norm_act(model, kind, nd, slope, dtype, channels_last):
    """torch's copy of the norm + activation ``model`` in ``dtype`` and the layout."""
    act = (torch.nn.SiLU() if slope == "silu" else
           torch.nn.ReLU() if slope == 0 else torch.nn.LeakyReLU(slope))
    tm = torch.nn.Sequential(TORCH_NORMS[kind](nd), act)
    with torch.no_grad():
        tm[0].weight.copy_(torch.from_numpy(model[0].weight.data))
        tm[0].bias.copy_(torch.from_numpy(model[0].bias.data))
    tm = tm.to(dtype)
    return tm.to(memory_format=_torch_format(nd)) if channels_last else tm


def _torch_format(nd):
    return torch.channels_last if nd == 2 else torch.channels_last_3d


def _torch_input(x, dtype, nd, channels_last):
    t = torch.tensor(x, dtype=dtype)
    if channels_last and nd in (2, 3):
        t = t.contiguous(memory_format=_torch_format(nd))
    return t.requires_grad_()


@pytest.mark.parametrize("kind", list(NORMS))
@pytest.mark.parametrize("nd, channels_last", [(2, True), (3, True), (2, False)])
@pytest.mark.parametrize("slope, scale", [(0.0, 1.0), (0.2, 1.0), ("silu", 1.0),
                                          ("silu", 60.0)])
def test_norm_activation_fused_matches_torch_float64(kind, nd, channels_last, slope, scale):
    """Oracle: torch float64; the fused float32 pair (the group norm kernels, profiled)
    within twice torch float32's error in the same layout, output and every gradient.
    SiLU also with weights of 60 (its input over [-200, 200]: exp past float32's range
    both ways, where the fused loop's clamps and powers of 2 act)."""
    if not group_norm_kernels_run():
        pytest.skip("the group norm kernels need Numba")
    x = _input(nd, channels_last=channels_last) * 3.0 + 1.0
    model = _norm_act(kind, nd, slope)
    model[0].weight.data[...] *= np.float32(scale)
    y, grads, state, ran = _norm_run(model, x)
    if scale > 1:
        assert np.abs(y).max() > 100 and (y < 0).any()
    assert not any(name.endswith(("relu_forward", "silu_forward")) for name in dict(ran)), ran
    assert dict(ran)["group_norm_forward"] == dict(ran)["group_norm_backward"] == "numba"
    out = {}
    for dtype in (torch.float64, torch.float32):
        tm = _torch_norm_act(model, kind, nd, slope, dtype, channels_last)
        tx = _torch_input(x, dtype, nd, channels_last)
        ty = tm(tx)
        (ty * ty).sum().backward()
        out[dtype] = [t.detach().double().numpy() for t in
                      (ty, tx.grad, tm[0].weight.grad, tm[0].bias.grad)]
        if kind == "instance":
            out[dtype] += [tm[0].running_mean.double().numpy(),
                           tm[0].running_var.double().numpy()]
    for ours, exact, theirs in zip([y, *grads, *state], out[torch.float64],
                                   out[torch.float32]):
        scale = np.abs(exact).max()
        err = np.abs(ours - exact).max() / scale
        torch_err = np.abs(theirs - exact).max() / scale
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


def test_norm_activation_not_fused_without_the_kernels_or_with_hooks():
    """float64 (the reference path), a hook on either module, or instance norm in eval
    mode with running statistics: the activation runs as its own operation, same result."""
    x = _input(2)
    model = _norm_act("group", 2, 0.1).to(cg.float64)
    y, grads, _, ran = _norm_run(model, x.astype(np.float64))
    y0, grads0, _, _ = _norm_run(model, x.astype(np.float64), unfused=True)
    assert "leaky_relu_forward" in dict(ran)
    assert np.array_equal(y, y0) and all(np.array_equal(a, b) for a, b in zip(grads, grads0))
    model = _norm_act("group", 2, 0.1)
    model[1].register_forward_pre_hook(lambda m, i: None)
    assert "leaky_relu_forward" in dict(_norm_run(model, x)[3])
    model = _norm_act("instance", 2, 0.0)
    _norm_run(model, x)  # running statistics to evaluate with
    model.eval()
    y, _, _, ran = _norm_run(model, x)
    y0, _, _, _ = _norm_run(model, x, unfused=True)
    assert "relu_forward" in dict(ran) and np.array_equal(y, y0)


@pytest.mark.parametrize("slope", [0.0, 0.3, "silu"])
def test_second_order_gradients_through_the_fused_norm_activation(slope):
    """create_graph: the fused pair's rule as recorded operations (a (leaky) ReLU's
    derivative a constant from the forward's mask; SiLU's a recorded function of x).
    Oracle: torch float64's first and second derivatives; ours within twice torch
    float32's error."""
    if not group_norm_kernels_run():
        pytest.skip("the group norm kernels need Numba")
    model = _norm_act("group", 2, slope)
    _two_orders_match_torch(
        model, "GroupNormSiLU" if slope == "silu" else "GroupNormReLU",
        lambda dtype: _torch_norm_act(model, "group", 2, slope, dtype, True),
        _input(2, channels_last=True) * 2.0 + 0.3, True)


@pytest.mark.parametrize("norm", ["group", "batch"])
def test_a_leaky_relu_of_slope_zero_is_not_fused_as_a_relu(norm):
    """LeakyReLU(0.0) is not a ReLU: it gives -0 below zero (a ReLU +0) and g * 0 at a NaN
    (a ReLU passes g): no fusion takes it for one, so the pair keeps both, bit for bit."""
    if norm == "group" and not group_norm_kernels_run():
        pytest.skip("the group norm kernels need Numba")
    x = _input(2) * 2.0
    x[0, 0, 0, 0] = np.nan
    runs = []
    for unfused in (False, True):
        model = nn.Sequential(nn.GroupNorm(3, 6) if norm == "group" else nn.BatchNorm2d(6),
                              nn.LeakyReLU(0.0))
        runs.append(_norm_run(model, x, unfused))
    (y, grads, _, ran), (y0, grads0, _, _) = runs
    assert (np.signbit(y0) & (y0 == 0)).any()  # the -0 a fused ReLU would turn into +0
    for a, b in zip([y, *grads], [y0, *grads0]):
        assert a.tobytes() == b.tobytes()
    assert "leaky_relu_forward" in dict(ran)
    # oracle: torch's LeakyReLU(0.0) also gives -0 below zero (at the inputs that are
    # negative in both: float32 roundings may differ right at zero)
    t_in = torch.tensor(np.where(np.isnan(x), 0, x))
    pre = (torch.nn.GroupNorm(3, 6) if norm == "group" else torch.nn.BatchNorm2d(6))(t_in)
    ty = torch.nn.functional.leaky_relu(pre, 0.0).detach().numpy()
    ours_pre = runs[1][0]  # any zero of ours came from a non-positive pre-activation
    both = (ty == 0) & (ours_pre == 0) & ~np.isnan(y)
    assert both.any() and np.array_equal(np.signbit(y[both]), np.signbit(ty[both]))


@pytest.mark.parametrize("kind", list(NORMS))
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("channels_last", [False, True])
def test_norm_silu_fused_runs_one_kernel_each_way_and_keeps_nan(kind, nd, channels_last):
    """GroupNorm / InstanceNorm + SiLU: no SiLU kernel runs (the group norm kernels apply
    it); the output and gradients are the unfused pair's to float32's rounding (the same
    formula in another exp), a NaN (sample, group) NaN in both, the running statistics
    equal bit for bit, the layout kept.  A hook on the SiLU unfuses the pair."""
    if not group_norm_kernels_run():
        pytest.skip("the group norm kernels need Numba")
    x = _input(nd, channels_last=channels_last) * 2.0 + 0.3
    x[1, 4] = np.nan
    (y, grads, state, ran), (y0, grads0, state0, ran0) = [
        _norm_run(_norm_act(kind, nd, "silu"), x, unfused) for unfused in (False, True)]
    assert "silu_forward" in dict(ran0) and "silu_backward" in dict(ran0)
    assert not any(name.startswith("silu") for name, _ in ran), ran
    assert dict(ran)["group_norm_forward"] == dict(ran)["group_norm_backward"] == "numba"
    assert y.strides == y0.strides
    for a, b in zip([y, *grads], [y0, *grads0]):
        assert np.array_equal(np.isnan(a), np.isnan(b)) and np.isnan(a).any()
        ok = ~np.isnan(a)
        np.testing.assert_allclose(a[ok], b[ok], rtol=1e-5, atol=1e-6)
    for a, b in zip(state, state0):
        np.testing.assert_array_equal(a, b)
    model = _norm_act(kind, nd, "silu")
    model[1].register_forward_hook(lambda m, i, o: None)
    assert "silu_forward" in dict(_norm_run(model, x)[3])
    # float64 (the reference path): the pair as two operations, as unfused, bit for bit
    x64 = x.astype(np.float64)
    (y, grads, _, ran), (y0, grads0, _, _) = [
        _norm_run(_norm_act(kind, nd, "silu").to(cg.float64), x64, unfused)
        for unfused in (False, True)]
    assert "silu_forward" in dict(ran) and "group_norm_forward" not in dict(ran)
    for a, b in zip([y, *grads], [y0, *grads0]):
        np.testing.assert_array_equal(a, b)
