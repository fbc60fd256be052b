"""The ``pool`` kernel family on oneDNN. Oracle: torch 2.13 (values, indices, gradients,
second-order gradients; float64 torch for the accuracy bound); the profiler for which
algorithm ran."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad.ops import onednn_available, prefer

from .test_accuracy import assert_as_accurate

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(11)
needs_onednn = pytest.mark.skipif(not onednn_available(), reason="oneDNN not loaded")


def layout(x: np.ndarray, channels_last: bool) -> np.ndarray:
    """x (N, C, *S) float32, channels-last in memory if asked."""
    x = x.astype(np.float32)
    if not channels_last:
        return np.ascontiguousarray(x)
    perm = (0, *range(2, x.ndim), 1)
    return np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))


def algorithms(prof) -> set:
    return {e.algorithm.split(":")[0] for e in prof.of("pool")}


def run_both(cg_fn, t_fn, x: np.ndarray, g: np.ndarray):
    """(y, dx) of convgrad and of torch (same float32 values)."""
    cx = cg.tensor(x, requires_grad=True)
    with cg.profile() as prof:
        y = cg_fn(cx)
        y.backward(cg.tensor(g))
    tx = torch.from_numpy(np.ascontiguousarray(x)).requires_grad_(True)
    ty = t_fn(tx)
    ty.backward(torch.from_numpy(np.ascontiguousarray(g)))
    return y, cx.grad, ty, tx.grad, prof


# (nd, shape, kernel, stride, padding, ceil_mode)
CASES = [
    (2, (8, 16, 32, 32), 3, 2, 1, False),   # ResNet's stem pool
    (2, (2, 5, 9, 11), 3, 2, 1, True),      # odd sizes, ceil_mode
    (2, (1, 3, 7, 6), (3, 2), (2, 1), (1, 0), False),
    (1, (2, 4, 13), 4, 3, 2, True),
    (3, (1, 4, 5, 6, 7), 2, None, 0, True),
    (3, (2, 3, 6, 5, 7), (3, 2, 3), (2, 2, 1), (1, 1, 0), False),
]


@needs_onednn
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("nd,shape,k,s,p,ceil", CASES)
def test_max_pool_on_onednn_matches_torch(nd, shape, k, s, p, ceil, channels_last):
    x = layout(RNG.integers(-3, 4, shape), channels_last)  # many ties
    f = getattr(F, f"max_pool{nd}d")
    tf = getattr(TF, f"max_pool{nd}d")
    ty0 = tf(torch.from_numpy(np.ascontiguousarray(x)), k, s, p, 1, ceil)
    g = RNG.standard_normal(ty0.shape).astype(np.float32)
    y, dx, ty, tdx, prof = run_both(lambda t: f(t, k, s, p, ceil_mode=ceil),
                                    lambda t: tf(t, k, s, p, 1, ceil), x, g)
    assert algorithms(prof) == {"onednn"}
    assert [e.name for e in prof.of("pool")] == ["max_pool_forward", "max_pool_backward"]
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    np.testing.assert_allclose(dx.numpy(), tdx.numpy(), rtol=1e-6, atol=1e-6)  # ties: same
    if nd >= 2 and shape[1] > 1:
        assert cg.ops.layouts.is_channels_last(y.data) == channels_last
        assert cg.ops.layouts.is_channels_last(dx.data) == channels_last
    # the indices come from oneDNN's workspace (NCHW: in the blocked copies' layout)
    with cg.profile() as prof:
        _, idx = f(cg.tensor(x), k, s, p, ceil_mode=ceil, return_indices=True)
    _, tidx = tf(torch.from_numpy(np.ascontiguousarray(x)), k, s, p, 1, ceil,
                 return_indices=True)
    assert algorithms(prof) == {"onednn"}
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())


@needs_onednn
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("include", [True, False])
@pytest.mark.parametrize("nd,shape,k,s,p,ceil", CASES)
def test_avg_pool_on_onednn_matches_torch(nd, shape, k, s, p, ceil, include, channels_last):
    x64 = RNG.standard_normal(shape)
    x = layout(x64, channels_last)
    f = getattr(F, f"avg_pool{nd}d")
    tf = getattr(TF, f"avg_pool{nd}d")

    def t_fn(t):
        return tf(t, k, s, p, ceil, include)

    ty0 = t_fn(torch.from_numpy(np.ascontiguousarray(x)))
    g = RNG.standard_normal(ty0.shape).astype(np.float32)
    y, dx, ty, tdx, prof = run_both(
        lambda t: f(t, k, s, p, ceil_mode=ceil, count_include_pad=include), t_fn, x, g)
    # a ceil_mode window past the right padding, with the padding counted: NumPy
    k_, s_, p_ = (np.broadcast_to(v, (nd,)) for v in (k, s if s else k, p))
    past = any((o - 1) * ss + kk - n - pp > pp for o, ss, kk, n, pp in
               zip(ty0.shape[2:], s_, k_, shape[2:], p_))
    assert algorithms(prof) == ({"numpy"} if include and past else {"onednn"})
    # accuracy: within 2x torch float32's own error, against torch float64
    tx64 = torch.from_numpy(np.ascontiguousarray(x, np.float64)).requires_grad_(True)
    ref_y = t_fn(tx64)
    ref_y.backward(torch.from_numpy(g.astype(np.float64)))
    ref_dx = tx64.grad.numpy()
    for mine, theirs, ref in ((y.numpy(), ty.detach().numpy(), ref_y.detach().numpy()),
                              (dx.numpy(), tdx.numpy(), ref_dx)):
        scale = np.abs(ref).max()
        err = np.abs(mine - ref).max() / scale
        torch_err = np.abs(theirs - ref).max() / scale
        assert err <= 2 * torch_err + 1e-7, (err, torch_err)


@needs_onednn
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("op", ["max", "avg"])
def test_double_backward_through_the_onednn_pools(op, channels_last):
    x = layout(RNG.standard_normal((2, 3, 7, 8)), channels_last)
    f = (lambda t: F.max_pool2d(t, 3, 2, 1)) if op == "max" else (
        lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False))
    tf = (lambda t: TF.max_pool2d(t, 3, 2, 1)) if op == "max" else (
        lambda t: TF.avg_pool2d(t, 3, 2, 1, count_include_pad=False))
    g = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    h = RNG.standard_normal((2, 3, 7, 8)).astype(np.float32)
    cx, cg_g = cg.tensor(x, requires_grad=True), cg.tensor(g, requires_grad=True)
    with cg.profile() as prof:
        (dx,) = cg.autograd.grad(f(cx), cx, cg_g, create_graph=True)
        (dg,) = cg.autograd.grad((dx * cg.tensor(h)).sum(), cg_g)
    assert algorithms(prof) == {"onednn"}
    tx = torch.from_numpy(np.ascontiguousarray(x)).requires_grad_(True)
    tg = torch.from_numpy(g).requires_grad_(True)
    (tdx,) = torch.autograd.grad(tf(tx), tx, tg, create_graph=True)
    (tdg,) = torch.autograd.grad((tdx * torch.from_numpy(h)).sum(), tg)
    np.testing.assert_allclose(dx.numpy(), tdx.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dg.numpy(), tdg.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["prefer_numpy", "float64", "nan", "neg_inf", "dilation",
                                  "divisor_override"])
def test_reference_runs_where_onednn_does_not_match(case):
    """Pinned NumPy, float64, NaN and -inf inputs of max pooling (oneDNN ignores NaN and
    starts its maximum at -FLT_MAX), dilation (oneDNN has only its reference kernel) and
    divisor_override run the NumPy reference, and still agree with torch."""
    x = RNG.standard_normal((2, 3, 8, 9))
    if case != "float64":
        x = x.astype(np.float32)
    if case == "nan":
        x[0, 1, 2, 3] = np.nan
    if case == "neg_inf":
        x[1, 2, :4, :4] = -np.inf
    kwargs = {"dilation": 2} if case == "dilation" else {}
    op = "avg" if case == "divisor_override" else "max"
    if op == "avg":
        f = lambda t, m: m.avg_pool2d(t, 3, 2, 1, divisor_override=5)  # noqa: E731
    else:
        f = lambda t, m: m.max_pool2d(t, 3, 2, 1, **kwargs)  # noqa: E731
    cx = cg.tensor(x, requires_grad=True)
    with cg.profile() as prof:
        if case == "prefer_numpy":
            with prefer("numpy"):
                y = f(cx, F)
        else:
            y = f(cx, F)
    assert algorithms(prof) == {"numpy"}
    tx = torch.from_numpy(x).requires_grad_(True)
    ty = f(tx, TF)
    tol = 1e-5 if op == "avg" else 0  # avg: sums in another order
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=tol, atol=tol / 10)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


@needs_onednn
def test_onednn_pool_handles_a_gradient_in_another_layout():
    """The upstream gradient need not share the input's layout (a copy is made)."""
    x = layout(RNG.standard_normal((2, 4, 6, 6)), True)
    g = RNG.standard_normal((2, 4, 3, 3)).astype(np.float32)  # C-contiguous
    y, dx, ty, tdx, prof = run_both(lambda t: F.max_pool2d(t, 2), lambda t: TF.max_pool2d(t, 2),
                                    x, g)
    assert algorithms(prof) == {"onednn"}
    np.testing.assert_array_equal(dx.numpy(), tdx.numpy())


