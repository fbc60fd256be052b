"""Oracle: contiguous float copies of the same call; torch 2.13; analytic values; serial runs.

Odd layouts (non-contiguous, negatively strided, Fortran order, read-only, broadcast,
unaligned, memory-mapped) give the results of contiguous copies and are never written;
outputs never alias inputs (the bias is added in place); int and bool arrays become
float32 (docs/API.md), other dtypes are rejected by name; zero-sized dims follow torch where
torch is sane; extreme strides and dilations compute or fail cleanly; a weight shared
by two layers and an array passed in two roles get torch's gradients; a freed graph
raises a clear error; threads give exactly the serial results.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad.ops import ConvSpec, conv_bias_grad, conv_forward, conv_input_grad, conv_weight_grad

from .tolerances import assert_close

torch = pytest.importorskip("torch")
TF = pytest.importorskip("torch.nn.functional")

pytestmark = pytest.mark.usefixtures("backend")  # with oneDNN, then without


# ---------------------------------------------------------------------------- layouts
def _noncontiguous(a):
    big = np.zeros(tuple(2 * n + 1 for n in a.shape), a.dtype)
    view = big[tuple(slice(1, None, 2) for _ in a.shape)]
    view[...] = a
    return view


def _negative(a):
    flipped = np.ascontiguousarray(a[tuple(slice(None, None, -1) for _ in a.shape)])
    return flipped[tuple(slice(None, None, -1) for _ in a.shape)]


def _fortran(a):
    return np.asfortranarray(a)


def _readonly(a):
    b = a.copy()
    b.flags.writeable = False
    return b


def _unaligned(a):
    raw = np.zeros(a.nbytes + 1, np.uint8)
    b = raw[1:].view(a.dtype).reshape(a.shape)
    b[...] = a
    assert not b.flags.aligned
    return b


def _swapped(a):
    """A transposed view of a transposed copy: strides out of order."""
    if a.ndim < 2:
        return _noncontiguous(a)
    return np.ascontiguousarray(np.swapaxes(a, 0, -1)).swapaxes(0, -1)


def _memmap(a, tmp_path):
    path = tmp_path / "array.bin"
    m = np.memmap(path, dtype=a.dtype, mode="w+", shape=a.shape)
    m[...] = a
    m.flush()
    del m
    return np.memmap(path, dtype=a.dtype, mode="r", shape=a.shape)


LAYOUTS = {"noncontiguous": _noncontiguous, "negative_strides": _negative,
           "fortran": _fortran, "readonly": _readonly, "unaligned": _unaligned,
           "swapped": _swapped}

# (kind, x shape, w shape, keywords): im2col, direct (few channels), transposed, 3-D
CALLS = {
    "conv2d": (F.conv2d, (2, 4, 9, 8), (6, 2, 3, 2), dict(stride=(2, 1), padding=1, groups=2)),
    "depthwise": (F.conv2d, (2, 3, 11, 9), (3, 1, 3, 3), dict(padding=1, groups=3)),
    "conv_transpose2d": (F.conv_transpose2d, (2, 4, 5, 6), (4, 3, 3, 2),
                         dict(stride=2, padding=1, output_padding=1)),
    "conv3d": (F.conv3d, (1, 2, 5, 4, 6), (3, 2, 2, 3, 2), dict(padding=(1, 0, 1))),
    "conv1d_reflect": (F.conv1d, (2, 3, 10), (4, 3, 3), dict(padding=2, padding_mode="reflect")),
}


def _random_call(kind: str, dtype=np.float64, seed: int = 0):
    fn, xs, ws, kw = CALLS[kind]
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    c_out = ws[1] * kw.get("groups", 1) if "transpose" in kind else ws[0]
    b = rng.standard_normal(c_out).astype(dtype)
    y_shape = fn(x, w, b, **kw).shape
    gy = rng.standard_normal(y_shape).astype(dtype)
    return fn, kw, x, w, b, gy


def _forward_backward(fn, kw, x, w, b, gy):
    """(y, gx, gw, gb) for arrays given as they are (Tensors wrap them without a copy)."""
    cx, cw, cb = (cg.Tensor(a, requires_grad=True) for a in (x, w, b))
    y = fn(cx, cw, cb, **kw)
    y.backward(gy)
    return y.data, cx.grad.data, cw.grad.data, cb.grad.data


def _close(got, want, what):
    for g, v, name in zip(got, want, ("output", "input grad", "weight grad", "bias grad")):
        assert g.shape == v.shape, f"{what}: {name} shape"
        scale = max(float(np.abs(v).max()), 1.0)
        np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-12 * scale, err_msg=f"{what} {name}")


@pytest.mark.parametrize("layout", sorted(LAYOUTS) + ["memmap"])
@pytest.mark.parametrize("kind", sorted(CALLS))
def test_odd_layouts_give_the_contiguous_result(kind, layout, tmp_path):
    fn, kw, x, w, b, gy = _random_call(kind)
    want = _forward_backward(fn, kw, x, w, b, gy)
    for which in range(4):  # one odd argument at a time: x, w, b, gy
        args = [x.copy(), w.copy(), b.copy(), gy.copy()]
        if layout == "memmap":
            args[which] = _memmap(args[which], tmp_path)
        else:
            args[which] = LAYOUTS[layout](args[which])
        saved = [np.array(a) for a in args]
        got = _forward_backward(fn, kw, *args)
        _close(got, want, f"{kind}, {layout} {('x', 'w', 'b', 'gy')[which]}")
        for a, s in zip(args, saved):
            np.testing.assert_array_equal(a, s, err_msg="an input was modified")
        for out in got:
            assert not any(np.shares_memory(out, a) for a in args), "an output aliases an input"


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_kernels_accept_odd_layouts(layout):
    """The ndarray kernels of convgrad.ops, one odd argument at a time."""
    rng = np.random.default_rng(1)
    spec = ConvSpec(stride=(2, 1), padding=((1, 2), (0, 1)), kernel_dilation=(1, 2),
                    input_dilation=(2, 1), groups=2, flip=True)
    x = rng.standard_normal((2, 4, 6, 7))
    w = rng.standard_normal((6, 2, 3, 2))
    y = conv_forward(x, w, spec)
    gy = rng.standard_normal(y.shape)
    want = (y, conv_input_grad(gy, w, x.shape, spec), conv_weight_grad(x, gy, w.shape, spec),
            conv_bias_grad(gy))
    odd = LAYOUTS[layout]
    x2, w2, gy2 = odd(x), odd(w), odd(gy)
    got = (conv_forward(x2, w2, spec), conv_input_grad(gy2, w2, x.shape, spec),
           conv_weight_grad(x2, gy2, w.shape, spec), conv_bias_grad(gy2))
    _close(got, want, f"ops with {layout}")
    for out in got:
        assert out.flags.writeable and not any(np.shares_memory(out, a) for a in (x2, w2, gy2))


def test_broadcast_weight_with_zero_strides():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 8, 8))
    w_row = rng.standard_normal((1, 3, 3, 3))
    w = np.broadcast_to(w_row, (5, 3, 3, 3))  # read-only, stride 0 over C_out
    y = F.conv2d(x, w, padding=1)
    want = TF.conv2d(torch.tensor(x), torch.tensor(np.array(w)), padding=1).numpy()
    assert_close(y.data, want, np.float64, "broadcast weight")


def test_identity_conv_with_bias_leaves_the_input_alone():
    """A 1x1 identity kernel: a kernel that returned x itself would get the bias added in place."""
    x = np.arange(12.0).reshape(1, 3, 4)
    saved = x.copy()
    w = np.eye(3).reshape(3, 3, 1)
    for call in (lambda: F.conv1d(x, w, np.ones(3)),
                 lambda: F.conv_general(x, w, np.ones(3)),
                 lambda: F.conv_transpose1d(x, w, np.ones(3)),
                 lambda: F.conv1d(x, w, np.ones(3), padding_mode="circular")):
        y = call()
        np.testing.assert_array_equal(x, saved)
        np.testing.assert_array_equal(y.data, saved + 1)
        assert not np.shares_memory(y.data, x)


# ------------------------------------------------------------- aliasing between roles
def test_one_array_as_input_and_weight():
    """The same Tensor as input and weight: its gradient sums both roles, as in torch."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 3, 5))  # x (N=3, C=3, L=5) and w (C_out=3, C_in=3, K=5)
    gy = rng.standard_normal((3, 3, 5))
    ca = cg.tensor(a, requires_grad=True)
    y = F.conv1d(ca, ca, padding=2)
    y.backward(gy)
    ta = torch.tensor(a, requires_grad=True)
    ty = TF.conv1d(ta, ta, padding=2)
    ty.backward(torch.tensor(gy))
    assert_close(y.data, ty.detach().numpy(), np.float64, "output")
    assert_close(ca.grad.data, ta.grad.numpy(), np.float64, "gradient")
    # and the ndarray kernels with one buffer in two roles (x is gy of a "same" conv)
    spec = ConvSpec(stride=(1,), padding=((2, 2),), kernel_dilation=(1,), input_dilation=(1,))
    np.testing.assert_array_equal(conv_weight_grad(a, a, a.shape, spec),
                                  conv_weight_grad(a.copy(), a.copy(), a.shape, spec))
    np.testing.assert_array_equal(conv_input_grad(a, a, a.shape, spec),
                                  conv_input_grad(a.copy(), a.copy(), a.shape, spec))
    np.testing.assert_array_equal(conv_forward(a, a[::-1], spec),
                                  conv_forward(a.copy(), a[::-1].copy(), spec))


