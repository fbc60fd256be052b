"""The eltwise kernel family (activations and + - * on oneDNN or NumPy): oracles are torch
in float64 (values, gradients: float32 error within 2x torch's own float32 error) and
NumPy itself (binary results bit for bit); the profiler says which algorithm ran."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import convgrad as cg
import convgrad.functional as F
from convgrad.ops import eltwise, jit, onednn_available, prefer
from convgrad.ops.eltwise import MIN_BINARY_SIZE, MIN_PIECEWISE_SIZE
from convgrad.ops.layouts import empty, is_channels_last
from convgrad.ops.relayout import SHORT_RUN_MIN_SIZE

needs_onednn = pytest.mark.skipif(not onednn_available(), reason="oneDNN unavailable")
ROUNDING = 2.0 ** -23
SHAPE = (2, 16, 96, 96)  # above the thresholds of activations
#: a copy of SHAPE into another layout (short runs): oneDNN's reorder above its threshold
_COPY = "onednn" if onednn_available() and np.prod(SHAPE) >= SHORT_RUN_MIN_SIZE else "numpy"
BIG = (4, 16, 128, 128)  # and of binary operations
assert np.prod(SHAPE) >= MIN_PIECEWISE_SIZE and np.prod(BIG) >= MIN_BINARY_SIZE

# name -> (convgrad, torch)
ACTIVATIONS = {
    "relu": (F.relu, TF.relu),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
    "elu": (lambda x: F.elu(x, 0.7), lambda x: TF.elu(x, 0.7)),
    "sigmoid": (F.sigmoid, torch.sigmoid),
    "tanh": (F.tanh, torch.tanh),
    "silu": (F.silu, TF.silu),
    "gelu": (F.gelu, TF.gelu),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: TF.gelu(x, approximate="tanh")),
    "softplus": (lambda x: F.softplus(x, beta=2.0), lambda x: TF.softplus(x, beta=2.0)),
    "hardswish": (F.hardswish, TF.hardswish),
}


def array(shape: tuple, layout: str, seed: int = 0, scale: float = 3.0) -> np.ndarray:
    values = scale * np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    out = empty(shape, channels_last=layout == "channels_last")
    out[...] = values
    return out


def rel_err(a, ref) -> float:
    a, r = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    return float(np.abs(a - r).max() / np.abs(r).max())


def check_accuracy(what: str, ours, t32, t64) -> None:
    ours_err, torch_err = rel_err(ours, t64), rel_err(t32, t64)
    assert ours_err <= 2 * max(torch_err, ROUNDING), (what, ours_err, torch_err)


def run(fn, x: np.ndarray, g: np.ndarray):
    t = cg.Tensor(x, requires_grad=True)
    with cg.profile() as prof:
        y = fn(t)
        y.backward(cg.Tensor(g))
    algs = {e.name: e.algorithm for e in prof.of("eltwise")}
    return y.data, t.grad.data, algs


def torch_run(fn, x: np.ndarray, g: np.ndarray, dtype):
    t = torch.tensor(np.ascontiguousarray(x), dtype=dtype, requires_grad=True)
    y = fn(t)
    y.backward(torch.tensor(np.ascontiguousarray(g), dtype=dtype))
    return y.detach().numpy(), t.grad.numpy()


@needs_onednn
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_on_onednn_matches_torch(name, layout):
    ours_fn, torch_fn = ACTIVATIONS[name]
    x, g = array(SHAPE, layout), array(SHAPE, layout, seed=1, scale=1.0)
    y, gx, algs = run(ours_fn, x, g)
    # relu's forward stays off oneDNN (oneDNN's relu(nan) is 0): Numba's loop, or NumPy
    relu = "numba" if jit.enabled() else "numpy"
    assert algs[f"{name}_forward"] == (relu if name == "relu" else "onednn"), algs
    # (leaky) relu's backward: Numba's loop (torch's gradient at a NaN; relu's 2.7x
    # oneDNN's), else oneDNN for relu, NumPy for leaky relu (oneDNN's leaves a NaN
    # input's gradient unscaled)
    fallback = {"relu": "onednn", "leaky_relu": "numpy"}
    want = ("numba" if jit.enabled() else fallback[name]) if name in fallback else "onednn"
    assert algs[f"{name}_backward"] == want, algs
    assert is_channels_last(y) == (layout == "channels_last")
    assert is_channels_last(gx) == (layout == "channels_last")
    y32, g32 = torch_run(torch_fn, x, g, torch.float32)
    y64, g64 = torch_run(torch_fn, x, g, torch.float64)
    check_accuracy(f"{name} forward", y, y32, y64)
    check_accuracy(f"{name} backward", gx, g32, g64)


@needs_onednn
@pytest.mark.parametrize("name", ["silu", "tanh", "gelu"])
def test_a_gradient_in_another_layout_is_copied_to_the_inputs(name):
    """x channels-last, its gradient NCHW (from a pass that wrote NCHW): one ``copy``
    into x's layout, then oneDNN's backward; the result in x's layout."""
    ours_fn, torch_fn = ACTIVATIONS[name]
    x, g = array(SHAPE, "channels_last"), array(SHAPE, "nchw", seed=1, scale=1.0)
    t = cg.Tensor(x, requires_grad=True)
    with cg.profile() as prof:
        ours_fn(t).backward(cg.Tensor(g))
    assert {e.name: e.algorithm for e in prof.of("eltwise")}[f"{name}_backward"] == "onednn"
    assert [(e.name, e.algorithm) for e in prof.of("layout")] == [("copy", _COPY)]
    assert is_channels_last(t.grad.data)
    _, g32 = torch_run(torch_fn, x, g, torch.float32)
    _, g64 = torch_run(torch_fn, x, g, torch.float64)
    check_accuracy(f"{name} backward", t.grad.data, g32, g64)


