"""Oracle: PyTorch 2.13 (torch.nn.functional) and JAX, float64."""

from __future__ import annotations

import itertools
import time
import tracemalloc

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")

pytestmark = pytest.mark.usefixtures("backend")  # with oneDNN, then without
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
import torch.nn.functional as F  # noqa: E402
from jax import lax  # noqa: E402

from convgrad.ops import (  # noqa: E402  # noqa: E402
    ConvSpec,
    conv_bias_grad,
    conv_forward,
    conv_input_grad,
    conv_weight_grad,
    direct,
    prefer,
)
from convgrad.ops.profiler import profile  # noqa: E402
from convgrad.ops.workspace import get_workspace_limit, workspace_limit  # noqa: E402

MiB = 2**20
D = 10**6  # "huge" dilation


def spec_of(nd, stride=None, padding=None, kdil=None, idil=None, groups=1, flip=False):
    return ConvSpec(stride=tuple(stride or (1,) * nd), padding=tuple(padding or ((0, 0),) * nd),
                    kernel_dilation=tuple(kdil or (1,) * nd),
                    input_dilation=tuple(idil or (1,) * nd), groups=groups, flip=flip)


def close(got, want, rtol=1e-10):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def ours(x, w, gy, spec):
    return (conv_forward(x, w, spec), conv_input_grad(gy, w, x.shape, spec),
            conv_weight_grad(x, gy, w.shape, spec))


# ----------------------------------------------------------------------------- oracles


def torch_ref(x, w, gy, spec):
    """(y, gx, gw) from torch.nn.functional.convNd + autograd; no input dilation."""
    assert all(d == 1 for d in spec.input_dilation)
    nd = spec.ndim
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    # F.pad takes (lo, hi) pairs last dim first; negative values crop
    pads = [v for lo_hi in reversed(spec.padding) for v in lo_hi]
    xp = F.pad(xt, pads) if any(pads) else xt
    wk = torch.flip(wt, dims=list(range(2, 2 + nd))) if spec.flip else wt
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    y = conv(xp, wk, stride=spec.stride, dilation=spec.kernel_dilation, groups=spec.groups)
    y.backward(torch.tensor(gy, dtype=torch.float64))
    return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()


def jax_ref(x, w, gy, spec):
    """(y, gx, gw) from lax.conv_general_dilated + jax.vjp."""
    nd = spec.ndim
    sp = "TDHW"[-nd:]

    def f(x, w):
        if spec.flip:
            w = jax.numpy.flip(w, axis=tuple(range(2, 2 + nd)))
        return lax.conv_general_dilated(
            x, w, spec.stride, list(spec.padding), lhs_dilation=spec.input_dilation,
            rhs_dilation=spec.kernel_dilation, dimension_numbers=("NC" + sp, "OI" + sp, "NC" + sp),
            feature_group_count=spec.groups)

    def all_outputs(x, w, gy):
        y, vjp = jax.vjp(f, x, w)
        return (y, *vjp(gy))

    lowered = jax.jit(all_outputs).lower(x, w, gy)
    try:  # compile-speed options only; XLA:CPU is ~8x faster to compile without fusion emitters
        compiled = lowered.compile(compiler_options={"xla_backend_optimization_level": 0,
                                                     "xla_cpu_use_fusion_emitters": False})
    except Exception:
        compiled = lowered.compile()
    return tuple(np.asarray(a) for a in compiled(x, w, gy))


