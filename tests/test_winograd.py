"""Oracle: torch 2.13 in float64 for results; torch float32's error on the same values, in
the same (channels-last) layout, for the float32 bound; the profiler's algorithm for
which kernel ran.

Winograd's F(2x2, 3x3) (``convgrad.ops.winograd``) runs the forward, the input gradient
and the weight gradient of unstrided 3x3 2-D convolutions of channels-last float32
activations: pinned (``prefer("winograd")``), or chosen by the dispatch at 64-128
channels with enough tiles on an AMD processor (the vendor is set for these tests, so
they check the rule on any machine; a test below checks that an Intel processor keeps
oneDNN).
"""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
import convgrad.nn.functional as F
from convgrad.ops import cpu, jit, kernels, prefer, winograd
from convgrad.ops.spec import ConvSpec, Pass

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.skipif(not winograd.available(),
                                 reason="Winograd needs Numba's OpenMP or TBB threads"),
              pytest.mark.usefixtures("torch_threads_as_ours")]

CASES = [  # (N, C, O, H, W, ((lo, hi), (lo, hi)) padding)
    (2, 64, 64, 12, 12, ((1, 1), (1, 1))),
    (3, 40, 24, 9, 7, ((1, 1), (1, 1))),      # odd sizes: a last tile half outside
    (2, 70, 130, 8, 10, ((0, 2), (2, 0))),    # channels in uneven chunks, lopsided padding
    (2, 130, 66, 7, 9, ((0, 0), (0, 0))),     # no padding: 3 chunks of summed channels
    (1, 16, 8, 11, 6, ((-1, 2), (1, -1))),    # crops (negative padding)
]


REAL_VENDOR = cpu.vendor  # before the fixture below replaces it


@pytest.fixture(autouse=True)
def amd_processor(monkeypatch):
    """The dispatch sees an AMD processor, where it takes Winograd (see dispatch)."""
    monkeypatch.setattr(cpu, "vendor", lambda: "AuthenticAMD")


def _np(v) -> np.ndarray:
    """A state dict's value (a Tensor or an ndarray) as a new ndarray."""
    return np.array(v.data if isinstance(v, cg.Tensor) else v)


def _cl(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def _torch_pass(x, w, b, gy, pad, dtype):
    """torch's forward and input gradient on channels-last tensors of ``dtype``."""
    cl = torch.channels_last
    tx = torch.tensor(x, dtype=dtype).contiguous(memory_format=cl).requires_grad_()
    tw = torch.tensor(w, dtype=dtype).contiguous(memory_format=cl)
    (hl, hh), (wl, wh) = pad
    ty = torch.nn.functional.conv2d(torch.nn.functional.pad(tx, (wl, wh, hl, hh)), tw,
                                    torch.tensor(b, dtype=dtype))
    ty.backward(torch.tensor(gy, dtype=dtype).contiguous(memory_format=cl))
    return [t.detach().double().numpy() for t in (ty, tx.grad)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:5])))
def test_pinned_passes_agree_with_torch_float64(case):
    N, C, O, H, W, pad = case
    rng = np.random.default_rng(sum(case[:5]))
    x = _cl(rng.standard_normal((N, C, H, W)).astype(np.float32))
    w = (rng.standard_normal((O, C, 3, 3)) / np.sqrt(9 * C)).astype(np.float32)
    b = rng.standard_normal(O).astype(np.float32)
    Ho, Wo = H + sum(pad[0]) - 2, W + sum(pad[1]) - 2
    gy = _cl(rng.standard_normal((N, O, Ho, Wo)).astype(np.float32))
    spec = ConvSpec(stride=(1, 1), padding=pad, kernel_dilation=(1, 1), input_dilation=(1, 1),
                    groups=1)
    with prefer("winograd"), cg.profile() as prof:
        y = kernels.conv_forward(x, w, spec, (N, O, Ho, Wo), bias=b)
        gx = kernels.conv_input_grad(gy, w, spec, x.shape)
    assert [e.algorithm for e in prof.of("conv")] == ["winograd", "winograd"]
    assert cg.ops.layouts.is_channels_last(y) and cg.ops.layouts.is_channels_last(gx)
    ref = _torch_pass(x, w, b, gy, pad, torch.float64)
    t32 = _torch_pass(x, w, b, gy, pad, torch.float32)
    for what, ours, r, t in zip(("y", "gx"), (y, gx), ref, t32):
        err, t_err = np.abs(ours - r).max(), np.abs(t - r).max()
        assert err <= 2 * max(t_err, 1e-7 * np.abs(r).max()), (what, err, t_err)