@needs_onednn
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("shape,out", [((4, 32, 7, 7), 1), ((2, 16, 96, 96), 1),
                                       ((2, 8, 12, 18), (3, 6)), ((2, 8, 9, 10), (4, 3))])
def test_adaptive_avg_pool_as_a_plain_pooling(shape, out, channels_last):
    """Divisible sizes are a plain average pooling (oneDNN's); global pooling is the
    accurate mean (within 2x torch float32's error on 96x96 values near 3), other sizes
    stay on the averaging matrices."""
    x = layout(RNG.standard_normal(shape) + 3.0, channels_last)
    ty0 = TF.adaptive_avg_pool2d(torch.from_numpy(np.ascontiguousarray(x)), out)
    g = RNG.standard_normal(ty0.shape).astype(np.float32)
    y, dx, ty, tdx, prof = run_both(lambda t: F.adaptive_avg_pool2d(t, out),
                                    lambda t: TF.adaptive_avg_pool2d(t, out), x, g)
    divisible = all(n % m == 0 for n, m in zip(shape[2:], np.broadcast_to(out, (2,))))
    expected = set() if out == 1 or not divisible else {"onednn"}  # global: a mean
    assert algorithms(prof) == expected
    tx64 = torch.from_numpy(np.ascontiguousarray(x, np.float64)).requires_grad_(True)
    ref = TF.adaptive_avg_pool2d(tx64, out)
    ref.backward(torch.from_numpy(g.astype(np.float64)))
    for mine, theirs, r in ((y.numpy(), ty.detach().numpy(), ref.detach().numpy()),
                            (dx.numpy(), tdx.numpy(), tx64.grad.numpy())):
        scale = np.abs(r).max()
        assert np.abs(mine - r).max() / scale <= 2 * np.abs(theirs - r).max() / scale + 1e-7


