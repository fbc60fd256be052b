"""The ``norm`` family's chunked kernels (statistics, forward, backward on fixed chunks
across the thread pool); oracle: torch in float64, and the same call on one thread."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import convgrad as cg
import convgrad.functional as F
from convgrad.functional.normalization import batch_norm_relu
from convgrad.ops import layouts, normalization, parallel, prefer

RNG = np.random.default_rng(11)


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


def _torch(x, w, b, g, relu=False):
    xt, wt, bt = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b))
    y = TF.batch_norm(xt, None, None, wt, bt, training=True)
    y = torch.relu(y) if relu else y
    y.backward(torch.tensor(g, dtype=torch.float64))
    return [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()]


def _params(c):
    return ((1 + 0.3 * RNG.standard_normal(c)).astype(np.float32),
            (0.2 * RNG.standard_normal(c)).astype(np.float32))


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("channels_last", [False, True])
def test_same_bits_with_one_and_three_threads(channels_last, relu, monkeypatch):
    """Chunks are fixed, their sums combined in chunk order: the thread count changes
    nothing (oracle: the same call on one thread)."""
    shape = (4, 32, 48, 48)  # 9 chunks, above the pool's threshold
    x = _input(shape, channels_last)
    g = RNG.standard_normal(shape).astype(np.float32)
    w, b = _params(shape[1])
    results = []
    for threads in (1, 3):
        monkeypatch.setattr(parallel, "num_threads", lambda t=threads: t)
        with prefer("chunked"):  # the forward too
            out, algo = _run(x, w, b, g, relu)
        assert set(algo.values()) == {"chunked"}
        assert set(algo) == {"batch_stats", "batch_norm_forward_training",
                             "batch_norm_backward"}
        results.append(out)
    for a, b_ in zip(*results):
        np.testing.assert_array_equal(a, b_)
    for ours, ref in zip(results[0], _torch(x, w, b, g, relu)):
        assert np.abs(ours - ref).max() <= 1e-5 * max(np.abs(ref).max(), 1.0)


@pytest.mark.parametrize("shape, channels_last", [
    ((70, 3000), False),           # rows of many channels: chunks split the channels
    ((3, 5, 7), False),            # one small chunk
    ((2, 3, 150000), False),       # a channel larger than a chunk: split along S
    ((5, 3, 37, 29), True),        # few channels, rows not a whole number of blocks
    ((2, 700, 3, 3), True),        # channels-last with many channels
    ((4, 6, 1, 1), False),         # no spatial extent: rows
])
def test_odd_shapes_match_torch(shape, channels_last):
    x = _input(shape, channels_last)
    g = RNG.standard_normal(shape).astype(np.float32)
    w, b = _params(shape[1])
    out, algo = _run(x, w, b, g)
    assert algo["batch_stats"] == algo["batch_norm_backward"] == "chunked"
    for ours, ref in zip(out, _torch(x, w, b, g)):
        assert np.abs(ours - ref).max() <= 2e-5 * max(np.abs(ref).max(), 1.0)


def test_gradient_of_another_layout_and_float64_on_the_reference():
    shape = (4, 8, 9, 9)
    x = _input(shape, True)
    g = np.ascontiguousarray(RNG.standard_normal(shape).astype(np.float32))  # NCHW
    w, b = _params(8)
    out, algo = _run(x, w, b, g)
    assert algo["batch_norm_backward"] == "chunked"
    assert layouts.is_channels_last(out[1])  # x's layout
    for ours, ref in zip(out, _torch(x, w, b, g)):
        assert np.abs(ours - ref).max() <= 1e-5 * max(np.abs(ref).max(), 1.0)
    out, algo = _run(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64),
                     g.astype(np.float64))
    assert set(algo.values()) == {"numpy"}
    for ours, ref in zip(out, _torch(x, w, b, g)):
        assert np.abs(ours - ref).max() <= 1e-12 * max(np.abs(ref).max(), 1.0)


def test_only_the_parameter_gradients():
    x = _input((6, 4, 5, 5), True)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    mean, var = normalization.batch_stats(x)
    gx, gw, gb = normalization.batch_norm_backward(g, x, mean, var, None, None, 1e-5,
                                                   (False, True, True))
    ref = _torch(x, np.ones(4, np.float32), np.zeros(4, np.float32), g)
    assert gx is None
    np.testing.assert_allclose(gw, ref[2], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(gb, ref[3], rtol=1e-5, atol=1e-4)
