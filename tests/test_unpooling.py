"""Max unpooling and power-average (LP) pooling, functions and layers.  Oracle: torch's
``max_unpool1d/2d/3d`` and ``lp_pool1d/2d/3d`` on the same values: float64 results and
gradients (second order too) at 1e-12, float32 within twice torch's float32 error."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import convgrad as cg

# (dims, input shape, pooling kwargs): overlapping windows (a maximum shared by two
# windows, so a repeated index), padding, an odd size, unbatched input
UNPOOL = [
    (1, (2, 3, 11), {"kernel_size": 3, "stride": 2, "padding": 1}),
    (2, (2, 3, 7, 6), {"kernel_size": 2}),
    (2, (3, 8, 9), {"kernel_size": 3, "stride": 2, "padding": 1}),
    (2, (2, 2, 9, 9), {"kernel_size": 3, "stride": 1}),
    (3, (1, 2, 5, 6, 4), {"kernel_size": 2, "stride": 2}),
]
LP = [
    (1, (2, 3, 11), 2.0, {"kernel_size": 3, "stride": 2}),
    (2, (2, 3, 7, 6), 3.0, {"kernel_size": 2}),
    (2, (3, 8, 9), 1.5, {"kernel_size": (3, 2), "stride": 2, "ceil_mode": True}),
    (3, (1, 2, 5, 6, 4), 2.0, {"kernel_size": 2}),
]


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _both(fn, x: np.ndarray, dtype, second_order: bool = False) -> list:
    """[y, dx (, d(sum dx^2)/dx)] of ``fn(lib, t)`` for torch and convgrad, as float64."""
    out = []
    for lib in (torch, cg):
        dt = dtype if lib is torch else {torch.float64: cg.float64, torch.float32: cg.float32}[
            dtype]
        t = lib.tensor(x, dtype=dt, requires_grad=True)
        y = fn(lib, t)
        w = lib.tensor(_rng("w", tuple(y.shape)).standard_normal(tuple(y.shape)), dtype=dt)
        (g,) = lib.autograd.grad((y * w).sum(), t, create_graph=second_order)
        res = [y, g]
        if second_order:
            (h,) = lib.autograd.grad((g * g).sum(), t)
            res.append(h)
        out.append([np.asarray(a.detach().numpy() if lib is torch else a.numpy(), np.float64)
                    for a in res])
    return out


def _unpool(nd: int, kw: dict):
    def fn(lib, t):
        F = lib.nn.functional
        y, i = getattr(F, f"max_pool{nd}d")(t, return_indices=True, **kw)
        return getattr(F, f"max_unpool{nd}d")(y * 1.5, i, **kw,
                                             output_size=t.shape[-nd:])
    return fn


@pytest.mark.parametrize("nd, shape, kw", UNPOOL)
def test_max_unpool_equals_torchs(nd, shape, kw):
    x = _rng(nd, shape).standard_normal(shape)
    x[..., 1] = x[..., 0]  # ties: the first maximum is kept, as torch
    theirs, ours = _both(_unpool(nd, kw), x, torch.float64)  # (piecewise linear)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("nd, shape, p, kw", LP)
def test_lp_pool_equals_torchs(nd, shape, p, kw):
    x = np.abs(_rng(nd, shape, p).standard_normal(shape)) + 0.1
    fn = lambda lib, t: getattr(lib.nn.functional, f"lp_pool{nd}d")(t, p, **kw)  # noqa: E731
    theirs, ours = _both(fn, x, torch.float64, second_order=True)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("which", ["unpool", "lp"])
def test_float32_within_twice_torchs_error(which):
    x = _rng(which).standard_normal((4, 8, 16, 16))
    if which == "unpool":
        fn = _unpool(2, {"kernel_size": 3, "stride": 2, "padding": 1})
    else:
        x = np.abs(x)
        fn = lambda lib, t: lib.nn.functional.lp_pool2d(t, 2.5, 3, stride=2)  # noqa: E731
    exact, _ = _both(fn, x, torch.float64)
    theirs, ours = _both(fn, x.astype(np.float32), torch.float32)
    assert ours[0].dtype == np.float64  # (converted for the comparison)
    for o, t, e in zip(ours, theirs, exact):
        scale = float(np.linalg.norm(e))
        err, torch_err = (float(np.linalg.norm(a - e)) / scale for a in (o, t))
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


def test_layers_equal_their_functions_and_reprs():
    x = cg.tensor(_rng("layers").standard_normal((2, 3, 8, 8)))
    pool = cg.nn.MaxPool2d(2, return_indices=True)
    unpool = cg.nn.MaxUnpool2d(2)
    y, i = pool(x)
    np.testing.assert_array_equal(unpool(y, i).numpy(),
                                  cg.nn.functional.max_unpool2d(y, i, 2).numpy())
    np.testing.assert_array_equal(cg.nn.LPPool2d(2, 3, stride=2)(x.abs()).numpy(),
                                  cg.nn.functional.lp_pool2d(x.abs(), 2, 3, 2).numpy())
    for args in [(2,), (3, 2, 1)]:
        for nd in (1, 2, 3):
            assert repr(getattr(cg.nn, f"MaxUnpool{nd}d")(*args)) == repr(
                getattr(torch.nn, f"MaxUnpool{nd}d")(*args))
    assert repr(cg.nn.LPPool1d(1.5, 3, stride=2, ceil_mode=True)) == repr(
        torch.nn.LPPool1d(1.5, 3, stride=2, ceil_mode=True))


def test_wrong_arguments_name_themselves():
    F = cg.nn.functional
    x = cg.tensor(np.ones((1, 1, 4, 4)))
    y, i = F.max_pool2d(x, 2, return_indices=True)
    with pytest.raises(ValueError, match=r"output_size=\(6, 4\) is invalid: dim 0"):
        F.max_unpool2d(y, i, 2, output_size=(6, 4))
    with pytest.raises(ValueError, match="output_size=.* must be 2 ints"):
        F.max_unpool2d(y, i, 2, output_size=(4,))
    with pytest.raises(ValueError, match="indices of shape"):
        F.max_unpool2d(y, i[:, :, :1], 2)
    with pytest.raises(TypeError, match="indices have dtype float"):
        F.max_unpool2d(y, i.numpy().astype(np.float32), 2)
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 16\)"):
        F.max_unpool2d(y, i.numpy() + 100, 2)
    with pytest.raises(ValueError, match="norm_type=0"):
        F.lp_pool2d(x, 0, 2)
    with pytest.raises(ValueError, match="must be \\(N, C, 2 spatial dims\\)"):
        F.max_unpool2d(cg.ones(4), i, 2)


@pytest.mark.parametrize("nd, shape, kw", UNPOOL)
def test_default_output_size_is_torchs(nd, shape, kw):
    x = _rng("size", shape).standard_normal(shape)
    sizes = []
    for lib in (torch, cg):  # (an index past the default size: torch's error, ours)
        F = lib.nn.functional
        y, i = getattr(F, f"max_pool{nd}d")(lib.tensor(x), return_indices=True, **kw)
        try:
            sizes.append(tuple(getattr(F, f"max_unpool{nd}d")(y, i, **kw).shape))
        except (RuntimeError, ValueError) as e:
            sizes.append(type(e))
    assert sizes in ([RuntimeError, ValueError], [sizes[0], sizes[0]]), sizes