@needs_onednn
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("mode,shape,scale", [
    ("nearest", (2, 5, 6, 7), 2), ("nearest", (2, 5, 6, 7), (3, 2)), ("nearest", (2, 4, 9), 3),
    ("nearest", (1, 3, 3, 4, 5), 2), ("nearest", (2, 5, 6, 7), 1.5),
    ("bilinear", (2, 5, 6, 7), 2), ("bilinear", (2, 3, 5, 4), (3, 4)), ("linear", (2, 3, 7), 5),
    ("trilinear", (1, 2, 3, 4, 5), 2), ("bilinear", (2, 5, 6, 7), 2.5)])
def test_interpolate_on_onednn_matches_torch(mode, shape, scale, channels_last):
    """Whole-factor upsampling runs forward on oneDNN and backward on NumPy views (linear:
    Numba's loop) for channels-last input (nearest: exactly torch's; linear: within
    torch's own float32 error); other factors and NCHW input stay on the NumPy maps."""
    x = layout(RNG.standard_normal(shape), channels_last)
    ty0 = TF.interpolate(torch.from_numpy(np.ascontiguousarray(x)), scale_factor=scale,
                         mode=mode)
    g = RNG.standard_normal(ty0.shape).astype(np.float32)
    cx = cg.tensor(x, requires_grad=True)
    with cg.profile() as prof:
        y = F.interpolate(cx, scale_factor=scale, mode=mode)
        y.backward(cg.tensor(g))
    tx = torch.from_numpy(np.ascontiguousarray(x)).requires_grad_(True)
    ty = TF.interpolate(tx, scale_factor=scale, mode=mode)
    ty.backward(torch.from_numpy(g))
    fast = channels_last and scale not in (1.5, 2.5)
    kind = "nearest" if mode == "nearest" else "linear"
    events = [(e.name, e.algorithm.split(":")[0]) for e in prof.of("resample")
              if e.name != "axis_map"]  # the per-axis maps the other cases run
    # linear's adjoint: one compiled pass per axis where Numba is installed
    back = "numba" if kind == "linear" and cg.ops.jit.enabled() else "numpy"
    assert events == ([(f"{kind}_forward", "onednn"), (f"{kind}_backward", back)]
                      if fast else [])
    if fast:
        assert not [e for e in prof.of("resample") if e.name == "axis_map"]
    if fast and channels_last:
        assert cg.ops.layouts.is_channels_last(y.data)
        assert cg.ops.layouts.is_channels_last(cx.grad.data)
    if mode == "nearest":
        np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
        np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)
        return
    tx64 = torch.from_numpy(np.ascontiguousarray(x, np.float64)).requires_grad_(True)
    ref = TF.interpolate(tx64, scale_factor=scale, mode=mode)
    ref.backward(torch.from_numpy(g.astype(np.float64)))
    for mine, theirs, r in ((y.numpy(), ty.detach().numpy(), ref.detach().numpy()),
                            (cx.grad.numpy(), tx.grad.numpy(), tx64.grad.numpy())):
        scale_ = np.abs(r).max()
        assert np.abs(mine - r).max() / scale_ <= 2 * np.abs(theirs - r).max() / scale_ + 1e-7


