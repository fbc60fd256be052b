"""Oracle: jax.lax.conv_general_dilated and jax.vjp (float64)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
from jax import lax  # noqa: E402

from convgrad.ops import (  # noqa: E402
    ConvSpec,
    conv_bias_grad,
    conv_forward,
    conv_input_grad,
    conv_weight_grad,
    direct,
    onednn,
    prefer,
)
from convgrad.ops.profiler import profile  # noqa: E402

SEED = 20240611
N_RANDOM = 240
SPATIAL_LETTERS = {1: "W", 2: "HW", 3: "DHW", 4: "TDHW"}
# compile-speed options only (the oracle's arithmetic is unchanged)
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


@dataclass
class Case:
    name: str
    spec: ConvSpec
    x: np.ndarray   # float64 values that are exactly representable in float32
    w: np.ndarray
    b: np.ndarray
    gy: np.ndarray


def _f32_exact(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Standard normals rounded to float32, held in float64 (so float32 runs see the same data)."""
    return rng.standard_normal(shape).astype(np.float32).astype(np.float64)


def _make_case(name: str, rng: np.random.Generator, spec: ConvSpec, x_shape: tuple,
               w_shape: tuple) -> Case:
    y_shape = spec.output_shape(x_shape, w_shape)
    assert all(p >= 1 for p in y_shape[2:]), (spec, x_shape, w_shape, y_shape)
    return Case(name, spec, _f32_exact(rng, x_shape), _f32_exact(rng, w_shape),
                _f32_exact(rng, (w_shape[0],)), _f32_exact(rng, y_shape))


def _reads_data(n: int, k: int, s: int, lo: int, kd: int, di: int, out: int) -> bool:
    """True if some output of this dim meets a real (not padding, not dilation) sample."""
    for p in range(out):
        for t in range(k):
            j = p * s + t * kd - lo  # index into the dilated, unpadded input
            if j % di == 0 and 0 <= j // di < n:
                return True
    return False


