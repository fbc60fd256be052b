"""Channels-last from the first convolution to the loss: the operations that used to turn
an activation or a gradient to NCHW (a transposed convolution's bias, ``clone``, a
concatenation's backward slices, a loss's few-channel gradient into the head) keep the
layout, without copies, and their values match torch (float64) and the NumPy reference."""

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad import nn
from convgrad.ops import (
    copy_loops,
    layouts,
    onednn_available,
    parallel,
    reduction,
    reduction_loops,
    relayout,
)

torch = pytest.importorskip("torch")
TF = torch.nn.functional
needs_onednn = pytest.mark.skipif(not onednn_available(), reason="oneDNN unavailable")
RNG = np.random.default_rng(5)


def _cl(shape):
    a = layouts.empty(shape, True, np.float32)
    a[...] = RNG.standard_normal(shape)
    return a


def _within_torch(ours, t32, t64):
    """convgrad's float32 error against float64 at most twice torch float32's (floor: one
    float32 rounding)."""
    t64 = np.asarray(t64, np.float64)
    scale = np.abs(t64).max()
    err = np.abs(np.asarray(ours, np.float64) - t64).max() / scale
    torch_err = np.abs(np.asarray(t32, np.float64) - t64).max() / scale
    assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


@needs_onednn
def test_a_transposed_convolution_with_bias_stays_channels_last():
    x = _cl((2, 8, 5, 6, 4))
    up = nn.ConvTranspose3d(8, 4, 2, stride=2)
    with cg.profile() as prof:
        y = up(cg.tensor(x))
    assert layouts.is_channels_last(y.data)
    assert all(e.algorithm.startswith("onednn") for e in prof.of("conv"))
    assert not [e for e in prof.of("layout") if e.name == "copy"]

    def ref(dtype):
        return TF.conv_transpose3d(
            torch.tensor(np.ascontiguousarray(x), dtype=dtype),
            torch.tensor(up.weight.data, dtype=dtype), torch.tensor(up.bias.data, dtype=dtype),
            stride=2).double().numpy()
    _within_torch(y.data, ref(torch.float32), ref(torch.float64))


def test_clone_preserves_the_memory_format():
    x = cg.tensor(_cl((2, 3, 4, 5)))
    c = x.clone()
    assert layouts.is_channels_last(c.data) and np.array_equal(c.data, x.data)
    assert not np.shares_memory(c.data, x.data)


@needs_onednn
@pytest.mark.parametrize("bias", [False, True])
def test_a_concatenations_gradient_slice_is_copied_once_for_the_passes_that_read_it(bias):
    """y = conv(cat([up(a), b])); the gradient of each part is a channel slice of a
    channels-last array.  The transposed convolution behind ``up`` reads it in two
    passes (and its bias gradient in a third): one channels-last copy of the slice (the
    row copy) serves them all, and no pass reorders it to oneDNN's blocks (each did,
    4.6 ms a pass on a 3-D U-Net's (2, 16, 64, 64, 64))."""
    a_in, b = _cl((2, 8, 4, 4, 4)), _cl((2, 4, 8, 8, 8))
    w_up = RNG.standard_normal((8, 4, 2, 2, 2)).astype(np.float32)
    b_up = RNG.standard_normal(4).astype(np.float32)
    w = RNG.standard_normal((6, 8, 3, 3, 3)).astype(np.float32)
    ts = [cg.tensor(v, requires_grad=True) for v in (a_in, b, w_up, w, b_up)]
    up = F.conv_transpose3d(ts[0], ts[2], ts[4] if bias else None, stride=2)
    y = F.conv3d(cg.cat([up, ts[1]], dim=1), ts[3], padding=1)
    g = RNG.standard_normal(y.shape).astype(np.float32)
    with cg.profile() as prof:
        y.backward(cg.tensor(g))
    assert not [e for e in prof.of("layout") if e.name == "copy"]
    copies = [e for e in prof.events if e.name == "to_channels_last"]
    assert [e.shapes[0] for e in copies] == [tuple(up.shape)], copies
    assert tuple(up.shape) not in [e.shapes[0] for e in prof.events if e.name == "reorder"]
    grads = [e for e in prof.of("conv") if e.name != "conv_bias_grad"]
    assert grads and all(e.algorithm.startswith("onednn") for e in grads)
    assert layouts.is_channels_last(ts[0].grad.data)

    def torch_grads(dtype):
        # the activations channels-last, as convgrad's (the layout its kernels run)
        cl = torch.channels_last_3d
        tt = [torch.tensor(np.ascontiguousarray(v), dtype=dtype) for v in (a_in, b, w_up, w, b_up)]
        tt = [(t.contiguous(memory_format=cl) if t.ndim == 5 and i < 2 else t).requires_grad_()
              for i, t in enumerate(tt)]
        tup = TF.conv_transpose3d(tt[0], tt[2], tt[4] if bias else None, stride=2)
        ty = TF.conv3d(torch.cat([tup, tt[1]], 1), tt[3], padding=1)
        ty.backward(torch.tensor(g, dtype=dtype).contiguous(memory_format=cl))
        return [None if t.grad is None else t.grad.double().numpy() for t in tt]
    # the activations' gradients, the transposed convolution's weight (and bias)
    # gradient; the 3-D convolution's weight gradient, whose inputs are dense, has its
    # own (failing) test below
    pick = [0, 1, 2, 4] if bias else [0, 1, 2]
    t32, t64 = torch_grads(torch.float32), torch_grads(torch.float64)
    for i in pick:
        _within_torch(ts[i].grad.data, t32[i], t64[i])