def _torch_weight_grad(x, gy, pad, dtype):
    """torch's weight gradient of a 3x3 convolution on channels-last tensors."""
    cl = torch.channels_last
    (hl, hh), (wl, wh) = pad
    tx = torch.nn.functional.pad(torch.tensor(x, dtype=dtype), (wl, wh, hl, hh))
    tgy = torch.tensor(gy, dtype=dtype).contiguous(memory_format=cl)
    gw = torch.nn.grad.conv2d_weight(tx.contiguous(memory_format=cl),
                                     (gy.shape[1], x.shape[1], 3, 3), tgy)
    return gw.double().numpy()


@pytest.mark.parametrize("case", [*CASES, (8, 64, 64, 32, 32, ((1, 1), (1, 1)))],
                         ids=lambda c: "x".join(map(str, c[:5])))
def test_pinned_weight_gradient_agrees_with_torch_float64(case):
    """Both regimes of the products' float32 sums: 16 tiles below 2048 tiles, 128 from
    there (the last case); the same values twice give the same bits."""
    N, C, O, H, W, pad = case
    rng = np.random.default_rng(sum(case[:5]) + 1)
    x = _cl(rng.standard_normal((N, C, H, W)).astype(np.float32))
    Ho, Wo = H + sum(pad[0]) - 2, W + sum(pad[1]) - 2
    gy = _cl(rng.standard_normal((N, O, Ho, Wo)).astype(np.float32))
    spec = ConvSpec(stride=(1, 1), padding=pad, kernel_dilation=(1, 1), input_dilation=(1, 1),
                    groups=1)
    with prefer("winograd"), cg.profile() as prof:
        gw = kernels.conv_weight_grad(x, gy, spec, (O, C, 3, 3))
        again = kernels.conv_weight_grad(x, gy, spec, (O, C, 3, 3))
    assert [e.algorithm for e in prof.of("conv")] == ["winograd", "winograd"]
    assert gw.shape == (O, C, 3, 3) and gw.dtype == np.float32 and gw.flags.c_contiguous
    assert np.array_equal(gw, again)
    ref = _torch_weight_grad(x, gy, pad, torch.float64)
    t32 = _torch_weight_grad(x, gy, pad, torch.float32)
    err, t_err = np.abs(gw - ref).max(), np.abs(t32 - ref).max()
    assert err <= 2 * max(t_err, 1e-7 * np.abs(ref).max()), (err, t_err)


def test_weight_gradient_within_the_workspace_limit():
    """Its workspace (each thread's float64 sums of the kernel's tiles, 16 C O doubles, and
    a block of tile arrays) counts against the limit: one byte below it, the pinned pass
    runs on the NumPy engine instead (chunked to the limit), as accurate as torch's."""
    rng = np.random.default_rng(10)
    x = _cl(rng.standard_normal((8, 128, 32, 32)).astype(np.float32))
    gy = _cl(rng.standard_normal((8, 128, 32, 32)).astype(np.float32))
    spec = ConvSpec(stride=(1, 1), padding=((1, 1), (1, 1)), kernel_dilation=(1, 1),
                    input_dilation=(1, 1), groups=1)
    need = winograd.workspace_bytes(x.shape, gy.shape, Pass.WEIGHT_GRAD)
    assert need >= 16 * 128 * 128 * 8
    algos = []
    for limit in (need, need - 1):
        with cg.workspace_limit(limit), prefer("winograd"), cg.profile() as prof:
            gw = kernels.conv_weight_grad(x, gy, spec, (128, 128, 3, 3))
        algos.append(prof.of("conv")[0].algorithm)
        ref = _torch_weight_grad(x, gy, ((1, 1), (1, 1)), torch.float64)
        t32 = _torch_weight_grad(x, gy, ((1, 1), (1, 1)), torch.float32)
        assert np.abs(gw - ref).max() <= 2 * np.abs(t32 - ref).max()
    assert algos == ["winograd", "im2col"], algos


def test_weight_gradient_of_a_channels_first_output_gradient_stays_on_onednn():
    """The weight gradient's loops read both activations channels-last; an NCHW output
    gradient (a channels-last input) goes to oneDNN, unconverted."""
    rng = np.random.default_rng(9)
    x = _cl(rng.standard_normal((8, 64, 32, 32)).astype(np.float32))
    gy = rng.standard_normal((8, 64, 32, 32)).astype(np.float32)
    spec = ConvSpec(stride=(1, 1), padding=((1, 1), (1, 1)), kernel_dilation=(1, 1),
                    input_dilation=(1, 1), groups=1)
    with cg.profile() as prof:
        gw = kernels.conv_weight_grad(x, gy, spec, (64, 64, 3, 3))
    assert prof.of("conv")[0].algorithm.startswith("onednn")
    ref = _torch_weight_grad(x, gy, ((1, 1), (1, 1)), torch.float64)
    assert np.abs(gw - ref).max() <= 1e-5 * np.abs(ref).max()