@needs_onednn
@pytest.mark.parametrize("name", ["relu", "leaky_relu"])
def test_piecewise_linear_activations_are_bitwise_numpy(name):
    x, g = array(SHAPE, "channels_last"), array(SHAPE, "channels_last", seed=1)
    flat = x.ravel(order="K")  # a view of channels-last memory
    assert np.shares_memory(flat, x)
    flat[:4] = [0.0, -0.0, np.inf, -np.inf]
    flat[-3:] = [np.nan, -np.nan, 1e-45]  # NaN kept, a denormal kept
    y, gx, algs = run(ACTIVATIONS[name][0], x, g)
    with prefer("numpy"):
        y_ref, gx_ref, ref_algs = run(ACTIVATIONS[name][0], x, g)
    compiled = "numba" if jit.enabled() else ("onednn" if name == "relu" else "numpy")
    assert algs[f"{name}_backward"] == compiled
    assert set(ref_algs.values()) == {"numpy"}
    if name == "relu":
        assert algs["relu_forward"] == ("numba" if jit.enabled() else "numpy")
    assert y.tobytes() == y_ref.tobytes()
    if compiled != "onednn":  # the compiled loops are NumPy's rules bit for bit
        assert gx.tobytes(order="A") == gx_ref.tobytes(order="A")
    else:  # equal values; oneDNN's gradient is g * 0 where the mask is off: -0.0 for g < 0
        assert np.array_equal(gx, gx_ref)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_float64_and_small_arrays_stay_on_numpy(name):
    ours_fn, torch_fn = ACTIVATIONS[name]
    x64, g64 = array(SHAPE, "channels_last").astype(np.float64), array(SHAPE, "nchw", 1)
    y, gx, algs = run(ours_fn, x64, g64.astype(np.float64))
    assert set(algs.values()) == {"numpy"}, algs
    ty, tg = torch_run(torch_fn, x64, g64, torch.float64)
    np.testing.assert_allclose(y, ty, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx, tg, rtol=1e-11, atol=1e-12)
    small = array((3, 5, 7), "nchw")  # odd and below the threshold
    _, _, algs = run(ours_fn, small, np.ones_like(small))
    assert set(algs.values()) == {"numpy"}, algs


