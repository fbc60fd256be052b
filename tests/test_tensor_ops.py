"""Oracle: PyTorch autograd (torch 2.13 CPU), float64 (float32 at 1e-4); forward and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
import convgrad as fn
from convgrad.tensor import Tensor, cat

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1234)


def rand(*shape: int, away: float = 0.0) -> np.ndarray:
    x = RNG.standard_normal(shape)
    return np.where(np.abs(x) < away, np.sign(x) * away + x, x)


def assert_close(ours: np.ndarray | Tensor, theirs: torch.Tensor, dtype=np.float64) -> None:
    ours = ours.data if isinstance(ours, Tensor) else ours
    theirs = theirs.detach().numpy()
    assert ours.shape == theirs.shape
    if dtype == np.float64:
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


def compare(ours_fn, torch_fn, *arrays: np.ndarray, dtype=np.float64, create_graph=False):
    """Forward and every input gradient (for a random cotangent) against torch."""
    xs = [cg.tensor(a, requires_grad=True, dtype=dtype) for a in arrays]
    ts = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    y, yt = ours_fn(*xs), torch_fn(*ts)
    assert y.dtype == np.dtype(dtype)
    assert_close(y, yt, dtype)
    v = RNG.standard_normal(y.shape).astype(dtype)
    y.backward(v)
    yt.backward(torch.tensor(v))
    for x, t in zip(xs, ts):
        assert x.grad.shape == x.shape and x.grad.dtype == x.dtype
        assert_close(x.grad, t.grad, dtype)
    return xs, ts


def compare_double(ours_fn, torch_fn, *arrays: np.ndarray):
    """d/dx <grad_x <fn(x), v>, u> against torch.autograd.grad(create_graph=True)."""
    xs = [cg.tensor(a, requires_grad=True, dtype=np.float64) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, yt = ours_fn(*xs), torch_fn(*ts)
    v = RNG.standard_normal(y.shape)
    us = [RNG.standard_normal(a.shape) for a in arrays]
    gs = cg.grad((y * v).sum(), xs, create_graph=True)
    gts = torch.autograd.grad((yt * torch.tensor(v)).sum(), ts, create_graph=True)
    for g, gt in zip(gs, gts):
        assert_close(g, gt)
    second = cg.grad(sum((g * u).sum() for g, u in zip(gs, us)), xs, allow_unused=True)
    second_t = torch.autograd.grad(sum((g * torch.tensor(u)).sum() for g, u in zip(gts, us)),
                                   ts, allow_unused=True)
    for g, gt in zip(second, second_t):
        if gt is None:
            assert g is None or np.all(g.data == 0)
        else:
            assert_close(g, gt)


# ----------------------------------------------------------------------------- construction
def test_dtype_rules():
    assert cg.tensor([1, 2]).dtype == np.float32
    assert cg.tensor([1.5, 2.5]).dtype == np.float32
    assert cg.tensor(3).dtype == np.float32 and cg.tensor(3).shape == ()
    assert cg.tensor(np.arange(3)).dtype == np.float32
    assert cg.tensor(np.array([True, False])).dtype == np.float32
    assert cg.tensor(np.ones(2, np.float16)).dtype == np.float32
    assert cg.tensor(np.ones(2)).dtype == np.float64
    assert cg.tensor(np.ones(2, np.float32)).dtype == np.float32
    assert cg.tensor([1, 2], dtype="float64").dtype == np.float64
    assert cg.tensor(np.ones(2), dtype=np.float32).dtype == np.float32
    assert cg.Tensor([1.0]).dtype == np.float32
    assert cg.tensor([1, 2], dtype=np.int64).dtype == np.int64
    with pytest.raises(TypeError, match="dtype"):
        cg.tensor([1, 2], dtype=np.float16)
    with pytest.raises(TypeError, match="dtype"):
        cg.zeros(2, dtype="float16")
    with pytest.raises(TypeError, match="data"):
        cg.tensor(["a", "b"])
    with pytest.raises(ValueError, match="data"):
        cg.tensor([[1, 2], [3]])


def test_copy_and_sharing():
    a = np.ones(3)
    t = cg.tensor(a)
    a[0] = 5
    assert t.data[0] == 1  # tensor() copies
    s = cg.from_numpy(a)
    a[1] = 7
    assert s.data[1] == 7 and s.dtype == np.float64  # from_numpy shares
    assert cg.from_numpy(np.arange(3)).dtype == np.float32
    with pytest.raises(TypeError, match="ndarray"):
        cg.from_numpy([1, 2])


def test_constructors():
    assert cg.zeros(2, 3).shape == (2, 3) and cg.zeros((2, 3)).dtype == np.float32
    assert np.all(cg.ones(4, dtype=np.float64).data == 1) and cg.ones(4).dtype == np.float32
    a, b = cg.randn(3, 4, rng=7), cg.randn((3, 4), rng=7)
    assert a.shape == (3, 4) and a.dtype == np.float32 and np.array_equal(a.data, b.data)
    c = cg.randn(5, rng=np.random.default_rng(0), dtype=np.float64, requires_grad=True)
    assert c.dtype == np.float64 and c.requires_grad and c.is_leaf
    assert not np.array_equal(cg.randn(5).data, cg.randn(5).data)
    with pytest.raises(TypeError, match="rng"):
        cg.randn(2, rng="seed")


def test_attributes():
    t = cg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert t.shape == (2, 2) and t.ndim == 2 and t.numel() == 4 and t.dtype == np.float32
    assert t.is_leaf and t.grad is None and t.grad_fn is None and len(t) == 2
    assert isinstance(t.numpy(), np.ndarray) and np.asarray(t) is t.data
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.array(t, copy=True) is not t.data
    assert t.sum().item() == 10.0 and isinstance(t.sum().item(), float)
    with pytest.raises(ValueError, match="item"):
        t.item()
    d = t.detach()
    assert not d.requires_grad and d.data is t.data
    assert repr(cg.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    assert "grad_fn=<MulBackward>" in repr(t * 2)
    assert "dtype=float64" in repr(cg.tensor(np.ones(2)))
    assert [r.tolist() for r in t] == [[1.0, 2.0], [3.0, 4.0]]
    u = cg.tensor([1.0]).requires_grad_()
    assert u.requires_grad and u.requires_grad_(False) is u and not u.requires_grad
    with pytest.raises(TypeError):
        len(cg.tensor(1.0))


def test_hash_and_comparisons():
    a, b = cg.tensor([1.0, 2.0]), cg.tensor([1.0, 3.0])
    d = {a: "a", b: "b"}
    assert d[a] == "a" and d[b] == "b" and a in {a} and b not in {a}
    assert (a == b).tolist() == [True, False] and (a != b).tolist() == [False, True]
    assert (a < b).dtype == bool and (a <= 1.0).tolist() == [True, False]
    assert (a > np.array([0.0, 5.0])).tolist() == [True, False] and (a >= a).all()
    assert (np.array([0.0, 5.0]) < a).tolist() == [True, False]


def test_requires_grad_on_non_leaf():
    x = cg.tensor([1.0], requires_grad=True)
    y = x * 2
    assert y.requires_grad and not y.is_leaf
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False
    y.requires_grad_(True)  # a no-op, as in torch


# ----------------------------------------------------------------------------- arithmetic
BINARY = [
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
    ("div", lambda a, b: a / b),
]
SHAPES = [((3, 4), (3, 4)), ((3, 1, 4), (2, 4)), ((4,), (2, 3, 4)), ((2, 1), (1, 5)), ((), (3,))]


@pytest.mark.parametrize("name,op", BINARY)
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_binary_broadcast(name, op, shapes, dtype):
    a, b = rand(*shapes[0]), rand(*shapes[1], away=0.3)
    compare(op, op, a, b, dtype=dtype)


@pytest.mark.parametrize("name,op", BINARY + [("pow", lambda a, b: a ** b)])
def test_binary_with_constants(name, op):
    a = np.abs(rand(2, 3, away=0.3))
    c = np.abs(rand(3, away=0.3))
    compare(lambda x: op(x, c), lambda x: op(x, torch.tensor(c)), a)  # Tensor op ndarray
    compare(lambda x: op(c, x), lambda x: op(torch.tensor(c), x), a)  # ndarray op Tensor
    compare(lambda x: op(x, 1.5), lambda x: op(x, 1.5), a)
    compare(lambda x: op(2.5, x), lambda x: op(2.5, x), a)
    compare(lambda x: op(x, 2), lambda x: op(x, 2), a)


def test_neg_and_pos():
    compare(lambda x: -x + (+x) * 3, lambda x: -x + (+x) * 3, rand(2, 3))


def test_pow_tensor_exponent_matches_torch_conventions():
    base = np.array([[0.0, 2.0, 0.0, 1.5], [3.0, 0.5, 0.0, 2.0]])
    expo = np.array([[0.0, 1.0, 2.0, -1.5], [0.5, 0.0, 3.0, 2.0]])
    compare(lambda a, b: a ** b, lambda a, b: a ** b, base, expo)
    compare(lambda a, b: a.pow(b), lambda a, b: a.pow(b), np.abs(rand(3, 1)) + 0.1, rand(4))
    compare(lambda a: a ** 0, lambda a: a ** 0, np.array([0.0, 1.0, -2.0]))
    compare(lambda a: a ** 2, lambda a: a ** 2, np.array([0.0, 1.0, -2.0]))


def test_dtype_promotion():
    a32 = cg.tensor(np.ones(3, np.float32), requires_grad=True)
    b64 = cg.tensor(np.ones(3), requires_grad=True)
    y = a32 * b64
    assert y.dtype == np.float64
    y.sum().backward()
    assert a32.grad.dtype == np.float32 and b64.grad.dtype == np.float64
    assert (a32 * 2.5).dtype == np.float32 and (2.5 + a32).dtype == np.float32
    assert (a32 * np.float64(2.0)).dtype == np.float32  # a Python float subclass: weak
    assert (a32 * np.arange(3)).dtype == np.float32  # int arrays become float32
    assert (a32 + np.ones(3)).dtype == np.float64
    assert (a32 ** 2).dtype == np.float32
    with pytest.raises(TypeError, match="operand"):
        a32 + "x"
    c = a32.astype(np.float64)
    assert c.dtype == np.float64 and a32.astype("float32") is a32
    a32.grad = None
    (c * c).sum().backward()
    assert a32.grad.dtype == np.float32 and np.allclose(a32.grad.data, 2.0)


# ----------------------------------------------------------------------------- unary
UNARY = [
    ("exp", lambda x: x.exp(), lambda x: x.exp(), rand(3, 4)),
    ("log", lambda x: x.log(), lambda x: x.log(), np.abs(rand(3, 4)) + 0.1),
    ("sqrt", lambda x: x.sqrt(), lambda x: x.sqrt(), np.abs(rand(3, 4)) + 0.1),
    ("abs", lambda x: x.abs(), lambda x: x.abs(), np.array([-1.0, 0.0, 2.0, -0.5])),
    ("abs()", abs, abs, rand(5)),
    ("relu", lambda x: x.relu(), lambda x: x.relu(), np.array([-1.0, 0.0, 2.0, -0.5, 1e-3])),
    ("sigmoid", lambda x: x.sigmoid(), lambda x: x.sigmoid(), np.array([-800.0, -3, 0, 2, 40])),
    ("tanh", lambda x: x.tanh(), lambda x: x.tanh(), rand(3, 4)),
    ("clip", lambda x: x.clip(-0.5, 1.0), lambda x: x.clamp(-0.5, 1.0),
     np.array([-1.0, -0.5, 0.0, 1.0, 2.0])),
    ("clamp min", lambda x: x.clamp(min=0.2), lambda x: x.clamp(min=0.2), rand(6)),
    ("clip max", lambda x: x.clip(max=0.2), lambda x: x.clamp(max=0.2), rand(6)),
]


@pytest.mark.parametrize("name,ours,theirs,x", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unary(name, ours, theirs, x, dtype):
    compare(ours, theirs, x, dtype=dtype)


def test_clip_needs_a_bound():
    with pytest.raises(ValueError, match="min"):
        cg.tensor([1.0]).clip()


# ----------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2), (-1, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_mean(dim, keepdim):
    x = rand(2, 3, 4)
    tdim = tuple(range(3)) if dim is None else dim
    compare(lambda t: t.sum(dim, keepdim), lambda t: t.sum(tdim, keepdim), x)
    compare(lambda t: t.mean(dim=dim, keepdim=keepdim), lambda t: t.mean(tdim, keepdim), x)


def test_numpy_aliases():
    x = rand(2, 3, 4)
    compare(lambda t: t.sum(axis=1, keepdims=True), lambda t: t.sum(1, keepdim=True), x)
    compare(lambda t: t.mean(axis=(0, 2)), lambda t: t.mean((0, 2)), x)
    compare(lambda t: t.max(axis=2).values, lambda t: t.max(2).values, x)
    compare(lambda t: t.min(axis=0, keepdims=True).values, lambda t: t.min(0, keepdim=True).values,
            x)
    compare(lambda t: cg.concatenate([t, t], axis=-1), lambda t: torch.cat([t, t], -1), x)
    with pytest.raises(ValueError, match="axis"):
        cg.tensor(x).sum(dim=0, axis=1)


def test_reduction_dim_errors():
    t = cg.tensor(rand(2, 3))
    with pytest.raises(ValueError, match="dim=2"):
        t.sum(2)
    with pytest.raises(ValueError, match="repeats"):
        t.sum((0, -2))
    with pytest.raises(TypeError, match="dim"):
        t.mean(1.5)


def test_max_min_full_reduction_shares_ties_evenly():
    x = np.array([[1.0, 3.0, 3.0], [3.0, 0.0, -2.0]])
    compare(lambda t: t.max(), lambda t: t.max(), x)
    compare(lambda t: t.min(), lambda t: t.min(), np.array([[1.0, -3.0], [-3.0, -3.0]]))
    compare(lambda t: t.max((0, 1)), lambda t: t.amax((0, 1)), x)  # tuple dims: like amax
    compare(lambda t: t.min((1,), keepdim=True), lambda t: t.amin((1,), keepdim=True), x)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keep", [False, True])
def test_max_min_with_dim_pick_one_index_like_torch(dim, keep):
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [5.0, -1.0, 5.0, -1.0]])
    compare(lambda t: t.max(dim, keep).values, lambda t: t.max(dim, keep).values, x)
    compare(lambda t: t.min(dim=dim, keepdim=keep).values, lambda t: t.min(dim, keep).values, x)
    compare(lambda t: t.max(1).values, lambda t: t.max(1).values, rand(3, 5, 2))
    assert np.array_equal(cg.tensor(x).argmax(1), torch.tensor(x).argmax(1).numpy())


# ----------------------------------------------------------------------------- shape
def test_shape_ops():
    x = rand(2, 3, 4)
    compare(lambda t: t.reshape(4, -1), lambda t: t.reshape(4, -1), x)
    compare(lambda t: t.reshape((6, 4)), lambda t: t.reshape((6, 4)), x)
    compare(lambda t: t.view(-1), lambda t: t.view(-1), x)
    compare(lambda t: t.transpose(0, 2), lambda t: t.transpose(0, 2), x)
    compare(lambda t: t.permute(1, 2, 0), lambda t: t.permute(1, 2, 0), x)
    compare(lambda t: t.permute((2, 0, 1)), lambda t: t.permute((2, 0, 1)), x)
    compare(lambda t: t.flatten(), lambda t: t.flatten(), x)
    compare(lambda t: t.flatten(1), lambda t: t.flatten(1), x)
    compare(lambda t: t.flatten(0, 1), lambda t: t.flatten(0, 1), x)
    compare(lambda t: t.unsqueeze(1).unsqueeze(-1), lambda t: t.unsqueeze(1).unsqueeze(-1), x)
    y = rand(1, 3, 1, 2)
    compare(lambda t: t.squeeze(), lambda t: t.squeeze(), y)
    compare(lambda t: t.squeeze(2), lambda t: t.squeeze(2), y)
    compare(lambda t: t.squeeze(1), lambda t: t.squeeze(1), y)  # size 3: unchanged, as torch
    compare(lambda t: t.T, lambda t: t.permute(2, 1, 0), x)
    compare(lambda t: t.expand(2, 3, 4), lambda t: t.expand(2, 3, 4), rand(3, 1))
    compare(lambda t: t.expand(5, -1, 2), lambda t: t.expand(5, -1, 2), rand(3, 1))


def test_shape_errors():
    t = cg.tensor(rand(2, 3))
    with pytest.raises(ValueError, match="shape"):
        t.reshape(4, 2)
    with pytest.raises(ValueError, match="-1"):
        t.reshape(-1, -1)
    with pytest.raises(ValueError, match="permute"):
        t.permute(0, 0)
    with pytest.raises(ValueError, match="dim"):
        t.transpose(0, 2)
    with pytest.raises(ValueError, match="expand"):
        t.expand(3, 3)
    with pytest.raises(ValueError, match="flatten"):
        t.flatten(1, 0)


# ----------------------------------------------------------------------------- indexing
INDEXES = [
    ("int", lambda: 1),
    ("negative int", lambda: -1),
    ("slice step", lambda: (slice(None), slice(None, None, 2))),
    ("None and Ellipsis", lambda: (None, Ellipsis, 2)),
    ("int array repeated", lambda: np.array([0, 2, 0, 0])),
    ("list repeated", lambda: [1, 1, 0]),
    ("two arrays repeated", lambda: (np.array([0, 0, 2]), slice(None), np.array([1, 1, 3]))),
    ("2-d index array", lambda: np.array([[0, 1], [1, 1]])),
    ("array then slice", lambda: (np.array([2, 2]), slice(1, 3))),
    ("bool mask", lambda: RNG.random((3, 4, 5)) > 0.5),
    ("bool mask dim 1", lambda: (slice(None), np.array([True, False, True, True]))),
]


@pytest.mark.parametrize("name,index", INDEXES, ids=[i[0] for i in INDEXES])
def test_indexing(name, index):
    idx = index()
    compare(lambda t: t[idx], lambda t: t[idx], rand(3, 4, 5))
    compare_double(lambda t: t[idx] ** 2, lambda t: t[idx] ** 2, rand(3, 4, 5))


def test_indexing_negative_step():  # torch has no negative steps: flip instead
    compare(lambda t: t[::-2, 1], lambda t: t.flip(0)[::2, 1], rand(5, 3))


def test_indexing_with_tensor_index():
    idx = cg.tensor([2, 0, 2])
    compare(lambda t: t[idx], lambda t: t[torch.tensor([2, 0, 2])], rand(4, 2))
    with pytest.raises(IndexError, match="integers"):
        cg.tensor(rand(3))[cg.tensor([0.5])]


def test_repeated_index_gradient_accumulates():
    x = cg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 0, 0, 2]].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


# ----------------------------------------------------------------------------- joining
def test_concatenate_stack_where():
    a, b, c = rand(2, 3), rand(2, 1), rand(2, 3)
    compare(lambda x, y: cg.concatenate([x, y], 1), lambda x, y: torch.cat([x, y], 1), a, b)
    compare(lambda x, y: cat([x, y, x], dim=-1), lambda x, y: torch.cat([x, y, x], -1), a, b)
    compare(lambda x, y: cg.stack([x, y]), lambda x, y: torch.stack([x, y]), a, c)
    compare(lambda x, y: cg.stack([x, y], dim=2), lambda x, y: torch.stack([x, y], 2), a, c)
    cond = RNG.random((2, 3)) > 0.5
    compare(lambda x, y: cg.where(cond, x, y), lambda x, y: torch.where(torch.tensor(cond), x, y),
            a, b)
    compare(lambda x: cg.where(cg.tensor(cond), x, 0.0),
            lambda x: torch.where(torch.tensor(cond), x, 0.0), a)
    compare(lambda y: cg.where(cond[0], 1.0, y), lambda y: torch.where(torch.tensor(cond[0]),
                                                                       1.0, y), rand(3))
    const = cg.concatenate([np.ones(2), np.zeros(1)])
    assert const.tolist() == [1.0, 1.0, 0.0] and not const.requires_grad
    with pytest.raises(ValueError, match="stack"):
        cg.stack([cg.tensor(a), cg.tensor(b)])
    with pytest.raises(ValueError, match="concatenate"):
        cg.concatenate([])


# ----------------------------------------------------------------------------- matmul
MATMUL = [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4, 3)),
          ((3, 4), (4,)), ((4,), (4,)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,))]


@pytest.mark.parametrize("sa,sb", MATMUL)
def test_matmul(sa, sb):
    compare(lambda a, b: a @ b, lambda a, b: a @ b, rand(*sa), rand(*sb))
    compare(lambda a, b: a.matmul(b), lambda a, b: a @ b, rand(*sa), rand(*sb), dtype=np.float32)
    compare_double(lambda a, b: (a @ b) ** 2, lambda a, b: (a @ b) ** 2, rand(*sa), rand(*sb))


def test_matmul_with_ndarray():
    w = rand(4, 3)
    compare(lambda x: x @ w, lambda x: x @ torch.tensor(w), rand(2, 4))
    compare(lambda x: w.T @ x, lambda x: torch.tensor(w.T) @ x, rand(4, 2))


# ----------------------------------------------------------------------------- double backward
SAME = [
    ("mul", lambda a, b: a * b * a),
    ("div", lambda a, b: a / (b * b + 1)),
    ("pow", lambda a, b: (a * a + 1) ** b),
    ("exp log", lambda a, b: (a.exp() + b * b).log()),
    ("sqrt", lambda a, b: (a * a + b * b + 0.1).sqrt()),
    ("sigmoid tanh", lambda a, b: a.sigmoid() * b.tanh()),
    ("sum mean", lambda a, b: (a.sum(1, keepdim=True) * b).mean(0) ** 2),
    ("broadcast", lambda a, b: (a[:, :1] * b[0] - b) ** 3),
    ("permute reshape", lambda a, b: (a.transpose(0, 1).reshape(-1) * b.reshape(-1)) ** 2),
    ("abs clip relu", lambda a, b: (a.abs() * b.clip(-0.5, 0.5) + (a * b).relu()) ** 2),
]
DOUBLE = [(name, f, f) for name, f in SAME] + [
    ("max", lambda a, b: (a * b).max(1).values ** 2 + (a * a).max(),
     lambda a, b: (a * b).max(1).values ** 2 + (a * a).max()),
    ("where", lambda a, b: cg.where(a.data > 0, a * b, b ** 2),
     lambda a, b: torch.where(a > 0, a * b, b ** 2)),
    ("stack cat", lambda a, b: (cg.stack([a, b]) ** 2).sum(0) * cat([a, b], 1)[:, 1:4],
     lambda a, b: (torch.stack([a, b]) ** 2).sum(0) * torch.cat([a, b], 1)[:, 1:4]),
]


@pytest.mark.parametrize("name,ours,theirs", DOUBLE, ids=[d[0] for d in DOUBLE])
def test_double_backward(name, ours, theirs):
    compare_double(ours, theirs, rand(3, 3, away=0.1), rand(3, 3, away=0.1))


def test_double_backward_softmax_and_exp_via_output():
    compare_double(lambda a: a.exp() * a, lambda a: a.exp() * a, rand(2, 3))
    compare_double(lambda a: cg.functional.softmax(a, 1) * a,
                   lambda a: torch.softmax(a, 1) * a, rand(2, 4))
    compare_double(lambda a: cg.functional.log_softmax(a, 0) ** 2,
                   lambda a: torch.log_softmax(a, 0) ** 2, rand(3, 2))


def test_third_order():
    x = cg.tensor([0.7, -1.3], requires_grad=True, dtype=np.float64)
    (g1,) = cg.grad((x ** 4).sum(), x, create_graph=True)
    (g2,) = cg.grad(g1.sum(), x, create_graph=True)
    (g3,) = cg.grad(g2.sum(), x)
    np.testing.assert_allclose(g3.data, 24 * x.data, rtol=1e-12)


def test_function_forms():
    x, y = rand(2, 3), rand(3, 2)
    pos = np.abs(x) + 0.1
    compare(lambda t: fn.sum(t, 1), lambda t: t.sum(1), x)
    compare(lambda t: fn.mean(t, axis=0, keepdims=True), lambda t: t.mean(0, True), x)
    compare(lambda t: fn.max(t), lambda t: t.max(), x)
    compare(lambda t: fn.min(t, 1).values, lambda t: t.min(1).values, x)
    compare(lambda t: fn.reshape(t, 3, 2), lambda t: t.reshape(3, 2), x)
    compare(lambda t: fn.transpose(t, 0, 1), lambda t: t.transpose(0, 1), x)
    compare(lambda t: fn.permute(t, 1, 0), lambda t: t.permute(1, 0), x)
    compare(lambda t: fn.flatten(t), lambda t: t.flatten(), x)
    compare(lambda t: fn.squeeze(fn.unsqueeze(t, 0)), lambda t: t.unsqueeze(0).squeeze(), x)
    compare(lambda t: fn.exp(t) + fn.log(t) + fn.sqrt(t) + fn.abs(t),
            lambda t: t.exp() + t.log() + t.sqrt() + t.abs(), pos)
    compare(lambda t: fn.clip(t, -0.5, 0.5) + fn.clamp(t, min=0.0),
            lambda t: t.clamp(-0.5, 0.5) + t.clamp(min=0.0), x)
    compare(lambda t: fn.pow(t, 2.5), lambda t: t.pow(2.5), pos)
    compare(lambda a, b: fn.matmul(a, b), lambda a, b: a @ b, x, y)
    compare(lambda t: fn.relu(t) + fn.sigmoid(t) + fn.tanh(t),
            lambda t: t.relu() + t.sigmoid() + t.tanh(), x)


@pytest.mark.parametrize("layout", ["c", "channels_last", "broadcast"])
def test_masked_select_equals_where_with_nonfinite_values(layout):
    """The masked bits that replace np.where (oracle: np.where itself) keep its values,
    dtype, signs of zeros, NaN and inf exactly; and the ReLU gradient through them
    equals torch's threshold_backward."""
    from convgrad.tensor.elementwise import select

    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    cond = rng.random((3, 4, 5, 6)) > 0.5
    if layout == "channels_last":
        a = np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    if layout == "broadcast":
        cond = cond[:, :1]
    for poison in (None, np.nan, np.inf):
        if poison is not None:
            a = a.copy()
            a[0, 0, 0, :] = poison  # some masked out, some kept
        for args in ((cond, a, 0.0), (cond, 0, a), (cond, a, 0), (cond, a.astype(np.float64), 0.0)):
            got, want = select(*args), np.where(*args)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # no -0.0
    # not the product: a non-bool mask, a NumPy zero (it promotes), an integer branch
    for args in ((cond.astype(np.int8), a, 0.0), (cond, a, np.float64(0)),
                 (cond, np.arange(a.size).reshape(a.shape), 0.0)):
        got, want = select(*args), np.where(*args)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    x = rng.standard_normal((2, 3, 4, 5))
    g = rng.standard_normal(x.shape)
    g[0, 0, 0, 0] = np.nan
    t = cg.tensor(x, requires_grad=True)
    t.relu().backward(cg.tensor(g))
    tt = torch.tensor(x, requires_grad=True)
    torch.relu(tt).backward(torch.tensor(g))
    np.testing.assert_array_equal(t.grad.data, tt.grad.numpy())
    np.testing.assert_array_equal(np.signbit(t.grad.data), np.signbit(tt.grad.numpy()))
