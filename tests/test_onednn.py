"""Oracle: the NumPy engine in float64 (which oneDNN never handles), and PyTorch 2.13 for
transposed convolutions and a few passes; oneDNN's float32 results must agree to 1e-5."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from convgrad.ops import (
    ConvSpec,
    conv_bias_grad,
    conv_forward,
    conv_input_grad,
    conv_weight_grad,
    layouts,
    onednn,
    onednn_available,
)
from convgrad.ops.workspace import workspace_limit

needs_onednn = pytest.mark.skipif(not onednn_available(),
                                  reason=f"oneDNN unavailable: {onednn.unavailable_reason()}")

TOL = 1e-5
SRC = os.path.join(os.path.dirname(__file__), os.pardir, "src")


def spec(stride, padding, kdil=None, idil=None, groups=1, flip=False) -> ConvSpec:
    nd = len(stride)
    return ConvSpec(tuple(stride), tuple(padding), tuple(kdil or (1,) * nd),
                    tuple(idil or (1,) * nd), groups, flip)


def channels_last(a: np.ndarray) -> np.ndarray:
    """The same values with (N, *spatial, C) memory."""
    perm = (0, *range(2, a.ndim), 1)
    return np.ascontiguousarray(a.transpose(perm)).transpose(np.argsort(perm))


def empty_like_layout(shape: tuple, cl: bool) -> np.ndarray:
    a = np.empty(shape, dtype=np.float32)
    return channels_last(a) if cl else a


def rel_err(actual, expected) -> float:
    expected = np.asarray(expected, dtype=np.float64)
    return float(np.abs(np.asarray(actual, np.float64) - expected).max()
                 / max(np.abs(expected).max(), 1e-30))


# (x shape, w shape, spec): every case runs all three passes on oneDNN
CASES = {
    "1d_stride2_asym": ((2, 6, 19), (5, 6, 3), spec((2,), ((2, 1),))),
    "1d_dilation2_pad4": ((2, 8, 40), (8, 8, 5), spec((1,), ((4, 4),), (2,))),
    "1d_depthwise": ((3, 8, 25), (8, 1, 5), spec((1,), ((2, 2),), groups=8)),
    "1d_groups_crop": ((2, 8, 30), (4, 4, 3), spec((2,), ((-2, -3),), groups=2)),
    "2d_3x3_p1": ((2, 16, 12, 12), (8, 16, 3, 3), spec((1, 1), ((1, 1), (1, 1)))),
    "2d_1x1": ((2, 32, 7, 7), (16, 32, 1, 1), spec((1, 1), ((0, 0), (0, 0)))),
    "2d_7x7_s2_p3": ((2, 3, 30, 30), (8, 3, 7, 7), spec((2, 2), ((3, 3), (3, 3)))),
    "2d_asym_stride": ((2, 8, 11, 10), (6, 8, 3, 3), spec((2, 2), ((1, 2), (0, 3)))),
    "2d_pad_beyond_kernel": ((2, 16, 9, 9), (16, 16, 3, 3), spec((1, 1), ((1, 2), (0, 3)))),
    "2d_pad_far_beyond": ((2, 8, 6, 7), (8, 8, 2, 3), spec((1, 2), ((5, 4), (6, 1)))),
    "2d_negative_left": ((2, 8, 12, 12), (8, 8, 3, 3), spec((1, 1), ((-1, 1), (-2, 0)))),
    "2d_negative_right_ok": ((2, 8, 12, 12), (8, 8, 3, 3), spec((3, 2), ((1, -2), (0, -1)))),
    "2d_negative_crop": ((2, 8, 14, 13), (8, 8, 3, 3), spec((2, 1), ((-1, -4), (2, -3)))),
    "2d_dilation": ((2, 8, 16, 15), (8, 8, 3, 3), spec((1, 2), ((2, 2), (1, 3)), (2, 3))),
    "2d_groups": ((2, 16, 10, 10), (24, 4, 3, 3), spec((1, 1), ((1, 1), (1, 1)), groups=4)),
    "2d_depthwise": ((2, 16, 13, 13), (16, 1, 3, 3), spec((1, 1), ((1, 1), (1, 1)), groups=16)),
    "2d_depthwise_mult": ((2, 8, 9, 9), (16, 1, 3, 3), spec((2, 2), ((1, 0), (1, 1)), groups=8)),
    "2d_flip": ((2, 8, 10, 9), (6, 8, 3, 2), spec((1, 1), ((1, 1), (0, 1)), flip=True)),
    "2d_input_dilation": ((2, 8, 6, 7), (6, 8, 3, 3), spec((1, 1), ((1, 2), (2, 0)), idil=(2, 3))),
    "2d_input_dilation_right_beyond": ((2, 8, 6, 7), (6, 8, 3, 3),
                                       spec((1, 1), ((0, 3), (1, 4)), idil=(2, 3))),
    "2d_input_dilation_crop": ((2, 8, 9, 8), (6, 8, 3, 3),
                               spec((1, 1), ((-3, -4), (-1, 2)), idil=(2, 3))),
    "1d_input_dilation_crop_dilated": ((2, 4, 17), (4, 4, 3),
                                       spec((1,), ((-7, -2),), (3,), (3,))),
    "2d_input_dilation_flip": ((2, 8, 6, 7), (6, 8, 3, 3),
                               spec((1, 1), ((2, 2), (1, 1)), idil=(2, 2), flip=True)),
    "2d_input_dilation_groups": ((2, 8, 5, 6), (4, 4, 2, 3),
                                 spec((1, 1), ((1, 1), (0, 2)), (2, 1), (3, 2), groups=2)),
    "2d_batch1_height1": ((1, 16, 1, 9), (8, 16, 1, 3), spec((1, 1), ((0, 0), (1, 1)))),
    "2d_1x1_one_channel_out": ((1, 16, 5, 5), (1, 16, 1, 1), spec((1, 1), ((0, 0), (0, 0)))),
    "3d_3x3x3_p1": ((2, 4, 7, 8, 6), (6, 4, 3, 3, 3), spec((1, 1, 1), ((1, 1),) * 3)),
    "3d_stride_asym": ((1, 6, 9, 8, 7), (4, 3, 3, 2, 3),
                       spec((2, 1, 2), ((1, 0), (0, 1), (2, 1)), (1, 2, 1), groups=2)),
}


def _data(x_shape, w_shape, s, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape)
    y_shape = s.output_shape(x_shape, w_shape)
    gy = rng.standard_normal(y_shape)
    b = rng.standard_normal(w_shape[0])
    return x, w, gy, b


@needs_onednn
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
def test_passes_match_numpy_engine(case, with_bias, layout):
    x_shape, w_shape, s = CASES[case]
    x, w, gy, b = _data(x_shape, w_shape, s)
    # oracle: the NumPy engine in float64
    y_ref = conv_forward(x, w, s) + (b.reshape(-1, *[1] * s.ndim) if with_bias else 0)
    gx_ref = conv_input_grad(gy, w, x_shape, s)
    gw_ref = conv_weight_grad(x, gy, w_shape, s)
    cl = layout == "channels_last"
    f32 = (lambda a: channels_last(a.astype(np.float32))) if cl else (
        lambda a: a.astype(np.float32))
    x32, gy32, w32, b32 = f32(x), f32(gy), w.astype(np.float32), b.astype(np.float32)

    y = empty_like_layout(y_ref.shape, cl)
    p = onednn.plan_for("forward", x32, w32, y, s, bias=with_bias)
    assert p is not None, onednn.reason("forward", x_shape, w_shape, y.shape, s,
                                        strides=(x32.strides, w32.strides, y.strides),
                                        bias=with_bias)
    assert p.name.startswith("onednn:")
    p.run(x32, w32, y, bias=b32 if with_bias else None)
    assert rel_err(y, y_ref) <= TOL, (p, rel_err(y, y_ref))

    gx = empty_like_layout(x_shape, cl)
    p = onednn.plan_for("input_grad", gy32, w32, gx, s)
    assert p is not None
    gx[...] = np.nan  # every element must be written, zeros outside a crop included
    p.run(gy32, w32, gx)
    assert rel_err(gx, gx_ref) <= TOL, (p, rel_err(gx, gx_ref))

    gw = np.full(w_shape, np.nan, dtype=np.float32)
    p = onednn.plan_for("weight_grad", x32, gy32, gw, s)
    assert p is not None
    p.run(x32, gy32, gw)
    assert rel_err(gw, gw_ref) <= TOL, (p, rel_err(gw, gw_ref))


@needs_onednn
def test_padding_beyond_kernel_avoids_gemm():
    # padding >= the kernel extent is padded explicitly so a jit kernel serves it
    s = spec((1, 1), ((1, 2), (0, 3)))
    x = np.zeros((2, 64, 16, 16), np.float32)
    w = np.zeros((64, 64, 3, 3), np.float32)
    y = np.zeros(s.output_shape(x.shape, w.shape), np.float32)
    p = onednn.plan_for("forward", x, w, y, s)
    assert p is not None and "gemm" not in p.name, p


@needs_onednn
@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [
    (2, 1, 1, 1, 1), (2, 1, 0, 1, 1), (3, 2, 2, 1, 2), (2, 0, 1, 2, 1), (1, 1, 0, 1, 4),
])
def test_transposed_convolution_against_torch(stride, padding, output_padding, dilation,
                                              groups):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 8, 9, 7))
    w = rng.standard_normal((8, 12 // groups, 4, 3))  # (C_in, C_out/groups, K) as torch has it
    b = rng.standard_normal(12)
    ref = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), stride=stride,
        padding=padding, output_padding=output_padding, groups=groups,
        dilation=dilation).numpy()
    # the input gradient of the convolution it transposes
    pad = ((padding, padding - output_padding),) * 2
    s = spec((stride,) * 2, pad, (dilation,) * 2, groups=groups)
    out = np.empty(ref.shape, np.float32)
    p = onednn.plan_for("input_grad", x.astype(np.float32), w.astype(np.float32), out, s)
    assert p is not None, onednn.reason("input_grad", x.shape, w.shape, ref.shape, s)
    p.run(x.astype(np.float32), w.astype(np.float32), out)
    out += b.astype(np.float32).reshape(-1, 1, 1)
    assert rel_err(out, ref) <= TOL


@needs_onednn
def test_passes_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 16, 13, 11))
    w = rng.standard_normal((12, 4, 3, 5))
    b = rng.standard_normal(12)
    kw = dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=4)
    tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
    y_ref = torch.nn.functional.conv2d(tx, tw, tb, **kw)
    gy = rng.standard_normal(tuple(y_ref.shape))
    gx_ref, gw_ref, gb_ref = torch.ops.aten.convolution_backward(
        torch.from_numpy(gy), tx, tw, [12], list(kw["stride"]), list(kw["padding"]),
        list(kw["dilation"]), False, [0, 0], kw["groups"], [True, True, True])
    s = spec((2, 1), ((1, 1), (2, 2)), (1, 2), groups=4)
    x32, w32, gy32, b32 = (a.astype(np.float32) for a in (x, w, gy, b))
    y = np.empty(tuple(y_ref.shape), np.float32)
    onednn.plan_for("forward", x32, w32, y, s, bias=True).run(x32, w32, y, bias=b32)
    gx, gw = np.empty_like(x32), np.empty_like(w32)
    onednn.plan_for("input_grad", gy32, w32, gx, s).run(gy32, w32, gx)
    onednn.plan_for("weight_grad", x32, gy32, gw, s).run(x32, gy32, gw)
    gb = conv_bias_grad(gy32)
    for got, ref in ((y, y_ref), (gx, gx_ref), (gw, gw_ref), (gb, gb_ref)):
        assert rel_err(got, ref.numpy()) <= TOL


UNSUPPORTED = {
    "4 spatial dims": ((1, 2, 4, 4, 4, 4), (2, 2, 2, 2, 2, 2), spec((1,) * 4, ((0, 0),) * 4)),
    "input_dilation": ((1, 4, 6, 6), (4, 4, 3, 3), spec((2, 1), ((1, 1), (1, 1)), idil=(2, 1))),
    "beyond the kernel extent": ((1, 4, 6, 6), (4, 4, 3, 3),
                                 spec((1, 1), ((3, 1), (1, 1)), idil=(2, 2))),
    "only padding": ((1, 4, 6, 6), (4, 4, 2, 2), spec((1, 1), ((-7, 9), (0, 0)))),
}


@needs_onednn
@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_unsupported_specs_return_none(case):
    x_shape, w_shape, s = UNSUPPORTED[case]
    y_shape = s.output_shape(x_shape, w_shape)
    for name, shapes in (("forward", (x_shape, w_shape, y_shape)),
                         ("input_grad", (y_shape, w_shape, x_shape)),
                         ("weight_grad", (x_shape, y_shape, w_shape))):
        assert onednn.plan(name, *shapes, s) is None
        assert case in onednn.reason(name, *shapes, s)


@needs_onednn
def test_float64_and_odd_strides_are_unsupported():
    s = spec((1, 1), ((1, 1), (1, 1)))
    shapes = ((2, 4, 8, 8), (4, 4, 3, 3), (2, 4, 8, 8))
    assert onednn.plan("forward", *shapes, s, dtype=np.float64) is None
    assert "float64" in onednn.reason("forward", *shapes, s, dtype=np.float64)
    x = np.zeros((2, 4, 8, 16), np.float32)[..., ::-2]  # negative strides
    w, y = np.zeros(shapes[1], np.float32), np.zeros(shapes[2], np.float32)
    assert onednn.plan_for("forward", x, w, y, s) is None
    assert onednn.plan_for("forward", x.astype(np.float64), w, y, s) is None


@needs_onednn
def test_strided_views_are_reordered():
    rng = np.random.default_rng(5)
    s = spec((1, 1), ((1, 1), (1, 1)))
    big = rng.standard_normal((2, 8, 20, 20)).astype(np.float32)
    x = big[:, :, 2:14:2, 3:15]           # a strided view, neither layout
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    y = np.zeros((3, 8, 6, 12), np.float32)[1:]
    p = onednn.plan_for("forward", x, w, y, s)
    p.run(x, w, y)
    assert rel_err(y, conv_forward(x.astype(np.float64), w.astype(np.float64), s)) <= TOL
    assert "lhs" in p.reorders and "out" in p.reorders


@needs_onednn
def test_run_checks_its_arrays():
    s = spec((1, 1), ((1, 1), (1, 1)))
    x, w = np.zeros((2, 4, 8, 8), np.float32), np.zeros((4, 4, 3, 3), np.float32)
    y = np.zeros((2, 4, 8, 8), np.float32)
    p = onednn.plan_for("forward", x, w, y, s)
    with pytest.raises(ValueError, match="lhs must be an aligned float32"):
        p.run(x.astype(np.float64), w, y)
    with pytest.raises(ValueError, match="lhs must be"):
        p.run(channels_last(x), w, y)
    with pytest.raises(ValueError, match="bias"):
        p.run(x, w, y, bias=np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="disagree with the spec"):
        onednn.plan("forward", x.shape, w.shape, (2, 4, 9, 9), s)
    with pytest.raises(ValueError, match="pass_name"):
        onednn.plan("backward", x.shape, w.shape, y.shape, s)
    with pytest.raises(TypeError, match="spec must be a ConvSpec"):
        onednn.plan("forward", x.shape, w.shape, y.shape, {"stride": [1, 1]})
    for name, shapes in (("input_grad", (y.shape, w.shape, x.shape)),
                         ("weight_grad", (x.shape, y.shape, w.shape))):
        with pytest.raises(ValueError, match="bias=True is for pass 'forward' only"):
            onednn.plan(name, *shapes, s, bias=True)


@needs_onednn
def test_bias_in_other_dtype_or_layout():
    rng = np.random.default_rng(6)
    s = spec((1,), ((1, 1),))
    x = rng.standard_normal((2, 4, 9)).astype(np.float32)
    w = rng.standard_normal((6, 4, 3)).astype(np.float32)
    b = rng.standard_normal(12)[::2]       # float64, strided
    y = np.empty((2, 6, 9), np.float32)
    onednn.plan_for("forward", x, w, y, s, bias=True).run(x, w, y, bias=b)
    ref = conv_forward(x.astype(np.float64), w.astype(np.float64), s) + b.reshape(-1, 1)
    assert rel_err(y, ref) <= TOL


@needs_onednn
def test_workspace_limit_makes_plan_none():
    s = spec((1, 1), ((1, 1), (1, 1)))
    shapes = ((4, 32, 32, 32), (32, 32, 3, 3), (4, 32, 32, 32))  # 512 KiB reordered x
    p = onednn.plan("forward", *shapes, s)
    assert p is not None and p.workspace_bytes > 2**16
    with workspace_limit(2**16):
        assert onednn.plan("forward", *shapes, s) is None
        assert "workspace" in onednn.reason("forward", *shapes, s)
    assert onednn.plan("forward", *shapes, s) is p


@needs_onednn
def test_pass_over_the_workspace_runs_in_batch_slices():
    """NCHW activations, which oneDNN copies to its own layout in its arena: with a limit
    between one sample's arena and the whole batch's, every pass runs on oneDNN in
    batch slices (the profiler says so) and equals the
    float64 NumPy engine; below one sample's arena, the NumPy engine runs it."""
    from convgrad.ops import kernels
    from convgrad.ops.profiler import profile

    s = spec((2, 1), ((1, 2), (1, 1)))
    x, w, gy, b = _data((5, 32, 25, 24), (32, 32, 3, 3), s, seed=3)
    x32, gy32, w32, b32 = (a.astype(np.float32) for a in (x, gy, w, b))
    operands = {  # (lhs, rhs, out) of the first n samples
        "forward": lambda n: (x32[:n], w32, gy32[:n]),
        "input_grad": lambda n: (gy32[:n], w32, x32[:n]),
        "weight_grad": lambda n: (x32[:n], gy32[:n], w32)}
    arena = {(name, n): onednn.plan_for(name, *arrays(n), s).workspace_bytes
             for name, arrays in operands.items() for n in (1, 5)}
    # oneDNN's arena need not grow with the batch for every implementation (on AVX2 the
    # gemm-based backward-data needs as much for 5 samples as for 1): each pass is
    # checked where it does, and at least two passes must
    growing = [name for name in operands if arena[name, 1] < arena[name, 5]]
    assert len(growing) >= 2, arena
    refs = {"forward": conv_forward(x, w, s) + b.reshape(-1, 1, 1),
            "input_grad": conv_input_grad(gy, w, x.shape, s),
            "weight_grad": conv_weight_grad(x, gy, w.shape, s)}

    def passes():
        return {"forward": kernels.conv_forward(x32, w32, s, gy.shape, b32),
                "input_grad": kernels.conv_input_grad(gy32, w32, s, x.shape),
                "weight_grad": kernels.conv_weight_grad(x32, gy32, s, w.shape)}

    for name in growing:
        one, whole = arena[name, 1], arena[name, 5]
        for limit, batches in (((one + whole) // 2, True), (one // 2, False)):
            with workspace_limit(limit), profile() as prof:
                value = passes()[name]
            event = next(e for e in prof.of("conv") if e.name == f"conv_{name}")
            assert event.algorithm.startswith("onednn:") == batches, (name, event.algorithm)
            assert event.algorithm.endswith("/batches") == batches, (name, event.algorithm)
            assert rel_err(value, refs[name]) <= TOL, (name, rel_err(value, refs[name]))


@needs_onednn
def test_thread_count_is_part_of_the_plan(monkeypatch):
    s = spec((1, 1), ((1, 1), (1, 1)))
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 16, 12, 12)).astype(np.float32)
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    y1, y2 = np.empty_like(x), np.empty_like(x)
    monkeypatch.setenv("CONVGRAD_NUM_THREADS", "1")
    p1 = onednn.plan_for("forward", x, w, y1, s)
    monkeypatch.setenv("CONVGRAD_NUM_THREADS", "2")
    p2 = onednn.plan_for("forward", x, w, y2, s)
    assert p1 is not p2 and (p1.threads, p2.threads) == (1, 2)
    p1.run(x, w, y1)
    p2.run(x, w, y2)
    np.testing.assert_allclose(y1, y2, rtol=1e-5, atol=1e-5)