@needs_onednn
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_pinned_onednn_runs_odd_shapes(name):
    ours_fn, torch_fn = ACTIVATIONS[name]
    x, g = array((3, 5, 7), "nchw"), array((3, 5, 7), "nchw", seed=1)
    with prefer("onednn"):
        y, gx, algs = run(ours_fn, x, g)
    assert algs.pop("relu_forward", "numpy") == "numpy" and set(algs.values()) == {"onednn"}
    y32, g32 = torch_run(torch_fn, x, g, torch.float32)
    y64, g64 = torch_run(torch_fn, x, g, torch.float64)
    check_accuracy(f"{name} forward", y, y32, y64)
    check_accuracy(f"{name} backward", gx, g32, g64)


@pytest.mark.parametrize("shape,layout", [((8, 512, 4, 4), "channels_last"),
                                          ((2, 3, 37, 41), "nchw")])
def test_mid_sized_relu_runs_compiled_with_torch_s_values(shape, layout):
    """From MIN_COMPILED_RELU_SIZE elements (a ResNet's small late layers) ReLU's forward
    is the compiled loop, not NumPy's maximum: the NumPy path's bits (``maximum(x, 0)``:
    -0 to +0, where torch keeps -0), torch's values, NaN kept, the layout kept."""
    from convgrad.ops.eltwise import MIN_COMPILED_RELU_SIZE

    x = array(shape, layout)
    assert MIN_COMPILED_RELU_SIZE <= x.size < MIN_PIECEWISE_SIZE
    x[0, 0, 0, :4] = [np.nan, -0.0, 0.0, -np.inf]
    with cg.profile() as prof:
        y = F.relu(cg.Tensor(x)).data
    algs = {e.name: e.algorithm for e in prof.of("eltwise")}
    assert algs == {"relu_forward": "numba" if jit.enabled() else "numpy"}, algs
    ty = TF.relu(torch.from_numpy(np.ascontiguousarray(x))).numpy()
    assert np.array_equal(y, ty, equal_nan=True)
    with prefer("numpy"):
        reference = F.relu(cg.Tensor(x)).data
    assert np.array_equal(y.view(np.uint32), reference.view(np.uint32))
    assert is_channels_last(y) == (layout == "channels_last")


@needs_onednn
def test_nan_propagates_as_in_torch():
    x = np.full(SHAPE, np.nan, np.float32)
    for name, (ours, theirs) in ACTIVATIONS.items():
        assert np.isnan(ours(cg.Tensor(x)).data).all(), name
        assert np.isnan(theirs(torch.from_numpy(x)).numpy()).all(), name


@pytest.mark.parametrize("pin", [None, "numpy"])
@pytest.mark.parametrize("name", ["relu", "leaky_relu"])
def test_a_nans_gradient_is_torchs(name, pin):
    """relu passes the gradient of a NaN input on (torch's threshold_backward zeroes it
    only where the output is <= 0); leaky_relu scales it by the slope."""
    ours_fn, torch_fn = ACTIVATIONS[name]
    x, g = array(SHAPE, "nchw"), array(SHAPE, "nchw", seed=1)
    x.reshape(-1)[::7] = np.nan
    with prefer(pin) if pin else contextlib.nullcontext():
        y, gx, _ = run(ours_fn, x, g)
    ty, tg = torch_run(torch_fn, x, g, torch.float32)
    np.testing.assert_array_equal(y, ty)  # NaN where torch has NaN
    np.testing.assert_array_equal(gx, tg)


