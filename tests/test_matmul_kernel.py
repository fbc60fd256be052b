"""Matrix products (``convgrad.ops.matmul``) and the layout of a leaf's gradient; oracle:
torch float64 (a float32 product on oneDNN's sgemm, and the gradients, within 2x torch
float32's error), NumPy's own ``matmul`` (a product cut into blocks must equal the whole
bit for bit), torch's layout contract (a parameter's ``.grad`` lies in memory as the
parameter)."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
from convgrad.ops import cpu, matmul, onednn, prefer

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(17)


def _f32(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("sa, sb", [((64, 9216), (9216, 128)),     # rows (MNIST's Linear)
                                    ((128, 64), (64, 9216)),      # columns: wider than tall
                                    ((300, 512), (512, 700))])
def test_a_large_product_cut_into_blocks_equals_numpys(monkeypatch, sa, sb):
    # float32 products run on oneDNN where it loaded: the blocks serve float64 and the
    # rest (pinned here)
    monkeypatch.setattr(matmul, "num_threads", lambda: 2)
    a, b = _f32(*sa), _f32(*sb)
    with prefer("threads"), cg.profile() as prof:
        out = matmul.matmul(a, b)
    assert [e.algorithm for e in prof.of("matmul")] == ["threads"]
    assert out.dtype == np.float32 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, np.matmul(a, b))


@pytest.mark.parametrize("sa, sb", [((256, 128, 32), (256, 32, 128)),  # attention's
                                    ((5, 256, 512), (512, 256)),      # a broadcast matrix
                                    ((512, 256), (3, 256, 600)),
                                    ((1, 256, 512), (7, 512, 256))])  # a broadcast stack
def test_a_large_stack_of_products_cut_into_runs_equals_numpys(monkeypatch, sa, sb):
    monkeypatch.setattr(matmul, "num_threads", lambda: 2)
    a, b = _f32(*sa), _f32(*sb)
    with prefer("threads"), cg.profile() as prof:  # a stack times a matrix: else oneDNN
        out = matmul.matmul(a, b)
    assert [e.algorithm for e in prof.of("matmul")] == ["threads"]
    np.testing.assert_array_equal(out, np.matmul(a, b))


@pytest.mark.parametrize("why, a, b", [
    ("batched", _f32(3, 64, 512), _f32(3, 512, 512)),
    ("integers", RNG.integers(0, 9, (40, 30)), RNG.integers(0, 9, (30, 20))),
    ("mixed dtypes", _f32(512, 512), RNG.standard_normal((512, 512))),
    ("a vector", _f32(4096, 4096)[0], _f32(4096, 4096)),
])
def test_other_products_are_numpys_own(why, a, b):
    with cg.profile() as prof:
        out = matmul.matmul(a, b)
    assert [e.algorithm for e in prof.of("matmul")] == ["numpy"], why
    ref = np.matmul(a, b)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_array_equal(out, ref)


def _product_error(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple[float, float]:
    """The largest error of ``out`` and of torch float32's product against torch
    float64's, as a fraction of the product's largest entry."""
    ref = (torch.tensor(a, dtype=torch.float64) @ torch.tensor(b, dtype=torch.float64))
    ref = ref.numpy()
    t32 = (torch.tensor(a) @ torch.tensor(b)).double().numpy()
    scale = np.abs(ref).max()
    return np.abs(out - ref).max() / scale, np.abs(t32 - ref).max() / scale


def _views(a: np.ndarray, how: str) -> np.ndarray:
    """``a``'s values as a row-major matrix, the transpose of one, or neither."""
    if how == "transposed":
        return np.ascontiguousarray(a.T).T
    if how == "strided":
        return np.repeat(a, 2, axis=1)[:, ::2]
    return a


@pytest.mark.parametrize("sa, sb", [((1024, 48), (48, 192)),   # a small transformer's
                                    ((192, 1024), (1024, 48)),  # its weight gradient
                                    ((16, 9216), (9216, 128)),  # MNIST's Linear
                                    ((8, 512), (512, 10)), ((7, 5), (5, 3)),
                                    ((1, 300), (300, 1)), ((2048, 2048), (2048, 64))])
@pytest.mark.parametrize("how", ["row-major", "transposed", "strided"])
@pytest.mark.parametrize("dist", ["normal", "uniform"])
def test_a_float32_product_on_onednn_is_as_accurate_as_torchs(sa, sb, how, dist):
    """On this processor: the dispatch takes oneDNN's sgemm for every inner dim on the
    vendors where that was measured, else up to MAX_ONEDNN_INNER (longer sums stay on
    NumPy); whatever runs is within 2x torch float32's error."""
    if not onednn.available():
        pytest.skip("oneDNN is not available here")
    draw = RNG.standard_normal if dist == "normal" else RNG.random
    a = _views(draw(sa).astype(np.float32), how)
    b = _views(draw(sb).astype(np.float32), "transposed" if how == "strided" else how)
    with cg.profile() as prof:
        out = matmul.matmul(a, b)
    taken = (sa[1] <= matmul.MAX_ONEDNN_INNER
             or cpu.vendor() in matmul.ONEDNN_ANY_INNER_VENDORS)
    assert ([e.algorithm for e in prof.of("matmul")] == ["onednn"]) == taken
    assert out.dtype == np.float32 and out.shape == (sa[0], sb[1]) and out.flags.c_contiguous
    err, t_err = _product_error(a, b, out)
    assert err <= 2 * max(t_err, 1e-8), (err, t_err)
    np.testing.assert_array_equal(matmul.matmul(a, b), out)  # the same bits again