def _hits(n, k, s, lo, kd, di, out):
    """(input index, tap, output index) of one dim where output meets a real input sample."""
    found = []
    for i in range(n):
        for t in range(k):
            num = i * di + lo - t * kd  # output p reads dilated index p*s + t*kd - lo
            if num % s == 0 and 0 <= num // s < out:
                found.append((i, t, num // s))
    return found


def scatter_ref(x, w, gy, spec):
    """(y, gx, gw) visiting only the non-zero (input sample, tap) pairs: cheap for any dilation."""
    nd, G = spec.ndim, spec.groups
    N, C, *L = x.shape
    O, Cg, *K = w.shape
    P = spec.output_shape(x.shape, w.shape)[2:]
    flip = (Ellipsis, *([slice(None, None, -1)] * nd))
    wf = w[flip] if spec.flip else w
    xg, wg = x.reshape(N, G, Cg, *L), wf.reshape(G, O // G, Cg, *K)
    gyg = gy.reshape(N, G, O // G, *P)
    y, gx, gwf = np.zeros(gyg.shape), np.zeros(xg.shape), np.zeros(wg.shape)
    per_dim = [_hits(L[d], K[d], spec.stride[d], spec.padding[d][0], spec.kernel_dilation[d],
                     spec.input_dilation[d], P[d]) for d in range(nd)]
    for combo in itertools.product(*per_dim):
        i, t, p = ((Ellipsis, *(h[j] for h in combo)) for j in range(3))
        y[p] += np.einsum("ngc,goc->ngo", xg[i], wg[t])
        gx[i] += np.einsum("ngo,goc->ngc", gyg[p], wg[t])
        gwf[t] += np.einsum("ngc,ngo->goc", xg[i], gyg[p])
    gw = gwf.reshape(w.shape)
    return y.reshape(gy.shape), gx.reshape(x.shape), gw[flip] if spec.flip else gw


def data(seed, x_shape, w_shape, spec):
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    return x, w, rng.standard_normal(spec.output_shape(x_shape, w_shape))


def check_all(x, w, gy, spec, *oracles):
    got = ours(x, w, gy, spec)
    for oracle in oracles:
        for name, g, r in zip(("y", "gx", "gw"), got, oracle(x, w, gy, spec)):
            try:
                close(g, r)
            except AssertionError as e:
                raise AssertionError(f"{name} vs {oracle.__name__} for {spec}: {e}") from None
    close(conv_bias_grad(gy), gy.sum(axis=(0, *range(2, gy.ndim))))
    return got


def measure(fn):
    """(result, seconds, peak bytes allocated during the call) -- timed without tracemalloc."""
    fn()  # warm-up: one-off costs (Numba compiling its loops) are not the call's cost
    t0 = time.perf_counter()
    fn()
    seconds = time.perf_counter() - t0
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, seconds, peak


# ------------------------------------------------------------------ small-shape edge cases

KERNEL_FILLS_INPUT = [  # output length 1 in every dim
    ("1d", (2, 3, 7), (4, 3, 7), spec_of(1)),
    ("1d-padded", (2, 3, 5), (2, 3, 8), spec_of(1, padding=((2, 1),))),
    ("1d-kdil", (1, 2, 7), (3, 2, 4), spec_of(1, kdil=(2,), flip=True)),
    ("2d-groups", (2, 4, 5, 3), (6, 2, 5, 3), spec_of(2, groups=2)),
    ("2d-pad-stride", (1, 2, 4, 4), (3, 2, 5, 6), spec_of(2, padding=((1, 0), (0, 2)),
                                                        stride=(3, 2))),
    ("2d-negpad", (2, 1, 6, 6), (2, 1, 4, 5), spec_of(2, padding=((-1, -1), (0, -1)))),
    ("3d", (1, 2, 3, 4, 2), (2, 2, 3, 4, 2), spec_of(3, flip=True)),
]


@pytest.mark.parametrize("name,xs,ws,spec", KERNEL_FILLS_INPUT,
                         ids=[c[0] for c in KERNEL_FILLS_INPUT])
def test_kernel_equals_padded_input(name, xs, ws, spec):
    x, w, gy = data(1, xs, ws, spec)
    assert spec.output_shape(xs, ws)[2:] == (1,) * spec.ndim
    check_all(x, w, gy, spec, torch_ref, jax_ref, scatter_ref)


def test_kernel_equals_padded_input_with_input_dilation():
    spec = spec_of(2, idil=(3, 2), padding=((1, 1), (0, 1)), groups=2, flip=True)
    xs, ws = (2, 4, 3, 4), (2, 2, 9, 8)  # Ld = 7 + 2 = 9, 7 + 1 = 8
    assert spec.output_shape(xs, ws)[2:] == (1, 1)
    x, w, gy = data(2, xs, ws, spec)
    check_all(x, w, gy, spec, jax_ref, scatter_ref)


ONE_BY_ONE = [
    ("1d", (3, 5, 9), (7, 5, 1), spec_of(1)),
    ("2d-stride-groups", (2, 6, 7, 8), (4, 3, 1, 1), spec_of(2, stride=(2, 3), groups=2)),
    ("2d-pad", (2, 3, 4, 4), (5, 3, 1, 1), spec_of(2, padding=((1, 2), (0, 1)))),
    ("3d-depthwise", (2, 3, 4, 3, 5), (6, 1, 1, 1, 1), spec_of(3, groups=3, stride=(1, 2, 2))),
]


@pytest.mark.parametrize("name,xs,ws,spec", ONE_BY_ONE, ids=[c[0] for c in ONE_BY_ONE])
def test_1x1_kernels(name, xs, ws, spec):
    x, w, gy = data(3, xs, ws, spec)
    check_all(x, w, gy, spec, torch_ref, jax_ref)


STRIDE_GT_KERNEL = [
    ("1d", (2, 3, 23), (4, 3, 2), spec_of(1, stride=(5,))),
    ("2d", (2, 3, 11, 10), (4, 3, 2, 3), spec_of(2, stride=(5, 4))),
    ("2d-dil-groups", (1, 4, 17, 13), (4, 2, 2, 2), spec_of(2, stride=(7, 6), kdil=(2, 3),
                                                           groups=2)),
    ("3d", (1, 2, 9, 8, 7), (3, 2, 1, 2, 2), spec_of(3, stride=(3, 4, 5), padding=((0, 1),) * 3)),
]


@pytest.mark.parametrize("name,xs,ws,spec", STRIDE_GT_KERNEL, ids=[c[0] for c in STRIDE_GT_KERNEL])
def test_stride_larger_than_kernel(name, xs, ws, spec):
    x, w, gy = data(4, xs, ws, spec)
    _, gx, _ = check_all(x, w, gy, spec, torch_ref, jax_ref)
    assert np.count_nonzero(gx == 0) > 0  # some inputs are never read


# ------------------------------------------------------------------------ huge dilations

HUGE_INPUT_DILATION = [
    # 1-D x (1,1,3), w (1,1,3): stride 1 gives a 2e6-long (mostly zero) output
    ("1d-stride1", (1, 1, 3), (1, 1, 3), spec_of(1, idil=(D,))),
    # transposed-convolution style: stride = input dilation, tiny output
    ("1d-strideD", (1, 1, 3), (1, 1, 3), spec_of(1, idil=(D,), stride=(D,), padding=((2, 0),))),
    ("1d-strideD-flip-groups", (2, 4, 3), (6, 2, 2),
     spec_of(1, idil=(D,), stride=(D,), padding=((1, 1),), groups=2, flip=True)),
    ("2d-strideD", (2, 3, 4, 5), (4, 3, 3, 2),
     spec_of(2, idil=(D, 3), stride=(D, 1), padding=((1, 1), (1, 0)), kdil=(1, 2))),
    # negative padding crops a window in the middle of the 3e6-long dilated dim
    ("2d-crop", (2, 3, 4, 5), (4, 3, 3, 2),
     spec_of(2, idil=(D, 3), padding=((-(D - 2), -(2 * D - 2)), (1, 0)), kdil=(1, 2))),
    ("3d-two-huge", (1, 2, 3, 2, 3), (2, 2, 2, 2, 2),
     spec_of(3, idil=(D, 7, D), stride=(D, 2, D), padding=((1, 0), (0, 1), (0, 1)), flip=True)),
]


@pytest.mark.parametrize("name,xs,ws,spec", HUGE_INPUT_DILATION,
                         ids=[c[0] for c in HUGE_INPUT_DILATION])
def test_huge_input_dilation(name, xs, ws, spec):
    x, w, gy = data(5, xs, ws, spec)
    want = scatter_ref(x, w, gy, spec)
    dilated_bytes = 8 * int(np.prod([(n - 1) * d + 1 for n, d in zip(xs[2:], spec.input_dilation)]))
    assert dilated_bytes >= 15 * MiB
    for label, call, ref, read_bytes in (
        ("conv_forward", lambda: conv_forward(x, w, spec), want[0], 0),
        ("conv_input_grad", lambda: conv_input_grad(gy, w, xs, spec), want[1], gy.nbytes),
        ("conv_weight_grad", lambda: conv_weight_grad(x, gy, ws, spec), want[2], 0),
    ):
        got, seconds, peak = measure(call)
        close(got, ref)
        assert seconds < 2.0, f"{label}: {seconds:.2f} s"
        # materialising the dilated input would take dilated_bytes on top of the result;
        # the input gradient may copy (a padded slab of) gy within the workspace bound
        budget = got.nbytes + MiB + min(read_bytes, get_workspace_limit())
        assert peak < budget, f"{label}: peak {peak / MiB:.2f} MiB, result {got.nbytes / MiB:.2f}"
        if not read_bytes:
            assert peak < got.nbytes + dilated_bytes / 2


def test_huge_input_dilation_tight_workspace():
    """Under a 1 MiB workspace the input gradient of the 2e6-long output stays within it."""
    spec = spec_of(1, idil=(D,))
    x, w, gy = data(6, (1, 1, 3), (1, 1, 3), spec)
    want = scatter_ref(x, w, gy, spec)
    with workspace_limit(MiB):
        for got_fn, ref in ((lambda: conv_forward(x, w, spec), want[0]),
                            (lambda: conv_input_grad(gy, w, x.shape, spec), want[1])):
            got, _, peak = measure(got_fn)
            close(got, ref)
            assert peak < got.nbytes + 2 * MiB


HUGE_KERNEL_DILATION = [
    ("1d", (1, 2, 3), (2, 2, 3), spec_of(1, kdil=(D,), padding=((D, D),))),
    ("1d-flip-stride", (2, 2, 5), (4, 1, 3),
     spec_of(1, kdil=(D,), padding=((D, D - 1),), stride=(2,), groups=2, flip=True)),
    ("2d", (1, 2, 3, 4), (3, 2, 2, 3), spec_of(2, kdil=(D, 2), padding=((D - 1, 0), (1, 1)))),
]


@pytest.mark.parametrize("name,xs,ws,spec", HUGE_KERNEL_DILATION,
                         ids=[c[0] for c in HUGE_KERNEL_DILATION])
def test_huge_kernel_dilation(name, xs, ws, spec):
    x, w, gy = data(7, xs, ws, spec)
    want = scatter_ref(x, w, gy, spec)
    calls = (lambda: conv_forward(x, w, spec), lambda: conv_input_grad(gy, w, xs, spec),
             lambda: conv_weight_grad(x, gy, ws, spec))
    for call, ref in zip(calls, want):
        got, seconds, peak = measure(call)
        close(got, ref)
        assert seconds < 2.0
        assert peak < got.nbytes + get_workspace_limit() + MiB  # the contract's bound
    with workspace_limit(MiB):  # a tight workspace must chunk the kernel, not the padding
        for call, ref in zip(calls, want):
            got, seconds, peak = measure(call)
            close(got, ref)
            assert seconds < 2.0
            assert peak < got.nbytes + 2 * MiB


# --------------------------------------------------------------------- negative padding

NEGATIVE_PADDING = [
    ("1d", (2, 3, 40), (4, 3, 3), spec_of(1, padding=((-15, -17),))),
    ("1d-stride-dil", (2, 2, 50), (2, 2, 4), spec_of(1, padding=((-20, -9),), stride=(3,),
                                                    kdil=(2,), flip=True)),
    ("2d", (2, 3, 30, 25), (4, 3, 3, 2), spec_of(2, padding=((-10, -12), (-7, 3)),
                                                stride=(2, 1))),
    ("2d-groups", (1, 4, 20, 20), (4, 1, 3, 3), spec_of(2, padding=((-8, -9), (-9, -8)),
                                                       groups=4)),
    ("3d", (1, 2, 12, 10, 9), (2, 2, 2, 3, 2), spec_of(3, padding=((-5, -4), (-3, -4), (0, -6)))),
]


@pytest.mark.parametrize("name,xs,ws,spec", NEGATIVE_PADDING, ids=[c[0] for c in NEGATIVE_PADDING])
def test_large_negative_padding(name, xs, ws, spec):
    x, w, gy = data(8, xs, ws, spec)
    _, gx, _ = check_all(x, w, gy, spec, torch_ref, jax_ref)
    for d, (lo, hi) in enumerate(spec.padding):  # cropped inputs get no gradient
        n = xs[2 + d]
        cropped = [*range(min(-lo, n)), *range(max(n + hi, 0) if hi < 0 else n, n)]
        assert not np.take(gx, cropped, axis=2 + d).any(), (d, cropped)


def test_large_negative_padding_with_input_dilation():
    spec = spec_of(2, padding=((-13, -11), (-5, 2)), idil=(3, 2), stride=(2, 1), groups=2)
    x, w, gy = data(9, (2, 4, 12, 9), (4, 2, 3, 2), spec)
    check_all(x, w, gy, spec, jax_ref, scatter_ref)


def test_crop_beyond_the_input_reads_only_padding():
    # lo = -(L + 2) crops the whole input away; hi adds the zeros that make the output
    spec = spec_of(1, padding=((-9, 12),))
    x, w, gy = data(10, (2, 3, 7), (4, 3, 3), spec)
    y, gx, gw = check_all(x, w, gy, spec, jax_ref, scatter_ref)
    assert y.shape == (2, 4, 8)
    assert not y.any() and not gx.any() and not gw.any()


# --------------------------------------------------------------------------- empty batch

EMPTY_BATCH = [
    ("1d", (0, 3, 9), (4, 3, 3), spec_of(1, padding=((1, 0),))),
    ("2d-groups-flip", (0, 4, 6, 5), (6, 2, 3, 2), spec_of(2, groups=2, flip=True,
                                                          stride=(2, 1))),
    ("2d-idil", (0, 2, 4, 4), (3, 2, 3, 3), spec_of(2, idil=(2, 3), padding=((2, 2), (2, 2)))),
    ("3d", (0, 2, 4, 3, 5), (2, 1, 2, 2, 2), spec_of(3, groups=2, kdil=(2, 1, 2))),
]


@pytest.mark.parametrize("name,xs,ws,spec", EMPTY_BATCH, ids=[c[0] for c in EMPTY_BATCH])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_empty_batch(name, xs, ws, spec, dtype):
    x, w, gy = (a.astype(dtype) for a in data(11, xs, ws, spec))
    ys = spec.output_shape(xs, ws)
    assert ys[0] == 0 and all(p >= 1 for p in ys[2:])
    y = conv_forward(x, w, spec)
    assert y.shape == ys and y.dtype == dtype
    if all(d == 1 for d in spec.input_dilation):  # PyTorch agrees on the shape
        assert y.shape == torch_ref(x.astype(np.float64), w.astype(np.float64),
                                    gy.astype(np.float64), spec)[0].shape
    gx = conv_input_grad(gy, w, xs, spec)
    assert gx.shape == xs and gx.dtype == dtype
    gw = conv_weight_grad(x, gy, ws, spec)
    assert gw.shape == ws and gw.dtype == dtype
    assert not gw.any()  # a sum over an empty batch
    gb = conv_bias_grad(gy)
    assert gb.shape == (ws[0],) and not gb.any()


# ----------------------------------------------------------------------------- workspace

CHUNKED = [
    ("2d", (3, 8, 40, 36), (8, 4, 5, 4),
     spec_of(2, groups=2, stride=(2, 1), padding=((2, 1), (-1, 3)), kdil=(1, 2))),
    ("2d-idil-flip", (2, 6, 20, 18), (6, 3, 4, 3),
     spec_of(2, groups=2, idil=(2, 3), padding=((3, 3), (2, 2)), flip=True)),
    ("3d", (2, 4, 12, 11, 10), (6, 2, 3, 3, 2),
     spec_of(3, groups=2, kdil=(2, 1, 1), idil=(1, 2, 1), padding=((1, 1), (0, 2), (-1, 1)))),
]


@pytest.mark.parametrize("algorithm", ["im2col", "direct", "scatter"])
@pytest.mark.parametrize("name,xs,ws,spec", CHUNKED, ids=[c[0] for c in CHUNKED])
def test_workspace_chunking_gives_the_same_results(name, xs, ws, spec, algorithm):
    if algorithm == "direct" and not direct.HAVE_NUMBA:
        pytest.skip("no Numba: no direct loops")
    x, w, gy = data(12, xs, ws, spec)
    default = ours(x, w, gy, spec)
    # direct chunks the batch only: a limit that holds one sample's slab, not all of them
    limit = 2**18 if algorithm == "direct" else 2**16
    with prefer(algorithm), workspace_limit(limit), profile() as prof:
        small = ours(x, w, gy, spec)
    ran = {e.algorithm.split("/")[0] for e in prof.of("conv")}
    assert algorithm in ran or (algorithm == "scatter" and ran == {"im2col"}
                                and all(s > 1 for s in spec.stride)), ran
    for a, b in zip(small, default):
        close(a, b, rtol=1e-13)
    for g, r in zip(default, jax_ref(x, w, gy, spec)):  # and both are right
        close(g, r)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_workspace_bounds_peak_memory(dtype):
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 16, 64, 64)).astype(dtype)
    w = rng.standard_normal((16, 16, 3, 3)).astype(dtype)
    spec = spec_of(2, padding=((1, 1), (1, 1)))
    with workspace_limit(MiB):
        y, _, peak = measure(lambda: conv_forward(x, w, spec))
    assert y.shape == (2, 16, 64, 64)
    assert peak - y.nbytes < 3 * MiB, (
        f"peak {peak / MiB:.2f} MiB with a {y.nbytes / MiB:.2f} MiB output under a 1 MiB limit")
    close(y, torch_ref(x.astype(np.float64), w.astype(np.float64), np.zeros(y.shape), spec)[0],
          rtol=1e-4 if dtype == np.float32 else 1e-10)


# ------------------------------------------------------------------- memory layouts

LAYOUT_SPECS = [
    ("2d", (2, 4, 9, 8), (6, 2, 3, 2),
     spec_of(2, groups=2, stride=(2, 1), padding=((1, -1), (2, 0)), kdil=(1, 2))),
    ("2d-idil-flip", (2, 3, 5, 6), (4, 3, 3, 3),
     spec_of(2, idil=(2, 3), padding=((2, 1), (0, 2)), stride=(1, 2), flip=True)),
    ("3d", (1, 2, 5, 4, 6), (2, 1, 2, 2, 3), spec_of(3, groups=2, idil=(1, 2, 1))),
]


def _layouts(a):
    """The same values as ``a`` in non-contiguous layouts."""
    nd = a.ndim
    rev = (Ellipsis, *([slice(None, None, -1)] * (nd - 2)))
    fortran = np.asfortranarray(a)
    reversed_view = np.ascontiguousarray(a[rev])[rev]  # negative strides
    big = np.zeros(tuple(2 * s for s in a.shape))
    big[tuple(slice(None, None, 2) for _ in a.shape)] = a
    strided = big[tuple(slice(None, None, 2) for _ in a.shape)]  # every other element
    readonly = a.copy()
    readonly.flags.writeable = False
    return {"fortran": fortran, "negative-strides": reversed_view, "strided": strided,
            "readonly": readonly}


@pytest.mark.parametrize("name,xs,ws,spec", LAYOUT_SPECS, ids=[c[0] for c in LAYOUT_SPECS])
def test_non_contiguous_inputs(name, xs, ws, spec):
    x, w, gy = data(14, xs, ws, spec)
    want = check_all(x, w, gy, spec, jax_ref)
    lx, lw, lg = _layouts(x), _layouts(w), _layouts(gy)
    for layout in lx:
        got = ours(lx[layout], lw[layout], lg[layout], spec)
        for g, r in zip(got, want):
            close(g, r, rtol=1e-13)
    # broadcast (zero-stride) inputs
    xb = np.broadcast_to(x[:1], x.shape)
    close(conv_forward(xb, w, spec), conv_forward(np.ascontiguousarray(xb), w, spec), rtol=1e-13)
