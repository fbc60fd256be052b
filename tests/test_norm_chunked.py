"""The ``norm`` family's chunked kernels (statistics, forward, backward on fixed chunks
across the thread pool), as NumPy passes (``chunked``) and as compiled loops (``numba``);
oracle: torch in float64, and the same call on one thread."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import convgrad as cg
import convgrad.functional as F
from convgrad.functional.normalization import batch_norm_relu
from convgrad.ops import jit, layouts, normalization, parallel, prefer

RNG = np.random.default_rng(11)


@pytest.fixture(params=["numba", "chunked"])
def algo(request):
    """Each chunked algorithm, pinned (``numba``: only where Numba is installed)."""
    if request.param == "numba" and not jit.enabled():
        pytest.skip("Numba is not installed")
    with prefer(request.param):
        yield request.param


def _input(shape, channels_last):
    x = layouts.empty(shape, channels_last, np.float32)
    x[...] = 3 + 2 * RNG.standard_normal(shape)
    return x


def _run(x, w, b, g, relu=False):
    xs, ws, bs = (cg.tensor(a, requires_grad=True) for a in (x, w, b))
    with cg.profile() as prof:
        fn = batch_norm_relu if relu else F.batch_norm
        y = fn(xs, None, None, ws, bs) if relu else fn(xs, None, None, ws, bs, training=True)
        y.backward(cg.tensor(g))
    return [y.data, xs.grad.data, ws.grad.data, bs.grad.data], {
        e.name: e.algorithm for e in prof.of("norm")}


def _torch(x, w, b, g, relu=False, dtype=torch.float64):
    xt, wt, bt = (torch.tensor(a, dtype=dtype, requires_grad=True) for a in (x, w, b))
    if x.ndim in (4, 5) and layouts.is_channels_last(x):  # torch's kernels for x's layout
        fmt = torch.channels_last if x.ndim == 4 else torch.channels_last_3d
        xt = torch.tensor(x, dtype=dtype).contiguous(memory_format=fmt).requires_grad_()
    y = TF.batch_norm(xt, None, None, wt, bt, training=True)
    y = torch.relu(y) if relu else y
    y.backward(torch.tensor(g, dtype=dtype))
    return [t.detach().double().numpy() for t in (y, xt.grad, wt.grad, bt.grad)]


def _as_accurate_as_torch(ours, x, w, b, g, relu=False, names=("y", "gx", "gw", "gb")):
    """Each of ``ours`` (y, gx, gw, gb) named in ``names`` within twice torch float32's
    max-norm error, both against torch float64 (floor: one float32 rounding)."""
    exact = _torch(x, w, b, g, relu)
    theirs = _torch(x, w, b, g, relu, torch.float32)  # in x's layout, as the kernels run
    for name, o, e, t in zip(("y", "gx", "gw", "gb"), ours, exact, theirs):
        if name not in names:
            continue
        scale = max(np.abs(e).max(), 1e-30)
        err, torch_err = np.abs(o - e).max() / scale, np.abs(t - e).max() / scale
        assert err <= 2 * max(torch_err, 2.0 ** -24), (name, err, torch_err)


def _params(c):
    return ((1 + 0.3 * RNG.standard_normal(c)).astype(np.float32),
            (0.2 * RNG.standard_normal(c)).astype(np.float32))


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("channels_last", [False, True])
def test_same_bits_with_one_and_three_threads(channels_last, relu, monkeypatch, algo):
    """Chunks are fixed, their sums combined in chunk order: the thread count changes
    nothing (oracle: the same call on one thread)."""
    shape = (4, 32, 48, 48)  # 9 chunks, above the pool's threshold
    x = _input(shape, channels_last)
    g = RNG.standard_normal(shape).astype(np.float32)
    w, b = _params(shape[1])
    results = []
    for threads in (1, 3):
        monkeypatch.setattr(parallel, "num_threads", lambda t=threads: t)
        out, ran = _run(x, w, b, g, relu)
        assert set(ran) == {"batch_stats", "batch_norm_forward_training",
                            "batch_norm_backward"}
        assert set(ran.values()) == {algo}  # the forward too
        results.append(out)
    for a, b_ in zip(*results):
        np.testing.assert_array_equal(a, b_)
    _as_accurate_as_torch(results[0], x, w, b, g, relu)


@pytest.mark.parametrize("shape, channels_last", [
    ((70, 3000), False),           # rows of many channels: chunks split the channels
    ((3, 5, 7), False),            # one small chunk
    ((2, 3, 150000), False),       # a channel larger than a chunk: split along S
    ((5, 3, 37, 29), True),        # few channels, rows not a whole number of blocks
    ((2, 700, 3, 3), True),        # channels-last with many channels
    ((4, 6, 1, 1), False),         # no spatial extent: rows
])
def test_odd_shapes_match_torch(shape, channels_last, algo):
    x = _input(shape, channels_last)
    g = RNG.standard_normal(shape).astype(np.float32)
    w, b = _params(shape[1])
    out, ran = _run(x, w, b, g)
    assert ran["batch_stats"] == ran["batch_norm_backward"] == algo
    _as_accurate_as_torch(out, x, w, b, g)


@pytest.mark.parametrize("shape, channels_last", [
    ((16, 8, 64, 64), False),      # chunks of 4 samples each
    ((16, 8, 64, 64), True),       # chunks of 2048 rows (half a sample each)
    ((2, 3, 150000), False),       # chunks along S
])
def test_statistics_of_chunks_with_different_means(shape, channels_last, algo):
    """The statistics take each chunk's deviations from the chunk's own mean and move
    them to the batch mean (s2 + 2 (m - M) s1 + k (m - M)^2): samples (and, along S,
    positions) offset by up to 60 standard deviations make every term count; the
    statistics, y and the gradients stay within twice torch float32's error (y but for
    the ramp along S of the NumPy forward, ``(x - mean) inv w + b`` with more float32
    roundings than torch's ``x alpha + beta``: measured 2.0x torch's error there; the
    compiled forward rounds once)."""
    x = _input(shape, channels_last)
    offsets = np.linspace(-60, 60, shape[0] if len(shape) == 4 else shape[-1])
    if len(shape) == 4:
        x += offsets.reshape(-1, 1, 1, 1).astype(np.float32)
    else:
        x += offsets.astype(np.float32)
    g = RNG.standard_normal(shape).astype(np.float32)
    w, b = _params(shape[1])
    mean, var = normalization.batch_stats(x)
    dims = (0, *range(2, x.ndim))
    x64 = x.astype(np.float64)
    tvar, tmean = torch.var_mean(torch.from_numpy(np.ascontiguousarray(x)), dim=dims,
                                 unbiased=False)
    for ours, exact, theirs in ((mean, x64.mean(dims), tmean), (var, x64.var(dims), tvar)):
        scale = np.abs(exact).max()
        torch_err = np.abs(theirs.double().numpy() - exact).max() / scale
        assert np.abs(ours - exact).max() / scale <= 2 * max(torch_err, 2.0 ** -24)
    out, ran = _run(x, w, b, g)
    assert ran["batch_stats"] == ran["batch_norm_backward"] == algo
    _as_accurate_as_torch(out, x, w, b, g,
                          names=("gx", "gw", "gb") if len(shape) == 3 and algo == "chunked"
                          else ("y", "gx", "gw", "gb"))


def test_gradient_of_another_layout_and_float64_on_the_reference(algo):
    shape = (4, 8, 9, 9)
    x = _input(shape, True)
    g = np.ascontiguousarray(RNG.standard_normal(shape).astype(np.float32))  # NCHW
    w, b = _params(8)
    out, ran = _run(x, w, b, g)
    assert ran["batch_norm_backward"] == algo
    assert layouts.is_channels_last(out[1])  # x's layout
    _as_accurate_as_torch(out, x, w, b, g)
    out, ran = _run(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64),
                    g.astype(np.float64))
    assert set(ran.values()) == {"numpy"}
    for ours, ref in zip(out, _torch(x, w, b, g)):
        assert np.abs(ours - ref).max() <= 1e-12 * max(np.abs(ref).max(), 1.0)


def test_only_the_parameter_gradients(algo):
    x = _input((6, 4, 5, 5), True)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    mean, var = normalization.batch_stats(x)
    with cg.profile() as prof:
        gx, gw, gb = normalization.batch_norm_backward(g, x, mean, var, None, None, 1e-5,
                                                       (False, True, True))
    assert [e.algorithm for e in prof.of("norm")] == [algo]
    ref = _torch(x, np.ones(4, np.float32), np.zeros(4, np.float32), g)
    assert gx is None
    np.testing.assert_allclose(gw, ref[2], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(gb, ref[3], rtol=1e-5, atol=1e-4)


@pytest.mark.skipif(not jit.enabled(), reason="Numba is not installed")
@pytest.mark.parametrize("channels_last", [False, True])
def test_loops_on_the_pool_where_numba_threads_are_not_thread_safe(channels_last,
                                                                    monkeypatch):
    """Numba's own work queue aborts when two threads launch at once: there the loops
    are compiled serial and run on the pool, with the same results."""
    from convgrad.ops import norm_loops

    shape = (4, 32, 48, 48)
    x = _input(shape, channels_last)
    g = RNG.standard_normal(shape).astype(np.float32)
    w, b = _params(shape[1])
    with prefer("numba"):
        expected, _ = _run(x, w, b, g, relu=True)
    monkeypatch.setattr(jit, "thread_safe", lambda: False)
    serial = norm_loops._compile(jit.numba())
    assert not serial.parallel
    monkeypatch.setattr(norm_loops, "_compiled", [serial])
    calls = []
    run_chunks = parallel.run_chunks
    monkeypatch.setattr(parallel, "run_chunks", lambda tasks: calls.append(len(tasks)) or
                        run_chunks(tasks))
    with prefer("numba"):
        out, ran = _run(x, w, b, g, relu=True)
    assert set(ran.values()) == {"numba"}
    assert len(calls) == 4 and min(calls) > 1  # stats, forward, the backward's two passes
    for a, b_ in zip(out, expected):
        np.testing.assert_array_equal(a, b_)


@pytest.mark.parametrize("shape", [(8, 256, 8, 8), (8, 512, 4, 4)])
def test_small_arrays_are_cut_into_four_chunks_whatever_the_threads(shape, monkeypatch,
                                                                     algo):
    """ResNet-18's late layers (2^16-2^17 elements, under four chunks) are cut into four,
    a function of the size alone: the same bits on one and on three threads, within
    twice torch's float32 error (oracle: torch float64)."""
    assert len(normalization._cut(shape, True, None).parts) == 4
    x = _input(shape, True)
    g = RNG.standard_normal(shape).astype(np.float32)
    w, b = _params(shape[1])
    results = []
    for threads in (1, 3):
        monkeypatch.setattr(parallel, "num_threads", lambda t=threads: t)
        out, ran = _run(x, w, b, g)
        assert set(ran.values()) == {algo}
        results.append(out)
    for a, b_ in zip(*results):
        np.testing.assert_array_equal(a, b_)
    _as_accurate_as_torch(results[0], x, w, b, g)