def test_overlapping_views_of_one_buffer():
    buf = np.random.default_rng(4).standard_normal(200)
    x = buf[:96].reshape(2, 3, 16)
    w = buf[50:86].reshape(4, 3, 3)  # overlaps x
    y = F.conv1d(x, w, stride=2)
    np.testing.assert_array_equal(y.data, F.conv1d(x.copy(), w.copy(), stride=2).data)


def test_weight_shared_by_two_layers():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 9, 9))
    w = rng.standard_normal((4, 4, 3, 3))
    b = rng.standard_normal(4)
    cw, cb = cg.tensor(w, requires_grad=True), cg.tensor(b, requires_grad=True)
    cx = cg.tensor(x, requires_grad=True)
    h = F.relu(F.conv2d(cx, cw, cb, padding=1))
    F.conv2d(h, cw, cb, stride=2).sum().backward()
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    th = TF.relu(TF.conv2d(tx, tw, tb, padding=1))
    TF.conv2d(th, tw, tb, stride=2).sum().backward()
    for c, t, name in ((cw, tw, "weight"), (cb, tb, "bias"), (cx, tx, "input")):
        assert_close(c.grad.data, t.grad.numpy(), np.float64, name)
    # two modules holding one Parameter: it is listed once, as in torch
    l1, l2 = cg.nn.Conv2d(4, 4, 3), cg.nn.Conv2d(4, 4, 3)
    l2.weight = l1.weight
    model = cg.nn.Sequential(l1, l2)
    assert sum(p is l1.weight for p in model.parameters()) == 1


