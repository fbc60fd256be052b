"""Oracle: PyTorch 2.13 (CPU): the Tensor methods a PyTorch user types, value, dtype and shape
(and gradients in float64 at 1e-10) against the same call in torch."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(77)
TORCH_DTYPE = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64,
               np.dtype(np.int32): torch.int32, np.dtype(np.int64): torch.int64,
               np.dtype(np.bool_): torch.bool}
NP_DTYPE = {v: k for k, v in TORCH_DTYPE.items()}


def pair(a: np.ndarray, requires_grad: bool = False):
    """The same values as a convgrad and a torch tensor (dtype kept)."""
    ours = cg.tensor(a, dtype=a.dtype, requires_grad=requires_grad)
    theirs = torch.tensor(a, requires_grad=requires_grad)
    return ours, theirs


def same(ours, theirs, rtol: float = 1e-10) -> None:
    """Equal values, dtype and shape (numpy equivalents of torch's dtypes)."""
    assert isinstance(ours, cg.Tensor), type(ours)
    want = theirs.detach().numpy()
    assert ours.dtype == NP_DTYPE[theirs.dtype], (ours.dtype, theirs.dtype)
    assert ours.shape == tuple(theirs.shape)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(ours.data, want, rtol=rtol, atol=1e-12)
    else:
        np.testing.assert_array_equal(ours.data, want)


# ----------------------------------------------------------------------------- dtypes
def test_integer_and_bool_tensors():
    for dt in (np.int64, np.int32, np.bool_):
        a = np.array([[1, 0, 3]]).astype(dt)
        same(*pair(a))
        assert cg.zeros(2, dtype=dt).dtype == dt and cg.ones(2, dtype=dt).dtype == dt
    assert cg.tensor([1, 2]).dtype == np.float32  # lists stay float32 by default
    assert cg.tensor(np.arange(3)).dtype == np.float32  # and integer arrays too
    assert cg.tensor(np.arange(3), dtype=np.int64).dtype == np.int64


@pytest.mark.parametrize("dt", [np.int64, np.int32, np.bool_])
def test_only_float_tensors_require_grad(dt):
    a = np.array([1, 0]).astype(dt)
    with pytest.raises(RuntimeError) as theirs:
        torch.tensor(a).requires_grad_()
    with pytest.raises(RuntimeError) as ours:
        cg.tensor(a, dtype=dt).requires_grad_()
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(RuntimeError, match="floating point"):
        cg.tensor(a, dtype=dt, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        cg.zeros(2, dtype=dt, requires_grad=True)


# ----------------------------------------------------------------------------- size, numel
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 0, 4), (1, 2, 3, 4)])
def test_size_numel_dim(shape):
    a = RNG.standard_normal(shape)
    ours, theirs = pair(a)
    assert ours.size() == tuple(theirs.size()) and isinstance(ours.size(), tuple)
    assert ours.numel() == theirs.numel() and ours.dim() == theirs.dim()
    for d in range(-len(shape), len(shape)):
        assert ours.size(d) == theirs.size(d)
    with pytest.raises(ValueError, match="size: dim"):
        ours.size(len(shape))


# ----------------------------------------------------------------------------- clone, casts
def test_clone_is_a_differentiable_copy():
    a = RNG.standard_normal((3, 4))
    (x, xt), w = pair(a, True), RNG.standard_normal((3, 4))
    c, ct = x.clone(), xt.clone()
    assert c.data is not x.data and not np.shares_memory(c.data, x.data)
    assert "CloneBackward" in repr(c)
    same(c, ct)
    (c * c * w).sum().backward()
    (ct * ct * torch.tensor(w)).sum().backward()
    same(x.grad, xt.grad)
    c.data[0, 0] = 100.0
    assert x.data[0, 0] == a[0, 0]
    i = cg.tensor([1, 2], dtype=np.int64).clone()
    assert i.dtype == np.int64 and not i.requires_grad