@pytest.mark.parametrize("shape,scale", [((2, 5, 6, 7), 2), ((2, 3, 5, 4), (3, 4)),
                                         ((1, 2, 3, 4, 5), 2), ((3, 4, 1, 9), 2)])
def test_the_compiled_linear_adjoint_equals_the_numpy_phases(shape, scale):
    """The two implementations of linear upsampling's backward: the same float32 sums in
    another order, so equal to a few roundings."""
    if not cg.ops.jit.enabled():
        pytest.skip("Numba is not installed")
    from convgrad.ops import resampling
    like = layout(RNG.standard_normal(shape), True)
    factors = np.broadcast_to(scale, (len(shape) - 2,))
    gy = layout(RNG.standard_normal((*shape[:2], *(n * f for n, f in zip(shape[2:], factors)))),
                True)
    with cg.profile() as prof:
        fast = resampling.resample_backward(gy, shape, "linear", like)
    with cg.ops.prefer("numpy"), cg.profile() as ref_prof:
        ref = resampling.resample_backward(gy, shape, "linear", like)
    assert [e.algorithm for e in prof.of("resample")] == ["numba"]
    assert [e.algorithm for e in ref_prof.of("resample")] == ["numpy:phases"]
    assert cg.ops.layouts.is_channels_last(fast) == cg.ops.layouts.is_channels_last(ref)
    np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-6 * np.abs(ref).max())


@pytest.mark.parametrize("shape,channels", [((2, 48, 8, 6), (0, 32)), ((2, 48, 8, 6), (32, 48)),
                                            ((1, 24, 4, 3, 5), (4, 20)), ((3, 10, 7), (2, 7))])
