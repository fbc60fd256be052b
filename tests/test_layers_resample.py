"""Oracle: torch 2.13 F.interpolate, nn.Upsample, pixel_shuffle/unshuffle on the same
inputs (outputs, gradients, second-order gradients); where torch's gradient is not the
adjoint of its own forward, the adjoint identity <M x, v> = <x, M^T v> instead."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad import nn
from convgrad.functional.interpolate import UPSAMPLING_PATH

from .torch_agreement import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(3)
DTYPES = [np.float64, np.float32]

SHAPES = {1: (2, 3, 5), 2: (1, 2, 5, 4), 3: (1, 2, 4, 3, 5)}
MODES = [("nearest", 1), ("nearest", 2), ("nearest", 3), ("nearest-exact", 1),
         ("nearest-exact", 2), ("nearest-exact", 3), ("linear", 1), ("bilinear", 2),
         ("bicubic", 2), ("trilinear", 3), ("area", 1), ("area", 2), ("area", 3)]
SPECS = [dict(scale_factor=2), dict(scale_factor=3), dict(scale_factor=1.5),
         dict(scale_factor=0.5), dict(scale_factor=0.37), dict(scale_factor=2.6),
         dict(scale_factor=1.7, recompute_scale_factor=True), dict(size=7), dict(size=3),
         dict(size=1), dict(size=10), dict(scale_factor=1.0)]


# the interpolating modes run under both implementations of integer upsampling
CASES = [(mode, nd, path) for mode, nd in MODES
         for path in (("conv", "matrix") if mode in ("linear", "bilinear", "bicubic",
                                                     "trilinear") else ("default",))]


@pytest.fixture
def upsampling_path(request):
    saved = UPSAMPLING_PATH["value"]
    UPSAMPLING_PATH["value"] = "matrix" if request.param == "matrix" else "conv"
    yield request.param
    UPSAMPLING_PATH["value"] = saved


def _align_options(mode):
    return [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]


def _torch_is_adjoint(mode, nd, shape, out, kwargs) -> bool:
    """torch's backward differs from the adjoint of its forward in two places: nearest
    1-d/3-d when an axis keeps its size or doubles under another scale factor, and bicubic
    when the size stays but the scale factor is not 1."""
    sf = kwargs.get("scale_factor")
    if sf is None or kwargs.get("recompute_scale_factor"):
        return True
    ins = shape[2:]
    if mode == "nearest" and nd != 2:
        return not any(m in (n, 2 * n) and sf != m / n for n, m in zip(ins, out))
    if mode == "bicubic":
        return not (tuple(out) == tuple(ins) and sf != 1)
    return True


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
@pytest.mark.parametrize("mode,nd,upsampling_path", CASES, indirect=["upsampling_path"])
def test_interpolate_matches_torch(mode, nd, spec, dtype, upsampling_path):
    shape = SHAPES[nd]
    x = RNG.standard_normal(shape)
    for align in _align_options(mode):
        kw = dict(spec, mode=mode, align_corners=align)
        out = TF.interpolate(torch.tensor(x), **kw).shape[2:]
        name = f"interpolate {mode} {nd}d"
        if _torch_is_adjoint(mode, nd, shape, out, kw):
            check(name, lambda x, kw=kw: F.interpolate(x, **kw),
                  lambda x, kw=kw: TF.interpolate(x, **kw), [x], dtype,
                  double=dtype == np.float64 and "size" in spec)
        else:
            check(name, lambda x, kw=kw: F.interpolate(x, **kw),
                  lambda x, kw=kw: TF.interpolate(x, **kw), [x], dtype, grads=False)
            _assert_adjoint(lambda x, kw=kw: F.interpolate(x, **kw), x, dtype)


def _assert_adjoint(fn, x, dtype):
    """The gradient of a linear map is its adjoint: <f(u), v> == <u, grad(<f(x), v>)>."""
    xs = cg.tensor(x.astype(dtype), requires_grad=True)
    y = fn(xs)
    v = RNG.standard_normal(y.shape).astype(dtype)
    (g,) = cg.grad((y * v).sum(), [xs])
    u = RNG.standard_normal(x.shape).astype(dtype)
    lhs = float((fn(cg.tensor(u)).data.astype(np.float64) * v).sum())
    rhs = float((u * g.data.astype(np.float64)).sum())
    tol = 1e-10 if dtype == np.float64 else 1e-4
    assert abs(lhs - rhs) <= tol * max(abs(lhs), 1.0)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_nearest_source_indices_sweep(mode, dtype):
    """Which input each output copies, over many sizes and factors (float32/float64 ties)."""
    for n in range(1, 24):
        x = torch.arange(n, dtype=torch.float64).reshape(1, 1, n).to(
            torch.float32 if dtype == np.float32 else torch.float64)
        specs = [dict(size=m) for m in range(1, 60, 3)]
        specs += [dict(scale_factor=f) for f in (0.3, 0.7, 1.3, 2.3, 2.7, 3.7, 1 / 3)
                  if int(n * f) >= 1]
        for spec in specs:
            ours = F.interpolate(x.numpy(), mode=mode, **spec)
            np.testing.assert_array_equal(ours.data, TF.interpolate(x, mode=mode, **spec).numpy())


@pytest.mark.parametrize("upsampling_path", ["conv"], indirect=True)
@pytest.mark.parametrize("mode,nd", [("bilinear", 2), ("trilinear", 3), ("linear", 1),
                                     ("bicubic", 2)])
def test_integer_upsampling_is_a_constant_kernel_convolution(mode, nd, upsampling_path):
    x = cg.tensor(RNG.standard_normal(SHAPES[nd]), requires_grad=True)
    with cg.profile() as prof:
        y = F.interpolate(x, scale_factor=2, mode=mode)
        (y * y).sum().backward()
    assert prof.count("conv_forward") >= 1
    assert prof.count("conv_weight_grad") == 0


@pytest.mark.parametrize("scale", [1.5, 2])
def test_the_matrix_path_runs_no_convolution(scale):
    x = cg.tensor(RNG.standard_normal((1, 2, 5, 4)), requires_grad=True)
    with cg.profile() as prof:
        F.interpolate(x, scale_factor=scale, mode="bilinear").sum().backward()
    assert prof.of("conv") == []


def test_upsample_module_every_mode_and_repr():
    x = RNG.standard_normal((1, 2, 4, 5))
    for kwargs in [dict(scale_factor=2), dict(size=(7, 3), mode="nearest-exact"),
                   dict(scale_factor=(1.5, 2), mode="bilinear"),
                   dict(size=6, mode="bicubic", align_corners=True),
                   dict(scale_factor=0.5, mode="area"),
                   dict(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True)]:
        ours, theirs = nn.Upsample(**kwargs), torch.nn.Upsample(**kwargs)
        check(repr(ours), ours, theirs, [x], np.float64)
        assert repr(ours) == repr(theirs)
    for mode, shape in [("linear", (2, 3, 5)), ("trilinear", (1, 2, 3, 4, 2))]:
        ours, theirs = nn.Upsample(scale_factor=2, mode=mode), torch.nn.Upsample(
            scale_factor=2, mode=mode)
        check(repr(ours), ours, theirs, [RNG.standard_normal(shape)], np.float32)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,r", [((1, 8, 3, 2), 2), ((2, 9, 2, 3), 3), ((18, 2, 2), 3),
                                     ((2, 2, 4, 2, 3), 2)])
def test_pixel_shuffle_and_unshuffle(shape, r, dtype):
    x = RNG.standard_normal(shape)
    y, _ = check("pixel_shuffle", lambda x: F.pixel_shuffle(x, r),
                 lambda x: TF.pixel_shuffle(x, r), [x], dtype)
    check("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, r),
          lambda x: TF.pixel_unshuffle(x, r), [y.data], dtype)
    ours, theirs = nn.PixelShuffle(r), torch.nn.PixelShuffle(r)
    assert repr(ours) == repr(theirs)
    assert repr(nn.PixelUnshuffle(r)) == repr(torch.nn.PixelUnshuffle(r))


@pytest.mark.parametrize("size", [(5, 3), (64, 48)])
@pytest.mark.parametrize("channels_last", [True, False])
@pytest.mark.parametrize("r", [2, 3])
def test_pixel_shuffle_is_one_copy_in_the_inputs_layout(r, channels_last, size):
    """One copy each way (the profiler shows a pixel_shuffle forward and a
    pixel_unshuffle as its backward: oneDNN's reorder for a large array, NumPy's copy for
    a small one); values and gradients are torch's, bit for bit (a permutation); a
    channels-last input gives a channels-last output and input gradient; second order
    through the inverse shuffle."""
    from convgrad.ops import onednn_available, relayout

    h, w = size
    x = RNG.standard_normal((2, 4 * r * r, h, w)).astype(np.float32)
    g = RNG.standard_normal((2, 4, h * r, w * r)).astype(np.float32)
    want = ("onednn" if onednn_available() and x.size >= relayout.SHORT_RUN_MIN_SIZE
            else "numpy")
    cx, cg_ = cg.tensor(x), cg.tensor(g)
    if channels_last:
        cx, cg_ = (t.contiguous(memory_format=cg.channels_last) for t in (cx, cg_))
    cx.requires_grad_()
    with cg.profile() as prof:
        y = F.pixel_shuffle(cx, r)
        (gx,) = cg.autograd.grad(y, cx, cg_.requires_grad_(), create_graph=True)
    assert [(e.name, e.algorithm) for e in prof.of("layout")] == [
        ("pixel_shuffle", want), ("pixel_unshuffle", want)]
    tx = torch.tensor(x, requires_grad=True)
    ty = TF.pixel_shuffle(tx, r)
    ty.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(gx.numpy(), tx.grad.numpy())
    assert cg.ops.layouts.is_channels_last(y.data) == channels_last
    assert cg.ops.layouts.is_channels_last(gx.data) == channels_last
    # d<gx, v>/dg = pixel_shuffle(v): the adjoint of the adjoint
    v = RNG.standard_normal(x.shape).astype(np.float32)
    (dg,) = cg.autograd.grad((gx * cg.tensor(v)).sum(), cg_)
    np.testing.assert_array_equal(dg.numpy(), TF.pixel_shuffle(torch.from_numpy(v), r).numpy())


@pytest.mark.parametrize("call,pattern", [
    (lambda: F.interpolate(cg.randn(1, 1, 4, 4), size=3, mode="bogus"), "mode='bogus'"),
    (lambda: F.interpolate(cg.randn(1, 1, 4, 4)), "exactly one"),
    (lambda: F.interpolate(cg.randn(1, 1, 4, 4), size=3, scale_factor=2), "exactly one"),
    (lambda: F.interpolate(cg.randn(1, 1, 4, 4), size=3, mode="linear"), "mode='linear'"),
    (lambda: F.interpolate(cg.randn(1, 1, 4), size=3, mode="bilinear"), "mode='bilinear'"),
    (lambda: F.interpolate(cg.randn(1, 1, 4, 4), size=3, align_corners=True),
     "align_corners=True"),
    (lambda: F.interpolate(cg.randn(1, 1, 4, 4), size=3, mode="bilinear", antialias=True),
     "antialias=True"),
    (lambda: F.interpolate(cg.randn(1, 1, 4, 4), size=(3, 3, 3)), r"size=\(3, 3, 3\)"),
    (lambda: F.interpolate(cg.randn(1, 1, 4, 4), scale_factor=0.1), "output size"),
    (lambda: F.interpolate(cg.randn(1, 4), size=3), r"\(N, C, \*spatial\)"),
    (lambda: F.interpolate(cg.randn(1, 1, 4), size=3, recompute_scale_factor=True),
     "recompute_scale_factor=True"),
    (lambda: F.pixel_shuffle(cg.randn(1, 6, 2, 2), 2), "upscale_factor"),
    (lambda: F.pixel_unshuffle(cg.randn(1, 2, 3, 4), 2), "downscale_factor=2"),
    (lambda: nn.Upsample(scale_factor=2, mode="cubic"), "mode='cubic'"),
    (lambda: F.interpolate(cg.randn(1, 1, 4, 4), size=(2**40, 2**40)), "more than any array"),
    (lambda: F.adaptive_avg_pool2d(cg.randn(1, 1, 4, 4), 2**40), "more than any array"),
])
def test_errors_name_the_argument(call, pattern):
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()



@pytest.mark.parametrize("width", [24, 64, 65])
def test_the_last_axis_by_a_dense_product_matches_the_taps_and_keeps_non_finite_local(width):
    """Along the last axis (input length <= DENSE_MAX_IN) the map runs as a dense
    product (the profiler says which ran); dense and taps agree with torch float64 to
    twice torch's float32 error, forward and backward; an inf or NaN input takes the
    taps (the product would spread NaN over its whole row), as torch does."""
    from convgrad.ops import prefer
    from convgrad.ops.resampling import DENSE_MAX_IN

    x_np = np.random.default_rng(5).standard_normal((2, 3, 8, width)).astype(np.float32)
    g_np = np.random.default_rng(6).standard_normal((2, 3, 16, 2 * width)).astype(np.float32)

    def ours():
        x = cg.tensor(x_np, requires_grad=True)
        with cg.profile() as prof:
            y = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
            y.backward(cg.tensor(g_np))
        return [y.numpy(), x.grad.numpy()], [e.algorithm for e in prof.of("resample")
                                             if e.name == "axis_map"]

    def theirs(dtype):
        x = torch.tensor(x_np, dtype=dtype, requires_grad=True)
        y = TF.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
        y.backward(torch.tensor(g_np, dtype=dtype))
        return [y.detach().double().numpy(), x.grad.double().numpy()]

    exact, torch32 = theirs(torch.float64), theirs(torch.float32)
    compiled, algos = ours()  # float32 with Numba: the compiled taps on every axis
    assert algos == ["numba" if cg.ops.jit.enabled() else a for a in (
        "numpy", "dense" if width <= DENSE_MAX_IN else "numpy",
        "dense" if 2 * width <= DENSE_MAX_IN else "numpy", "numpy")], algos
    with prefer("dense"):
        fast, algos = ours()
    # forward: H, then W (width inputs); backward: W (2 width inputs), then H

    def on(n):
        return "dense" if n <= DENSE_MAX_IN else "numpy"
    assert algos == ["numpy", on(width), on(2 * width), "numpy"], algos
    with prefer("numpy"):
        taps, algos = ours()
    assert algos == ["numpy"] * 4
    for y, e, t in zip(compiled + fast + taps, exact * 3, torch32 * 3):
        torch_err = np.abs(t - e).max() / np.abs(e).max()
        assert np.abs(y - e).max() / np.abs(e).max() <= 2 * max(torch_err, 6e-8)

    x = x_np.copy()
    x[1, 2, 3, 5], x[0, 1, 4, 17] = np.inf, np.nan
    mine = F.interpolate(cg.tensor(x), scale_factor=2, mode="bilinear",
                         align_corners=True).numpy()
    ref = TF.interpolate(torch.from_numpy(x), scale_factor=2, mode="bilinear",
                         align_corners=True).numpy()
    np.testing.assert_array_equal(np.isnan(mine), np.isnan(ref))
    np.testing.assert_array_equal(np.isposinf(mine), np.isposinf(ref))
    assert np.isnan(mine).sum() < mine.size // 10  # local, not whole rows


def _layout_of(x_np: np.ndarray, layout: str) -> np.ndarray:
    """x in NCHW memory, channels-last memory, or a strided view (every other column)."""
    if layout == "nchw":
        return x_np
    if layout == "strided":
        wide = np.repeat(x_np, 2, axis=-1)
        wide[..., 1::2] = -7.0
        return wide[..., ::2]
    perm = (0, *range(2, x_np.ndim), 1)
    return np.ascontiguousarray(x_np.transpose(perm)).transpose(np.argsort(perm))


@pytest.mark.skipif(not cg.ops.jit.enabled(), reason="the compiled taps need Numba")
@pytest.mark.parametrize("layout", ["nchw", "channels_last", "strided"])
@pytest.mark.parametrize("op,shape", [
    (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
     (2, 5, 6, 7)),
    (lambda x: F.interpolate(x, size=(13, 4), mode="bicubic", align_corners=False),
     (2, 3, 9, 10)),
    (lambda x: F.interpolate(x, scale_factor=1.5, mode="nearest"), (1, 4, 6, 8)),
    (lambda x: F.interpolate(x, scale_factor=2, mode="trilinear", align_corners=True),
     (1, 3, 4, 5, 6)),
    (lambda x: F.adaptive_avg_pool2d(x, 7), (2, 16, 20, 23)),
    (lambda x: F.adaptive_avg_pool3d(x, (3, 2, 5)), (1, 4, 7, 5, 9)),
])
def test_the_compiled_taps_equal_numpys_taps_bit_for_bit(op, shape, layout):
    """The per-axis maps' taps on float32 run as Numba's one-pass loop (the profiler
    says so) on the array's memory as it lies: forward and backward equal NumPy's taps
    (the reference, pinned) bit for bit, on NCHW (its width too),
    channels-last and strided input, and a channels-last input keeps its layout through
    maps that run only taps (torch's ``align_corners=True`` bilinear keeps channels_last
    too)."""
    from convgrad.ops import prefer

    x_np = _layout_of(RNG.standard_normal(shape).astype(np.float32), layout)

    def run():
        x = cg.tensor(x_np, requires_grad=True)
        with cg.profile() as prof:
            y = op(x)
            g = np.random.default_rng(1).standard_normal(y.shape).astype(np.float32)
            y.backward(cg.tensor(g))
        return y, x.grad.numpy(), [e.algorithm for e in prof.of("resample")
                                   if e.name == "axis_map"]

    y, gx, algos = run()
    with prefer("numpy"):
        y_ref, gx_ref, ref_algos = run()
    assert algos and set(algos) == {"numba"}, algos
    assert ref_algos == ["numpy"] * len(algos)
    np.testing.assert_array_equal(y.numpy(), y_ref.numpy())
    np.testing.assert_array_equal(gx, gx_ref)
    if layout == "channels_last":
        assert cg.ops.layouts.is_channels_last(y.data)


def test_align_corners_upsampling_keeps_channels_last_against_torch():
    """Bilinear ``align_corners=True`` on a channels-last float32 input, on the compiled
    taps (the profiler says so): channels-last out, as torch's; values and the input
    gradient against torch float64 within twice torch float32's error (both layouts'
    torch alike)."""
    x_np = _layout_of(RNG.standard_normal((2, 8, 12, 10)).astype(np.float32), "channels_last")
    g_np = RNG.standard_normal((2, 8, 24, 20)).astype(np.float32)
    x = cg.tensor(x_np, requires_grad=True)
    with cg.profile() as prof:
        y = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
        y.backward(cg.tensor(g_np))
    ran = [e.algorithm for e in prof.of("resample")]  # H, W; then W, H
    assert ran == ["numba"] * 4 if cg.ops.jit.enabled() else set(ran) <= {"numpy", "dense"}
    assert cg.ops.layouts.is_channels_last(y.data)
    outs = {}
    for dtype in (torch.float32, torch.float64):
        tx = torch.tensor(x_np, dtype=dtype).contiguous(memory_format=torch.channels_last)
        tx.requires_grad_(True)
        ty = TF.interpolate(tx, scale_factor=2, mode="bilinear", align_corners=True)
        assert ty.is_contiguous(memory_format=torch.channels_last)
        ty.backward(torch.tensor(g_np, dtype=dtype))
        outs[dtype] = (ty.detach().double().numpy(), tx.grad.double().numpy())
    for mine, t32, t64 in zip((y.numpy(), x.grad.numpy()), outs[torch.float32],
                              outs[torch.float64]):
        scale = np.abs(t64).max()
        torch_err = np.abs(t32 - t64).max() / scale
        assert np.abs(mine - t64).max() / scale <= 2 * max(torch_err, 6e-8)
