"""Oracle: the in-memory NumPy kernels of convgrad.ops on the same data (and brute-force
enumeration of a convolution's taps for the halo arithmetic).

The dask kernels must equal the in-memory ones to a max-norm relative error of 1e-12
(float64) and 1e-5 (float32) for a seeded sweep of specs (1-3 d, stride, asymmetric and
negative padding, both dilations, groups, flip) and chunkings (uneven, smaller than the
halo, one chunk), compute nothing until asked, and reject bad input clearly.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from dask.callbacks import Callback  # noqa: E402

from convgrad.ops import (  # noqa: E402
    ConvSpec,
    conv_bias_grad,
    conv_forward,
    conv_input_grad,
    conv_weight_grad,
)
from convgrad.ops.dask.halo import Axis  # noqa: E402

TOL = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5}


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):  # small graphs: no thread hand-offs
        yield


class Computes(Callback):
    """Counts the graphs dask evaluates."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def _start(self, dsk) -> None:
        self.count += 1


def assert_matches(actual, expected, what: str) -> None:
    assert isinstance(actual, da.Array), f"{what}: expected a dask array, got {type(actual)}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    value = actual.compute()
    assert value.dtype == expected.dtype, f"{what}: dtype {value.dtype} != {expected.dtype}"
    scale = max(float(np.abs(expected).max(initial=0.0)), 1e-30)
    err = float(np.abs(value - expected).max(initial=0.0)) / scale
    assert err <= TOL[expected.dtype], f"{what}: max relative error {err:.2e}"


# ----------------------------------------------------------------------------- the sweep
def _partition(rng: np.random.Generator, n: int, kind: str) -> tuple[int, ...]:
    """Chunk sizes summing to n: one chunk, even, uneven, or tiny (size 1 and 2)."""
    if n <= 1 or kind == "one":
        return (n,)
    if kind == "even":
        size = int(rng.integers(1, n))
        return (size,) * (n // size) + ((n % size,) if n % size else ())
    if kind == "tiny":
        out = []
        while sum(out) < n:
            out.append(min(int(rng.integers(1, 3)), n - sum(out)))
        return tuple(out)
    cuts = np.sort(rng.choice(np.arange(1, n), size=int(rng.integers(1, min(n, 5))),
                              replace=False))
    return tuple(int(c) for c in np.diff(np.concatenate([[0], cuts, [n]])))


def _draw_case(seed: int):
    """A random valid (x shape, w shape, spec, x chunks, dtype) for ``seed``."""
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(1, 4))
    while True:
        g = int(rng.choice([1, 1, 2, 3]))
        cg, og = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        n = int(rng.integers(1, 4))
        longest = {1: 30, 2: 14, 3: 8}[nd]
        L = [int(rng.integers(1, longest + 1)) for _ in range(nd)]
        K = [int(rng.integers(1, 5)) for _ in range(nd)]
        stride = [int(rng.choice([1, 1, 2, 3])) for _ in range(nd)]
        kdil = [int(rng.choice([1, 1, 2, 3])) for _ in range(nd)]
        idil = [int(rng.choice([1, 1, 1, 2, 3])) for _ in range(nd)]
        pad = [(int(rng.integers(-3, 5)), int(rng.integers(-3, 5))) for _ in range(nd)]
        spec = ConvSpec(stride=tuple(stride), padding=tuple(pad), kernel_dilation=tuple(kdil),
                        input_dilation=tuple(idil), groups=g, flip=bool(rng.integers(2)))
        x_shape, w_shape = (n, g * cg, *L), (g * og, cg, *K)
        try:
            y_shape = spec.output_shape(x_shape, w_shape)
        except ValueError:
            continue  # an empty output: draw again
        kinds = ["one", "even", "uneven", "tiny"]
        chunks = (_partition(rng, n, str(rng.choice(kinds))), (g * cg,),
                  *(_partition(rng, length, str(rng.choice(kinds))) for length in L))
        dtype = np.float32 if rng.random() < 0.3 else np.float64
        return x_shape, w_shape, y_shape, spec, chunks, dtype, rng


