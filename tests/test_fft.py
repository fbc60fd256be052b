"""Oracles: the NumPy engine's direct algorithms (float64, every pass of every spec form),
torch float64 (float32 error bound, double backward) and scipy.signal.fftconvolve.

The FFT algorithm (ops/fft.py) runs where the profiler says ``fft``: pinned by
``prefer("fft")`` in the sweep, chosen by the cost model for large kernels.  Its float32
error (max-norm relative, against torch float64) must be within 2x torch's own float32
error on the same values.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.signal
import torch
import torch.nn.functional as tF

import convgrad as cg
import convgrad.functional as F
from convgrad.ops import ConvSpec, conv_forward, conv_input_grad, conv_weight_grad, fft, prefer
from convgrad.ops.lowering import lower

from .torch_agreement import check


def _three_passes(x, w, gy, spec, name):
    """(y, gx, gw) and the profiler's algorithm of each pass, with ``name`` pinned."""
    with prefer(name), cg.profile() as prof:
        out = (conv_forward(x, w, spec), conv_input_grad(gy, w, x.shape, spec),
               conv_weight_grad(x, gy, w.shape, spec))
    return out, [e.algorithm for e in prof.of("conv")]


# (groups, stride, kernel dilation, input dilation, padding (lo, hi)) per spatial dim
SPECS = [
    (1, 1, 1, 1, (2, 1)),
    (2, 2, 1, 1, (0, 3)),
    (3, 1, 2, 1, (3, 3)),          # depthwise (C_in = C_out = groups)
    (1, 1, 1, 2, (-1, 2)),         # input dilation, negative padding
    (3, 2, 2, 2, (-1, -1)),        # depthwise, everything at once, cropping
    (1, 3, 1, 1, (-2, 1)),
]


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("form", range(len(SPECS)))
def test_every_pass_equals_the_direct_engine(nd, form):
    groups, s, dk, di, pad = SPECS[form]
    rng = np.random.default_rng(10 * nd + form)
    L, K = (11, 9, 7)[:nd], (3, 4, 2)[:nd]
    spec = ConvSpec((s,) * nd, (pad,) * nd, (dk,) * nd, (di,) * nd, groups)
    x = rng.standard_normal((2, 3 * (groups if groups > 1 else 2), *L))
    c_out = x.shape[1] if groups == 3 else 4
    w = rng.standard_normal((c_out, x.shape[1] // groups, *K))
    gy = rng.standard_normal(spec.output_shape(x.shape, w.shape))
    ours, algos = _three_passes(x, w, gy, spec, "fft")
    ref, ref_algos = _three_passes(x, w, gy, spec, "im2col")
    assert algos == ["fft"] * 3, algos
    assert "fft" not in "".join(ref_algos)
    for a, b, what in zip(ours, ref, ("y", "gx", "gw")):
        scale = max(np.abs(b).max(), 1.0)  # O(1) inputs; some specs give exact zeros
        assert np.abs(a - b).max() <= 1e-12 * scale, what


def test_tiles_within_a_small_workspace_equal_one_tile():
    """Overlap-save tiles of the output and of the kernel, batch chunks: same result."""
    rng = np.random.default_rng(1)
    spec = ConvSpec((1, 1), ((20, 20),) * 2, (1, 1), (1, 1), 1)
    x, w = rng.standard_normal((3, 2, 96, 80)), rng.standard_normal((2, 2, 41, 41))
    gy = rng.standard_normal(spec.output_shape(x.shape, w.shape))
    whole, _ = _three_passes(x, w, gy, spec, "fft")
    limit = 2**19
    for pass_, a, b, shape in (("forward", x, w, gy.shape), ("weight_grad", x, gy, w.shape)):
        low = lower(pass_, a, b, np.empty(shape), spec)
        Kd, P = low.w.shape[3:], low.out.shape[3:]
        tiles = fft.tiling(*low.x.shape[:3], low.w.shape[1], P, Kd, (1, 1), 8, limit)
        assert tiles.nbytes <= limit
        assert tiles.pt < P or tiles.kt < Kd, tiles  # it really is tiled
    with cg.workspace_limit(limit):
        tiled, algos = _three_passes(x, w, gy, spec, "fft")
    assert algos == ["fft"] * 3
    for a, b in zip(tiled, whole):
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()


def test_same_padding_equals_scipy_fftconvolve():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((1, 1, 200, 190)), rng.standard_normal((1, 1, 31, 25))
    with cg.profile() as prof:  # the cost model's choice: a 31x25 kernel goes to the FFT
        y = F.conv2d(cg.tensor(x), w, padding="same").data
    assert prof.of("conv")[0].algorithm == "fft"
    ref = scipy.signal.fftconvolve(x[0, 0], w[0, 0, ::-1, ::-1], mode="same")
    assert np.abs(y[0, 0] - ref).max() <= 1e-12 * np.abs(ref).max()


# F1-F4 of the issue, scaled down: one channel "same" 2-D and 3-D, depthwise, long 1-D
SMALL_F = [
    ("F1", (1, 1, 160, 160), (1, 1, 31, 31), 1, 15),
    ("F2", (1, 1, 28, 28, 28), (1, 1, 11, 11, 11), 1, 5),
    ("F3", (2, 16, 40, 40), (16, 1, 31, 31), 16, 15),
    ("F4", (2, 4, 4096), (4, 4, 255), 1, 127),
]
_TORCH_CONV = {1: tF.conv1d, 2: tF.conv2d, 3: tF.conv3d}
_CG_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _rel(a, ref) -> float:
    return float(np.abs(np.asarray(a, np.float64) - ref).max() / np.abs(ref).max())


@pytest.mark.parametrize("case", SMALL_F, ids=[c[0] for c in SMALL_F])
def test_float32_error_within_twice_torchs_and_fft_chosen(case):
    _, xs, ws, groups, pad = case
    nd = len(xs) - 2
    rng = np.random.default_rng(3)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.uniform(-1, 1, ws) / math.sqrt(math.prod(ws[1:]))).astype(np.float32)
    results = {}
    for dt in (torch.float32, torch.float64):
        tx, tw = (torch.tensor(a, dtype=dt, requires_grad=True) for a in (x, w))
        y = _TORCH_CONV[nd](tx, tw, padding=pad, groups=groups)
        gy = torch.tensor(np.random.default_rng(4).standard_normal(y.shape), dtype=dt)
        y.backward(gy)
        results[dt] = [y.detach().numpy(), tx.grad.numpy(), tw.grad.numpy()]
    cx, cw = cg.tensor(x, requires_grad=True), cg.tensor(w, requires_grad=True)
    with cg.profile() as prof:  # no pin: the cost model must choose the FFT
        y = _CG_CONV[nd](cx, cw, padding=pad, groups=groups)
        y.backward(cg.tensor(results[torch.float32][0] * 0
                             + np.random.default_rng(4).standard_normal(y.shape)
                             .astype(np.float32)))
    algos = {e.name: e.algorithm for e in prof.of("conv") if e.name != "conv_bias_grad"}
    assert algos == dict.fromkeys(("conv_forward", "conv_input_grad", "conv_weight_grad"),
                                  "fft"), algos
    for ours, i, what in ((y.data, 0, "y"), (cx.grad.data, 1, "gx"), (cw.grad.data, 2, "gw")):
        ref = results[torch.float64][i]
        assert ours.dtype == np.float32
        err, torch_err = _rel(ours, ref), _rel(results[torch.float32][i], ref)
        assert err <= 2 * torch_err, f"{what}: fft {err:.2e} vs torch float32 {torch_err:.2e}"


@pytest.mark.parametrize("nd", [1, 2])
def test_double_backward_through_fft_equals_torch(nd):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, *(13,) * nd))
    w = rng.standard_normal((4, 2, *(5,) * nd))
    kw = dict(stride=2, padding=3, dilation=2, groups=2)
    with prefer("fft"), cg.profile() as prof:
        check(f"fft conv{nd}d", lambda a, b: _CG_CONV[nd](a, b, **kw),
              lambda a, b: _TORCH_CONV[nd](a, b, **kw), [x, w], np.float64, double=True)
    conv_events = [e for e in prof.of("conv") if "bias" not in e.name]
    assert len(conv_events) >= 6 and all(e.algorithm == "fft" for e in conv_events)


