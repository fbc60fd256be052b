"""Oracle: torch 2.13 (float64) for results, torch float32's error on the same values (in
the same layout) for the float32 bound; the profiler's algorithm for which kernel ran.

The softmax family (softmax and log-softmax, forward and backward) and the gather
family (one element picked per position along a dim, and its adjoint: the classifier
losses' target pick) run Numba's loops on large dense float32 arrays in any layout,
NumPy otherwise (float64, the reference).
"""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
import convgrad.nn.functional as F
from convgrad.ops import jit, prefer, softmax

torch = pytest.importorskip("torch")
LOOPS = "numba" if jit.enabled() else "numpy"

CASES = [  # (shape, memory format, dim)
    ((2, 3, 16, 16, 16), "channels_last_3d", 1),   # a 3-D segmentation's logits
    ((2, 3, 16, 16, 16), "contiguous", 1),
    ((4, 21, 24, 24), "channels_last", 1),          # a 2-D one
    ((4, 21, 24, 24), "contiguous", 1),
    ((64, 1000), "contiguous", 1),                   # a classifier's
    ((64, 1000), "contiguous", 0),
    ((4, 21, 24, 24), "channels_last", 3),          # another dim of a channels-last array
    ((3, 40000), "contiguous", 1),                   # rows longer than the exp chunk
]


def _fmt(lib, name):
    return getattr(lib, name) if name != "contiguous" else lib.contiguous_format


def _pair(rng, shape, fmt):
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    return x, g


@pytest.mark.parametrize("log", [True, False], ids=["log_softmax", "softmax"])
@pytest.mark.parametrize("shape,fmt,dim", CASES)
def test_softmax_agrees_with_torch_float64(shape, fmt, dim, log):
    rng = np.random.default_rng(1)
    x, g = _pair(rng, shape, fmt)
    cx = cg.tensor(x).contiguous(memory_format=_fmt(cg, fmt)).requires_grad_()
    with cg.profile() as prof:
        y = (F.log_softmax if log else F.softmax)(cx, dim)
        y.backward(cg.tensor(g).contiguous(memory_format=_fmt(cg, fmt)))
    algos = {e.name: e.algorithm for e in prof.of("softmax")}
    name = "log_softmax" if log else "softmax"
    assert algos == {f"{name}_forward": LOOPS, f"{name}_backward": LOOPS}, algos
    assert y.data.strides == cx.data.strides  # the result keeps the input's layout
    fn = torch.log_softmax if log else torch.softmax
    out = {}
    for dtype in (torch.float64, torch.float32):
        tx = torch.tensor(x, dtype=dtype).contiguous(memory_format=_fmt(torch, fmt))
        tx.requires_grad_()
        ty = fn(tx, dim)
        ty.backward(torch.tensor(g, dtype=dtype).contiguous(memory_format=_fmt(torch, fmt)))
        out[dtype] = (ty.detach().double().numpy(), tx.grad.double().numpy())
    for ours, ref, t32, what in zip((y.data, cx.grad.data), out[torch.float64],
                                    out[torch.float32], ("forward", "gradient")):
        err, t_err = np.abs(ours - ref).max(), np.abs(t32 - ref).max()
        assert err <= 2 * max(t_err, 1e-7 * np.abs(ref).max()), (what, err, t_err)