@needs_onednn
@pytest.mark.xfail(strict=True, reason="oneDNN's 3-D weight gradient (jit:avx512_core) sums "
                   "less accurately than torch's on small volumes: 5.6e-7 against 0.9-1.1e-7")
def test_a_small_3d_weight_gradient_is_as_accurate_as_torchs():
    x, w = _cl((2, 12, 8, 8, 8)), RNG.standard_normal((6, 12, 3, 3, 3)).astype(np.float32)
    ws = cg.tensor(w, requires_grad=True)
    y = F.conv3d(cg.tensor(x), ws, padding=1)
    g = _cl(y.shape)
    with cg.profile() as prof:
        y.backward(cg.tensor(g))
    assert [e.algorithm.split(":")[0] for e in prof.of("conv")] == ["onednn"]

    def torch_grad(dtype):
        wt = torch.tensor(w, dtype=dtype, requires_grad=True)
        TF.conv3d(torch.tensor(np.ascontiguousarray(x), dtype=dtype), wt, padding=1).backward(
            torch.tensor(np.ascontiguousarray(g), dtype=dtype))
        return wt.grad.double().numpy()
    _within_torch(ws.grad.data, torch_grad(torch.float32), torch_grad(torch.float64))


@needs_onednn
def test_a_few_channel_gradient_into_the_head_comes_back_channels_last():
    x = cg.tensor(_cl((2, 16, 6, 7)), requires_grad=True)
    head = nn.Conv2d(16, 3, 1)
    y = head(x)
    g = np.ascontiguousarray(RNG.standard_normal(y.shape).astype(np.float32))  # NCHW
    with cg.profile() as prof:
        y.backward(cg.tensor(g))
    assert layouts.is_channels_last(x.grad.data)
    (dx,) = [e for e in prof.of("conv") if e.name == "conv_input_grad"]
    assert dx.algorithm.startswith("onednn")

    def ref(dtype):
        return np.einsum("nohw,oc->nchw", g.astype(dtype),
                         head.weight.data[:, :, 0, 0].astype(dtype))
    t = torch.tensor(g).permute(0, 2, 3, 1) @ torch.tensor(head.weight.data[:, :, 0, 0])
    _within_torch(x.grad.data, t.permute(0, 3, 1, 2).numpy(), ref(np.float64))


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("width", [3, 16])
def test_sums_over_a_channel_slice_of_a_channels_last_array(width, compiled, monkeypatch):
    """The bias gradient of one part of a concatenation: reduced dims outer, with a row
    pitch wider than the slice; summed in place (the compiled pass, or BLAS block
    products without Numba) within twice torch float32's error; the compiled pass with
    the same bits on 1, 2 and 3 threads."""
    if compiled and reduction_loops.loops() is None:
        pytest.skip("Numba is not installed")
    if not compiled:
        monkeypatch.setattr(reduction_loops, "loops", lambda: None)
    full = _cl((4, 32, 19, 20, 21))
    part = full[:, 5:5 + width]
    assert not layouts.is_channels_last(part) and not part.flags.c_contiguous
    assert reduction._rows(part, (0, 2, 3, 4)) is not None  # read in place, no copy
    runs = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(parallel, "num_threads", lambda t=threads: t)
        monkeypatch.setattr(reduction, "num_threads", lambda t=threads: t)
        runs.append(reduction.total(part, axis=(0, 2, 3, 4)))
    if compiled:  # the BLAS fallback's bits vary with the thread count (a known defect)
        assert all(np.array_equal(runs[0], r) for r in runs[1:])
    exact = part.astype(np.float64).sum(axis=(0, 2, 3, 4))
    theirs = torch.from_numpy(part).sum(dim=(0, 2, 3, 4)).numpy()
    _within_torch(runs[0], theirs, exact)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("shape, dims", [
    ((16, 64, 64, 64), (2, 3)),  # a global average pool's sum: a matrix per sample
    ((4, 96, 8, 8), (2, 3)),  # one block of rows per sample
    ((2, 8, 6, 64, 5), (2, 3)),  # (D, H) of a 3-D array, W and C kept inside
    ((3, 32, 64, 40), (2,)),  # 64 rows: a short sum
])
def test_sums_over_the_pixels_of_each_sample_of_a_channels_last_array(
        shape, dims, compiled, monkeypatch):
    """Reduced dims between kept ones in memory (the samples outside, the channels
    inside): a batch of column sums, read in place, as a Tensor sum and its gradient;
    the profiler names the blocked pass (compiled, or BLAS block products without
    Numba); within twice torch float32's error; the compiled pass's bits the same on 1,
    2 and 3 threads."""
    if compiled and reduction_loops.loops() is None:
        pytest.skip("Numba is not installed")
    if not compiled:
        monkeypatch.setattr(reduction_loops, "loops", lambda: None)
    x = _cl(shape) + np.float32(0.3)  # a mean away from 0: the sums' rounding shows
    cx = cg.tensor(x, requires_grad=True)
    with cg.profile() as prof:
        y = cx.sum(dims, keepdim=True)
    assert [(e.name, e.algorithm) for e in prof.of("reduce")] == [
        ("sum", "numba" if compiled else "blas")]
    tx = torch.from_numpy(x)
    _within_torch(y.data, tx.sum(dims, keepdim=True).numpy(),
                  tx.double().sum(dims, keepdim=True).numpy())
    g = _cl(y.shape)
    y.backward(cg.tensor(g))
    np.testing.assert_array_equal(cx.grad.data, np.broadcast_to(g, shape))
    runs = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(parallel, "num_threads", lambda t=threads: t)
        monkeypatch.setattr(reduction, "num_threads", lambda t=threads: t)
        runs.append(reduction.total(x, axis=dims))
    if compiled:
        assert all(np.array_equal(runs[0], r) for r in runs[1:])