# ---------------------------------------------------------------------- dtypes
def test_int_and_bool_inputs_are_refused_as_torch():
    """As torch: a convolution takes a floating point input (no silent cast); integer and
    bool weights given as plain arrays are constants that take the input's dtype."""
    x_int = np.arange(2 * 3 * 6 * 5).reshape(2, 3, 6, 5) % 7 - 3
    w_int = np.arange(4 * 3 * 2 * 2).reshape(4, 3, 2, 2) % 5 - 2
    b_int = np.array([1, -2, 3, 0])
    for x in (x_int, x_int > 0, x_int.astype(np.uint8), x_int.astype(np.float16)):
        with pytest.raises(TypeError, match=f"conv2d: input has dtype {x.dtype}"):
            F.conv2d(x, w_int.astype(np.float32))
        with pytest.raises(RuntimeError):
            TF.conv2d(torch.tensor(x), torch.tensor(w_int, dtype=torch.float32))
    y = F.conv2d(x_int.astype(np.float64), w_int, b_int, padding=1)
    assert y.dtype == np.float64
    ref = TF.conv2d(torch.tensor(x_int, dtype=torch.float64),
                    torch.tensor(w_int, dtype=torch.float64),
                    torch.tensor(b_int, dtype=torch.float64), padding=1).numpy()
    np.testing.assert_array_equal(y.data, ref)
    yb = F.conv_transpose2d(x_int.astype(np.float32), np.ones((3, 2, 2, 2), bool), stride=2)
    assert yb.dtype == np.float32