@pytest.mark.parametrize("log", [True, False], ids=["log_softmax", "softmax"])
def test_softmax_loops_keep_nan_and_inf_as_numpy(log):
    """A NaN along the axis makes its slice NaN; -inf entries have probability 0 (and
    log-probability -inf): the loops give the NumPy reference's values."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 32, 32)).astype(np.float32)
    x[0, 2, 3, 4] = np.nan
    x[1, :, 5, 6] = -np.inf          # a whole slice -inf: NaN, as NumPy (x - max)
    x[1, 1, 7, 8] = -np.inf
    x[0, 0, 9, 9] = 80.0             # exp(80) overflows float32 unshifted
    cx = cg.tensor(x).contiguous(memory_format=cg.channels_last)
    fn = F.log_softmax if log else F.softmax
    with cg.profile() as prof:
        ours = fn(cx, 1).data
    assert [e.algorithm for e in prof.of("softmax")] == [LOOPS]
    with prefer("numpy"), np.errstate(invalid="ignore"):
        ref = fn(cx, 1).data
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(ref))
    # the finite values: within 2x torch float32's error against torch float64
    tfn = torch.log_softmax if log else torch.softmax
    t64 = tfn(torch.tensor(x, dtype=torch.float64), 1).numpy()
    t32 = tfn(torch.tensor(x), 1).double().numpy()
    finite = np.isfinite(ref) & np.isfinite(t64)
    err = np.abs(ours[finite] - t64[finite]).max()
    t_err = np.abs(t32[finite] - t64[finite]).max()
    assert err <= 2 * max(t_err, 1e-7 * np.abs(t64[finite]).max()), (err, t_err)


@pytest.mark.parametrize("log", [True, False], ids=["log_softmax", "softmax"])
def test_long_rows_with_a_nan_or_inf_are_numpys(log):
    """Rows (a language model's vocabulary): a NaN anywhere on a row (here past its
    first chunk of exponentials), or +inf, makes the row NaN, as the NumPy reference."""
    x = np.random.default_rng(3).standard_normal((4, 40000)).astype(np.float32)
    x[0, 35000] = np.nan
    x[1, 0] = np.nan
    x[2, 7] = np.inf
    fn = F.log_softmax if log else F.softmax
    with cg.profile() as prof:
        ours = fn(cg.tensor(x), 1).data
    assert [e.algorithm for e in prof.of("softmax")] == [LOOPS]
    with prefer("numpy"), np.errstate(invalid="ignore"):
        ref = fn(cg.tensor(x), 1).data
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    assert np.isnan(ours[:3]).all() and np.isfinite(ours[3]).all()


@pytest.mark.parametrize("k", [33, 80])  # rows below and above softmax.MIN_FUSED_ROW
def test_masked_scores_get_exactly_zero_probability(k):
    """An attention's causal mask: -inf scores' softmax is exactly 0 (not a tiny number,
    whose products then run on subnormals), their log-softmax -inf, and the gradient of
    a log-softmax there exactly the incoming gradient's."""
    assert (k >= softmax.MIN_FUSED_ROW) == (k == 80)  # one case each side
    x = np.random.default_rng(4).standard_normal((64, k, k)).astype(np.float32)
    x += np.triu(np.full((k, k), -np.inf, np.float32), 1)
    with cg.profile() as prof:
        p = F.softmax(cg.tensor(x), -1).data
        cx = cg.tensor(x, requires_grad=True)
        y = F.log_softmax(cx, -1)
        g = np.ones(x.shape, np.float32)
        y.backward(cg.tensor(g))
    assert {e.algorithm for e in prof.of("softmax")} == {LOOPS}
    masked = np.isneginf(x)
    assert (p[masked] == 0).all() and (p[~masked] > 0).all()
    assert np.isneginf(y.data[masked]).all()
    np.testing.assert_array_equal(cx.grad.data[masked], g[masked])