@pytest.mark.parametrize("src", [np.float32, np.float64, np.int64, np.int32, np.bool_])
def test_casts(src):
    a = (RNG.standard_normal((2, 3)) * 3).astype(src)
    ours, theirs = pair(a)
    for name in ("float", "double", "long", "int", "bool"):
        same(getattr(ours, name)(), getattr(theirs, name)())
    for dt in TORCH_DTYPE:
        same(ours.to(dt), theirs.to(TORCH_DTYPE[dt]))
    assert ours.to(ours.dtype) is ours and theirs.to(theirs.dtype) is theirs
    assert ours.to(ours.dtype, copy=True) is not ours
    assert ours.to(cg.zeros(1, dtype=np.float64)).dtype == np.float64
    with pytest.raises(TypeError, match="to: dtype"):
        ours.to(np.float16)


def test_float_casts_are_differentiable_and_integer_casts_are_not():
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    x, xt = pair(a, True)
    w = RNG.standard_normal((2, 3))
    y, yt = x.double() * w, xt.double() * torch.tensor(w)
    assert y.dtype == np.float64 and y.requires_grad
    y.sum().backward()
    yt.sum().backward()
    same(x.grad, xt.grad, rtol=1e-6)
    (x.to(np.float64).float() * 2).sum().backward()
    (xt.to(torch.float64).float() * 2).sum().backward()
    same(x.grad, xt.grad, rtol=1e-6)
    for name in ("long", "int", "bool"):
        assert not getattr(x, name)().requires_grad and not getattr(xt, name)().requires_grad


# ----------------------------------------------------------------------------- argmax, max(dim)
TIES = np.array([[3.0, 1.0, 3.0, -2.0], [0.0, 0.0, -5.0, -5.0], [7.0, 2.0, 7.0, 7.0]])


@pytest.mark.parametrize("a", [TIES, RNG.standard_normal((2, 3, 4)), np.array(2.5),
                               (RNG.integers(0, 3, (3, 5))).astype(np.int64)])
def test_argmax_argmin(a):
    ours, theirs = pair(a)
    for name in ("argmax", "argmin"):
        same(getattr(ours, name)(), getattr(theirs, name)())
        same(getattr(ours, name)(keepdim=True), getattr(theirs, name)(keepdim=True))
        for d in range(-max(a.ndim, 1), max(a.ndim, 1)):
            for keep in (False, True):
                same(getattr(ours, name)(d, keep), getattr(theirs, name)(d, keep))
                same(getattr(ours, name)(dim=d, keepdim=keep),
                     getattr(theirs, name)(dim=d, keepdim=keep))


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("keep", [False, True])
def test_max_min_along_dim_return_values_and_indices(name, keep):
    for a in (TIES, RNG.standard_normal((2, 3, 4))):
        for d in range(-a.ndim, a.ndim):
            x, xt = pair(a, True)
            r, rt = getattr(x, name)(d, keep), getattr(xt, name)(d, keep)
            assert type(r).__name__ == name and r._fields == ("values", "indices")
            values, indices = r
            assert values is r.values and indices is r.indices and r[1] is r.indices
            same(r.values, rt.values)
            same(r.indices, rt.indices)
            assert not r.indices.requires_grad
            cot = RNG.standard_normal(r.values.shape)
            (r.values * cot).sum().backward()
            (rt.values * torch.tensor(cot)).sum().backward()
            same(x.grad, xt.grad)
            k = getattr(x, name)(dim=d, keepdim=keep)
            same(k.values, rt.values)
            f = getattr(cg, name)(x, d, keep)  # the function form
            same(f.indices, rt.indices)


def test_max_without_dim_is_a_tensor():
    x, xt = pair(TIES, True)
    m, mt = x.max(), xt.max()
    assert isinstance(m, cg.Tensor)
    same(m, mt)
    m.backward()
    mt.backward()
    same(x.grad, xt.grad)  # ties share the gradient, as torch.max() without dim
    i, it = pair(np.array([[4, 9, 9], [1, 2, 3]]))
    same(i.max(), it.max())
    same(i.max(1).values, it.max(1).values)
    same(i.min(0).indices, it.min(0).indices)


def test_max_of_nan_picks_the_nan_like_torch():
    a = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, np.nan]])
    ours, theirs = pair(a)
    for name in ("max", "min"):
        r, rt = getattr(ours, name)(1), getattr(theirs, name)(1)
        same(r.values, rt.values)
        same(r.indices, rt.indices)


