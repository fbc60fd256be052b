"""Oracle: torch.nn.functional with PyTorch autograd (torch 2.13 CPU), float64 (float32 at 1e-4)."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad.tensor import Tensor

torch = pytest.importorskip("torch")
TF = pytest.importorskip("torch.nn.functional")

RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def assert_close(ours: Tensor, theirs: torch.Tensor, dtype=np.float64) -> None:
    theirs = theirs.detach().numpy()
    assert ours.shape == theirs.shape and ours.dtype == np.dtype(dtype)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.data, theirs, **tol)


def compare(ours_fn, torch_fn, *arrays, dtype=np.float64, double=True):
    """Forward and gradients against torch; in float64 also second-order gradients of y^2
    (squared so that linear ops have some)."""
    xs = [cg.tensor(a, requires_grad=True, dtype=dtype) for a in arrays]
    ts = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    y, yt = ours_fn(*xs), torch_fn(*ts)
    assert_close(y, yt, dtype)
    v = RNG.standard_normal(y.shape).astype(dtype)
    gs = cg.grad((y * v).sum(), xs, retain_graph=True)
    gts = torch.autograd.grad((yt * torch.tensor(v)).sum(), ts, retain_graph=True)
    for g, gt in zip(gs, gts):
        assert_close(g, gt, dtype)
    if not (double and dtype == np.float64):
        return
    us = [RNG.standard_normal(a.shape) for a in arrays]
    gs = cg.grad((y * y * v).sum(), xs, create_graph=True)
    gts = torch.autograd.grad((yt * yt * torch.tensor(v)).sum(), ts, create_graph=True)
    hs = cg.grad(sum((g * u).sum() for g, u in zip(gs, us)), xs, allow_unused=True)
    hts = torch.autograd.grad(sum((g * torch.tensor(u)).sum() for g, u in zip(gts, us)), ts,
                              allow_unused=True)
    for h, ht in zip(hs, hts):
        if ht is None or h is None:  # no dependence: the other must be zero too
            assert (h is None or not h.data.any()) and (ht is None or not ht.any())
        else:
            assert_close(h, ht)


# ----------------------------------------------------------------------------- activations
ACTIVATIONS = [
    ("relu", F.relu, TF.relu),
    ("leaky_relu", F.leaky_relu, TF.leaky_relu),
    ("leaky_relu 0.3", lambda x: F.leaky_relu(x, 0.3), lambda x: TF.leaky_relu(x, 0.3)),
    ("sigmoid", F.sigmoid, torch.sigmoid),
    ("tanh", F.tanh, torch.tanh),
    ("softmax 1", lambda x: F.softmax(x, 1), lambda x: TF.softmax(x, 1)),
    ("softmax -1", lambda x: F.softmax(x, dim=-1), lambda x: TF.softmax(x, -1)),
    ("softmax axis 0", lambda x: F.softmax(x, axis=0), lambda x: TF.softmax(x, 0)),
    ("log_softmax 1", lambda x: F.log_softmax(x, 1), lambda x: TF.log_softmax(x, 1)),
    ("log_softmax 0", lambda x: F.log_softmax(x, 0), lambda x: TF.log_softmax(x, 0)),
]


@pytest.mark.parametrize("name,ours,theirs", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_activations(name, ours, theirs, dtype):
    x = rand(3, 4, 2) * 3
    x[0, 0, 0] = 0.0  # a kink at zero: torch's convention for relu'(0) is 0
    compare(ours, theirs, x, dtype=dtype)


def test_softmax_is_stable_and_accepts_ndarrays():
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]])
    np.testing.assert_allclose(F.softmax(x, 1).data, TF.softmax(torch.tensor(x), 1).numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(F.log_softmax(x, 1).data,
                               TF.log_softmax(torch.tensor(x), 1).numpy(), rtol=1e-12)
    assert isinstance(F.relu(np.ones(2)), Tensor)
    with pytest.raises(TypeError, match="dim"):
        F.softmax(x)
    with pytest.raises(ValueError, match="dim=2"):
        F.log_softmax(x, 2)
    with pytest.raises(TypeError, match="negative_slope"):
        F.leaky_relu(x, "a")


# ----------------------------------------------------------------------------- pooling
POOL = [
    (2, None, 0),
    (3, 1, 1),
    (3, 2, 1),
    ((2, 3), (1, 2), (1, 1)),
    (4, 3, 2),
    (1, 2, 0),
]


@pytest.mark.parametrize("k,s,p", POOL)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_avg_pool2d(k, s, p, dtype):
    compare(lambda x: F.avg_pool2d(x, k, s, p), lambda x: TF.avg_pool2d(x, k, s, p),
            rand(2, 3, 9, 8), dtype=dtype)


@pytest.mark.parametrize("k,s,p", POOL)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_max_pool2d(k, s, p, dtype):
    compare(lambda x: F.max_pool2d(x, k, s, p), lambda x: TF.max_pool2d(x, k, s, p),
            rand(2, 3, 9, 8), dtype=dtype)


def test_pooling_unbatched_ties_and_odd_sizes():
    compare(lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), rand(3, 5, 7))
    compare(lambda x: F.avg_pool2d(x, 2, padding=1), lambda x: TF.avg_pool2d(x, 2, padding=1),
            rand(3, 5, 7))
    ties = np.array([[[[1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [2.0, 0.0, 2.0]]]])
    compare(lambda x: F.max_pool2d(x, 2, 1), lambda x: TF.max_pool2d(x, 2, 1), ties)
    neg = -np.abs(rand(1, 1, 4, 4)) - 1  # padding (-inf) must never win
    compare(lambda x: F.max_pool2d(x, 3, 2, 1), lambda x: TF.max_pool2d(x, 3, 2, 1), neg)


def test_pooling_errors():
    x = rand(1, 1, 4, 4)
    with pytest.raises(ValueError, match="padding"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="kernel_size"):
        F.avg_pool2d(x, 0)
    with pytest.raises(ValueError, match="kernel_size"):
        F.avg_pool2d(x, 5)
    with pytest.raises(ValueError, match="input of shape"):
        F.max_pool2d(rand(4, 4), 2)
    with pytest.raises(ValueError, match="stride"):
        F.max_pool2d(x, 2, stride=(1, 2, 3))


# ----------------------------------------------------------------------------- padding
PADS = [
    (1, 2),
    (2, 0, 1, 3),
    (0, 1, 2, 1, 1, 0),
    (-1, 2, 1, -2),
    (2, -1, -1, 1),
    (3, 3),
]


@pytest.mark.parametrize("pad", PADS)
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad(pad, mode):
    x = rand(*(2, 3, 5, 6, 4)[:len(pad) // 2 + 2])  # the input ranks torch supports
    compare(lambda t: F.pad(t, pad, mode=mode), lambda t: TF.pad(t, pad, mode=mode), x)


def test_pad_constant_value_float32_and_any_rank():
    compare(lambda t: F.pad(t, (1, 2, 0, 1), value=-2.5),
            lambda t: TF.pad(t, (1, 2, 0, 1), value=-2.5), rand(3, 4), dtype=np.float32)
    compare(lambda t: F.pad(t, (1, 1, 1, 1, 1, 1, 1, 1)),
            lambda t: TF.pad(t, (1, 1, 1, 1, 1, 1, 1, 1)), rand(2, 2, 2, 2))
    compare(lambda t: F.pad(t, (-2, -1)), lambda t: TF.pad(t, (-2, -1)), rand(2, 5))
    compare(lambda t: F.pad(t, (1, 2), mode="reflect"),
            lambda t: TF.pad(t, (1, 2), mode="reflect"), rand(2, 4))


def test_pad_errors():
    x = rand(1, 2, 3, 3)
    with pytest.raises(ValueError, match="mode"):
        F.pad(x, (1, 1), mode="wrap")
    with pytest.raises(ValueError, match="even"):
        F.pad(x, (1, 1, 1))
    with pytest.raises(ValueError, match="reflect"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(ValueError, match="circular"):
        F.pad(x, (0, 4), mode="circular")
    with pytest.raises(ValueError, match="shape"):
        F.pad(x, (-2, -2))


# ----------------------------------------------------------------------------- losses
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mse_l1(reduction, dtype):
    a, b = rand(3, 4), rand(3, 4)
    compare(lambda x, y: F.mse_loss(x, y, reduction=reduction), lambda x, y: TF.mse_loss(x, y,
            reduction=reduction), a, b, dtype=dtype)
    compare(lambda x, y: F.l1_loss(x, y, reduction=reduction),
            lambda x, y: TF.l1_loss(x, y, reduction=reduction), a, b, dtype=dtype)
    target = rand(3, 4).astype(dtype)  # a constant ndarray target
    compare(lambda x: F.mse_loss(x, target, reduction=reduction),
            lambda x: TF.mse_loss(x, torch.tensor(target), reduction=reduction),
            a, dtype=dtype)


def test_loss_argument_errors():
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(rand(2), rand(2), reduction="avg")
    with pytest.raises(ValueError, match="broadcast"):
        F.l1_loss(rand(2), rand(3))
    with pytest.warns(UserWarning, match="broadcast"):
        F.mse_loss(rand(2, 3), rand(3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cross_entropy_class_indices(reduction, dtype):
    target = np.array([3, 0, 4, 4, 1])
    compare(lambda x: F.cross_entropy(x, target, reduction=reduction),
            lambda x: TF.cross_entropy(x, torch.tensor(target), reduction=reduction),
            rand(5, 6), dtype=dtype)


def test_cross_entropy_forms():
    t = RNG.integers(0, 4, (2, 3, 5))
    compare(lambda x: F.cross_entropy(x, t), lambda x: TF.cross_entropy(x, torch.tensor(t)),
            rand(2, 4, 3, 5))
    compare(lambda x: F.cross_entropy(x, cg.tensor([2, 0])),  # a Tensor of class indices
            lambda x: TF.cross_entropy(x, torch.tensor([2, 0])), rand(2, 3))
    compare(lambda x: F.cross_entropy(x, np.array(1)),
            lambda x: TF.cross_entropy(x, torch.tensor(1)), rand(4))  # unbatched
    ti = np.array([1, -100, 2, -100])
    for red in ("mean", "sum", "none"):
        compare(lambda x, r=red: F.cross_entropy(x, ti, reduction=r),
                lambda x, r=red: TF.cross_entropy(x, torch.tensor(ti), reduction=r), rand(4, 3))
    probs = np.abs(rand(3, 4))
    probs /= probs.sum(1, keepdims=True)
    compare(lambda x, p: F.cross_entropy(x, p), lambda x, p: TF.cross_entropy(x, p),
            rand(3, 4), probs)


def test_cross_entropy_errors():
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        F.cross_entropy(rand(2, 3), np.array([0, 3]))
    with pytest.raises(ValueError, match="target shape"):
        F.cross_entropy(rand(2, 3), np.array([0, 1, 2]))
    with pytest.raises(TypeError, match="integer"):
        F.cross_entropy(rand(2, 3), np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(rand(2, 3), np.array([0, 1]), reduction="max")


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("mode,pad", [
    ("reflect", (1, 1, 1, 1)), ("reflect", (3, 2, 0, 3)), ("reflect", (3, 3, 2, 1)),
    ("circular", (2, 4, 1, 0)), ("circular", (4, 4, 3, 3)), ("reflect", (3, 3, 0, 0)),
    ("circular", (4, 4, 0, 0)), ("replicate", (3, 2, 1, 4)), ("replicate", (5, 3, 0, 0)),
    ("reflect", (1, 2, 0, 1, 2, 1)), ("circular", (2, 1, 3, 0, 1, 1)),
    ("replicate", (2, 2, 1, 1, 3, 0))])
def test_reflect_circular_replicate_pads_against_torch(mode, pad, channels_last):
    """Reflect, circular and replicate pads copy the borders (strided copies, in the
    input's layout) and add them back in the backward, dim by dim: the float32 output
    equals torch's bit for bit, and so does the input gradient of a pad along one dim (an
    element copied to both borders of a (4,)-long dim sums three gradients, an end
    element under replicate its whole border's, in torch's order); over two
    or three dims the gradient is within 2x torch float32's error against float64 (torch sums a
    corner's four in one row-major pass, here by rows, then columns); second order
    through the adjoint; a channels-last input gives a channels-last output and gradient; the
    profiler shows one pad and one fold, whatever the number of padded dims; the
    gradient handed in is left as it was."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4, 4) if len(pad) == 4 else (2, 3, 4, 5, 4)
                            ).astype(np.float32)
    if channels_last:
        x = cg.tensor(x).contiguous(memory_format=cg.channels_last if x.ndim == 4
                                    else cg.channels_last_3d).data
    cx = cg.tensor(x, requires_grad=True)
    tx = torch.tensor(np.ascontiguousarray(x), requires_grad=True)
    ty = TF.pad(tx, pad, mode=mode)
    g = rng.standard_normal(ty.shape).astype(np.float32)
    cgt = cg.tensor(g)
    if channels_last:  # the gradient in the layout of y, as a network hands it back
        cgt = cgt.contiguous(memory_format=cg.channels_last if x.ndim == 4
                             else cg.channels_last_3d)
    with cg.profile() as prof:
        y = F.pad(cx, pad, mode=mode)
        (gx,) = cg.autograd.grad(y, cx, cgt.requires_grad_(), create_graph=True)
    assert [e.name for e in prof.of("layout")] == [f"pad_{mode}", f"fold_{mode}"]
    np.testing.assert_array_equal(cgt.data, g)  # the gradient handed in is read, not written
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    assert cg.ops.layouts.is_channels_last(y.data) == channels_last
    assert cg.ops.layouts.is_channels_last(gx.data) == channels_last
    (tgx,) = torch.autograd.grad(ty, tx, torch.from_numpy(g))
    if pad[2:] == (0, 0):
        np.testing.assert_array_equal(gx.numpy(), tgx.numpy())
    else:
        t64 = torch.tensor(np.ascontiguousarray(x), dtype=torch.float64, requires_grad=True)
        (ref,) = torch.autograd.grad(TF.pad(t64, pad, mode=mode), t64,
                                     torch.tensor(g, dtype=torch.float64))
        ref = ref.numpy()
        torch_err = np.abs(tgx.numpy() - ref).max()
        assert np.abs(gx.numpy() - ref).max() <= 2 * max(torch_err, 1e-7 * np.abs(ref).max())
    # second order: gx is linear in g, and d<gx, x>/dg is the pad of x
    cgg = cg.tensor(g, requires_grad=True)
    (gx2,) = cg.autograd.grad(F.pad(cx, pad, mode=mode), cx, cgg, create_graph=True)
    (dg,) = cg.autograd.grad((gx2 * cg.tensor(x)).sum(), cgg)
    np.testing.assert_array_equal(dg.numpy(), ty.detach().numpy())