def test_softmax_second_order_through_the_rule():
    """Under create_graph the gradient is the recorded rule: a gradient of the gradient
    on a large float32 array matches torch float64's within 2x torch float32's error."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 8, 16, 16)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    cx = cg.tensor(x).contiguous(memory_format=cg.channels_last).requires_grad_()
    (gx,) = cg.autograd.grad(F.log_softmax(cx, 1), cx, cg.tensor(g), create_graph=True)
    (gx * gx).sum().backward()
    res = {}
    for dtype in (torch.float64, torch.float32):
        tx = torch.tensor(x, dtype=dtype, requires_grad=True)
        (tgx,) = torch.autograd.grad(torch.log_softmax(tx, 1), tx,
                                     torch.tensor(g, dtype=dtype), create_graph=True)
        (tgx * tgx).sum().backward()
        res[dtype] = (tgx.detach().double().numpy(), tx.grad.double().numpy())
    for ours, ref, t32 in zip((gx.data, cx.grad.data), res[torch.float64],
                              res[torch.float32]):
        err, t_err = np.abs(ours - ref).max(), np.abs(t32 - ref).max()
        assert err <= 2 * max(t_err, 1e-7 * np.abs(ref).max()), (err, t_err)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fmt", ["channels_last_3d", "contiguous"])
def test_voxel_cross_entropy_picks_and_places_on_the_loops(fmt, weighted):
    """A 3-D segmentation's cross-entropy (with an ignored label): the loss and the
    logits' gradient against torch float64, the pick and its adjoint on the loops."""
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((2, 3, 16, 16, 16)) * 3).astype(np.float32)
    t = rng.integers(0, 3, (2, 16, 16, 16))
    t[0, 0, :4] = -100
    w = np.array([0.2, 1.0, 3.0], np.float32) if weighted else None
    cx = cg.tensor(x).contiguous(memory_format=_fmt(cg, fmt)).requires_grad_()
    with cg.profile() as prof:
        loss = F.cross_entropy(cx, cg.tensor(t), weight=None if w is None else cg.tensor(w))
        loss.backward()
    algos = {e.name: e.algorithm for e in prof.of("gather")}
    assert algos == {"gather": LOOPS, "scatter_add": LOOPS}, algos
    assert cx.grad.data.strides == cx.data.strides
    res = {}
    for dtype in (torch.float64, torch.float32):
        tx = torch.tensor(x, dtype=dtype).contiguous(memory_format=_fmt(torch, fmt))
        tx.requires_grad_()
        tl = torch.nn.functional.cross_entropy(
            tx, torch.tensor(t), weight=None if w is None else torch.tensor(w, dtype=dtype))
        tl.backward()
        res[dtype] = (tl.detach().double().numpy(), tx.grad.double().numpy())
    for ours, ref, t32, what in zip((loss.data, cx.grad.data), res[torch.float64],
                                    res[torch.float32], ("loss", "gradient")):
        err, t_err = np.abs(ours - ref).max(), np.abs(t32 - ref).max()
        assert err <= 2 * max(t_err, 1e-7 * np.abs(ref).max()), (what, err, t_err)


def test_gather_along_a_dim_with_one_index_per_position():
    """``Tensor.gather`` with an index of size 1 along its dim: values and gradient as
    torch's (exactly: a pick and its adjoint), on the loops; an index of another shape
    and an out-of-range index keep NumPy's behaviour."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 6, 32, 32)).astype(np.float32)
    idx = rng.integers(0, 32, (8, 6, 1, 32))
    g = rng.standard_normal(idx.shape).astype(np.float32)
    cx = cg.tensor(x).contiguous(memory_format=cg.channels_last).requires_grad_()
    with cg.profile() as prof:
        y = cx.gather(2, cg.tensor(idx, dtype=cg.int64))
        y.backward(cg.tensor(g))
    assert [e.algorithm for e in prof.of("gather")] == [LOOPS, LOOPS]
    tx = torch.tensor(x, requires_grad=True)
    ty = tx.gather(2, torch.tensor(idx))
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(y.data, ty.detach().numpy())
    np.testing.assert_array_equal(cx.grad.data, tx.grad.numpy())
    with cg.profile() as prof:  # two indices per position: repeats add, on NumPy
        cx.gather(2, cg.tensor(np.concatenate([idx, idx], 2), dtype=cg.int64)).sum().backward()
    assert [e.algorithm for e in prof.of("gather")] == ["numpy", "numpy"]
    bad = idx.copy()
    bad[0, 0, 0, 0] = 32
    with pytest.raises(IndexError):
        cx.gather(2, cg.tensor(bad, dtype=cg.int64))