def test_small_kernels_stay_direct():
    """The cost model keeps 3x3 and 1x11 windows (W1-W8, SSIM) off the FFT."""
    rng = np.random.default_rng(6)
    for xs, ws, groups, pad in (((2, 16, 32, 32), (16, 16, 3, 3), 1, 1),
                                ((1, 3, 60, 90), (3, 1, 1, 11), 3, 0),
                                ((2, 8, 16, 16, 16), (8, 8, 3, 3, 3), 1, 1),
                                ((1, 16, 12, 12, 12), (16, 16, 3, 3, 3), 1, 1)):
        nd = len(xs) - 2
        spec = ConvSpec((1,) * nd, ((pad, pad),) * nd, (1,) * nd, (1,) * nd, groups)
        x, w = rng.standard_normal(xs), rng.standard_normal(ws)
        gy = rng.standard_normal(spec.output_shape(xs, ws))
        for dt in (np.float32, np.float64):
            with cg.profile() as prof:
                conv_forward(x.astype(dt), w.astype(dt), spec)
                conv_input_grad(gy.astype(dt), w.astype(dt), xs, spec)
                conv_weight_grad(x.astype(dt), gy.astype(dt), ws, spec)
            assert not any("fft" in e.algorithm for e in prof.of("conv")), prof.summary()