@needs_onednn
def test_softplus_with_a_low_threshold_stays_on_numpy():
    x = array(SHAPE, "nchw")
    with cg.profile() as prof:
        y = F.softplus(cg.Tensor(x), threshold=1.0)
    assert [e.algorithm for e in prof.of("eltwise")] == ["numpy"]
    np.testing.assert_allclose(y.data, TF.softplus(torch.tensor(x), threshold=1.0).numpy(),
                               rtol=1e-6, atol=1e-6)


@needs_onednn
@pytest.mark.parametrize("name", ["relu", "silu", "gelu", "gelu_tanh", "elu", "sigmoid",
                                  "hardswish"])
def test_double_backward_stays_differentiable(name):
    ours_fn, torch_fn = ACTIVATIONS[name]
    x = array(SHAPE, "channels_last", scale=2.0).astype(np.float64)[:1, :2]
    x = np.ascontiguousarray(x).astype(np.float32)
    x = np.tile(x, (2, 8, 1, 1))  # SHAPE again: above the thresholds
    t = cg.Tensor(x, requires_grad=True)
    (gx,) = cg.autograd.grad((ours_fn(t) * t).sum(), (t,), create_graph=True)
    (ggx,) = cg.autograd.grad((gx * gx).sum(), (t,))
    tt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    (tgx,) = torch.autograd.grad((torch_fn(tt) * tt).sum(), tt, create_graph=True)
    (tggx,) = torch.autograd.grad((tgx * tgx).sum(), tt)
    np.testing.assert_allclose(gx.data, tgx.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ggx.data, tggx.numpy(), rtol=1e-3, atol=1e-4)


# -- binary operations ------------------------------------------------------------------

def special(shape: tuple, layout: str, seed: int) -> np.ndarray:
    a = array(shape, layout, seed)
    flat = a.reshape(-1) if a.flags.c_contiguous else a.transpose(0, 2, 3, 1).reshape(-1)
    flat[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3e-39, 3e38]
    return a


OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}


def binary(op: str, a, b):
    with cg.profile() as prof:
        out = OPS[op](cg.Tensor(a) if isinstance(a, np.ndarray) else a,
                      cg.Tensor(b) if isinstance(b, np.ndarray) else b)
    return out.data, [e.algorithm for e in prof.of("eltwise")]


@needs_onednn
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("other", ["same", "channel", "number", "float32 number", "row"])
def test_binary_on_onednn_is_bitwise_numpy(op, other, layout):
    a = special(BIG, layout, 0)
    b = {"same": lambda: special(BIG, layout, 1),
         "channel": lambda: special((1, BIG[1], 1, 1), "nchw", 2),
         "number": lambda: 0.1,
         "float32 number": lambda: np.float32(-2.5),
         "row": lambda: special((1, 1, 1, BIG[3]), "nchw", 3)[0]}[other]()
    with np.errstate(all="ignore"):
        out, algs = binary(op, a, b)
        expected = OPS[op](a, b)
    assert algs == ["onednn"]
    assert out.dtype == expected.dtype == np.float32
    assert out.tobytes(order="A") == expected.tobytes(order="A")
    assert out.strides == a.strides
    if op != "sub" and isinstance(b, np.ndarray) and b.shape != a.shape:  # b op a: swapped
        with np.errstate(all="ignore"):
            out, algs = binary(op, b, a)
        assert algs == ["onednn"] and out.tobytes(order="A") == expected.tobytes(order="A")


@needs_onednn
def test_binary_falls_back_where_numpy_differs_or_pays():
    a = array(BIG, "channels_last")
    cases = [
        (a.astype(np.float64), 0.5),                            # float64
        (a, a.astype(np.float64)),                              # mixed: float64
        (np.ones((1, 16, 1, 1), np.float32), a),                # sub with a broadcast first
        (a[:, :, ::2], array((4, 16, 64, 128), "nchw")),         # strided
        (array((3, 5, 7), "nchw"), array((3, 5, 7), "nchw")),   # small
        (array((1024, 1, 1, 32), "nchw"), array((1, 32, 32, 1), "nchw")),  # outer broadcast
    ]
    for x, y in cases:
        out, algs = binary("sub", x, y)
        assert algs == ["numpy"], (np.shape(x), np.shape(y))
        assert out.tobytes() == (x - y).tobytes()
    with prefer("numpy"):
        _, algs = binary("mul", a, a)
    assert algs == ["numpy"]