def _work(i: int):
    """Inputs and a serial result of one convolution pass per worker, all different."""
    rng = np.random.default_rng(10 + i)
    s = spec((1 + i % 2, 1), ((1, i % 3), (1, 1)), groups=1 + i % 2)
    x = rng.standard_normal((2, 8, 12 + i, 10)).astype(np.float32)
    w = rng.standard_normal((8, 8 // s.groups, 3, 3)).astype(np.float32)
    name = ("forward", "input_grad", "weight_grad", "forward")[i % 4]
    y_shape = s.output_shape(x.shape, w.shape)
    gy = rng.standard_normal(y_shape).astype(np.float32)
    lhs, rhs, out_shape = {"forward": (x, w, y_shape), "input_grad": (gy, w, x.shape),
                           "weight_grad": (x, gy, w.shape)}[name]
    return name, lhs, rhs, out_shape, s


@needs_onednn
def test_concurrent_plans_give_serial_results():
    jobs = [_work(i) for i in range(8)]
    serial = []
    for name, lhs, rhs, out_shape, s in jobs:
        out = np.empty(out_shape, np.float32)
        onednn.plan_for(name, lhs, rhs, out, s).run(lhs, rhs, out)
        serial.append(out)
    onednn.clear_cache()  # plans are built concurrently too
    errors, results = [], {}
    barrier = threading.Barrier(4)

    def worker(t: int):
        try:
            barrier.wait()
            for _rep in range(10):
                for j in (t, t + 4, (t + 1) % 4):  # (t + 1) % 4: a plan another thread runs
                    name, lhs, rhs, out_shape, s = jobs[j]
                    out = np.empty(out_shape, np.float32)
                    onednn.plan_for(name, lhs, rhs, out, s).run(lhs, rhs, out)
                    results.setdefault((t, j), []).append(out)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 12
    for (_, j), outs in results.items():
        for out in outs:
            np.testing.assert_array_equal(out, serial[j])


@needs_onednn
def test_cache_stays_bounded(monkeypatch):
    onednn.clear_cache()
    monkeypatch.setattr(onednn._cache, "capacity", 4)
    s = spec((1, 1), ((1, 1), (1, 1)))
    rng = np.random.default_rng(8)
    plans = []
    for n in range(1, 11):
        x = rng.standard_normal((n, 4, 6, 6)).astype(np.float32)
        w = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
        y = np.empty_like(x)
        plans.append((onednn.plan_for("forward", x, w, y, s), x, w, y))
        assert onednn.cache_info()["entries"] <= 4
    assert onednn.cache_info()["entries"] == 4
    p, x, w, y = plans[0]  # evicted from the cache, still usable by its holder
    p.run(x, w, y)
    assert rel_err(y, conv_forward(x.astype(np.float64), w.astype(np.float64), s)) <= TOL


@needs_onednn
def test_arena_bounded_by_largest_plan():
    onednn.clear_cache()
    s = spec((1, 1), ((1, 1), (1, 1)))
    biggest = 0
    for n in (1, 4, 2):
        x = np.ones((n, 8, 16, 16), np.float32)
        w, y = np.ones((8, 8, 3, 3), np.float32), np.empty_like(x)
        p = onednn.plan_for("forward", x, w, y, s)
        p.run(x, w, y)
        biggest = max(biggest, p.workspace_bytes)
    assert biggest <= onednn.cache_info()["arena_bytes"] <= 2 * biggest


def _subprocess(code: str, **env) -> dict:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("CONVGRAD_ONEDNN")}
    full_env = {**inherited, "PYTHONPATH": os.path.abspath(SRC), **env}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


FALLBACK = """
    import json, logging
    import numpy as np
    records = []
    class H(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())
    logging.getLogger("convgrad").addHandler(H())
    logging.getLogger("convgrad").setLevel(logging.DEBUG)
    import convgrad.ops as ops
    from convgrad.ops import onednn
    s = ops.ConvSpec((1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1))
    x = np.ones((1, 2, 5, 5), np.float32); w = np.ones((2, 2, 3, 3), np.float32)
    avail = [ops.onednn_available(), ops.onednn_available()]
    plan = onednn.plan("forward", x.shape, w.shape, (1, 2, 5, 5), s)
    y = ops.conv_forward(x, w, s)
    print(json.dumps({"available": avail, "plan": plan is None, "center": float(y[0, 0, 2, 2]),
                      "reason": onednn.reason("forward", x.shape, w.shape, (1, 2, 5, 5), s),
                      "messages": records}))
"""


def test_fallback_when_library_is_not_a_library(tmp_path):
    fake = tmp_path / "libdnnl.so.3"
    fake.write_text("not a shared library\n")
    r = _subprocess(FALLBACK, CONVGRAD_ONEDNN_LIBRARY=str(fake))
    assert r["available"] == [False, False] and r["plan"]
    assert r["center"] == 18.0
    assert str(fake) in r["reason"]
    assert len(r["messages"]) == 1 and "NumPy engine" in r["messages"][0]


def test_fallback_when_disabled_by_environment():
    r = _subprocess(FALLBACK, CONVGRAD_ONEDNN="0")
    assert r["available"] == [False, False] and r["plan"] and r["center"] == 18.0
    assert "CONVGRAD_ONEDNN=0" in r["reason"]
    assert len(r["messages"]) == 1


TORCH_ORDER = """
    import json
    import numpy as np
    {first}
    {second}
    from convgrad.ops import ConvSpec, onednn
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 16, 20, 20)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    s = ConvSpec((1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1))
    y = np.empty((2, 32, 20, 20), np.float32)
    p = onednn.plan_for("forward", x, w, y, s)
    p.run(x, w, y)
    ref = torch.nn.functional.conv2d(torch.from_numpy(x).double(),
                                     torch.from_numpy(w).double(), padding=1).numpy()
    t = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)
    err = float(np.abs(y - ref).max() / np.abs(ref).max())
    terr = float(np.abs(t.numpy() - ref).max() / np.abs(ref).max())
    print(json.dumps({{"name": p.name, "err": err, "torch_err": terr}}))
"""


@needs_onednn
@pytest.mark.parametrize("torch_first", [True, False])
def test_torch_imported_before_or_after(torch_first):
    pytest.importorskip("torch")
    lines = ["import torch", "import convgrad"]
    first, second = lines if torch_first else lines[::-1]
    r = _subprocess(TORCH_ORDER.format(first=first, second=second))
    assert r["name"].startswith("onednn:")
    assert r["err"] <= TOL and r["torch_err"] <= TOL


@needs_onednn
def test_layout_helpers():
    a = layouts.empty((2, 3, 4, 5), channels_last=True)
    assert a.shape == (2, 3, 4, 5) and layouts.is_channels_last(a)
    assert a.transpose(0, 2, 3, 1).flags.c_contiguous
    assert not layouts.is_channels_last(layouts.empty((2, 3, 4, 5)))
    assert not layouts.is_channels_last(np.empty((2, 1, 4, 5)))  # one channel: both layouts
    assert layouts.is_channels_last(layouts.empty((2, 3, 7), channels_last=True))


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 7, 3, 3, 3), (5,), (0, 3, 4, 4), (4, 33)])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8])
def test_aligned_allocation(shape, channels_last, dtype):
    """``aligned=True``: the first byte on a 64-byte boundary (over many allocations: NumPy
    places large ones 16 bytes past a page), the shape, strides and layout of the plain
    allocation, writable memory of its own."""
    for _ in range(8):
        a = layouts.empty(shape, channels_last=channels_last, dtype=dtype, aligned=True)
        b = layouts.empty(shape, channels_last=channels_last, dtype=dtype)
        assert (a.shape, a.dtype) == (b.shape, b.dtype)
        if a.size:  # (an empty array has no memory to place)
            assert a.ctypes.data % 64 == 0 and layouts.is_aligned(a)
            assert a.strides == b.strides
        a[...] = 1
        assert a.sum() == a.size
        big = layouts.empty((4, 64, 96, 96), channels_last=channels_last, aligned=True)
        assert layouts.is_aligned(big)