def test_prefer_rejects_unknown_names():
    with pytest.raises(ValueError, match="name='fftw'"), prefer("fftw"):
        pass


def test_mixed_precision_computes_in_float64():
    rng = np.random.default_rng(7)
    spec = ConvSpec((1,), ((4, 4),), (1,), (1,), 1)
    x, w = rng.standard_normal((1, 2, 64)).astype(np.float32), rng.standard_normal((3, 2, 9))
    with prefer("fft"):
        y = conv_forward(x, w, spec)
    ref = conv_forward(x.astype(np.float64), w, spec)
    assert y.dtype == np.float64 and np.abs(y - ref).max() <= 1e-12 * np.abs(ref).max()


def test_dask_chunks_use_the_fft():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 1, 96, 96, 96)).astype(np.float32)
    w = (rng.standard_normal((1, 1, 9, 9, 9)) / 27).astype(np.float32)
    spec = ConvSpec((1,) * 3, ((4, 4),) * 3, (1,) * 3, (1,) * 3, 1)
    with cg.profile() as prof:
        y = conv_forward(da.from_array(x, chunks=(1, 1, 48, 48, 96)), w, spec)
        y = y.compute(scheduler="synchronous")
    algos = {e.algorithm for e in prof.of("conv")}
    assert len(prof.of("conv")) == 4 and algos == {"fft"}, prof.summary()
    ref = conv_forward(x.astype(np.float64), w.astype(np.float64), spec)
    assert _rel(y, ref) <= 1e-5


def test_tiling_respects_the_limit_everywhere():
    for args in itertools.product((1, 4), (1, 3), (1, 8), ((50, 70), (300,)), (1, 2)):
        B, G, C, P, s = args
        Kd = tuple(min(p, 33) for p in P)
        for limit in (2**16, 2**20):
            t = fft.tiling(B, G, C, C, P, Kd, (s,) * len(P), 4, limit)
            assert t is None or t.nbytes <= limit