def test_int_tensor_input_gets_a_float32_gradient():
    x = cg.tensor(np.arange(10).reshape(1, 2, 5), requires_grad=True)
    assert x.dtype == np.float32
    F.conv1d(x, np.ones((3, 2, 2), np.float32)).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [[[3, 6, 6, 6, 3]] * 2])


@pytest.mark.parametrize("bad", [np.ones((1, 1, 4), complex), np.ones((1, 1, 4), object),
                                 np.array([[["a", "b", "c", "d"]]]), None, {}, "x",
                                 np.ones((1, 1, 4), "datetime64[s]")])
@pytest.mark.parametrize("role", ["input", "weight", "bias"])
def test_other_dtypes_are_rejected_by_name(bad, role):
    args = {"input": np.ones((1, 1, 4)), "weight": np.ones((1, 1, 2)), "bias": np.ones(1)}
    if role == "bias" and bad is None:
        return  # no bias is fine
    args[role] = bad
    with pytest.raises(TypeError, match=f"conv1d: {role}"):
        F.conv1d(args["input"], args["weight"], args["bias"])


def test_ops_kernels_reject_non_float_arrays_by_name():
    spec = ConvSpec(stride=(1,), padding=((0, 0),), kernel_dilation=(1,), input_dilation=(1,))
    with pytest.raises(TypeError, match="conv_forward: x"):
        conv_forward(np.ones((1, 1, 4), int), np.ones((1, 1, 2)), spec)
    with pytest.raises(TypeError, match="conv_input_grad: weight"):
        conv_input_grad(np.ones((1, 1, 3)), np.ones((1, 1, 2), bool), (1, 1, 4), spec)
    with pytest.raises(TypeError, match="conv_weight_grad: gy"):
        conv_weight_grad(np.ones((1, 1, 4)), [[[1.0, 1.0, 1.0]]], (1, 1, 2), spec)


# ---------------------------------------------------------------- zero-sized dims
def test_empty_batch_forward_and_backward():
    x = cg.tensor(np.ones((0, 4, 6, 6)), requires_grad=True)
    w = cg.tensor(np.ones((2, 4, 3, 3)), requires_grad=True)
    b = cg.tensor(np.ones(2), requires_grad=True)
    y = F.conv2d(x, w, b, stride=2, padding=1)
    assert y.shape == (0, 2, 3, 3)
    y.sum().backward()
    assert x.grad.shape == (0, 4, 6, 6)
    np.testing.assert_array_equal(w.grad.data, 0)
    np.testing.assert_array_equal(b.grad.data, 0)
    yt = F.conv_transpose2d(np.ones((0, 4, 3, 3)), np.ones((4, 2, 3, 3)), stride=2)
    assert yt.shape == (0, 2, 7, 7)