@needs_onednn
def test_binary_of_two_layouts_takes_the_first():
    a, b = array(BIG, "channels_last"), array(BIG, "nchw", seed=1)
    out, algs = binary("sub", a, b)  # the second copied channels-last, then oneDNN
    assert algs == ["onednn"] and out.strides == a.strides
    assert out.tobytes(order="A") == (a - b).astype(np.float32, order="K").tobytes(order="A")
    out, algs = binary("sub", b, a)  # the second copied C-contiguous, then oneDNN
    assert algs == ["onednn"] and out.strides == b.strides and np.array_equal(out, b - a)


@needs_onednn
def test_residual_add_and_scale_gradients_match_torch():
    x, r = array(BIG, "channels_last"), array(BIG, "channels_last", seed=1)
    w = array((1, BIG[1], 1, 1), "nchw", seed=2)
    tx, tr, tw = (cg.Tensor(v, requires_grad=True) for v in (x, r, w))
    with cg.profile() as prof:
        y = F.relu(tx * tw + tr)
        y.backward(cg.Tensor(array(BIG, "channels_last", seed=3)))
    ran = {(e.name, e.algorithm) for e in prof.of("eltwise")}
    relu = "numba" if jit.enabled() else "onednn"
    assert {("add", "onednn"), ("relu_backward", relu)} <= ran, ran
    px, pr, pw = (torch.tensor(np.ascontiguousarray(v), requires_grad=True)
                  for v in (x, r, w))
    TF.relu(px * pw + pr).backward(torch.tensor(np.ascontiguousarray(
        array(BIG, "channels_last", seed=3))))
    for ours, theirs in ((tx, px), (tr, pr), (tw, pw)):
        np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("scale", [3.0, 40.0])
def test_log_sigmoid_in_float64_chunks_matches_torch(layout, scale):
    """logsigmoid of a large float32 array runs in float64 chunks over the pool
    (``numpy:float64``, rounded once): values (large positive inputs' tiny results
    included: relative error per element) and gradients within 2x torch float32's error
    against float64, in x's layout; NaN and +-inf as torch; float64 and pinned NumPy run
    the reference; binary_cross_entropy_with_logits on it within 2x torch's error."""
    x, g = array(SHAPE, layout, scale=scale), array(SHAPE, layout, seed=1, scale=1.0)
    y, gx, algs = run(F.logsigmoid, x, g)
    assert algs["log_sigmoid_forward"] == "numpy:float64"
    assert is_channels_last(y) == (layout == "channels_last")
    t32, t64 = (torch_run(TF.logsigmoid, x, g, d) for d in (torch.float32, torch.float64))
    elem = np.abs(y - t64[0]) / np.maximum(np.abs(t64[0]), 1e-300)
    torch_elem = np.abs(t32[0] - t64[0]) / np.maximum(np.abs(t64[0]), 1e-300)
    assert elem.max() <= 2 * max(torch_elem.max(), ROUNDING)
    check_accuracy("logsigmoid grad", gx, t32[1], t64[1])
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.0, -104.0], np.float32)
    big = np.resize(special, SHAPE[0] * SHAPE[1] * SHAPE[2] * SHAPE[3]).reshape(SHAPE)
    np.testing.assert_array_equal(F.logsigmoid(cg.tensor(big)).numpy(),
                                  TF.logsigmoid(torch.from_numpy(big)).numpy())
    with cg.profile() as prof:
        F.logsigmoid(cg.tensor(x.astype(np.float64)))
        with prefer("numpy"):
            F.logsigmoid(cg.tensor(x))
    assert [e.algorithm for e in prof.of("eltwise")] == ["numpy", "numpy"]
    t = (np.random.default_rng(2).random(SHAPE) > 0.5).astype(np.float32)
    ours = F.binary_cross_entropy_with_logits(cg.tensor(x), cg.tensor(t)).item()
    ref = TF.binary_cross_entropy_with_logits(torch.tensor(x, dtype=torch.float64),
                                              torch.tensor(t, dtype=torch.float64)).item()
    t32_loss = TF.binary_cross_entropy_with_logits(torch.from_numpy(np.ascontiguousarray(x)),
                                                   torch.from_numpy(t)).item()
    assert abs(ours - ref) <= 2 * max(abs(t32_loss - ref), ROUNDING * abs(ref))