def _random_case(i: int) -> Case:
    rng = np.random.default_rng([SEED, i])
    nd = int(rng.choice([1, 2, 3, 4], p=[0.3, 0.4, 0.2, 0.1]))
    kmax = {1: 5, 2: 5, 3: 3, 4: 2}[nd]
    lmax = {1: 12, 2: 8, 3: 5, 4: 4}[nd]
    stride, pad, kdil, idil, K, L = [], [], [], [], [], []
    for _ in range(nd):
        while True:  # resample this dim until the output length is in [1, 12]
            k = int(rng.integers(1, kmax + 1))
            kd = int(rng.integers(1, 4))
            di = int(rng.choice([1, 1, 2, 3, 4]))
            s = int(rng.integers(1, 4))
            n = int(rng.integers(1, lmax + 1))
            lo, hi = (int(v) for v in rng.integers(-4, 5, size=2))
            ld = (n - 1) * di + 1
            out = (ld + lo + hi - ((k - 1) * kd + 1)) // s + 1
            if 1 <= out <= 12 and _reads_data(n, k, s, lo, kd, di, out):
                break
        stride.append(s)
        pad.append((lo, hi))
        kdil.append(kd)
        idil.append(di)
        K.append(k)
        L.append(n)
    mode = rng.choice(["single", "grouped", "depthwise"], p=[0.4, 0.3, 0.3])
    if mode == "single":
        G, cg, og = 1, int(rng.integers(1, 5)), int(rng.integers(1, 5))
    elif mode == "grouped":
        G, cg, og = int(rng.integers(2, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    else:  # depthwise with a channel multiplier
        G, cg, og = int(rng.integers(1, 5)), 1, int(rng.integers(1, 4))
    if nd == 4:
        cg, og = min(cg, 2), min(og, 2)
    spec = ConvSpec(stride=tuple(stride), padding=tuple(pad), kernel_dilation=tuple(kdil),
                    input_dilation=tuple(idil), groups=G, flip=bool(rng.integers(0, 2)))
    batch = int(rng.integers(1, 4))
    return _make_case(f"rand{i}-{nd}d-{mode}", rng, spec, (batch, G * cg, *L), (G * og, cg, *K))


def _explicit_cases() -> list[Case]:
    """Hand-picked: flip with groups, kernel dilation and input dilation all at once."""
    rng = np.random.default_rng([SEED, 10**6])
    out = []

    def add(name, x_shape, w_shape, **kw):
        out.append(_make_case(name, rng, ConvSpec(**kw), x_shape, w_shape))

    add("flip-all-1d", (2, 6, 7), (4, 3, 3), stride=(2,), padding=((1, 2),),
        kernel_dilation=(2,), input_dilation=(3,), groups=2, flip=True)
    add("flip-all-1d-negpad", (3, 6, 9), (6, 2, 4), stride=(3,), padding=((-2, 1),),
        kernel_dilation=(3,), input_dilation=(2,), groups=3, flip=True)
    add("flip-all-2d", (2, 4, 5, 6), (6, 2, 3, 2), stride=(2, 1), padding=((2, -1), (0, 3)),
        kernel_dilation=(2, 3), input_dilation=(2, 4), groups=2, flip=True)
    add("flip-all-2d-depthwise", (1, 3, 6, 5), (6, 1, 4, 3), stride=(1, 3),
        padding=((-1, 2), (1, 1)), kernel_dilation=(3, 2), input_dilation=(3, 2), groups=3,
        flip=True)
    add("flip-all-3d", (2, 4, 4, 3, 5), (4, 2, 2, 3, 2), stride=(2, 1, 3),
        padding=((2, 0), (-1, 2), (2, -2)), kernel_dilation=(2, 2, 3),
        input_dilation=(2, 3, 2), groups=2, flip=True)
    add("flip-all-3d-depthwise", (1, 2, 3, 4, 3), (4, 1, 3, 2, 2), stride=(1, 2, 2),
        padding=((0, 1), (1, 1), (-1, 3)), kernel_dilation=(2, 3, 2),
        input_dilation=(4, 2, 3), groups=2, flip=True)
    add("flip-all-4d", (2, 4, 3, 2, 3, 3), (4, 2, 2, 2, 2, 1), stride=(1, 2, 1, 2),
        padding=((1, 0), (0, 1), (-1, 1), (2, 0)), kernel_dilation=(2, 1, 2, 3),
        input_dilation=(2, 3, 2, 2), groups=2, flip=True)
    add("transposed-like-2d", (2, 3, 4, 4), (3, 3, 4, 4), stride=(1, 1),
        padding=((3, 3), (2, 2)), kernel_dilation=(1, 1), input_dilation=(2, 2), groups=1,
        flip=True)
    return out


CASES = [_random_case(i) for i in range(N_RANDOM)] + _explicit_cases()
IDS = [c.name for c in CASES]


def _jax_fn(spec: ConvSpec):
    nd = spec.ndim
    sp = SPATIAL_LETTERS[nd]
    flip_axes = tuple(range(2, 2 + nd))

    def conv(x, w):
        if spec.flip:  # a true convolution = correlation with the reversed kernel
            w = jax.numpy.flip(w, axis=flip_axes)
        return lax.conv_general_dilated(
            x, w, window_strides=spec.stride, padding=list(spec.padding),
            lhs_dilation=spec.input_dilation, rhs_dilation=spec.kernel_dilation,
            dimension_numbers=("NC" + sp, "OI" + sp, "NC" + sp),
            feature_group_count=spec.groups, precision=lax.Precision.HIGHEST)

    def with_bias(x, w, b):
        return conv(x, w) + b.reshape((1, -1) + (1,) * nd)

    def all_outputs(x, w, b, gy):
        y = conv(x, w)
        _, vjp = jax.vjp(with_bias, x, w, b)
        gx, gw, gb = vjp(gy)
        return y, gx, gw, gb

    return all_outputs


@functools.cache
def _references() -> list[tuple[np.ndarray, ...]]:
    """JAX's (y, gx, gw, gb) for every case; compiled in batches (one XLA compile each)."""
    results = []
    batch = 40
    for start in range(0, len(CASES), batch):
        chunk = CASES[start:start + batch]
        fns = [_jax_fn(c.spec) for c in chunk]

        def run(args, fns=fns):
            return [f(*a) for f, a in zip(fns, args)]

        args = [(c.x, c.w, c.b, c.gy) for c in chunk]
        lowered = jax.jit(run).lower(args)
        try:  # XLA:CPU compiles these graphs ~8x faster without its fusion emitters
            compiled = lowered.compile(compiler_options=FAST_COMPILE)
        except Exception:  # an XLA that does not know the options: compile as usual
            compiled = lowered.compile()
        out = compiled(args)
        results.extend(tuple(np.asarray(a) for a in o) for o in out)
    return results


def _close64(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * scale)


def _close32(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)


def test_sweep_covers_what_it_claims():
    specs = [c.spec for c in CASES]
    assert len(CASES) >= 200
    assert {s.ndim for s in specs} == {1, 2, 3, 4}
    assert any(any(lo < 0 or hi < 0 for lo, hi in s.padding) for s in specs)
    assert any(any(lo != hi for lo, hi in s.padding) for s in specs)
    assert any(max(s.input_dilation) == 4 for s in specs)
    assert any(max(s.kernel_dilation) == 3 for s in specs)
    assert any(max(s.stride) == 3 for s in specs)
    assert any(s.groups > 1 and c.w.shape[1] == 1 and c.w.shape[0] > s.groups
               for s, c in zip(specs, CASES))  # depthwise with a channel multiplier
    assert any(any(k % 2 == 0 for k in c.w.shape[2:]) for c in CASES)
    assert any(len(set(c.w.shape[2:])) > 1 for c in CASES)  # non-square kernels
    assert any(s.flip and s.groups > 1 and max(s.kernel_dilation) > 1
               and max(s.input_dilation) > 1 for s in specs)
    assert {c.x.shape[0] for c in CASES} == {1, 2, 3}
    # a flip must matter: most cases have kernels with more than one tap and nonzero output
    refs = _references()
    assert sum(np.abs(r[0]).max() > 0 for r in refs) == len(CASES)
    assert sum(c.w[0, 0].size > 1 for c in CASES) >= 0.8 * len(CASES)


@pytest.fixture(params=["onednn", "im2col", "direct", "scatter"])
def algorithm(request):
    """Run under each algorithm the dispatcher can pick, pinned with ``prefer``;
    the tests check through the profiler that it ran (oneDNN: wherever it says it runs
    the pass, see ``onednn.reason``)."""
    if request.param == "direct" and not direct.HAVE_NUMBA:
        pytest.skip("no Numba: no direct loops")
    if request.param == "onednn" and not onednn.available():
        pytest.skip("oneDNN is not available here")
    with prefer(request.param):
        yield request.param


# the lowered stride of each pass (scatter needs unit stride): see convgrad.ops.lowering
_PASS_STRIDE = {"conv_forward": "stride", "conv_input_grad": "input_dilation",
                "conv_weight_grad": "kernel_dilation"}
_PASS_NAME = {"conv_forward": "forward", "conv_input_grad": "input_grad",
              "conv_weight_grad": "weight_grad"}


def _expected_algorithm(algorithm: str, kernel: str, spec: ConvSpec, shapes, dtype) -> str:
    if kernel == "conv_bias_grad":
        return "reduce"
    if algorithm == "onednn":
        pass_ = _PASS_NAME[kernel]
        lhs, rhs, out = shapes
        runs = onednn.reason(pass_, lhs, rhs, out, spec, dtype) is None
        return "onednn" if runs else "numpy"
    if algorithm == "scatter" and all(s == 1 for s in getattr(spec, _PASS_STRIDE[kernel])):
        return "scatter"
    return "im2col" if algorithm == "scatter" else algorithm


def _all_kernels(c: Case, x, w, gy, algorithm: str):
    with profile() as prof:
        got = {
            "conv_forward": conv_forward(x, w, c.spec),
            "conv_input_grad": conv_input_grad(gy, w, c.x.shape, c.spec),
            "conv_weight_grad": conv_weight_grad(x, gy, c.w.shape, c.spec),
            "conv_bias_grad": conv_bias_grad(gy),
        }
    for ev in prof.of("conv"):  # pinned: the algorithm ran (a "none" kernel had no output)
        want = _expected_algorithm(algorithm, ev.name, c.spec, ev.shapes, x.dtype)
        ran = ev.algorithm.split(":")[0] if want in ("onednn", "numpy") else (
            ev.algorithm.split("/")[0])
        if want == "numpy":  # oneDNN declined this pass: the NumPy engine ran it
            assert not ran.startswith("onednn"), (ev.name, ev.algorithm)
            continue
        assert ev.algorithm in ("none", "zeros") or ran == want, (ev.name, ev.algorithm, want)
    return got


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_float64(i, algorithm):
    c = CASES[i]
    got = _all_kernels(c, c.x, c.w, c.gy, algorithm)
    for (label, g), r in zip(got.items(), _references()[i]):
        assert g.dtype == np.float64, label
        try:
            _close64(g, r)
        except AssertionError as e:
            raise AssertionError(f"{label} [{algorithm}] {c.spec} x{c.x.shape} w{c.w.shape}"
                                 f": {e}") from None
    _close64(got["conv_bias_grad"], c.gy.sum(axis=(0, *range(2, c.gy.ndim))))


F32_SUBSET = sorted(set(range(0, N_RANDOM, 4)) | set(range(N_RANDOM, len(CASES))))


@pytest.mark.parametrize("i", F32_SUBSET, ids=[IDS[i] for i in F32_SUBSET])
def test_float32(i, algorithm):
    c = CASES[i]
    x, w, gy = c.x.astype(np.float32), c.w.astype(np.float32), c.gy.astype(np.float32)
    got = _all_kernels(c, x, w, gy, algorithm)
    for (label, g), r in zip(got.items(), _references()[i]):
        assert g.dtype == np.float32, label
        try:
            _close32(g, r)
        except AssertionError as e:
            raise AssertionError(f"{label} [{algorithm}] {c.spec} x{c.x.shape} w{c.w.shape}"
                                 f": {e}") from None


@pytest.mark.parametrize("i", [0, 1, 2, 3, N_RANDOM, N_RANDOM + 4], ids=lambda i: IDS[i])
def test_mixed_precision_promotes_to_float64(i):
    c = CASES[i]
    ref = _references()[i]
    x32, w32, gy32 = c.x.astype(np.float32), c.w.astype(np.float32), c.gy.astype(np.float32)
    results = {
        "forward(x32, w64)": (conv_forward(x32, c.w, c.spec), ref[0]),
        "forward(x64, w32)": (conv_forward(c.x, w32, c.spec), ref[0]),
        "input_grad(gy32, w64)": (conv_input_grad(gy32, c.w, c.x.shape, c.spec), ref[1]),
        "input_grad(gy64, w32)": (conv_input_grad(c.gy, w32, c.x.shape, c.spec), ref[1]),
        "weight_grad(x32, gy64)": (conv_weight_grad(x32, c.gy, c.w.shape, c.spec), ref[2]),
        "weight_grad(x64, gy32)": (conv_weight_grad(c.x, gy32, c.w.shape, c.spec), ref[2]),
    }
    for label, (got, want) in results.items():
        assert got.dtype == np.float64, label
        # the data are float32-exact, so promotion must give float64 accuracy
        _close64(got, want)