def test_zero_input_channels_give_the_bias():
    """conv_general follows JAX: no channels, no terms; the output is the bias."""
    x = cg.tensor(np.ones((2, 0, 5)), requires_grad=True)
    w = cg.tensor(np.ones((3, 0, 2)), requires_grad=True)
    b = cg.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    y = F.conv_general(x, w, b, padding=1)
    assert y.shape == (2, 3, 6)
    np.testing.assert_array_equal(y.data, np.broadcast_to(b.data[None, :, None], (2, 3, 6)))
    y.sum().backward()
    assert x.grad.shape == (2, 0, 5) and w.grad.shape == (3, 0, 2)
    np.testing.assert_array_equal(b.grad.data, [12.0, 12.0, 12.0])
    assert F.conv_general(np.ones((1, 2, 4)), np.ones((0, 2, 2))).shape == (1, 0, 3)


@pytest.mark.parametrize("call, word", [
    (lambda: F.conv2d(np.ones((1, 2, 0, 4)), np.ones((3, 2, 1, 1))), "input"),
    (lambda: F.conv2d(np.ones((2, 4)), np.ones((3, 2, 1, 1))), "input"),
    (lambda: F.conv_general(np.ones((1, 2, 4, 0)), np.ones((3, 2, 1, 1)), padding=1), "input"),
    (lambda: F.conv2d(np.ones((1, 2, 4, 4)), np.ones((3, 2, 0, 1))), "kernel"),
    (lambda: F.conv2d(np.ones((1, 2, 4, 4)), np.ones((0, 2, 1, 1))), "C_out"),
    (lambda: F.conv_transpose1d(np.ones((1, 0, 4)), np.ones((0, 2, 1))), "weight"),
    (lambda: F.conv_transpose1d(np.ones((1, 2, 4)), np.ones((2, 0, 1))), "weight"),
])
def test_zero_sized_dims_torch_rejects_are_rejected(call, word):
    with pytest.raises(ValueError, match=word):
        call()


# ------------------------------------------------------- extreme stride and dilation
X5 = np.arange(1.0, 6.0).reshape(1, 1, 5)
W2 = np.array([[[2.0, 3.0]]])
EXTREME = [10**6, 10**9, 2**40, 10**15]


@pytest.mark.parametrize("v", EXTREME)
def test_extreme_stride_and_dilation_compute(v):
    t = time.perf_counter()
    # one output: x0*w0 + x1*w1
    np.testing.assert_array_equal(F.conv1d(X5, W2, stride=v).data, [[[8.0]]])
    np.testing.assert_array_equal(F.conv_general(X5, W2, stride=v).data, [[[8.0]]])
    # tap 0 reads the left padding, tap 1 reads x: y = w1 * x
    y = F.conv_general(X5, W2, kernel_dilation=v, padding=((v, 0),))
    np.testing.assert_array_equal(y.data, 3 * X5)
    # every v-th sample of the v-dilated input is real: y = w0 * x[:4]
    y = F.conv_general(X5, W2, input_dilation=v, stride=v)
    np.testing.assert_array_equal(y.data, 2 * X5[..., :4])
    # the padding is read between the strides: [0, x0*w0 + x1*w1, 0]
    np.testing.assert_array_equal(F.conv_general(X5, W2, padding=v, stride=v).data,
                                  [[[0.0, 8.0, 0.0]]])
    np.testing.assert_array_equal(F.conv_transpose1d(X5[..., :1], W2, stride=v).data,
                                  [[[2.0, 3.0]]])
    # and the gradients of a huge dilation through the autograd path
    x = cg.tensor(X5, requires_grad=True)
    w = cg.tensor(W2, requires_grad=True)
    F.conv_general(x, w, kernel_dilation=v, padding=((v, 0),)).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [[[3.0] * 5]])
    np.testing.assert_array_equal(w.grad.data, [[[0.0, 15.0]]])
    assert time.perf_counter() - t < 10


def _big_dilation_output_len(v):
    return 5 + 2 * v - v  # L + 2p - d(K-1)


def test_extreme_dilation_output_length_formula():
    assert F.conv1d(X5, W2, dilation=10**6, padding=10**6).shape == (
        1, 1, _big_dilation_output_len(10**6))