@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_bce_with_logits_in_one_pass_matches_torch(layout, reduction):
    """binary_cross_entropy_with_logits without pos_weight is one Function: on large
    float32 arrays one float64 pass over the pool (``numpy:float64``); the loss, the
    gradients of logits and targets and a second derivative within 2x torch float32's
    error against float64 (logits up to +-40: the tiny terms of large ones included);
    with ``weight``; with ``pos_weight`` the composed form; small or float64 input the
    reference."""
    x = array(SHAPE, layout, scale=12.0)
    t = empty(SHAPE, channels_last=layout == "channels_last")
    t[...] = np.random.default_rng(4).random(SHAPE) > 0.5
    t[0, 0] = 0.3  # soft targets too
    g = array(SHAPE, layout, seed=2, scale=1.0) if reduction == "none" else None

    def ours(x_np, t_np, **kw):
        cx, ct = cg.tensor(x_np, requires_grad=True), cg.tensor(t_np, requires_grad=True)
        with cg.profile() as prof:
            y = F.binary_cross_entropy_with_logits(cx, ct, reduction=reduction, **kw)
            y.backward(cg.tensor(g) if g is not None else None)
        return [y.numpy(), cx.grad.numpy(), ct.grad.numpy()], prof

    def theirs(dtype, **kw):
        tx = torch.tensor(np.ascontiguousarray(x), dtype=dtype, requires_grad=True)
        tt = torch.tensor(np.ascontiguousarray(t), dtype=dtype, requires_grad=True)
        kw = {k: torch.tensor(v, dtype=dtype) for k, v in kw.items()}
        y = TF.binary_cross_entropy_with_logits(tx, tt, reduction=reduction, **kw)
        y.backward(torch.tensor(np.ascontiguousarray(g), dtype=dtype) if g is not None else None)
        return [y.detach().numpy(), tx.grad.numpy(), tt.grad.numpy()]

    mine, prof = ours(x, t)
    assert [e.algorithm for e in prof.of("eltwise") if e.name.startswith("bce")] == [
        "numpy:float64"]
    for what, m, a, b in zip(("loss", "dx", "dt"), mine, theirs(torch.float32),
                             theirs(torch.float64)):
        check_accuracy(what, m, a, b)
    w = np.random.default_rng(5).random(SHAPE[1:]).astype(np.float32)
    for what, m, a, b in zip(("weighted", "dx", "dt"), ours(x, t, weight=w)[0],
                             theirs(torch.float32, weight=w), theirs(torch.float64, weight=w)):
        check_accuracy(what, m, a, b)
    pw = np.float32([2.5])
    mine_pw, prof = ours(x, t, pos_weight=pw)
    assert not [e for e in prof.of("eltwise") if e.name.startswith("bce")]
    for what, m, a, b in zip(("pos_weight", "dx", "dt"), mine_pw,
                             theirs(torch.float32, pos_weight=pw),
                             theirs(torch.float64, pos_weight=pw)):
        check_accuracy(what, m, a, b)
    # second order: d/dx of <dL/dx, h> = sigmoid'(x) h
    h = np.random.default_rng(6).standard_normal((4, 6))
    xs, ts = x[0, 0, :4, :6].astype(np.float64), t[0, 0, :4, :6].astype(np.float64)
    cx = cg.tensor(xs, requires_grad=True)
    (dx,) = cg.autograd.grad(F.binary_cross_entropy_with_logits(cx, cg.tensor(ts)), cx,
                             create_graph=True)
    (ddx,) = cg.autograd.grad((dx * cg.tensor(h)).sum(), cx)
    s = 1 / (1 + np.exp(-xs))
    np.testing.assert_allclose(ddx.numpy(), s * (1 - s) * h / xs.size, rtol=1e-12, atol=1e-300)
    with cg.profile() as prof:
        F.binary_cross_entropy_with_logits(cg.tensor(xs), cg.tensor(ts))
    assert [e.algorithm for e in prof.of("eltwise") if e.name.startswith("bce")] == ["numpy"]
    # targets in the other layout (an NCHW mask for channels-last logits): copied once
    other = np.ascontiguousarray(t) if layout == "channels_last" else array(SHAPE, "channels_last")
    if layout != "channels_last":
        other[...] = t
    with cg.profile() as prof:
        y = F.binary_cross_entropy_with_logits(cg.tensor(x), cg.tensor(other))
    ran = [(e.name, e.algorithm) for e in prof.events
           if e.name in ("copy", "bce_with_logits_forward")]
    assert ran == [("copy", _COPY), ("bce_with_logits_forward", "numpy:float64")]
    xc, tc = np.ascontiguousarray(x), np.ascontiguousarray(t)
    ref = TF.binary_cross_entropy_with_logits(torch.tensor(xc, dtype=torch.float64),
                                              torch.tensor(tc, dtype=torch.float64))
    t32 = TF.binary_cross_entropy_with_logits(torch.from_numpy(xc), torch.from_numpy(tc))
    assert abs(y.item() - ref.item()) <= 2 * max(abs(t32.item() - ref.item()),
                                                 ROUNDING * abs(ref.item()))