def test_predictions_index_like_torch():
    logits, lt = pair(RNG.standard_normal((6, 4)))
    labels, yt = pair(RNG.integers(0, 4, 6).astype(np.int64))
    pred, pt = logits.argmax(1), lt.argmax(1)
    same(pred == labels, pt == yt)
    same((pred == labels).sum(), (pt == yt).sum())
    same((pred == labels).float().mean(), (pt == yt).float().mean())
    assert (pred == labels).sum().item() == (pt == yt).sum().item()
    same(logits[pred], lt[pt])  # int64 tensors index
    same(logits[cg.tensor(np.arange(6)), pred], lt[torch.arange(6), pt])
    x, xt = pair(RNG.standard_normal((6, 4)), True)
    loss, loss_t = F.cross_entropy(x, labels), torch.nn.functional.cross_entropy(xt, yt)
    same(loss, loss_t)
    loss.backward()
    loss_t.backward()
    same(x.grad, xt.grad)


# ----------------------------------------------------------------------------- comparisons
COMPARE = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


@pytest.mark.parametrize("op", COMPARE)
def test_comparisons_return_bool_tensors(op):
    a = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    b = np.array([2.0, 2.0, 2.0])
    (x, xt), (y, yt) = pair(a, True), pair(b)
    for r, rt in [(op(x, y), op(xt, yt)), (op(x, 2.0), op(xt, 2.0)), (op(x, 2), op(xt, 2)),
                  (op(2.0, x), op(2.0, xt)), (op(x, x), op(xt, xt))]:
        same(r, rt)
        assert not r.requires_grad and r.grad_fn is None
    i, it = pair(np.array([1, 2, 3]))
    same(op(i, 2), op(it, 2))
    same(op(i, x[0]), op(it, xt[0]))
    with_array = op(x, b)  # an ndarray operand
    same(with_array, op(xt, torch.tensor(b)))


def test_masks_work_where_bool_arrays_did():
    a = RNG.standard_normal((3, 4))
    (x, xt), v = pair(a, True), RNG.standard_normal(a.shape)
    mask, mt = x > 0, xt > 0
    assert np.asarray(mask).dtype == bool and np.asarray(mask).shape == a.shape
    picked, pt = x[mask], xt[mt]
    same(picked, pt)
    w, wt = cg.where(mask, x, 0.0), torch.where(mt, xt, 0.0)
    same(w, wt)
    z, zt = x * mask + x * (~mask) * 0.5, xt * mt + xt * (~mt) * 0.5
    same(z, zt)
    out = (picked ** 2).sum() + (w * v).sum() + (z * v).sum()
    out_t = (pt ** 2).sum() + (wt * torch.tensor(v)).sum() + (zt * torch.tensor(v)).sum()
    out.backward()
    out_t.backward()
    same(x.grad, xt.grad)
    same(mask & (x < 1), mt & (xt < 1))
    same(mask | (x < -1), mt | (xt < -1))
    same(mask ^ (x < 1), mt ^ (xt < 1))
    same(~mask, ~mt)
    same(mask.sum(), mt.sum())
    same(mask.any(), mt.any())
    same(mask.all(1), mt.all(1))
    same(mask.any(dim=0, keepdim=True), mt.any(dim=0, keepdim=True))
    assert bool((x == x).all()) and not bool((x != x).any())
    with pytest.raises(TypeError, match="bool or integer"):
        x & x


def test_hash_identity_and_membership_still_work():
    a, b = cg.tensor([1.0, 2.0]), cg.tensor([1.0, 2.0])
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2 and a in [a] and a in {a} and b not in {a}
    assert (a == None) is False and (a != "x") is True  # noqa: E711 (as torch: not elementwise)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a == b)
    assert bool(cg.tensor(3.0) == 3)


# ----------------------------------------------------------------------------- promotion
KINDS = [np.array([1.5, -2.0, 3.0], np.float32), np.array([0.5, 2.0, -1.0], np.float64),
         np.array([3, -1, 2], np.int64), np.array([2, 5, -4], np.int32),
         np.array([True, False, True])]
