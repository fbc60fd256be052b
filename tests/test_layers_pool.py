"""Oracle: torch 2.13 pooling (torch.nn.functional and torch.nn) on the same inputs: outputs,
indices, gradients and second-order gradients; the kernel profiler for what runs."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad import nn

from .torch_agreement import agree, check

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(5)
DTYPES = [np.float64, np.float32]


def distinct(*shape):
    """Values without ties (so the max of every window is unique)."""
    return RNG.permutation(np.prod(shape)).reshape(shape) / 7.0 - 3.0


def rand(*shape):
    return RNG.standard_normal(shape)


# (nd, input shape, kernel_size, stride, padding, dilation, ceil_mode)
MAX_CASES = [
    (1, (2, 3, 9), 2, None, 0, 1, False),
    (1, (2, 2, 10), 3, 2, 1, 2, True),
    (1, (3, 7), 4, 3, 2, 1, True),  # unbatched
    (2, (2, 2, 7, 6), 2, None, 0, 1, False),
    (2, (1, 3, 9, 8), 3, 2, 1, 1, True),
    (2, (2, 2, 8, 9), (3, 2), (2, 1), (1, 0), (2, 1), False),
    (2, (2, 11, 10), (2, 3), (3, 2), 1, (1, 2), True),
    (3, (1, 2, 5, 6, 5), 2, None, 0, 1, True),
    (3, (2, 1, 6, 5, 7), (3, 2, 3), (2, 2, 1), (1, 1, 0), (1, 2, 1), True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nd,shape,k,s,p,d,ceil", MAX_CASES)
def test_max_pool_matches_torch(nd, shape, k, s, p, d, ceil, dtype):
    ours, theirs = getattr(F, f"max_pool{nd}d"), getattr(TF, f"max_pool{nd}d")
    kw = dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil)
    x = distinct(*shape)
    check(f"max_pool{nd}d", lambda x: ours(x, **kw), lambda x: theirs(x, **kw), [x], dtype,
          double=dtype == np.float64)
    y, idx = ours(x.astype(dtype), return_indices=True, **kw)
    yt, idx_t = theirs(torch.tensor(x.astype(dtype)), return_indices=True, **kw)
    agree(f"max_pool{nd}d", y, yt, dtype)
    assert idx.data.dtype == np.int64 and np.array_equal(idx.data, idx_t.numpy())


def test_max_pool_ties_nan_and_all_negative_infinity_windows():
    x = np.zeros((1, 1, 4, 4))  # all ties: the gradient goes to the first of each window
    check("max_pool2d ties", lambda x: F.max_pool2d(x, 2, 1), lambda x: TF.max_pool2d(x, 2, 1),
          [x], np.float64)
    x = np.full((1, 1, 5, 5), -np.inf)
    x[0, 0, 2, 3] = np.nan
    y, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    yt, idx_t = TF.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
    assert np.array_equal(idx.data, idx_t.numpy())
    np.testing.assert_array_equal(y.data, yt.numpy())


AVG_CASES = [
    # (nd, input shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor)
    (1, (2, 3, 9), 2, None, 0, False, True, None),
    (1, (2, 2, 10), 3, 2, 1, True, False, None),
    (1, (3, 8), 4, 3, 2, True, True, None),
    (2, (2, 2, 7, 6), 2, None, 0, False, True, None),
    (2, (1, 3, 9, 8), 3, 2, 1, True, True, None),
    (2, (2, 2, 9, 7), 3, 2, 1, True, False, None),
    (2, (2, 2, 8, 9), (3, 2), (2, 1), (1, 0), False, False, 5),
    (2, (2, 6, 7), (2, 3), (3, 2), 1, True, True, 4),
    (3, (1, 2, 5, 6, 5), 2, None, 0, True, True, None),
    (3, (2, 1, 6, 5, 7), (3, 2, 3), (2, 2, 1), (1, 1, 0), True, False, None),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nd,shape,k,s,p,ceil,include,divisor", AVG_CASES)
def test_avg_pool_matches_torch(nd, shape, k, s, p, ceil, include, divisor, dtype):
    ours, theirs = getattr(F, f"avg_pool{nd}d"), getattr(TF, f"avg_pool{nd}d")
    kw = dict(kernel_size=k, stride=s, padding=p, ceil_mode=ceil, count_include_pad=include)
    if nd > 1:
        kw["divisor_override"] = divisor
    check(f"avg_pool{nd}d", lambda x: ours(x, **kw), lambda x: theirs(x, **kw), [rand(*shape)],
          dtype, double=dtype == np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nd,shape,out", [
    (1, (2, 3, 10), 5), (1, (2, 3, 10), 4), (1, (3, 7), 9),
    (2, (2, 2, 8, 6), (4, 3)), (2, (2, 2, 7, 9), (3, 4)), (2, (2, 5, 6), (None, 4)),
    (2, (1, 2, 5, 5), 1), (3, (1, 2, 6, 5, 4), (3, 2, 3)), (3, (1, 2, 4, 4, 4), 2)])
def test_adaptive_pooling_matches_torch(nd, shape, out, dtype):
    x = distinct(*shape)
    avg, avg_t = getattr(F, f"adaptive_avg_pool{nd}d"), getattr(TF, f"adaptive_avg_pool{nd}d")
    check(f"adaptive_avg_pool{nd}d", lambda x: avg(x, out), lambda x: avg_t(x, out), [x], dtype,
          double=dtype == np.float64)
    mx, mx_t = getattr(F, f"adaptive_max_pool{nd}d"), getattr(TF, f"adaptive_max_pool{nd}d")
    check(f"adaptive_max_pool{nd}d", lambda x: mx(x, out), lambda x: mx_t(x, out), [x], dtype,
          double=dtype == np.float64)
    _, idx = mx(x.astype(dtype), out, return_indices=True)
    _, idx_t = mx_t(torch.tensor(x.astype(dtype)), out, return_indices=True)
    assert idx.data.dtype == np.int64 and np.array_equal(idx.data, idx_t.numpy())


def test_pool_modules_match_torch_and_their_repr():
    pairs = [
        (nn.MaxPool1d(3, 2, 1), torch.nn.MaxPool1d(3, 2, 1), (2, 3, 9)),
        (nn.MaxPool2d(2), torch.nn.MaxPool2d(2), (2, 3, 6, 7)),
        (nn.MaxPool2d(3, 2, 1, ceil_mode=True), torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True),
         (2, 3, 6, 7)),
        (nn.MaxPool3d(2, dilation=(1, 2, 1)), torch.nn.MaxPool3d(2, dilation=(1, 2, 1)),
         (1, 2, 4, 6, 5)),
        (nn.AvgPool1d(3, 2, 1), torch.nn.AvgPool1d(3, 2, 1), (2, 3, 9)),
        (nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),
         torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), (2, 3, 6, 7)),
        (nn.AvgPool3d((2, 1, 2)), torch.nn.AvgPool3d((2, 1, 2)), (1, 2, 4, 3, 5)),
        (nn.AdaptiveAvgPool1d(4), torch.nn.AdaptiveAvgPool1d(4), (2, 3, 9)),
        (nn.AdaptiveAvgPool2d((3, None)), torch.nn.AdaptiveAvgPool2d((3, None)), (2, 3, 7, 5)),
        (nn.AdaptiveAvgPool3d(2), torch.nn.AdaptiveAvgPool3d(2), (1, 2, 5, 4, 3)),
        (nn.AdaptiveMaxPool2d(3), torch.nn.AdaptiveMaxPool2d(3), (2, 3, 7, 5)),
    ]
    for ours, theirs, shape in pairs:
        x = distinct(*shape)
        check(repr(ours), ours, theirs, [x], np.float64)
        assert repr(ours) == repr(theirs)
    y, idx = nn.MaxPool2d(2, return_indices=True)(distinct(1, 2, 4, 4))
    assert y.shape == idx.shape == (1, 2, 2, 2)
    y, idx = nn.AdaptiveMaxPool2d(2, return_indices=True)(distinct(1, 2, 5, 4))
    assert y.shape == idx.shape == (1, 2, 2, 2)


@pytest.mark.parametrize("pool", [
    lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    lambda x: F.avg_pool1d(x[:, :, 0], 2),
    lambda x: F.avg_pool3d(x[:, :, None], (1, 2, 2)),
    lambda x: F.adaptive_avg_pool2d(x, 3),
    lambda x: F.adaptive_avg_pool2d(x, 4),
])
def test_average_pooling_runs_no_weight_gradient(pool):
    x = cg.tensor(rand(2, 3, 12, 12), requires_grad=True)
    with cg.profile() as prof:
        y = pool(x)
        (y * y).sum().backward()
    assert prof.count("conv_weight_grad") == 0
    assert x.grad is not None and x.grad.shape == x.shape


def test_avg_pool_is_a_convolution():
    x = cg.tensor(rand(2, 3, 8, 8), requires_grad=True)
    with cg.profile() as prof:
        F.avg_pool2d(x, 2).sum().backward()
    assert prof.count("conv_forward") == 1 and prof.count("conv_input_grad") == 1


@pytest.mark.parametrize("call,pattern", [
    (lambda: F.max_pool2d(cg.randn(1, 1, 5, 5), 3, padding=2), "padding=2"),
    (lambda: F.avg_pool2d(cg.randn(1, 1, 5, 5), 0), "kernel_size=0"),
    (lambda: F.max_pool2d(cg.randn(1, 1, 5, 5), 6), "output size"),
    (lambda: F.max_pool2d(cg.randn(5, 5), 2), r"\(N, C, 2 spatial dims\)"),
    (lambda: F.max_pool1d(cg.randn(2, 3, 5), 2, stride=(1, 2)), "stride"),
    (lambda: F.max_pool2d(cg.randn(1, 1, 5, 5), 2, stride=0), "stride=0"),
    (lambda: F.avg_pool2d(cg.randn(1, 1, 5, 5), 2, divisor_override=0), "divisor_override=0"),
    (lambda: F.adaptive_avg_pool2d(cg.randn(1, 1, 5, 5), 0), "output_size=0"),
    (lambda: F.adaptive_max_pool2d(cg.randn(1, 1, 5, 5), (2, 2, 2)), "output_size"),
    (lambda: nn.MaxPool2d(3, padding=2), "padding=2"),
    (lambda: nn.AvgPool3d((2, 2)), "kernel_size"),
])
def test_errors_name_the_argument(call, pattern):
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("nd,shape,out", [
    (2, (2, 3, 9, 11), (4, 3)), (2, (2, 3, 8, 12), (4, 3)), (2, (1, 4, 9, 7), 1),
    (1, (2, 3, 10), 4), (3, (1, 2, 6, 5, 7), (4, 2, 3)), (3, (1, 2, 4, 6, 4), 2)])
def test_adaptive_max_pool_ties_and_nan_as_torch(nd, shape, out, channels_last):
    """Ties (values from a small set) take the first maximum in the window's row-major
    order and a NaN the last NaN, as torch: values and indices equal torch's, on windows
    that divide the input (max pooling) and that do not (the axis-by-axis walk: Numba's
    loop, which the profiler shows, equal to the NumPy walk and to float64), on NCHW and
    channels-last memory; the gradient lands where the index says."""
    rng = np.random.default_rng(len(shape) * 7 + int(channels_last))
    x = rng.integers(-2, 3, shape).astype(np.float32)
    x.reshape(-1)[rng.choice(x.size, max(1, x.size // 40), replace=False)] = np.nan
    if channels_last:
        perm = (0, *range(2, x.ndim), 1)
        x = np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))
    mx, mx_t = getattr(F, f"adaptive_max_pool{nd}d"), getattr(TF, f"adaptive_max_pool{nd}d")
    cx = cg.tensor(x, requires_grad=True)
    with cg.profile() as prof:
        y, idx = mx(cx, out, return_indices=True)
    divides = all(n % m == 0 for n, m in zip(shape[2:], np.broadcast_to(out, (nd,))))
    walk = [e.algorithm for e in prof.of("pool") if e.name == "adaptive_argmax"]
    assert walk == ([] if divides else ["numba" if cg.ops.jit.enabled() else "numpy"])
    if not divides:  # the NumPy walk (the reference) and float64 give the same indices
        from convgrad.ops import prefer

        with prefer("numpy"):
            _, ref_idx = mx(cg.tensor(x), out, return_indices=True)
        np.testing.assert_array_equal(ref_idx.numpy(), idx.numpy())
        _, idx64 = mx(cg.tensor(x.astype(np.float64)), out, return_indices=True)
        np.testing.assert_array_equal(idx64.numpy(), idx.numpy())
    tx = torch.tensor(np.ascontiguousarray(x), requires_grad=True)
    ty, tidx = mx_t(tx, out, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    g = rng.standard_normal(ty.shape).astype(np.float32)
    y.backward(cg.tensor(g))
    ty.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(cx.grad.numpy(), tx.grad.numpy())
