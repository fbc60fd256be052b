"""Oracle: torch 2.13 (float64) for results; the profiler's algorithm for which backend ran.

The dispatch point sends float32 passes that oneDNN supports to oneDNN and everything
else (float64, 4 spatial dims, input dilation with a stride, pinned NumPy algorithms)
to the NumPy engine; activations that oneDNN produces live channels-last in memory.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad.ops import layouts, onednn_available, prefer

torch = pytest.importorskip("torch")
needs_onednn = pytest.mark.skipif(not onednn_available(), reason="oneDNN is not available here")


def _fwd_bwd(fn, x, w, b, **kw):
    cx, cw, cb = (cg.tensor(a, requires_grad=True) for a in (x, w, b))
    with cg.profile() as prof:
        y = fn(cx, cw, cb, **kw)
        (y * y).sum().backward()
    return y, (cx.grad, cw.grad, cb.grad), {e.name: e.algorithm for e in prof.of("conv")}


def _torch(fn, x, w, b, **kw):
    tx, tw, tb = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b))
    y = fn(tx, tw, tb, **kw)
    (y * y).sum().backward()
    return y.detach().numpy(), (tx.grad.numpy(), tw.grad.numpy(), tb.grad.numpy())


CASES = {
    "conv2d": (F.conv2d, torch.nn.functional.conv2d, (2, 8, 12, 12), (16, 8, 3, 3),
               dict(padding=1, stride=2)),
    "depthwise": (F.conv2d, torch.nn.functional.conv2d, (2, 16, 12, 12), (16, 1, 3, 3),
                  dict(padding=1, groups=16)),
    "conv3d": (F.conv3d, torch.nn.functional.conv3d, (1, 4, 6, 6, 6), (4, 4, 3, 3, 3),
               dict(padding=1)),
    "conv1d": (F.conv1d, torch.nn.functional.conv1d, (2, 6, 30), (6, 6, 5),
               dict(padding=4, dilation=2)),
    "conv_transpose2d": (F.conv_transpose2d, torch.nn.functional.conv_transpose2d,
                         (2, 8, 6, 6), (8, 4, 4, 4), dict(stride=2, padding=1)),
}


@needs_onednn
@pytest.mark.parametrize("name", list(CASES))
def test_float32_runs_on_onednn_and_agrees(name):
    ours, theirs, xs, ws, kw = CASES[name]
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    b = rng.standard_normal(ws[1] * kw.get("groups", 1) if "transpose" in name else ws[0])
    y, grads, algos = _fwd_bwd(ours, *(a.astype(np.float32) for a in (x, w, b)), **kw)
    for kernel in ("conv_forward", "conv_input_grad", "conv_weight_grad"):
        assert algos[kernel].startswith("onednn:"), (kernel, algos)
    ry, rgrads = _torch(theirs, x, w, b, **kw)
    for got, want in zip((y, *grads), (ry, *rgrads)):
        np.testing.assert_allclose(got.data, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("why", ["float64", "pinned numpy", "4 spatial dims",
                                 "input dilation with a stride"])
def test_the_numpy_engine_runs_the_rest(why):
    rng = np.random.default_rng(1)
    dtype = np.float64 if why == "float64" else np.float32
    nd = 4 if why == "4 spatial dims" else 2
    x = rng.standard_normal((1, 4) + (5,) * nd).astype(dtype)
    w = rng.standard_normal((4, 4) + (2,) * nd).astype(dtype)
    kw = dict(stride=2, input_dilation=2) if "dilation" in why else {}
    pin = prefer("numpy") if why == "pinned numpy" else prefer("onednn")
    with pin, cg.profile() as prof:
        y = F.conv_general(x, w, **kw)
    (ev,) = prof.of("conv")
    assert not ev.algorithm.startswith("onednn"), ev.algorithm
    with prefer("im2col"):
        ref = F.conv_general(x.astype(np.float64), w.astype(np.float64), **kw)
    np.testing.assert_allclose(y.data, ref.data, rtol=1e-5, atol=1e-5)


@needs_onednn
def test_activations_stay_channels_last_through_a_network():
    net = cg.nn.Sequential(cg.nn.Conv2d(3, 8, 3, padding=1), cg.nn.ReLU(),
                           cg.nn.Conv2d(8, 8, 3, padding=1))
    x = cg.randn(2, 3, 10, 10, rng=2)
    h = net[1](net[0](x))
    assert onednn_is_cl(h.data), h.data.strides  # produced by a convolution, kept by relu
    with cg.profile() as prof:
        net(x).sum().backward()
    assert all(e.algorithm.startswith("onednn") for e in prof.of("conv")
               if e.name != "conv_bias_grad")
    tnet = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(8, 8, 3, padding=1)).double()
    tnet.load_state_dict({k: torch.tensor(v, dtype=torch.float64)
                          for k, v in net.state_dict().items()})
    ty = tnet(torch.tensor(x.data, dtype=torch.float64))
    np.testing.assert_allclose(net(x).data, ty.detach().numpy(), rtol=1e-4, atol=1e-4)


def onednn_is_cl(a: np.ndarray) -> bool:

    return layouts.is_channels_last(a)


@pytest.mark.parametrize("env", [{"CONVGRAD_ONEDNN": "0"},
                                 {"CONVGRAD_ONEDNN_LIBRARY": os.path.abspath(__file__)}])
def test_disabled_or_broken_library_falls_back_to_numpy(env):
    code = ("import numpy as np, convgrad as cg, convgrad.functional as F\n"
            "x = cg.randn(1, 4, 8, 8, rng=0); w = cg.randn(4, 4, 3, 3, rng=1)\n"
            "with cg.profile() as p: y = F.conv2d(x, w, padding=1)\n"
            "print(cg.ops.onednn_available(), p.of('conv')[0].algorithm, float(y.data.sum()))\n")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "False" and not out[1].startswith("onednn"), out
    x = cg.randn(1, 4, 8, 8, rng=0)
    w = cg.randn(4, 4, 3, 3, rng=1)
    with prefer("numpy"):
        ref = F.conv2d(x, w, padding=1)
    assert abs(float(out[2]) - float(ref.data.sum())) <= 1e-3 * max(1.0, abs(float(out[2])))


@needs_onednn
@pytest.mark.parametrize("shape, taps, groups, forward, input_grad", [
    ((2, 3, 40, 40), (5, 1), 3, "onednn", "onednn"),   # small: the direct loops' start loses
    ((4, 3, 96, 96), (5, 1), 3, "direct", "onednn"),   # 1-D, three groups: backward-data
    ((4, 3, 64, 64), (5, 5), 3, "direct", "direct"),   # 2-D, three groups: the direct loops
    ((16, 1, 96, 96), (5, 1), 1, "direct", "direct"),  # one channel, large: the direct loops
    ((8, 1, 24, 24), (5, 1), 1, "onednn", "onednn"),   # one channel, small: oneDNN's GEMM
])
def test_window_passes_run_where_measured_fastest(shape, taps, groups, forward, input_grad):
    """A few one-channel groups (an SSIM window): the direct loops or oneDNN per pass
    and size (measured; see dispatch.DIRECT_ONE_CHANNEL_MIN_MACS)."""
    from convgrad.ops import jit

    if not jit.enabled():
        pytest.skip("the direct loops need Numba")
    x = cg.randn(*shape, rng=3, requires_grad=True)
    win = np.full((groups, 1, *taps), 0.2, np.float32)
    with cg.profile() as prof:
        y = F.conv2d(x, win, groups=groups)
        y.sum().backward()
    algos = {e.name: e.algorithm.split(":")[0] for e in prof.of("conv")}
    assert (algos["conv_forward"], algos["conv_input_grad"]) == (forward, input_grad)
    # oracle: torch float64; within twice torch float32's own error on the same values
    results = {}
    for dtype in (torch.float64, torch.float32):
        tx = torch.tensor(x.data, dtype=dtype, requires_grad=True)
        ty = torch.nn.functional.conv2d(tx, torch.tensor(win, dtype=dtype), groups=groups)
        ty.sum().backward()
        results[dtype] = (ty.detach().double().numpy(), tx.grad.double().numpy())
    ref, ref_g = results[torch.float64]
    t32, t32_g = results[torch.float32]
    assert np.abs(y.data - ref).max() <= 2 * max(np.abs(t32 - ref).max(), 1e-7)
    assert np.abs(x.grad.data - ref_g).max() <= 2 * max(np.abs(t32_g - ref_g).max(), 1e-7)


def test_warm_up_loads_the_direct_loops_that_windows_run():
    """The background warm-up calls the float32 row loops, serial and parallel, so a
    network's first MS-SSIM window does not load them from Numba's cache (and their
    result on the tiny arrays is the window's sum)."""
    from convgrad.ops import direct, jit

    if not jit.enabled():
        pytest.skip("the direct loops need Numba")

    assert direct._exercise in jit._exercises
    direct._exercise()
    assert {("rows", False, False), ("rows", True, False)} <= set(direct._kernels)
    x = np.arange(36, dtype=np.float32).reshape(1, 1, 1, 6, 6)
    out = np.empty((1, 1, 1, 4, 6), np.float32)
    direct.direct_conv(x, np.ones((1, 1, 1, 3, 1), np.float32), out, (1, 1), (0, 0), (1, 1),
                       1 << 20, "rows", True, False)
    np.testing.assert_array_equal(out[0, 0, 0], x[0, 0, 0, :4] + x[0, 0, 0, 1:5] + x[0, 0, 0, 2:])


@pytest.mark.parametrize("pass_name, x_shape, w_shape, stride, padding, groups, family, expected", [
    ("forward", (8, 512, 4, 4), (512, 512, 3, 3), 1, 1, 1, "convolution", True),
    ("forward", (8, 128, 16, 16), (128, 128, 3, 3), 1, 1, 1, "convolution", True),  # wide
    ("forward", (8, 64, 32, 32), (128, 64, 3, 3), 2, 1, 1, "convolution", False),  # 64 in
    ("input_grad", (8, 512, 4, 4), (512, 512, 3, 3), 1, 1, 1, "convolution", False),  # error
    ("forward", (8, 256, 8, 8), (512, 256, 4, 4), 2, 1, 1, "convolution", False),  # 16 taps
    ("forward", (8, 64, 32, 32), (128, 64, 1, 1), 2, 0, 1, "convolution", True),  # 1x1, s2
    ("input_grad", (8, 64, 32, 32), (128, 64, 1, 1), 2, 0, 1, "convolution", True),
    ("forward", (8, 64, 32, 32), (128, 64, 1, 1), 1, 0, 1, "convolution", False),  # stride 1
    ("forward", (8, 64, 32, 32), (64, 64, 3, 3), 1, 1, 1, "convolution", False),  # small
    ("weight_grad", (8, 512, 4, 4), (512, 512, 3, 3), 1, 1, 1, "convolution", False),
    ("forward", (8, 512, 4, 4), (512, 128, 3, 3), 1, 1, 4, "convolution", False),  # groups
    ("forward", (8, 512, 4, 4), (512, 512, 3, 3), 1, 1, 1, "deconvolution", False),
])
def test_the_16x16_weight_rule(pass_name, x_shape, w_shape, stride, padding, groups, family,
                               expected):
    """Which passes ask oneDNN for 16x16-blocked weights (the rule's own cases; the
    measurements behind them are in ``_plan.weights_16x16``)."""
    from dataclasses import replace

    from convgrad.ops.onednn._geometry import geometry
    from convgrad.ops.onednn._plan import weights_16x16
    from convgrad.ops.spec import ConvSpec

    spec = ConvSpec((stride,) * 2, ((padding, padding),) * 2, (1, 1), (1, 1), groups)
    y_shape = spec.output_shape(x_shape, w_shape)
    roles = {"forward": (x_shape, w_shape, y_shape), "input_grad": (y_shape, w_shape, x_shape),
             "weight_grad": (x_shape, y_shape, w_shape)}[pass_name]
    geo = replace(geometry(pass_name, *roles, spec), family=family)
    assert weights_16x16(geo) is expected


@needs_onednn
@pytest.mark.parametrize("x_shape, w_shape, stride, padding, blocked, reference", [
    # wide convolutions (128+ channels in and out): the forward (and an unstrided input
    # gradient) on blocked activations and 16x16 weights, as accurate as torch NCHW
    ((4, 256, 8, 8), (512, 256, 3, 3), 2, 1, (True, False), "nchw"),
    ((4, 512, 4, 4), (512, 512, 3, 3), 1, 1, (True, True), "nchw"),
    ((4, 64, 16, 16), (128, 64, 1, 1), 2, 0, (True, True), "nchw"),  # a strided 1x1
    # a small weight: oneDNN's choice on channels-last activations (its error is torch
    # channels_last's, up to 3-10x torch NCHW's; see _plan.hand_over)
    ((4, 64, 16, 16), (64, 64, 3, 3), 1, 1, (False, False), "channels_last"),
])
def test_wide_convolutions_run_blocked_and_agree(x_shape, w_shape, stride, padding, blocked,
                                                     reference):
    """Channels-last activations as in a network: the forward of a wide convolution (and
    its unstrided input gradient) and both passes of a strided 1x1 run oneDNN's jit kernel
    on 16x16 blocks (on AVX-512, where measured; elsewhere oneDNN's choice, here brgemm
    kernels), and all three passes agree with torch float64 within 2x the error of
    torch float32: NCHW torch for those, channels_last torch for the small weight
    (channels-last kernels sum in another order: 3-10x NCHW's error in both libraries)."""
    rng = np.random.default_rng(0)
    xd = rng.standard_normal(x_shape, dtype=np.float32)
    wd = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    x = cg.tensor(xd).contiguous(memory_format=cg.channels_last).requires_grad_()
    w = cg.tensor(wd, requires_grad=True)
    with cg.profile() as prof:
        y = F.conv2d(x, w, stride=stride, padding=padding)
    g = rng.standard_normal(y.shape, dtype=np.float32)
    with cg.profile() as prof_b:
        y.backward(cg.tensor(g).contiguous(memory_format=cg.channels_last))
    algos = {e.name: e.algorithm for e in [*prof.of("conv"), *prof_b.of("conv")]}
    if "avx512" in algos["conv_weight_grad"]:  # measured on AVX-512 only
        for name, b in zip(("conv_forward", "conv_input_grad"), blocked):
            assert algos[name].startswith("onednn:jit") == b, algos
    results = {}  # torch float32 in the reference layout
    fmt = torch.channels_last if reference == "channels_last" else torch.contiguous_format
    for dtype in (torch.float64, torch.float32):
        tx = torch.tensor(xd, dtype=dtype).contiguous(memory_format=fmt).requires_grad_()
        tw = torch.tensor(wd, dtype=dtype, requires_grad=True)
        ty = torch.nn.functional.conv2d(tx, tw, stride=stride, padding=padding)
        ty.backward(torch.tensor(g, dtype=dtype).contiguous(memory_format=fmt))
        results[dtype] = [t.detach().double().numpy() for t in (ty, tx.grad, tw.grad)]
    for ours, ref, t32, what in zip((y.data, x.grad.data, w.grad.data),
                                    results[torch.float64], results[torch.float32],
                                    ("forward", "input gradient", "weight gradient")):
        err, t_err = np.abs(ours - ref).max(), np.abs(t32 - ref).max()
        assert err <= 2 * max(t_err, 1e-7 * np.abs(ref).max()), (what, err, t_err)


def test_an_unpickled_network_runs_the_same_kernels():
    """Arrays that come back from pickle (a pickled model, DataLoader workers) carry a
    float32 dtype object equal to, but not the same object as, NumPy's own: every kernel
    family takes them as float32 (they used to fall to the NumPy engine, im2col), and the
    copy computes the original's values bit for bit."""
    import pickle

    from convgrad import nn

    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.Conv2d(16, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU())
    x = np.random.default_rng(0).standard_normal((8, 3, 64, 64)).astype(np.float32)
    runs = []
    for model in (net, pickle.loads(pickle.dumps(net))):
        xt = cg.tensor(pickle.loads(pickle.dumps(x)), requires_grad=True)
        assert model is net or xt.data.dtype is not np.dtype(np.float32)
        with cg.profile() as prof:
            y = model(xt)
            (y * y).sum().backward()
        runs.append(([(e.name, e.algorithm) for e in prof.events], y.data, xt.grad.data))
    (ev_a, y_a, g_a), (ev_b, y_b, g_b) = runs
    assert ev_a == ev_b
    if onednn_available():
        assert any(alg.startswith("onednn") for name, alg in ev_b if name == "conv_forward")
    np.testing.assert_array_equal(y_a, y_b)
    np.testing.assert_array_equal(g_a, g_b)


@needs_onednn
@pytest.mark.parametrize("x_shape, w_shape, stride, padding", [
    ((4, 3, 32, 32), (16, 3, 4, 4), 2, 1),  # DCGAN's discriminator input
    ((2, 3, 48, 48), (16, 3, 7, 7), 2, 3),  # ResNet's stem
    ((2, 1, 12, 12, 12), (8, 1, 3, 3, 3), 1, 1),  # a 3-D U-Net's first layer
    ((4, 6, 16, 16), (16, 6, 3, 3), 1, 1),
])
def test_first_layer_weight_gradient_reads_channels_last_gradient_as_it_is(
        x_shape, w_shape, stride, padding):
    """A weight gradient reading few input channels (a network's first layer) hands the
    channels-last gradient of its output to oneDNN as it lies, with no reorder of it to
    blocks (the reorder cost more than the blocked kernel saved; ``_plan.hand_over``),
    and agrees with torch float64 within 2x torch float32's error (channels_last, the
    layout both libraries run)."""
    rng = np.random.default_rng(0)
    nd = len(x_shape) - 2
    conv = F.conv2d if nd == 2 else F.conv3d
    fmt_cg = cg.channels_last if nd == 2 else cg.channels_last_3d
    fmt_t = torch.channels_last if nd == 2 else torch.channels_last_3d
    xd = rng.standard_normal(x_shape, dtype=np.float32)
    wd = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    x = cg.tensor(xd).contiguous(memory_format=fmt_cg)
    w = cg.tensor(wd, requires_grad=True)
    y = conv(x, w, stride=stride, padding=padding)
    g = rng.standard_normal(y.shape, dtype=np.float32)
    with cg.profile() as prof:
        y.backward(cg.tensor(g).contiguous(memory_format=fmt_cg))
    (dw,) = prof.of("conv")
    assert dw.name == "conv_weight_grad" and dw.algorithm.startswith("onednn"), dw
    reordered = [e.shapes[0] for e in prof.events if e.name == "reorder"]
    assert tuple(y.shape) not in reordered, reordered
    results = {}
    for dtype in (torch.float64, torch.float32):
        tx = torch.tensor(xd, dtype=dtype).contiguous(memory_format=fmt_t)
        tw = torch.tensor(wd, dtype=dtype, requires_grad=True)
        tconv = torch.nn.functional.conv2d if nd == 2 else torch.nn.functional.conv3d
        ty = tconv(tx, tw, stride=stride, padding=padding)
        ty.backward(torch.tensor(g, dtype=dtype).contiguous(memory_format=fmt_t))
        results[dtype] = tw.grad.double().numpy()
    ref = results[torch.float64]
    err, t_err = np.abs(w.grad.data - ref).max(), np.abs(results[torch.float32] - ref).max()
    assert err <= 2 * max(t_err, 1e-7 * np.abs(ref).max()), (err, t_err)