def test_fused_bias_and_leaky_relu_agree_with_torch_float64():
    """A Conv2d + LeakyReLU pair of a Sequential runs as one forward (the activation
    applied as the tiles are written) and its backward through the saved output, all
    three passes on Winograd (the dispatch's choice).

    The references take the branch convgrad's forward took: with most initial weights
    some of the 786432 pre-activations lie within float32 rounding of zero (1e-8 to 1e-7
    in float64), where any float32 convolution, torch's too, may land on either side,
    and the gradient then moves by 0.9 w in a 3x3 patch (0.037, in about 1 draw of 10).
    Where our branch differs from float64's, the pre-activation must lie within twice
    torch float32's error of zero."""
    rng = np.random.default_rng(3)
    x = _cl(rng.standard_normal((8, 64, 32, 32)).astype(np.float32))
    net = cg.nn.Sequential(cg.nn.Conv2d(64, 96, 3, padding=1), cg.nn.LeakyReLU(0.1))
    cx = cg.tensor(x).requires_grad_()
    with cg.profile() as prof:
        y = net(cx)
        y.sum().backward()
    runs = {e.name: e.algorithm for e in prof.of("conv")}
    assert runs["conv_forward"] == "winograd+relu", runs
    assert runs["conv_input_grad"] == runs["conv_weight_grad"] == "winograd", runs
    positive = torch.tensor(np.asarray(y.data) > 0)
    conv = torch.nn.Conv2d(64, 96, 3, padding=1)
    conv.load_state_dict({k[2:]: torch.tensor(_np(v)) for k, v in net.state_dict().items()})
    out = {}
    for dtype in (torch.float64, torch.float32):
        m = conv.to(dtype).to(memory_format=torch.channels_last)
        m.zero_grad()
        tx = torch.tensor(x, dtype=dtype).contiguous(memory_format=torch.channels_last)
        tx.requires_grad_()
        pre = m(tx)
        ty = pre * torch.where(positive, 1.0, 0.1).to(dtype)  # LeakyReLU on our branch
        ty.sum().backward()
        out[dtype] = [t.detach().double().numpy() for t in (pre, ty, tx.grad, m.weight.grad)]
    pre64, pre32 = out[torch.float64][0], out[torch.float32][0]
    doubt = positive.numpy() != (pre64 > 0)
    assert (np.abs(pre64[doubt]) <= 2 * np.abs(pre32 - pre64).max()).all()
    for what, ours, r, t in zip(("y", "gx", "gw"), (y.data, cx.grad.data, net[0].weight.grad.data),
                                out[torch.float64][1:], out[torch.float32][1:]):
        err, t_err = np.abs(ours - r).max(), np.abs(t - r).max()
        assert err <= 2 * max(t_err, 1e-7 * np.abs(r).max()), (what, err, t_err)