def _slice_and_dense(shape, rng):
    """A channel slice of a channels-last array and a dense channels-last array, both of
    ``shape`` (a concatenation's gradient slice and a skip's own gradient)."""
    full = empty((shape[0], 2 * shape[1], *shape[2:]), channels_last=True)
    full[...] = rng.standard_normal(full.shape)
    dense = empty(shape, channels_last=True)
    dense[...] = rng.standard_normal(shape)
    dense.reshape(-1)[::97] = np.nan  # NaN and a zero divisor take NumPy's rules too
    full[:, shape[1] // 2].reshape(-1)[::89] = 0.0
    return full[:, shape[1] // 2:shape[1] // 2 + shape[1]], dense


_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


@pytest.mark.skipif(not jit.enabled(), reason="the row loop is compiled by Numba")
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("shape", [(8, 16, 64, 64), (2, 16, 24, 48, 48)])
def test_a_slice_and_a_dense_array_meet_in_one_compiled_pass(op, shape):
    """A channel slice of a channels-last array with a dense channels-last array (a U-Net's
    skip gradients; the 3-D one past the oneDNN threshold): the compiled row loop, one
    pass, no layout copy; NumPy's result bit for bit, in either operand order, in the
    dense operand's layout."""
    view, dense = _slice_and_dense(shape, np.random.default_rng(41))
    ufunc = _UFUNCS[op]
    for a, b in ((view, dense), (dense, view)):
        with cg.profile() as prof, np.errstate(all="ignore"):
            out = eltwise.binary(op, a, b, lambda a=a, b=b: ufunc(a, b))
            want = ufunc(a, b)
        assert not prof.of("layout")
        assert [e.algorithm for e in prof.of("eltwise")] == ["numba"]
        assert out.strides == dense.strides
        np.testing.assert_array_equal(out, want)


@needs_onednn
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_a_slice_and_a_dense_array_meet_in_the_dense_layout_on_onednn(op):
    """The same, oneDNN pinned (as without Numba) past the binary threshold: the slice
    copied into the dense layout (a ``layout`` event), then one flat oneDNN pass;
    NumPy's result bit for bit, in either operand order, channels-last."""
    shape = (2, 16, 24, 48, 48)
    assert np.prod(shape) >= MIN_BINARY_SIZE
    view, dense = _slice_and_dense(shape, np.random.default_rng(41))
    ufunc = _UFUNCS[op]
    for a, b in ((view, dense), (dense, view)):
        with cg.profile() as prof, prefer("onednn"):
            out = eltwise.binary(op, a, b, lambda a=a, b=b: ufunc(a, b))
        assert [e.name for e in prof.of("layout")] == ["copy"]
        assert [e.algorithm for e in prof.of("eltwise")] == ["onednn"]
        assert is_channels_last(out)
        np.testing.assert_array_equal(out, ufunc(a, b))


@needs_onednn
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_two_dense_layouts_meet_in_the_first_operands(op):
    """A channels-last activation and an NCHW array (a loss against a 3-channel target,
    an NCHW input added to a network's output): the second copied into the first's
    layout (one ``layout`` copy), then one flat oneDNN pass; NumPy's values bit for bit,
    the result in the first operand's layout, in either order."""
    shape = (4, 3, 128, 128)
    assert np.prod(shape) >= MIN_BINARY_SIZE
    rng = np.random.default_rng(53)
    last = empty(shape, channels_last=True)
    last[...] = rng.standard_normal(shape)
    plain = (rng.standard_normal(shape) + 3).astype(np.float32)
    ufunc = _UFUNCS[op]
    for a, b in ((last, plain), (plain, last)):
        with cg.profile() as prof:
            out = eltwise.binary(op, a, b, lambda a=a, b=b: ufunc(a, b))
        assert [e.name for e in prof.of("layout")] == ["copy"]
        assert [e.algorithm for e in prof.of("eltwise")] == ["onednn"]
        assert out.strides == a.strides
        np.testing.assert_array_equal(out, ufunc(a, b))


@needs_onednn
def test_a_broadcast_operand_is_not_materialised_for_a_binary_op():
    """A zero-stride operand (an expanded array) of the same shape as a dense one stays
    NumPy's one broadcasting pass: no layout copy; NumPy's values."""
    rng = np.random.default_rng(43)
    dense = rng.standard_normal((2, 16, 24, 48, 48)).astype(np.float32)
    row = rng.standard_normal((1, 16, 1, 1, 1)).astype(np.float32)
    wide = np.broadcast_to(row, dense.shape)
    with cg.profile() as prof:
        out = eltwise.binary("add", dense, wide, lambda: dense + wide)
    assert not prof.of("layout")
    np.testing.assert_array_equal(out, dense + row)


@needs_onednn
def test_a_residual_add_between_the_thresholds_runs_on_onednn():
    """Two channels-last (8, 64, 32, 32) activations (a ResNet block's residual add, 2^19
    elements: past the binary threshold, below the staging one): oneDNN's binary
    primitive, NumPy's bits, the operands' layout."""
    shape = (8, 64, 32, 32)
    assert MIN_BINARY_SIZE <= np.prod(shape) < eltwise.MIN_STAGED_BINARY_SIZE
    rng = np.random.default_rng(47)
    a, b = (empty(shape, channels_last=True) for _ in range(2))
    a[...], b[...] = rng.standard_normal(shape), rng.standard_normal(shape)
    out, algs = binary("add", a, b)
    assert algs == ["onednn"]
    assert out.strides == a.strides
    np.testing.assert_array_equal(out, a + b)