@pytest.mark.parametrize("call, name", [
    (lambda: F.conv1d(X5, W2, stride=2**63), "stride"),
    (lambda: F.conv1d(X5, W2, dilation=2**70, padding=2**70), "dilation"),
    (lambda: F.conv_general(X5, W2, input_dilation=2**64), "input_dilation"),
    (lambda: F.conv_general(X5, W2, padding=((-(2**63), 0),)), "padding"),
    (lambda: F.conv_transpose1d(X5, W2, output_padding=2**63, stride=2**63), "stride"),
    (lambda: F.conv2d(np.ones((1, 1, 3, 3)), np.ones((1, 1, 1, 1)), groups=2**64), "groups"),
    (lambda: F.conv1d(X5, W2, dilation=10**9), "kernel"),  # the kernel outgrows the input
])
def test_values_beyond_int64_or_reach_fail_cleanly(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.xfail(raises=OverflowError, strict=True,
                   reason="reported: the kernels overflow int64 byte strides for values "
                          "in [2**61, 2**63) that torch accepts")
def test_int64_sized_stride_and_dilation():
    np.testing.assert_array_equal(F.conv1d(np.ones((1, 8, 5)), np.ones((8, 8, 2)),
                                           stride=2**62).data, np.full((1, 8, 1), 16.0))
    y = F.conv_general(X5, W2, kernel_dilation=2**62, padding=((2**62, 0),))
    np.testing.assert_array_equal(y.data, 3 * X5)


# --------------------------------------------------------------- graphs and threads
def test_graph_reused_after_backward_is_a_clear_error():
    x = cg.tensor(np.ones((1, 2, 5)), requires_grad=True)
    w = cg.tensor(np.ones((3, 2, 2)), requires_grad=True)
    y = F.conv1d(x, w)
    loss = y.sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        (y * 2).sum().backward()  # a new op on the freed part of the graph
    with pytest.raises(RuntimeError, match="retain_graph"):
        cg.grad(loss, [w])
    # with retain_graph the second pass accumulates exactly once more
    x.grad = w.grad = None
    loss = F.conv1d(x, w).sum()
    loss.backward(retain_graph=True)
    first = w.grad.data.copy()
    loss.backward()
    np.testing.assert_array_equal(w.grad.data, 2 * first)


THREAD_JOBS = ["conv2d", "depthwise", "conv_transpose2d", "conv3d", "conv1d_reflect"]


def test_threads_give_the_serial_results():
    jobs = [(kind, dt, seed) for kind in THREAD_JOBS for dt in (np.float32, np.float64)
            for seed in range(2)]
    inputs = [_random_call(kind, dt, seed) for kind, dt, seed in jobs]
    serial = [_forward_backward(*a) for a in inputs]
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def worker(t: int):
        try:
            for rep in range(3):
                for j in range(t % len(jobs), len(jobs) + t % len(jobs)):
                    j %= len(jobs)
                    if rep == 1 and j % 2:
                        with cg.no_grad():  # grad mode is per thread
                            fn, kw, x, w, b, _ = inputs[j]
                            assert fn(cg.tensor(x, requires_grad=True), w, b,
                                      **kw).grad_fn is None
                    results.setdefault(j, []).append(_forward_backward(*inputs[j]))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[0]
    for j, runs in results.items():
        assert len(runs) == 18
        for got in runs:
            for g, s in zip(got, serial[j]):
                np.testing.assert_array_equal(g, s, err_msg=f"{jobs[j]} differs from serial")


def test_workspace_limit_context_in_two_threads():
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with cg.workspace_limit(2**20):
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second():
        a_in.wait(10)
        with cg.workspace_limit(2**21):
            b_in.set()
            a_out.wait(10)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    limit = cg.get_workspace_limit()
    cg.set_workspace_limit(64 * 2**20)  # leave the process as it was
    assert limit == 64 * 2**20, f"the limit is {limit} after both threads restored theirs"