@pytest.mark.parametrize("seed", range(80))
def test_kernels_equal_numpy(seed):
    x_shape, w_shape, y_shape, spec, chunks, dtype, rng = _draw_case(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    gy = rng.standard_normal(y_shape).astype(dtype)
    xd = da.from_array(x, chunks=chunks)
    with Computes() as computes:
        y = conv_forward(xd, w, spec)
        gyd = da.from_array(gy, chunks=y.chunks)  # gy chunked as the forward's output
        gx = conv_input_grad(gyd, w, x_shape, spec)
        gw = conv_weight_grad(xd, gyd, w_shape, spec)
        gb = conv_bias_grad(gyd)
        # gy chunked independently of x: the input gradient of a transposed convolution
        gy_other = da.from_array(gy, chunks=(gy.shape[0], gy.shape[1], *(
            _partition(rng, n, str(rng.choice(["even", "uneven", "tiny"]))) for n in y_shape[2:])))
        gx_other = conv_input_grad(gy_other, w, x_shape, spec)
    assert computes.count == 0, "building the graphs computed something"
    what = f"seed {seed}: {spec}, x {x_shape} chunks {chunks}, w {w_shape}, {np.dtype(dtype)}"
    assert_matches(y, conv_forward(x, w, spec), f"forward, {what}")
    gx_ref = conv_input_grad(gy, w, x_shape, spec)
    assert_matches(gx, gx_ref, f"input grad, {what}")
    assert_matches(gx_other, gx_ref, f"input grad (gy chunks {gy_other.chunks}), {what}")
    assert_matches(gw, conv_weight_grad(x, gy, w_shape, spec), f"weight grad, {what}")
    assert_matches(gb, conv_bias_grad(gy), f"bias grad, {what}")
    # a weight gradient from x chunked as the input gradient comes back (double backward)
    x_like_gx = da.from_array(x, chunks=gx_other.chunks)
    assert_matches(conv_weight_grad(x_like_gx, gy_other, w_shape, spec),
                   conv_weight_grad(x, gy, w_shape, spec), f"weight grad (gx chunks), {what}")


def test_transposed_convolution_as_input_gradient():
    """conv_transpose2d(stride 2, padding 1, output_padding 1) of a chunked input."""
    rng = np.random.default_rng(7)
    spec = ConvSpec(stride=(2, 2), padding=((1, 1), (1, 1)), kernel_dilation=(1, 1),
                    input_dilation=(1, 1))
    w = rng.standard_normal((6, 4, 3, 3))  # (C_in of the transpose, C_out, kH, kW)
    z = rng.standard_normal((2, 6, 16, 12))  # the transposed convolution's input
    out_shape = (2, 4, 32, 24)
    zd = da.from_array(z, chunks=(1, 6, 4, 6))
    up = conv_input_grad(zd, w, out_shape, spec)
    assert up.chunks[2:] == ((8, 8, 8, 8), (12, 12))  # each chunk doubled
    assert_matches(up, conv_input_grad(z, w, out_shape, spec), "transposed convolution")
    # and its adjoint, the strided convolution, maps the chunks back
    assert conv_forward(up, w, spec).chunks[2:] == zd.chunks[2:]


def test_threaded_scheduler_and_float32_3d():
    rng = np.random.default_rng(3)
    spec = ConvSpec(stride=(1, 2, 1), padding=((1, 1), (1, 1), (2, 2)),
                    kernel_dilation=(1, 1, 2), input_dilation=(1, 1, 1))
    x = rng.standard_normal((2, 4, 12, 16, 10)).astype(np.float32)
    w = rng.standard_normal((5, 4, 3, 3, 3)).astype(np.float32)
    xd = da.from_array(x, chunks=(1, 4, 6, 8, 5))
    with dask.config.set(scheduler="threads"):
        y = conv_forward(xd, w, spec)
        gy = da.ones_like(y)
        assert_matches(y, conv_forward(x, w, spec), "forward (threads)")
        assert_matches(conv_input_grad(gy, w, x.shape, spec),
                       conv_input_grad(np.ones(y.shape, np.float32), w, x.shape, spec),
                       "input grad (threads)")
        assert_matches(conv_weight_grad(xd, gy, w.shape, spec),
                       conv_weight_grad(x, np.ones(y.shape, np.float32), w.shape, spec),
                       "weight grad (threads)")


# ----------------------------------------------------------------------------- chunk layout
def test_same_convolution_keeps_chunks_and_gradient_comes_back_chunked_like_x():
    rng = np.random.default_rng(1)
    spec = ConvSpec(stride=(1, 1), padding=((2, 2), (2, 2)), kernel_dilation=(1, 1),
                    input_dilation=(1, 1))
    x = da.from_array(rng.standard_normal((3, 2, 20, 18)), chunks=(2, 2, (7, 7, 6), 9))
    w = rng.standard_normal((3, 2, 5, 5))
    y = conv_forward(x, w, spec)
    assert y.chunks == ((2, 1), (3,), (7, 7, 6), (9, 9))
    assert conv_input_grad(y, w, x.shape, spec).chunks == ((2, 1), (2,), (7, 7, 6), (9, 9))
    # the weight and bias gradients are one chunk of the parameter's shape
    gw, gb = conv_weight_grad(x, y, w.shape, spec), conv_bias_grad(y)
    assert gw.shape == w.shape and gw.numblocks == (1, 1, 1, 1)
    assert gb.shape == (3,) and gb.numblocks == (1,)


def test_strided_chunks_scale_and_tiny_chunks_merge():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((1, 1, 5))
    spec = ConvSpec(stride=(2,), padding=((2, 2),), kernel_dilation=(1,), input_dilation=(1,))
    x = da.from_array(rng.standard_normal((1, 1, 48)), chunks=(1, 1, 16))
    assert conv_forward(x, w, spec).chunks[2] == (8, 8, 8)
    # chunks of 1 cannot lend a halo of 2: merged until they can, the output follows
    tiny = da.from_array(x.compute(), chunks=(1, 1, 1))
    y = conv_forward(tiny, w, spec)
    assert min(y.chunks[2]) >= 1 and len(y.chunks[2]) < 48
    assert_matches(y, conv_forward(x.compute(), w, spec), "tiny chunks")


@pytest.mark.parametrize("seed", range(200))
def test_halo_arithmetic_matches_enumerated_taps(seed):
    """x_reads / y_reads are the hulls of the taps a convolution actually reads."""
    rng = np.random.default_rng(1000 + seed)
    L, K = int(rng.integers(1, 25)), int(rng.integers(1, 5))
    s, dk, di = (int(rng.integers(1, 4)) for _ in range(3))
    lo, hi = int(rng.integers(-4, 6)), int(rng.integers(-4, 6))
    P = ((L - 1) * di + 1 + lo + hi - (K - 1) * dk - 1) // s + 1
    if P < 1:
        return
    ax = Axis(length=L, out_length=P, stride=s, extent=(K - 1) * dk, input_dilation=di, lo=lo)
    reads = {p: [] for p in range(P)}  # output -> the real samples it reads
    for p in range(P):
        for k in range(K):
            t = p * s + k * dk - lo
            if t % di == 0 and 0 <= t // di < L:
                reads[p].append(t // di)
    p0, p1 = sorted(int(v) for v in rng.integers(0, P + 1, size=2))
    if p1 > p0:
        hit = [i for p in range(p0, p1) for i in reads[p]]
        i0, i1 = ax.x_reads(p0, p1)
        assert 0 <= i0 and i1 <= L
        if hit:
            assert i0 <= min(hit) and max(hit) < i1  # covers every tap
            if dk == di == 1:  # then every sample in the hull is a tap: exactly the hull
                assert (i0, i1) == (min(hit), max(hit) + 1)
    q0, q1 = sorted(int(v) for v in rng.integers(0, L + 1, size=2))
    if q1 > q0:
        feeds = [p for p in range(P) if any(q0 <= i < q1 for i in reads[p])]
        a, b = ax.y_reads(q0, q1)
        assert 0 <= a and b <= P and all(a <= p < b for p in feeds)
        if feeds and dk == di == 1 and s == 1:
            assert (a, b) == (min(feeds), max(feeds) + 1)


# ----------------------------------------------------------------------------- bad input
@pytest.fixture()
def simple():
    rng = np.random.default_rng(5)
    spec = ConvSpec(stride=(1, 1), padding=((1, 1), (1, 1)), kernel_dilation=(1, 1),
                    input_dilation=(1, 1))
    x = da.from_array(rng.standard_normal((2, 4, 8, 8)), chunks=(1, 4, 4, 4))
    w = rng.standard_normal((3, 4, 3, 3))
    return x, w, spec


def test_chunked_channel_dim_is_a_value_error(simple):
    x, w, spec = simple
    xc = x.rechunk((1, 2, 4, 4))
    with pytest.raises(ValueError, match=r"conv_forward: x is chunked along the channel dim"):
        conv_forward(xc, w, spec)
    gy = conv_forward(x, w, spec)
    with pytest.raises(ValueError, match=r"conv_input_grad: gy is chunked along the channel"):
        conv_input_grad(gy.rechunk((1, 1, 4, 4)), w, x.shape, spec)
    with pytest.raises(ValueError, match=r"conv_weight_grad: x is chunked along the channel"):
        conv_weight_grad(xc, gy, w.shape, spec)


def test_dask_weight_is_a_value_error(simple):
    x, w, spec = simple
    wd = da.from_array(w)
    with pytest.raises(ValueError, match=r"conv_forward: weight is a dask array.*in-memory"):
        conv_forward(x, wd, spec)
    gy = conv_forward(x, w, spec)
    with pytest.raises(ValueError, match=r"conv_input_grad: weight is a dask array"):
        conv_input_grad(gy, wd, x.shape, spec)


def test_mismatched_chunks_are_a_value_error(simple):
    x, w, spec = simple
    gy = conv_forward(x, w, spec)
    with pytest.raises(ValueError, match=r"conv_weight_grad: gy's chunks .* do not pair"):
        conv_weight_grad(x, gy.rechunk((2, 3, 4, 4)), w.shape, spec)  # other batch chunks
    with pytest.raises(ValueError, match=r"gy\.rechunk\(\(\(1, 1\), \(3,\), \(4, 4\), \(4, 4\)\)"):
        conv_weight_grad(x, gy.rechunk((1, 3, 2, 4)), w.shape, spec)  # 4 chunks against 2


def test_other_bad_input(simple):
    x, w, spec = simple
    with pytest.raises(TypeError, match=r"conv_forward: x has dtype int64"):
        conv_forward(x.astype(np.int64), w, spec)
    with pytest.raises(TypeError, match=r"conv_forward: spec must be a ConvSpec"):
        conv_forward(x, w, "same")
    with pytest.raises(ValueError, match=r"conv_forward: groups=1 .*|weight.shape\[1\]=2"):
        conv_forward(x, w[:, :2], spec)
    with pytest.raises(ValueError, match=r"conv_input_grad: gy has shape \(2, 3, 7, 8\)"):
        conv_input_grad(conv_forward(x, w, spec)[:, :, 1:], w, x.shape, spec)
    with pytest.raises(ValueError, match=r"unknown chunk sizes"):
        conv_forward(x[x[:, 0, 0, 0] > 0], w, spec)
    with pytest.raises(TypeError, match=r"conv_weight_grad: x must be a numpy.ndarray"):
        conv_weight_grad([1.0], conv_forward(x, w, spec), w.shape, spec)


def test_importing_convgrad_does_not_import_dask():
    code = "import sys, convgrad, convgrad.ops; print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