def test_fused_relu_keeps_nan_as_torch():
    """The ReLU applied in the output transform is ``max(v, 0)``: a NaN stays NaN (as
    torch's ReLU), negatives become +0, the rest within 2x torch float32's error (same
    channels-last layout) against torch float64."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 64, 10, 10)).astype(np.float32)
    x[0, 5, 4, 4] = np.nan
    x = _cl(x)
    w = (rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32)
    spec = ConvSpec(stride=(1, 1), padding=((1, 1), (1, 1)), kernel_dilation=(1, 1),
                    input_dilation=(1, 1), groups=1)
    with prefer("winograd"), cg.profile() as prof:
        y = kernels.conv_forward(x, w, spec, (2, 64, 10, 10), relu_slope=0.0)
    assert [e.algorithm for e in prof.of("conv")] == ["winograd+relu"]
    ref, t32 = [torch.relu(torch.nn.functional.conv2d(
        torch.tensor(x, dtype=dt).contiguous(memory_format=torch.channels_last),
        torch.tensor(w, dtype=dt), padding=1)).double().numpy()
        for dt in (torch.float64, torch.float32)]
    nan = np.isnan(ref)
    assert nan.sum() == 9 * 64 and np.array_equal(np.isnan(y), nan)
    assert not np.signbit(y[~nan]).any()
    err, t_err = np.abs(y - ref)[~nan].max(), np.abs(t32 - ref)[~nan].max()
    assert err <= 2 * max(t_err, 1e-7 * np.abs(ref[~nan]).max()), (err, t_err)


def _algorithms(x, w, **kw):
    """The algorithm of each pass of a convolution whose output gradient is dense, in the
    output's layout (as a network's is)."""
    cx, cw = cg.tensor(x).requires_grad_(), cg.tensor(w).requires_grad_()
    with cg.profile() as prof:
        y = F.conv2d(cx, cw, **kw)
        y.backward(cg.ones_like(y))
    return {e.name: e.algorithm for e in prof.of("conv") if e.name != "conv_bias_grad"}


def test_dispatch_takes_winograd_where_it_measured_faster():
    rng = np.random.default_rng(5)
    x = _cl(rng.standard_normal((8, 64, 32, 32)).astype(np.float32))  # 2048 tiles
    w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32) / 24
    runs = _algorithms(x, w, padding=1)
    assert set(runs.values()) == {"winograd"}, runs


def test_while_the_warm_up_loads_its_loops_onednn_runs_and_is_not_kept(monkeypatch):
    """A first step does not wait for the warm-up thread to load Winograd's loops: oneDNN
    runs the pass meanwhile, and the dispatch does not keep that answer; a pin, or
    ``use_deterministic_algorithms(True)``, waits for them instead."""
    loading = {"dispatch.winograd_weight"}  # the forward's loops loaded, the weight's not
    monkeypatch.setattr(jit, "still_loading",
                        lambda kernel: not jit._waits and kernel in loading)
    rng = np.random.default_rng(5)
    x = _cl(rng.standard_normal((8, 64, 32, 32)).astype(np.float32))
    w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32) / 24
    cx, cw = cg.tensor(x).requires_grad_(), cg.tensor(w).requires_grad_()
    with cg.profile() as prof:
        y = F.conv2d(cx, cw, padding=1)
        y.backward(cg.ones_like(y))
    runs = {e.name: e.algorithm for e in prof.of("conv") if e.name != "conv_bias_grad"}
    assert runs["conv_weight_grad"].startswith("onednn"), runs
    assert runs["conv_forward"] == runs["conv_input_grad"] == "winograd", runs
    # the mixed step's gradients as torch's: within twice torch float32's error
    ref = {}
    for dt in (torch.float64, torch.float32):
        tx = torch.tensor(x, dtype=dt).contiguous(memory_format=torch.channels_last)
        tw = torch.tensor(w, dtype=dt).contiguous(memory_format=torch.channels_last)
        tx.requires_grad_(), tw.requires_grad_()
        ty = torch.nn.functional.conv2d(tx, tw, padding=1)
        ty.backward(torch.ones_like(ty))
        ref[dt] = [t.detach().double().numpy() for t in (ty, tx.grad, tw.grad)]
    for ours, r64, r32 in zip((y.data, cx.grad.data, cw.grad.data), ref[torch.float64],
                              ref[torch.float32]):
        err, t_err = np.abs(ours - r64).max(), np.abs(r32 - r64).max()
        assert err <= 2 * max(t_err, 1e-7 * np.abs(r64).max()), (err, t_err)
    with prefer("winograd"):
        assert set(_algorithms(x, w, padding=1).values()) == {"winograd"}
    cg.use_deterministic_algorithms(True)
    try:
        assert set(_algorithms(x, w, padding=1).values()) == {"winograd"}
    finally:
        cg.use_deterministic_algorithms(False)
    loading.clear()  # loaded: the same call now takes Winograd
    assert set(_algorithms(x, w, padding=1).values()) == {"winograd"}


@pytest.mark.parametrize("vendor", ["GenuineIntel", "", "ARM"])
def test_dispatch_keeps_onednn_on_other_processors(monkeypatch, vendor):
    """Where Winograd measured slower than oneDNN's direct kernels (an Intel Xeon), or
    was never measured, the same shape stays on oneDNN; pinned, it still runs."""
    monkeypatch.setattr(cpu, "vendor", lambda: vendor)
    rng = np.random.default_rng(5)
    x = _cl(rng.standard_normal((8, 64, 32, 32)).astype(np.float32))
    w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32) / 24
    runs = _algorithms(x, w, padding=1)
    assert all(a.startswith("onednn") for a in runs.values()), runs
    with prefer("winograd"):
        runs = _algorithms(x, w, padding=1)
    assert set(runs.values()) == {"winograd"}, runs


def test_the_vendor_is_read_from_the_processor():
    """``cpu.vendor`` (unpatched) is what /proc/cpuinfo names, where there is one."""
    import pathlib

    info = pathlib.Path("/proc/cpuinfo")
    if not info.exists():
        pytest.skip("no /proc/cpuinfo")
    ids = {ln.split(":", 1)[1].strip() for ln in info.read_text().splitlines()
           if ln.startswith("vendor_id")}
    if not ids:
        pytest.skip("no vendor_id in /proc/cpuinfo")
    assert REAL_VENDOR() in ids


@pytest.mark.parametrize("why,shape,wshape,kw,layout", [
    ("NCHW activations", (8, 64, 32, 32), (64, 64, 3, 3), {"padding": 1}, "nchw"),
    ("stride 2", (8, 64, 64, 64), (64, 64, 3, 3), {"padding": 1, "stride": 2}, "cl"),
    ("dilated kernel", (8, 64, 32, 32), (64, 64, 3, 3), {"padding": 2, "dilation": 2}, "cl"),
    ("groups", (8, 64, 32, 32), (64, 32, 3, 3), {"padding": 1, "groups": 2}, "cl"),
    ("5x5 kernel", (8, 64, 32, 32), (64, 64, 5, 5), {"padding": 2}, "cl"),
    ("256 channels", (8, 256, 32, 32), (256, 256, 3, 3), {"padding": 1}, "cl"),
    ("32 channels", (8, 32, 32, 32), (32, 32, 3, 3), {"padding": 1}, "cl"),
    ("few tiles", (2, 64, 16, 16), (64, 64, 3, 3), {"padding": 1}, "cl"),
])
def test_dispatch_leaves_the_rest_to_onednn(why, shape, wshape, kw, layout):
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape).astype(np.float32)
    x = _cl(x) if layout == "cl" else x
    w = rng.standard_normal(wshape).astype(np.float32) / 24
    runs = _algorithms(x, w, **kw)
    assert all(a.startswith("onednn") for a in runs.values()), (why, runs)


def test_float64_stays_on_the_reference_engine():
    rng = np.random.default_rng(7)
    x = _cl(rng.standard_normal((8, 64, 32, 32)))
    w = rng.standard_normal((64, 64, 3, 3)) / 24
    runs = _algorithms(x, w, padding=1)
    assert not any("winograd" in a or "onednn" in a for a in runs.values()), runs


def test_a_training_step_through_winograd_agrees_with_torch():
    """A small channels-last network whose 64-channel convolution the dispatch hands to
    Winograd: one SGD step's parameters as torch float64's, within 2x torch float32's
    error in the same layout.  SiLU, not ReLU: a million ReLU inputs always put some
    within float32 rounding of zero (no seed of 200 kept them 5x torch's error away),
    where either branch is right and the gradients differ."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((8, 3, 32, 32)).astype(np.float32)
    labels = rng.integers(0, 10, 8)

    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.SiLU(),
                             nn.Conv2d(64, 64, 3, padding=1), nn.SiLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))

    net = build(cg)
    state = {k: _np(v) for k, v in net.state_dict().items()}
    opt = cg.optim.SGD(net.parameters(), lr=0.1)
    with cg.profile() as prof:
        loss = F.cross_entropy(net(cg.tensor(x)), cg.tensor(labels))
        loss.backward()
        opt.step()
    algos = [e.algorithm for e in prof.of("conv") if e.name == "conv_forward"]
    assert algos[1] == "winograd", algos
    out = {}
    cl = torch.channels_last  # the layout convgrad's convolutions produce
    for dtype in (torch.float64, torch.float32):
        m = build(torch).to(dtype).to(memory_format=cl)
        m.load_state_dict({k: torch.tensor(v, dtype=dtype) for k, v in state.items()})
        topt = torch.optim.SGD(m.parameters(), lr=0.1)
        tx = torch.tensor(x, dtype=dtype).contiguous(memory_format=cl)
        tl = torch.nn.functional.cross_entropy(m(tx), torch.tensor(labels))
        tl.backward()
        topt.step()
        out[dtype] = {k: v.detach().double().numpy() for k, v in m.state_dict().items()}
    ours = {k: _np(v) for k, v in net.state_dict().items()}
    for k in ours:
        r, t = out[torch.float64][k], out[torch.float32][k]
        err, t_err = np.abs(ours[k] - r).max(), np.abs(t - r).max()
        assert err <= 2 * max(t_err, 1e-7 * np.abs(r).max()), (k, err, t_err)