SCALARS = [2, 2.5, True]
ARITH = [operator.add, operator.sub, operator.mul, operator.truediv]


def _both(op, a, b, at, bt):
    try:
        rt = op(at, bt)
    except RuntimeError:
        with pytest.raises((TypeError, ValueError)):
            op(a, b)
        return
    same(op(a, b), rt, rtol=1e-6)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("op", ARITH + [operator.pow])
@pytest.mark.parametrize("i", range(len(KINDS)))
def test_dtype_promotion_matches_torch(op, i):
    """Across kinds (bool < int < float) as torch; float32 with float64 gives float64."""
    a, at = pair(KINDS[i])
    for j in range(len(KINDS)):
        if op is operator.pow and KINDS[j].dtype.kind in "iu" and KINDS[i].dtype.kind in "biu":
            continue  # integer to a negative integer power raises in both (other messages)
        b, bt = pair(KINDS[j])
        if {a.dtype, b.dtype} == {np.dtype(np.float32), np.dtype(np.float64)}:
            assert op(a, b).dtype == np.float64  # NumPy's rule, the contract's
            continue
        _both(op, a, b, at, bt)
    for s in SCALARS:
        if op is operator.pow and (isinstance(s, bool) or a.dtype.kind in "biu"):
            continue  # (2 ** -1 is 0 in torch's integers; NumPy refuses)
        _both(op, a, s, at, s)
        _both(op, s, a, s, at)


def test_float_functions_of_integer_tensors_are_float32():
    i, it = pair(np.array([1, 2, 4]))
    for name in ("exp", "log", "sqrt", "sigmoid", "tanh"):
        same(getattr(i, name)(), getattr(it, name)(), rtol=1e-6)
    same(i.sum(), it.sum())
    same(-i, -it)
    same(abs(i), abs(it))
    same(cg.where(i > 1, i, 0), torch.where(it > 1, it, 0))
    same(cg.where(i > 1, i, 0.5), torch.where(it > 1, it, 0.5))
    same(cg.cat([i, cg.tensor([0.5, 1.5])]), torch.cat([it, torch.tensor([0.5, 1.5])]))
    with pytest.raises(RuntimeError):
        it.mean()
    with pytest.raises(TypeError, match="mean: "):
        i.mean()


# ----------------------------------------------------------------------------- python numbers
def test_format_and_fstrings():
    loss, lt = pair(np.array(0.123456789, np.float32))
    assert format(loss, ".4f") == format(lt, ".4f") == "0.1235"
    assert f"{loss:.3e}" == f"{lt:.3e}" and f"{loss}" == f"{lt}"
    assert f"{loss:>10.2f}" == f"{lt:>10.2f}"
    one = cg.tensor([2.5])
    assert f"{one:.2f}" == "2.50"  # one element of any shape, given a spec
    assert f"{one}" == str(one) == f"{torch.tensor([2.5])}".replace("2.5000", "2.5")
    many, mt = pair(np.array([1.0, 2.0]))
    assert f"{many}" == str(many)
    with pytest.raises(TypeError, match="format"):
        f"{many:.2f}"
    with pytest.raises(TypeError):
        f"{mt:.2f}"
    i, _ = pair(np.array(7))
    assert f"{i:d}" == "7" and f"{i:03d}" == "007"


def test_int_index_float():
    for a in (np.array(2.7), np.array([-2.7]), np.array(3), np.array([True])):
        ours, theirs = pair(a)
        assert int(ours) == int(theirs) and float(ours) == float(theirs)
    for a in (np.array(3), np.array([4]), np.array(True)):
        ours, theirs = pair(a)
        assert operator.index(ours) == operator.index(theirs)
        assert [10, 11, 12, 13, 14][ours] == [10, 11, 12, 13, 14][theirs]
    assert list(range(cg.tensor(3, dtype=np.int64))) == [0, 1, 2]
    for a in (np.array(3.0), np.array([1, 2])):
        ours, theirs = pair(a)
        with pytest.raises(TypeError):
            operator.index(theirs)
        with pytest.raises(TypeError, match="index"):
            operator.index(ours)
    with pytest.raises(ValueError):
        int(cg.tensor([1.0, 2.0]))
