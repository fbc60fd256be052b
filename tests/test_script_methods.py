"""More of torch's Tensor methods and functions (products, blends, remainders, selections,
grids, distances, counts).  Oracle: torch, float64 values and gradients (of a weighted
sum of the result) to rounding; products with zeros and second order through them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import convgrad as cg

RNG = np.random.default_rng(41)


def _both(x: np.ndarray):
    return torch.tensor(x, requires_grad=True), cg.tensor(x, requires_grad=True)


def _check(fn_torch, fn_ours, *arrays, grad: bool = True, tol: float = 1e-12):
    """Value (and the gradients of a random weighting of it) of both libraries."""
    ts, cs = zip(*(_both(a) for a in arrays))
    want, got = fn_torch(*ts), fn_ours(*cs)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=tol, atol=tol)
    assert got.dtype == want.detach().numpy().dtype
    if not grad:
        return
    w = RNG.standard_normal(tuple(want.shape))
    (want * torch.tensor(w)).sum().backward()
    (got * cg.tensor(w)).sum().backward()
    for t, c in zip(ts, cs):
        if t.grad is None:
            assert c.grad is None or not np.any(c.grad.numpy())
        else:
            np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


WITH_ZEROS = np.array([[1.5, 0.0, -2.0, 3.0, 0.5], [0.7, -1.1, 2.2, 0.0, 0.0],
                       [1.0, 2.0, 3.0, 4.0, 5.0]])


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), (-1, False)])
def test_prod_equals_torchs_with_zeros(dim, keepdim):
    if dim is None:
        _check(lambda x: x.prod(), lambda x: x.prod(), WITH_ZEROS[2:])
        _check(lambda x: x.prod(), lambda x: x.prod(), WITH_ZEROS[:1])
    else:
        _check(lambda x: x.prod(dim, keepdim), lambda x: x.prod(dim, keepdim), WITH_ZEROS)


@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_equals_torchs_with_zeros(dim):
    _check(lambda x: x.cumprod(dim), lambda x: x.cumprod(dim), WITH_ZEROS)
    long = RNG.uniform(0.5, 1.5, (3, 37))
    _check(lambda x: torch.cumprod(x, 1), lambda x: cg.cumprod(x, 1), long)


def test_second_order_through_prod_and_cumprod_with_a_zero():
    x = np.array([2.0, 0.0, -3.0, 1.5])
    for op in ("prod", "cumprod"):
        xt, xc = _both(x)
        args = () if op == "prod" else (0,)
        gt, = torch.autograd.grad(getattr(xt, op)(*args).sum(), xt, create_graph=True)
        gc, = cg.autograd.grad(getattr(xc, op)(*args).sum(), xc, create_graph=True)
        np.testing.assert_allclose(gc.numpy(), gt.detach().numpy(), rtol=1e-12)
        ht, = torch.autograd.grad((gt * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum(), xt)
        hc, = cg.autograd.grad((gc * cg.tensor([1.0, 2.0, 3.0, 4.0])).sum(), xc)
        np.testing.assert_allclose(hc.numpy(), ht.numpy(), rtol=1e-12)


def test_blends_and_arithmetic_equal_torchs():
    a, b, c = (RNG.standard_normal((3, 4)) for _ in range(3))
    _check(lambda x, y, z: x.addcmul(y, z, value=0.3), lambda x, y, z: x.addcmul(y, z, value=0.3),
           a, b, c)
    _check(lambda x, y, z: torch.addcdiv(x, y, z + 5, value=-2),
           lambda x, y, z: cg.addcdiv(x, y, z + 5, value=-2), a, b, c)
    for w in (0.2, 0.7):
        _check(lambda x, y, w=w: x.lerp(y, w), lambda x, y, w=w: x.lerp(y, w), a, b)
    wt = RNG.uniform(0, 1, (3, 4))
    _check(lambda x, y, z: x.lerp(y, z), lambda x, y, z: x.lerp(y, z), a, b, wt)
    num, den = RNG.uniform(-9, 9, (4, 5)), RNG.choice([-2.5, -1.0, 0.75, 3.0], (4, 5))
    _check(lambda x, y: x.remainder(y), lambda x, y: x.remainder(y), num, den)
    _check(lambda x, y: torch.fmod(x, y), lambda x, y: cg.fmod(x, y), num, den)
    _check(lambda x: x.remainder(1.5), lambda x: x.remainder(1.5), num)
    special = np.array([1.0, np.nan, np.inf, -np.inf, -2.0])
    _check(lambda x: x.nan_to_num(), lambda x: x.nan_to_num(), special, grad=False)
    kw = {"nan": 9.0, "posinf": 1e3, "neginf": -7.0}
    _check(lambda x: x.nan_to_num(**kw), lambda x: x.nan_to_num(**kw), special)
    _check(lambda x: x.softmax(1), lambda x: x.softmax(1), a)
    _check(lambda x: x.log_softmax(0), lambda x: x.log_softmax(0), a)
    _check(lambda x, y: x.dot(y), lambda x, y: x.dot(y), a[0], b[0])
    _check(lambda x, y: x.mv(y), lambda x, y: x.mv(y), a, b[0])


def test_logic_and_shape_methods_equal_torchs():
    p, q = RNG.random((3, 4)) < 0.5, RNG.random((3, 4)) < 0.5
    for op in ("logical_and", "logical_or", "logical_xor"):
        want = getattr(torch.tensor(p), op)(torch.tensor(q)).numpy()
        got = getattr(cg.tensor(p, dtype=cg.bool), op)(cg.tensor(q, dtype=cg.bool)).numpy()
        np.testing.assert_array_equal(got, want)
    a = RNG.standard_normal((2, 3))
    _check(lambda x: x.tile(2, 1, 3), lambda x: x.tile(2, 1, 3), a)
    _check(lambda x: x.tile((2,)), lambda x: x.tile((2,)), a)
    _check(lambda x: x.swapaxes(0, 1), lambda x: x.swapaxes(0, 1), a)
    _check(lambda x: x.unflatten(1, (3, 1)), lambda x: x.unflatten(1, (3, 1)), a)
    assert cg.tensor(a).is_floating_point() and not cg.tensor(p, dtype=cg.bool).is_floating_point()
    assert cg.tensor(a).element_size() == 8 and cg.tensor(a.astype(np.float32)).element_size() == 4


def test_selections_equal_torchs():
    a = RNG.standard_normal((4, 5))
    mask = RNG.random((1, 5)) < 0.5
    _check(lambda x: x.masked_select(torch.tensor(mask)),
           lambda x: x.masked_select(cg.tensor(mask, dtype=cg.bool)), a)
    z = np.where(RNG.random((3, 4)) < 0.5, 0.0, 1.0)
    np.testing.assert_array_equal(cg.tensor(z).nonzero().numpy(), torch.tensor(z).nonzero().numpy())
    for got, want in zip(cg.nonzero(cg.tensor(z), as_tuple=True),
                         torch.nonzero(torch.tensor(z), as_tuple=True)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for k in (0, 1, -2):
        _check(lambda x, k=k: x.diag(k), lambda x, k=k: x.diag(k), a)
        _check(lambda x, k=k: x.diag(k), lambda x, k=k: x.diag(k), a[0])
    b = RNG.standard_normal((2, 3, 4))
    _check(lambda x: x.diagonal(1, 0, 2), lambda x: x.diagonal(1, 0, 2), b)
    _check(lambda x: x.trace(), lambda x: x.trace(), a)
    idx = RNG.integers(0, 4, (3, 5))
    src = RNG.standard_normal((3, 5))
    _check(lambda x, s: x.scatter_add(0, torch.tensor(idx), s),
           lambda x, s: x.scatter_add(0, cg.tensor(idx, dtype=cg.int64), s), a, src)
    rows = np.array([2, 0, 2])
    _check(lambda x, s: x.index_add(0, torch.tensor(rows), s, alpha=0.5),
           lambda x, s: x.index_add(0, cg.tensor(rows, dtype=cg.int64), s, alpha=0.5), a,
           RNG.standard_normal((3, 5)))
    _check(lambda x, s: torch.index_add(x, 1, torch.tensor([4, 4]), s),
           lambda x, s: cg.index_add(x, 1, cg.tensor([4, 4], dtype=cg.int64), s), a,
           RNG.standard_normal((4, 2)))
    u = np.array([[3, 1, 3], [2, 1, 3]])
    for kw in ({}, {"return_inverse": True, "return_counts": True}, {"dim": 1}):
        got, want = cg.tensor(u, dtype=cg.int64).unique(**kw), torch.tensor(u).unique(**kw)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_functions_equal_torchs():
    a, b = RNG.standard_normal(3), RNG.standard_normal(4)
    for ind in ("ij", "xy"):
        ts, cs = zip(*(_both(v) for v in (a, b)))
        want, got = torch.meshgrid(*ts, indexing=ind), cg.meshgrid(*cs, indexing=ind)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.detach().numpy())
    m, n = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 2))
    _check(lambda x, y: torch.hstack([x, y]), lambda x, y: cg.hstack([x, y]), m, n)
    _check(lambda x, y: torch.vstack([x, y]), lambda x, y: cg.vstack([x, y]), a, a[::-1].copy())
    x1, x2 = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 4, 3))
    x2[0, 1] = x1[0, 2]  # a zero distance: a zero gradient there, as torch
    for p in (2.0, 1.0, 3.0, float("inf")):
        _check(lambda u, v, p=p: torch.cdist(u, v, p=p),
               lambda u, v, p=p: cg.cdist(u, v, p=p), x1, x2, tol=1e-10)
    ints = np.array([1, 4, 1, 0, 4, 4])
    np.testing.assert_array_equal(cg.bincount(cg.tensor(ints, dtype=cg.int64), minlength=7).numpy(),
                                  torch.bincount(torch.tensor(ints), minlength=7).numpy())
    w = RNG.random(6)
    np.testing.assert_allclose(cg.bincount(cg.tensor(ints, dtype=cg.int64), cg.tensor(w)).numpy(),
                               torch.bincount(torch.tensor(ints), torch.tensor(w)).numpy())


def test_multinomial_draws_by_the_weights():
    cg.manual_seed(3)
    w = cg.tensor(np.array([[0.0, 1.0, 3.0], [5.0, 0.0, 0.0]]))
    draws = cg.multinomial(w, 4000, replacement=True).numpy()
    assert draws.dtype == np.int64 and draws.shape == (2, 4000)
    np.testing.assert_allclose(np.bincount(draws[0], minlength=3) / 4000, [0, 0.25, 0.75],
                               atol=0.03)
    assert (draws[1] == 0).all()
    once = cg.tensor(np.ones(6)).multinomial(6).numpy()
    assert sorted(once.tolist()) == list(range(6))
    cg.manual_seed(3)
    again = cg.multinomial(w, 4000, replacement=True).numpy()
    np.testing.assert_array_equal(draws, again)


def test_wrong_arguments_name_themselves():
    x = cg.tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="num_samples=4"):
        x.multinomial(4)
    with pytest.raises(ValueError, match="non-negative"):
        cg.tensor(np.array([1.0, -1.0])).multinomial(1)
    with pytest.raises(TypeError, match="mask of dtype"):
        x.masked_select(np.ones((2, 3)))
    with pytest.raises(ValueError, match="dot: expects two 1-d"):
        x.dot(x)
    with pytest.raises(ValueError, match="indexing='yx'"):
        cg.meshgrid(cg.tensor([1.0]), indexing="yx")
    with pytest.raises(ValueError, match="cdist: x1 of shape"):
        cg.cdist(x, cg.tensor(np.ones((2, 4))))
    with pytest.raises(ValueError, match="bincount"):
        cg.bincount(cg.tensor(np.array([-1, 2])))
    with pytest.raises(ValueError, match="diag: input of shape"):
        cg.tensor(np.ones((2, 2, 2))).diag()


def test_the_second_batch_equals_torchs():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    _check(lambda x, y: x.logaddexp(y), lambda x, y: x.logaddexp(y), a, b)
    _check(lambda x, y: x.logaddexp(y), lambda x, y: x.logaddexp(y), a * 800, b * 800)
    xs, ys = np.array([0.0, 1.5, 2.0, 0.0]), np.array([0.5, 2.0, 0.3, 1.0])
    _check(lambda x, y: x.xlogy(y), lambda x, y: x.xlogy(y), xs, ys)
    _check(lambda x: x.logit(1e-3), lambda x: x.logit(1e-3), RNG.uniform(0, 1, (3, 4)))
    _check(lambda x: x.frac(), lambda x: x.frac(), a * 3)
    _check(lambda x: x.deg2rad(), lambda x: x.deg2rad(), a)
    _check(lambda x: torch.rad2deg(x), lambda x: cg.rad2deg(x), a)
    n = a.copy()
    n[0, 1] = np.nan
    _check(lambda x: x.nansum(1), lambda x: x.nansum(1), n)
    _check(lambda x: x.nanmean(0), lambda x: x.nanmean(0), n)
    _check(lambda x: x.median(), lambda x: x.median(), a)
    for arr, dim in ((a, 1), (RNG.standard_normal((4, 3)), 0)):
        tv, ti = torch.tensor(arr).median(dim)
        cv, ci = cg.tensor(arr).median(dim)
        np.testing.assert_array_equal(cv.numpy(), tv.numpy())
        np.testing.assert_array_equal(ci.numpy(), ti.numpy())
        _check(lambda x, d=dim: x.median(d).values, lambda x, d=dim: x.median(d).values, arr)
    np.testing.assert_array_equal(cg.tensor(np.where(a > 0, a, 0)).count_nonzero(0).numpy(),
                                  torch.tensor(np.where(a > 0, a, 0)).count_nonzero(0).numpy())
    _check(lambda x: x.fliplr(), lambda x: x.fliplr(), a)
    _check(lambda x: x.flipud(), lambda x: x.flipud(), a)
    for k in (1, 2, 3, -1):
        _check(lambda x, k=k: x.rot90(k, (0, 1)), lambda x, k=k: x.rot90(k, (0, 1)), a)
    _check(lambda x: x.diff(2, 1), lambda x: x.diff(2, 1), a)
    _check(lambda x, y: x.diff(1, 0, prepend=y[:1], append=y[1:2]),
           lambda x, y: x.diff(1, 0, prepend=y[:1], append=y[1:2]), a, b)
    flat = np.array([[0, 5], [11, 3]])
    _check(lambda x: x.take(torch.tensor(flat)), lambda x: x.take(flat), a)
    order = np.argsort(a, 1)
    _check(lambda x: x.take_along_dim(torch.tensor(order), 1),
           lambda x: x.take_along_dim(order, 1), a)
    for spec in (3, [1, 3]):
        for got, want in zip(cg.tensor(a).tensor_split(spec, 1),
                             torch.tensor(a).tensor_split(spec, 1)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    _check(lambda x: x.select(1, 2), lambda x: x.select(1, 2), a)
    _check(lambda x, y: x[0].outer(y[0]), lambda x, y: x[0].outer(y[0]), a, b)
    _check(lambda x, y: x.inner(y), lambda x, y: x.inner(y), a, b)
    _check(lambda x, y: torch.kron(x, y[:2, :2]), lambda x, y: cg.kron(x, y[:2, :2]), a, b)
    v, w = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    _check(lambda x, y: torch.linalg.cross(x, y), lambda x, y: cg.cross(x, y), v, w)
    t = cg.tensor(a)
    assert t.stride() == torch.tensor(a).stride() and t.stride(1) == 1
    assert t.get_device() == -1 and t.pin_memory() is t and t.data_ptr() == t.data.ctypes.data


def test_the_tensor_constructors_size_form_is_torchs():
    """``Tensor(2, 3)`` (an old script's ``nn.Parameter(torch.Tensor(n_in, n_out))``) is a
    (2, 3) float32 Tensor, ``Tensor()`` an empty one; data stays data."""
    for args in [(), (2, 3), (5,), (np.int64(4), 2), ([1, 2],), ((2, 3),)]:
        ours, theirs = cg.Tensor(*args), torch.Tensor(*args)
        assert ours.shape == tuple(theirs.shape) and ours.dtype == np.float32
    assert cg.Tensor(2, 3).sum().item() == 0 and cg.Tensor(2, requires_grad=True).requires_grad
    np.testing.assert_array_equal(cg.Tensor([1, 2]).numpy(), [1.0, 2.0])
    with pytest.raises(TypeError, match="by keyword"):
        cg.Tensor([1.0], True)
    with pytest.raises(ValueError, match="sizes"):
        cg.Tensor(2, -1)
    p = cg.nn.Parameter(cg.Tensor(3, 4))
    cg.nn.init.xavier_normal_(p)
    assert p.shape == (3, 4) and p.requires_grad


def test_a_third_batch_of_torchs_names():
    x = RNG.standard_normal((3, 4))
    _check(lambda t: t.clamp_min(0.1), lambda t: t.clamp_min(0.1), x)
    _check(lambda t: torch.clamp_max(t, 0.2), lambda t: cg.clamp_max(t, 0.2), x)
    _check(lambda t: t.mT, lambda t: t.mT, x)
    np.testing.assert_array_equal(cg.tensor(x > 0, dtype=cg.bool).argwhere().numpy(),
                                  torch.tensor(x > 0).argwhere().numpy())
    for dt_ours, dt_torch in ((cg.float32, torch.float32), (cg.float64, torch.float64)):
        ours, theirs = cg.finfo(dt_ours), torch.finfo(dt_torch)
        assert (ours.eps, ours.max, ours.min, ours.tiny, ours.bits) == (
            theirs.eps, theirs.max, theirs.min, theirs.tiny, theirs.bits)
    assert cg.iinfo(cg.int64).max == torch.iinfo(torch.int64).max
    assert cg.finfo().eps == torch.finfo().eps
    with pytest.raises(TypeError, match="not an integer"):
        cg.iinfo(cg.float32)
    for fn in ("std_mean", "var_mean"):
        for kw in ({"dim": 1}, {"dim": 0, "correction": 0, "keepdim": True}):
            got = getattr(cg, fn)(cg.tensor(x), **kw)
            want = getattr(torch, fn)(torch.tensor(x), **kw)
            for g, w in zip(got, want):
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
    t = cg.tensor(x)
    assert t.new(2, 3).shape == (2, 3) and t.new(2, 3).dtype == np.float64
    np.testing.assert_array_equal(t.new([1, 2]).numpy(), [1.0, 2.0])
    with pytest.raises(TypeError, match="float16"):
        t.half()
    v = cg.autograd.Variable(cg.tensor(x), requires_grad=True)
    assert v.requires_grad and v.grad_fn is None
    (v * 2).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), np.full((3, 4), 2.0))


def test_the_legacy_typed_constructors_as_torchs():
    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor"):
        for args in (([1, 0, 3],), (np.array([[1.7, -2.0]]),), (2, 3), ()):
            ours, theirs = getattr(cg, name)(*args), getattr(torch, name)(*args)
            assert ours.shape == tuple(theirs.shape) and ours.dtype == theirs.numpy().dtype
            if args and not isinstance(args[0], int):
                np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(TypeError, match="LongTensor: expected data or sizes"):
        cg.LongTensor([1], 2)


FLOAT32_CASES = {
    # name: (torch form, convgrad form, input shapes); inputs away from the kinks
    "prod": (lambda x: x.prod(1), lambda x: x.prod(1), [(6, 37)]),
    "cumprod": (lambda x: x.cumprod(1), lambda x: x.cumprod(1), [(6, 37)]),
    "cdist": (lambda a, b: torch.cdist(a, b), lambda a, b: cg.cdist(a, b),
              [(2, 9, 16), (2, 7, 16)]),
    "logaddexp": (lambda a, b: a.logaddexp(b), lambda a, b: a.logaddexp(b), [(5, 8), (5, 8)]),
    "lerp": (lambda a, b: a.lerp(b, 0.3), lambda a, b: a.lerp(b, 0.3), [(5, 8), (5, 8)]),
    "kron": (lambda a, b: torch.kron(a, b), lambda a, b: cg.kron(a, b), [(3, 4), (4, 2)]),
    "inner": (lambda a, b: a.inner(b), lambda a, b: a.inner(b), [(5, 64), (3, 64)]),
    "Normal.log_prob": (lambda m, s: torch.distributions.Normal(m, s).log_prob(m * 0.7),
                        lambda m, s: cg.distributions.Normal(m, s).log_prob(m * 0.7),
                        [(6, 5), (6, 5)]),
    "Categorical": (lambda lg: torch.distributions.Categorical(logits=lg).entropy(),
                    lambda lg: cg.distributions.Categorical(logits=lg).entropy(), [(6, 9)]),
}


@pytest.mark.parametrize("name", sorted(FLOAT32_CASES))
def test_float32_within_twice_torchs_error(name):
    """float32 values and gradients against torch float64, within twice torch float32's
    error on the same values (relative 2-norm)."""
    fn_t, fn_c, shapes = FLOAT32_CASES[name]
    # float32 values: the float64 reference computes on the very values both float32 runs see
    arrays = [RNG.uniform(0.6, 1.6, s).astype(np.float32).astype(np.float64) for s in shapes]
    w = None
    found = {}
    for lib, dtype in ((torch, torch.float64), (torch, torch.float32), (cg, np.float32)):
        if lib is torch:
            ins = [torch.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
            out = fn_t(*ins)
        else:
            ins = [cg.tensor(a.astype(np.float32), requires_grad=True) for a in arrays]
            out = fn_c(*ins)
        if w is None:
            w = RNG.standard_normal(tuple(out.shape))
        (out * lib.tensor(w.astype(np.float64 if dtype == torch.float64 else np.float32))
         ).sum().backward()
        values = out.detach().numpy() if lib is torch else out.numpy()
        found[(lib.__name__, str(dtype))] = [np.asarray(values, np.float64)] + [
            np.asarray(i.grad.numpy(), np.float64) for i in ins]
    exact, theirs, ours = found.values()
    for e, t, o in zip(exact, theirs, ours):
        scale = np.linalg.norm(e)
        t_err, o_err = np.linalg.norm(t - e) / scale, np.linalg.norm(o - e) / scale
        assert o_err <= 2 * max(t_err, 2.0 ** -24), (name, o_err, t_err)