def test_a_stack_times_a_matrix_is_one_product_of_its_rows():
    if not onednn.available():
        pytest.skip("oneDNN is not available here")
    a, b = _f32(4, 32, 48), _f32(48, 64)
    with cg.profile() as prof:
        out = matmul.matmul(a, b)
    assert [e.algorithm for e in prof.of("matmul")] == ["onednn"]
    assert out.shape == (4, 32, 64) and out.dtype == np.float32
    err, t_err = _product_error(a.reshape(-1, 48), b, out.reshape(-1, 64))
    assert err <= 2 * max(t_err, 1e-8), (err, t_err)
    # a stack that is not C-contiguous keeps NumPy's loop
    with cg.profile() as prof:
        strided = matmul.matmul(a.transpose(1, 0, 2), b)
    assert [e.algorithm for e in prof.of("matmul")] == ["numpy"]
    np.testing.assert_allclose(strided, out.transpose(1, 0, 2), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("vendor", ["GenuineIntel", "AuthenticAMD", ""])
def test_a_long_inner_dim_takes_onednn_only_where_measured(monkeypatch, vendor):
    if not onednn.available():
        pytest.skip("oneDNN is not available here")
    monkeypatch.setattr(cpu, "vendor", lambda: vendor)
    for k in (matmul.MAX_ONEDNN_INNER, matmul.MAX_ONEDNN_INNER + 1):
        with cg.profile() as prof:
            matmul.matmul(_f32(64, k), _f32(k, 64))
        algorithm = prof.of("matmul")[0].algorithm
        assert (algorithm == "onednn") == (k <= matmul.MAX_ONEDNN_INNER
                                           or vendor == "AuthenticAMD"), (k, algorithm)


def test_without_onednn_a_float32_product_stays_on_numpy(monkeypatch):
    monkeypatch.setattr(onednn, "available", lambda: False)
    monkeypatch.setattr(matmul, "num_threads", lambda: 2)
    for (sa, sb), algorithm in ((((16, 64), (64, 32)), "numpy"),
                                (((64, 9216), (9216, 128)), "threads")):
        a, b = _f32(*sa), _f32(*sb)
        with cg.profile() as prof:
            out = matmul.matmul(a, b)
        assert [e.algorithm for e in prof.of("matmul")] == [algorithm]
        np.testing.assert_array_equal(out, np.matmul(a, b))


def test_prefer_numpy_keeps_one_call():
    a, b = _f32(128, 2048), _f32(2048, 512)
    with prefer("numpy"), cg.profile() as prof:
        out = matmul.matmul(a, b)
    assert [e.algorithm for e in prof.of("matmul")] == ["numpy"]
    np.testing.assert_array_equal(out, np.matmul(a, b))


def test_a_linear_weights_gradient_is_laid_out_as_the_weight():
    """``x @ weight.T``: the weight's gradient is computed as ``(g^T x)`` in the weight's
    own (C) order, and agrees with torch float64 within 2x torch float32's error."""
    lin = cg.nn.Linear(300, 70)
    x = _f32(64, 300)
    cx = cg.tensor(x, requires_grad=True)
    g = _f32(64, 70)
    with cg.profile() as prof:
        (lin(cx) * cg.tensor(g)).sum().backward()
    if onednn.available() and cpu.vendor() in matmul.ONEDNN_ANY_INNER_VENDORS:
        assert [e.algorithm for e in prof.of("matmul")] == ["onednn"] * 3  # all three
    w_grad = lin.weight.grad.data
    assert w_grad.flags.c_contiguous and cx.grad.data.flags.c_contiguous
    ref = {}
    for dt in (torch.float64, torch.float32):
        tw = torch.tensor(np.asarray(lin.weight.data), dtype=dt, requires_grad=True)
        tx = torch.tensor(x, dtype=dt, requires_grad=True)
        ((tx @ tw.T) * torch.tensor(g, dtype=dt)).sum().backward()
        ref[dt] = (tw.grad.double().numpy(), tx.grad.double().numpy())
    for ours, r64, r32 in zip((w_grad, cx.grad.data), ref[torch.float64], ref[torch.float32]):
        err, t_err = np.abs(ours - r64).max(), np.abs(r32 - r64).max()
        assert err <= 2 * max(t_err, 1e-7 * np.abs(r64).max()), (err, t_err)


@pytest.mark.parametrize("layout", ["c", "channels_last"])
def test_a_leafs_gradient_lies_in_memory_as_the_leaf(layout):
    """A gradient arriving in another memory order (the transpose of a product; an NCHW
    product for a channels-last leaf) is stored in the leaf's: torch's layout contract
    for ``.grad``, whose values it keeps (torch float64's gradient of the same sum)."""
    if layout == "c":
        x, w = _f32(40, 50), _f32(40, 30)
        leaf = cg.tensor(x, requires_grad=True)
        (leaf.T @ cg.tensor(w)).sum().backward()  # d/dleaf: (w @ 1^T) as a transpose
        tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        (tx.T @ torch.tensor(w, dtype=torch.float64)).sum().backward()
    else:
        x, w = _f32(2, 8, 5, 6), _f32(2, 8, 5, 6)  # w NCHW: the product's gradient is NCHW
        leaf = cg.tensor(x).to(memory_format=cg.channels_last).requires_grad_()
        (leaf * cg.tensor(w)).sum().backward()
        tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        (tx * torch.tensor(w, dtype=torch.float64)).sum().backward()
    g = leaf.grad.data
    assert g.strides == leaf.data.strides, (g.strides, leaf.data.strides)
    np.testing.assert_allclose(g, tx.grad.numpy(), rtol=1e-6, atol=1e-6)