def test_the_profiler_sees_a_concatenation_and_the_gradient_sums():
    """A skip connection (an activation used twice) and a concatenation: both show in the
    profile, the concatenation as a ``layout`` event keeping channels-last, the sum of
    the two gradients of the shared activation as an ``eltwise`` add; the input's
    gradient matches torch float64's (within 2x torch float32's error)."""
    x = _cl((2, 8, 16, 16))
    cx = cg.tensor(x, requires_grad=True)
    with cg.profile() as prof:
        a = cx * 2.0
        y = cg.cat([a, a.sigmoid()], dim=1)
        (y * y).sum().backward()
    layout = [(e.name, e.algorithm) for e in prof.of("layout")]
    assert ("concatenate", "numpy") in layout, layout
    adds = [e for e in prof.of("eltwise") if e.name == "add"]
    assert adds and adds[-1].shapes == ((2, 8, 16, 16), (2, 8, 16, 16)), adds
    assert layouts.is_channels_last(y.data)
    grads = {}
    for dtype in (torch.float64, torch.float32):
        tx = torch.tensor(x, dtype=dtype, requires_grad=True)
        ta = tx * 2.0
        ty = torch.cat([ta, ta.sigmoid()], dim=1)
        (ty * ty).sum().backward()
        grads[dtype] = tx.grad.numpy()
    _within_torch(cx.grad.data, grads[torch.float32], grads[torch.float64])