@pytest.mark.parametrize("env", [{}, {"CONVGRAD_ONEDNN": "0"}])
def test_building_a_network_warms_onednn_up_in_the_background(env):
    """A convolution layer starts one background thread that loads oneDNN and runs a
    one-channel convolution both ways (oneDNN's GEMM kernels are compiled on their first
    use); with oneDNN off it does nothing.  Checked in a fresh process: the plans it left
    in the cache, and the layer's own result against torch."""
    code = textwrap.dedent("""
        import json, threading, numpy as np, convgrad as cg
        from convgrad.ops import onednn
        assert onednn.cache_info()["plans"] == 0
        conv = cg.nn.Conv2d(1, 1, (3, 1), bias=False)
        cg.nn.Conv2d(1, 1, 3)  # a second layer starts no second thread
        names = [t.name for t in threading.enumerate() if "onednn" in t.name]
        for t in threading.enumerate():
            if t.name == "convgrad-onednn-warm-up":
                t.join()
        x = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)
        y = conv(cg.tensor(x)).data
        info = onednn.cache_info()
        print(json.dumps({"threads": names, "plans": info["plans"], "hits": info["hits"],
                          "w": conv.weight.data.ravel().tolist(), "y": y.ravel().tolist()}))
    """)
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                         capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    assert len(got["threads"]) <= 1
    if env:
        assert got["plans"] == got["hits"] == 0
    else:  # the warm-up's two passes; the layer's forward of the same shapes is the first
        assert got["plans"] == 2 and got["hits"] >= 1
    # the layer's result: torch float64 the oracle, within twice torch float32's error
    torch = pytest.importorskip("torch")
    ys = {}
    for dtype in (torch.float64, torch.float32):
        w = torch.tensor(np.float32(got["w"]), dtype=dtype).reshape(1, 1, 3, 1)
        x = torch.arange(64, dtype=dtype).reshape(1, 1, 8, 8)
        ys[dtype] = torch.nn.functional.conv2d(x, w).double().numpy().ravel()
    ref, t32 = ys[torch.float64], ys[torch.float32]
    ours = np.float32(got["y"])  # JSON carried the float32 values exactly
    # the floor: one float32 ulp at the outputs' magnitude (~100 here: 7.6e-6), below
    # which no float32 result can be held to (the layer's random weights once left torch
    # 1.1e-6 from float64 and convgrad's NumPy engine 2.7e-6, a third of an ulp)
    ulp = float(np.spacing(np.float32(np.abs(ref).max())))
    assert np.abs(ours - ref).max() <= 2 * max(np.abs(t32 - ref).max(), ulp)