def test_a_channel_slice_of_a_channels_last_gradient_is_read_where_it_lies(shape, channels):
    """A U-Net's upsampling gets its gradient as a channel slice of the concatenation's:
    the compiled adjoint reads it in place (no ``copy`` event), bit for bit what it gives
    on a dense copy of the slice."""
    if not cg.ops.jit.enabled():
        pytest.skip("Numba is not installed")
    from convgrad.ops import resampling
    c0, c1 = channels
    full = layout(RNG.standard_normal((shape[0], shape[1], *(2 * n for n in shape[2:]))), True)
    gy = full[:, c0:c1]
    x_shape = (shape[0], c1 - c0, *shape[2:])
    like = layout(np.zeros(x_shape), True)
    with cg.profile() as prof:
        got = resampling.resample_backward(gy, x_shape, "linear", like)
    dense = layout(np.ascontiguousarray(gy), True)
    assert cg.ops.layouts.is_channels_last(dense)
    want = resampling.resample_backward(dense, x_shape, "linear", like)
    assert [(e.name, e.algorithm) for e in prof.events] == [("linear_backward", "numba")]
    assert cg.ops.layouts.is_channels_last(got)
    np.testing.assert_array_equal(got, want)
    # the oracle: torch's gradient of its own linear upsampling, float64 and float32
    mode = {3: "linear", 4: "bilinear", 5: "trilinear"}[len(shape)]
    grads = {}
    for dtype in (torch.float64, torch.float32):
        fmt = {3: torch.contiguous_format, 4: torch.channels_last,
               5: torch.channels_last_3d}[len(shape)]  # gy's layout, as convgrad's
        tx = torch.zeros(x_shape, dtype=dtype).contiguous(memory_format=fmt).requires_grad_()
        TF.interpolate(tx, scale_factor=2, mode=mode, align_corners=False).backward(
            torch.from_numpy(np.ascontiguousarray(gy)).to(dtype).contiguous(memory_format=fmt))
        grads[dtype] = tx.grad.double().numpy()
    assert_as_accurate("pitched adjoint", got, grads[torch.float32], grads[torch.float64])
    # NCHW memory keeps the copy into the dense layout first
    with cg.profile() as prof:
        resampling.resample_backward(layout(RNG.standard_normal(full.shape), False)[:, c0:c1],
                                     x_shape, "linear", like)
    assert [e.name for e in prof.events] == ["copy", "linear_backward"]


@needs_onednn
@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_interpolate_double_backward(mode):
    x = layout(RNG.standard_normal((2, 3, 4, 5)), True)
    g = RNG.standard_normal((2, 3, 8, 10)).astype(np.float32)
    h = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    cx, cgg = cg.tensor(x, requires_grad=True), cg.tensor(g, requires_grad=True)
    with cg.profile() as prof:
        (dx,) = cg.autograd.grad(F.interpolate(cx, scale_factor=2, mode=mode), cx, cgg,
                                 create_graph=True)
        (dg,) = cg.autograd.grad((dx * cg.tensor(h)).sum(), cgg)
    assert "onednn" in algorithms_of(prof, "resample")
    tx = torch.from_numpy(np.ascontiguousarray(x)).requires_grad_(True)
    tg = torch.from_numpy(g).requires_grad_(True)
    (tdx,) = torch.autograd.grad(TF.interpolate(tx, scale_factor=2, mode=mode), tx, tg,
                                 create_graph=True)
    (tdg,) = torch.autograd.grad((tdx * torch.from_numpy(h)).sum(), tg)
    np.testing.assert_allclose(dx.numpy(), tdx.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dg.numpy(), tdg.numpy(), rtol=1e-5, atol=1e-6)


# oneDNN's resampling kernel stores an output larger than its cache estimate (here past
# about 32 MB with the input) with non-temporal stores, which raise a general-protection
# fault (the interpreter killed) at an address off a 64-byte boundary; NumPy's large arrays
# lie 16 bytes past a page.  Run in a child process: a regression is a crash.
_LARGE_RESAMPLING = """
import sys
import numpy as np
import torch
import convgrad as cg
import convgrad.functional as F
from convgrad.ops import layouts
from convgrad.ops.onednn import resample
from convgrad.ops.resampling import _pair

rng = np.random.default_rng(5)
for mode, shape in (("nearest", (8, 32, 96, 96)), ("bilinear", (8, 32, 96, 96)),
                    ("trilinear", (2, 8, 32, 64, 64))):
    perm = (0, *range(2, len(shape)), 1)
    x = np.ascontiguousarray(rng.standard_normal([shape[d] for d in perm], np.float32)
                             ).transpose(np.argsort(perm))
    with cg.profile() as prof:
        y = F.interpolate(cg.tensor(x), scale_factor=2, mode=mode)
    assert [e.algorithm.split(":")[0] for e in prof.of("resample")] == ["onednn"], mode
    assert layouts.is_aligned(y.data), mode  # as oneDNN's non-temporal stores need
    t = torch.from_numpy(np.ascontiguousarray(x))
    ty = torch.nn.functional.interpolate(t, scale_factor=2, mode=mode).numpy()
    if mode == "nearest":
        assert np.array_equal(y.numpy(), ty), mode
    else:
        ref = torch.nn.functional.interpolate(t.double(), scale_factor=2, mode=mode).numpy()
        assert np.abs(y.numpy() - ref).max() <= 2 * np.abs(ty - ref).max() + 1e-7, mode
    # the plan handed an output 16 bytes off the boundary writes it through a copy
    plan = resample.resample_plan("forward", "linear" if mode != "nearest" else mode,
                                  _pair(x, x.shape), _pair(x, y.shape))
    raw = layouts.empty((y.data.size + 16,), aligned=True)
    off = raw[4:4 + y.data.size].reshape([y.shape[d] for d in perm]).transpose(np.argsort(perm))
    assert not layouts.is_aligned(off) and layouts.is_channels_last(off)
    plan.run(x, off)
    assert np.array_equal(off, y.numpy()), mode
print("ok")
"""