@pytest.mark.parametrize("shape, fmt", [((4, 16, 40, 40), "channels_last"),
                                        ((2, 8, 6, 40, 40), "channels_last_3d"),
                                        ((1, 64, 33, 35), "channels_last")])
def test_layout_conversions_copy_on_onednn_bit_for_bit(shape, fmt):
    """``contiguous(memory_format)`` both ways: one ``layout`` event each, oneDNN's
    reorder where it is available (float32 above the copy threshold), the values
    unchanged bit for bit, the memory as asked; the gradient passes through."""
    x = RNG.standard_normal(shape).astype(np.float32)
    assert x.size >= relayout.SHORT_RUN_MIN_SIZE  # a change of layout: short runs
    want = "onednn" if onednn_available() else "numpy"
    t = cg.tensor(x, requires_grad=True)
    with cg.profile() as prof:
        c = t.contiguous(memory_format=getattr(cg, fmt))
        back = c.contiguous()
    assert [(e.name, e.algorithm) for e in prof.of("layout")] == [
        ("to_channels_last", want), ("to_contiguous", want)]
    assert layouts.is_channels_last(c.data) and back.data.flags.c_contiguous
    np.testing.assert_array_equal(c.data, x)
    np.testing.assert_array_equal(back.data, x)
    back.backward(cg.tensor(x))
    np.testing.assert_array_equal(t.grad.data, x)


def test_copies_oneDNN_cannot_take_run_in_numpy():
    """A broadcast source (zero strides), float64, a small array and a negative stride
    are copied by NumPy, each exactly."""
    big = RNG.standard_normal((4, 16, 40, 40)).astype(np.float32)
    cases = [np.broadcast_to(big[:, :, :1], big.shape), big.astype(np.float64),
             big[:1, :1], big[:, :, ::-1]]
    for src in cases:
        dst = np.empty(src.shape, src.dtype)
        assert relayout.copy(dst, src) == "numpy"
        np.testing.assert_array_equal(dst, src)
    # a channel slice of a channels-last array (positive strides): oneDNN reads it in place
    full = _cl((4, 32, 40, 40))
    part = full[:, 3:27]
    dst = np.empty(part.shape, np.float32)
    assert relayout.copy(dst, part) == ("onednn" if onednn_available() else "numpy")
    np.testing.assert_array_equal(dst, part)


@pytest.mark.parametrize("shape, dim", [((2, 16, 16, 64, 64), 1), ((4, 24, 128, 128), 1),
                                        ((4, 24, 128, 128), 2), ((8, 256, 8, 8), 1)])
def test_a_large_float32_concatenation_copies_each_part_on_onednn(shape, dim):
    """Parts of one layout (channels-last here) each copied into its slice of a
    channels-last output: along C, every pixel's row of channels, the compiled row copy
    where Numba runs (:mod:`convgrad.ops.copy_loops`); else oneDNN's reorder where
    available and the parts are large (the profiler says so; small ones are one NumPy
    call), the values torch's ``cat`` bit for bit, each part's gradient its slice."""
    a, b = _cl(shape), _cl(shape)
    ca, cb = cg.tensor(a, requires_grad=True), cg.tensor(b, requires_grad=True)
    with cg.profile() as prof:
        y = cg.cat([ca, cb], dim=dim)
    large = np.prod(shape) >= relayout.COPY_MIN_SIZE
    rows = (dim == 1 and 2 * np.prod(shape) >= relayout.ROWS_MIN_SIZE
            and copy_loops.loops() is not None)
    want = "numba" if rows else "onednn" if onednn_available() and large else "numpy"
    assert [(e.name, e.algorithm) for e in prof.of("layout")] == [("concatenate", want)]
    assert layouts.is_channels_last(y.data)
    np.testing.assert_array_equal(y.data, torch.cat([torch.from_numpy(a),
                                                     torch.from_numpy(b)], dim).numpy())
    g = _cl(y.shape)
    y.backward(cg.tensor(g))
    n = shape[dim]
    np.testing.assert_array_equal(ca.grad.data, np.take(g, np.arange(n), axis=dim))
    np.testing.assert_array_equal(cb.grad.data, np.take(g, np.arange(n, 2 * n), axis=dim))


def test_the_channel_sums_geometry_is_remembered_per_layout():
    """``reduction.compiled_channel_sums`` remembers its answer per dtype, shape, strides
    and axes: a channels-last array and a channel slice of one, of the same shape, get
    their own answers, each what a fresh computation gives, and the sums of a fused ReLU
    and bias gradient keep ``total``'s bits."""
    shape, axes = (4, 16, 32, 32), (0, 2, 3)
    dense = _cl(shape)
    wide = _cl((4, 32, 32, 32))
    part = wide[:, :16]
    first = [reduction.compiled_channel_sums(a, axes) for a in (dense, part, dense, part)]
    reduction._geometries.clear()
    fresh = [reduction.compiled_channel_sums(a, axes) for a in (dense, part)]
    assert first == fresh * 2
    if reduction_loops.loops() is not None:
        assert fresh[0] == (4 * 32 * 32, 16) and fresh[1] is None
    from convgrad.ops import eltwise
    g = _cl(shape)
    fused = eltwise.relu_grad_with_sums(g, dense, axes)
    if fused is not None:
        masked = np.where(dense > 0, g, np.float32(0))
        np.testing.assert_array_equal(fused[0], masked)
        np.testing.assert_array_equal(fused[1], reduction.total(masked, axis=axes))
        # and the bias gradient against torch's sum (float64; within twice its float32
        # error, on the channels-last gradient convgrad sums)
        tm = torch.from_numpy(masked).contiguous(memory_format=torch.channels_last)
        ref, t32 = (tm.to(d).sum(dim=axes).double().numpy()
                    for d in (torch.float64, torch.float32))
        _within_torch(fused[1], t32, ref)


@needs_onednn
def test_flattening_a_channels_last_activation_is_one_recorded_copy():
    """A reshape no view expresses (a channels-last activation flattened for a classifier
    head): one ``to_contiguous`` layout event on oneDNN's reorder, NumPy's values, a new
    array (writing it leaves x alone, as torch's reshape when it copies), the gradient
    the input's shape."""
    x0 = _cl((16, 64, 14, 14))
    x = cg.tensor(x0, requires_grad=True)
    with cg.profile() as prof:
        y = x.flatten(1)
    assert [(e.name, e.algorithm) for e in prof.of("layout")] == [("to_contiguous", "onednn")]
    np.testing.assert_array_equal(y.data, np.ascontiguousarray(x0).reshape(16, -1))
    assert not np.shares_memory(y.data, x.data)
    g = RNG.standard_normal(y.shape).astype(np.float32)
    y.backward(cg.tensor(g))
    np.testing.assert_array_equal(x.grad.data, g.reshape(x0.shape))
    plain = cg.tensor(np.ascontiguousarray(x0))
    with cg.profile() as prof:
        flat = plain.flatten(1)
    assert not prof.of("layout") and np.shares_memory(flat.data, plain.data)


def test_a_one_channel_pixel_shuffle_hands_back_its_inputs_layout():
    """A super-resolution head: a channels-last (N, r^2, H, W) convolution output shuffled
    to one channel. The gradient arrives C-contiguous (one channel: either layout); the
    shuffle's backward lays it out channels-last, as its input (the convolution's
    backward then needs no copy), with torch's values."""
    x0 = _cl((4, 9, 20, 20))
    x = cg.tensor(x0, requires_grad=True)
    y = F.pixel_shuffle(x, 3)
    g = RNG.standard_normal(y.shape).astype(np.float32)
    y.backward(cg.tensor(g))
    assert layouts.is_channels_last(x.grad.data)
    xt = torch.tensor(np.ascontiguousarray(x0), requires_grad=True)
    TF.pixel_shuffle(xt, 3).backward(torch.tensor(g))
    np.testing.assert_array_equal(x.grad.data, xt.grad.numpy())