@needs_onednn
def test_large_upsampling_writes_an_aligned_output():
    """Upsampling past oneDNN's non-temporal-store threshold (2-D nearest and bilinear,
    3-D trilinear, channels-last, 94 MB of input and output) equals torch (nearest
    exactly; linear within 2x torch float32's error against float64), on an output
    aligned to 64 bytes; an unaligned output handed to the plan is written through an
    aligned copy, not faulted on."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", _LARGE_RESAMPLING], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", (p.returncode, p.stderr[-2000:])


def algorithms_of(prof, fam: str) -> set:
    return {e.algorithm.split(":")[0] for e in prof.of(fam)}


def test_avg_pool_divisor_override_of_one_partial_window():
    """One output window that is not the whole input, divided by the input's size: not a
    mean of the input."""
    x = RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)
    y = F.avg_pool2d(cg.tensor(x), 2, stride=4, divisor_override=16)
    ty = TF.avg_pool2d(torch.from_numpy(x), 2, stride=4, divisor_override=16)
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-6)


@pytest.mark.parametrize("channels_last", [True, False])
def test_adaptive_max_pooling_gradient_is_an_index_add_in_the_inputs_layout(channels_last):
    """Overlapping windows (12 to 5: an input can win two of them): the gradient is one
    ``gather`` ``index_add`` through flat memory offsets (the pick's index holds an array
    per dim), in the input's layout, torch's bit for bit (repeats added in torch's
    order: output order)."""
    from convgrad.ops import gather

    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 4, 12, 12)).astype(np.float32)
    g = rng.standard_normal((3, 4, 5, 5)).astype(np.float32)
    cx = cg.tensor(x)
    if channels_last:
        cx = cx.contiguous(memory_format=cg.channels_last)
    cx.requires_grad_()
    y = F.adaptive_max_pool2d(cx, 5)
    with cg.profile() as prof:
        y.backward(cg.tensor(g))
    assert [(e.name, e.algorithm) for e in prof.of("gather")] == [("index_add", "numpy")]
    assert cg.ops.layouts.is_channels_last(cx.grad.data) == channels_last
    tx = torch.tensor(x, requires_grad=True)
    TF.adaptive_max_pool2d(tx, 5).backward(torch.from_numpy(g))
    np.testing.assert_array_equal(cx.grad.numpy(), tx.grad.numpy())
    # the index of such a pick takes the flat path
    index = (np.arange(3).reshape(3, 1, 1, 1), np.arange(4).reshape(1, 4, 1, 1),
             rng.integers(0, 12, (3, 4, 5, 5)), rng.integers(-12, 12, (3, 4, 5, 5)))
    assert gather._flat_offsets(cx.grad.data, index) is not None
    out = gather.index_add(g, index, x.shape, channels_last)
    want = np.zeros(x.shape, np.float32)
    np.add.at(want, index, g)
    np.testing.assert_array_equal(out, want)  # the same sums, in the same order


def test_index_add_out_of_range_is_numpys_index_error():
    from convgrad.ops import gather

    g = np.ones((2,), np.float32)
    with pytest.raises(IndexError):
        gather.index_add(g, (np.array([0, 1]), np.array([0, 3])), (2, 3), False)
