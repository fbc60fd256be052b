"""``convgrad.linalg``'s solves, LU and matrix exponential against torch: ``solve_triangular``,
``triangular_solve``, ``cholesky_solve``, ``solve_ex``, ``tensorinv``, ``tensorsolve``,
``cond``, ``vander``, ``matmul``, ``matrix_exp``, ``lu_factor(_ex)``, ``lu``, ``lu_solve``,
``lu_unpack``.  Oracle: torch float64 on the same values: results, the gradients of a
random weighting of them and (where torch has them) second-order gradients, to rounding;
float32 within twice torch float32's error against torch float64; error messages."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import convgrad as cg
import convgrad.linalg as LA

RNG = np.random.default_rng(11)


def _general(*shape):
    n = shape[-1]
    return RNG.standard_normal(shape) / math.sqrt(n) + 2.0 * np.eye(n)


def _triangular(*shape, upper=True):
    """Well-conditioned triangular matrices, noise in the other triangle (never read)."""
    a = _general(*shape)
    return a + (np.tril(RNG.standard_normal(shape), -1) if upper
                else np.triu(RNG.standard_normal(shape), 1)) * 0 + RNG.standard_normal(
        shape) * (np.tril(np.ones(shape[-2:]), -1) if upper else np.triu(np.ones(shape[-2:]),
                                                                          1))


def _spd(*shape):
    x = RNG.standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) / shape[-1] + np.eye(shape[-1])


def _outputs(out):
    items = list(out) if isinstance(out, tuple) else [out]
    return [o for o in items if o.numel() and o.dtype in (torch.float64, torch.float32,
                                                           np.float64, np.float32)]


def _weighted(outs, ws, lib):
    return sum((o * lib.tensor(w)).sum() for o, w in zip(outs, ws))


def _same_grads(ours, theirs, tol):
    for a, b in zip(ours, theirs):
        a = np.zeros(1) if a is None else a.numpy()
        b = np.zeros(1) if b is None else b.detach().numpy(force=True)
        np.testing.assert_allclose(*np.broadcast_arrays(a, b), rtol=tol, atol=tol)


def _check(fn_t, fn_c, *arrays, second=True, tol=1e-10, grad=None):
    """Values, first and (``second``) second-order gradients against torch float64;
    ``grad``: the indices of the inputs to differentiate (default all)."""
    grad = range(len(arrays)) if grad is None else grad
    ts = [torch.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
    cs = [cg.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
    want, got = _outputs(fn_t(*ts)), _outputs(fn_c(*cs))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert tuple(g.shape) == tuple(w.shape) and g.dtype == w.detach().numpy().dtype
        np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=tol, atol=tol)
    ts, cs = [ts[i] for i in grad], [cs[i] for i in grad]
    ws = [RNG.standard_normal(tuple(w.shape)) for w in want]
    gt = torch.autograd.grad(_weighted(want, ws, torch), ts, create_graph=second,
                             allow_unused=True)
    gc = cg.grad(_weighted(got, ws, cg), cs, create_graph=second, allow_unused=True)
    _same_grads(gc, gt, tol)
    if not second:
        return
    vs = [RNG.standard_normal(tuple(t.shape)) for t in ts]
    ht_sum, hc_sum = _weighted(gt, vs, torch), _weighted(gc, vs, cg)
    ht = (torch.autograd.grad(ht_sum, ts, allow_unused=True) if ht_sum.requires_grad
          else [None] * len(ts))
    hc = cg.grad(hc_sum, cs, allow_unused=True) if hc_sum.requires_grad else [None] * len(cs)
    _same_grads(hc, ht, tol * 10)


# -- triangular and Cholesky solves


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(upper, left, unit):
    a = _triangular(2, 4, 4, upper=upper)
    b = RNG.standard_normal((3, 1, 4, 2) if left else (3, 1, 2, 4))
    _check(lambda s, t: torch.linalg.solve_triangular(s, t, upper=upper, left=left,
                                                      unitriangular=unit),
           lambda s, t: LA.solve_triangular(s, t, upper=upper, left=left, unitriangular=unit),
           a, b)


@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")
@pytest.mark.parametrize("upper,transpose,unit", [(True, False, False), (False, True, False),
                                                  (True, True, True)])
def test_triangular_solve(upper, transpose, unit):
    a, b = _triangular(2, 3, 3, upper=upper), RNG.standard_normal((2, 3, 2))
    _check(lambda s, t: torch.triangular_solve(t, s, upper, transpose, unit),
           lambda s, t: cg.triangular_solve(t, s, upper, transpose, unit), a, b)
    got = cg.triangular_solve(cg.tensor(b), cg.tensor(a))
    assert got._fields == ("solution", "cloned_coefficient")
    np.testing.assert_array_equal(got.cloned_coefficient.numpy(), a)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve(upper):
    spd = _spd(2, 4, 4)
    factor = np.linalg.cholesky(spd)
    factor = np.swapaxes(factor, -1, -2) if upper else factor
    b = RNG.standard_normal((4, 3))
    _check(lambda t, s: torch.cholesky_solve(t, s, upper),
           lambda t, s: cg.cholesky_solve(t, s, upper), b, factor)
    _check(lambda t, s: torch.cholesky_solve(t, s, upper=upper),
           lambda t, s: cg.cholesky_solve(t, s, upper=upper), b, factor + 1.0, second=False)


def test_solve_ex_tensorinv_tensorsolve_cond_vander_matmul():
    a, b = _general(2, 3, 3), RNG.standard_normal((2, 3, 2))
    _check(lambda s, t: torch.linalg.solve_ex(s, t).result,
           lambda s, t: LA.solve_ex(s, t).result, a, b)
    _check(lambda s, t: torch.linalg.solve_ex(s, t, left=False).result,
           lambda s, t: LA.solve_ex(s, t, left=False).result, a, b.swapaxes(-1, -2).copy())
    got = LA.solve_ex(cg.tensor(a), cg.tensor(b))
    assert got.info.dtype == np.int32 and got.info.numpy().tolist() == [0, 0]
    t4 = _general(6, 6).reshape(2, 3, 6)
    _check(torch.linalg.tensorinv, LA.tensorinv, t4)
    _check(lambda t: torch.linalg.tensorinv(t, ind=1), lambda t: LA.tensorinv(t, ind=1),
           _general(4, 4).reshape(4, 2, 2))
    A, B = _general(6, 6).reshape(2, 3, 3, 2), RNG.standard_normal((2, 3))
    _check(torch.linalg.tensorsolve, LA.tensorsolve, A, B)
    A2 = np.moveaxis(A, 2, 0).copy()
    _check(lambda s, t: torch.linalg.tensorsolve(s, t, dims=(0,)),
           lambda s, t: LA.tensorsolve(s, t, dims=(0,)), A2, B)
    for p in (None, 2, -2, "nuc"):
        _check(lambda t, p=p: torch.linalg.cond(t, p), lambda t, p=p: LA.cond(t, p), a,
               tol=1e-9)
    for p in ("fro", math.inf, -math.inf, 1, -1):  # torch's own backward fails here
        _check(lambda t, p=p: torch.linalg.matrix_norm(t, p) * torch.linalg.matrix_norm(
            torch.linalg.inv(t), p), lambda t, p=p: LA.cond(t, p), a, second=p == "fro")
        np.testing.assert_allclose(LA.cond(cg.tensor(a), p).numpy(),
                                   torch.linalg.cond(torch.tensor(a), p).numpy(), rtol=1e-13)
    _check(torch.linalg.cond, LA.cond, RNG.standard_normal((2, 5, 3)), tol=1e-9)
    x = np.array([[0.0, 1.5, -2.0], [0.5, 0.0, 3.0]])
    _check(torch.linalg.vander, LA.vander, x)
    _check(lambda t: torch.linalg.vander(t, N=5), lambda t: LA.vander(t, N=5), x)
    ints = LA.vander(cg.tensor([1, 2, 3], dtype=cg.int64), N=3)
    assert ints.dtype == np.int64 and ints.numpy().tolist() == torch.linalg.vander(
        torch.tensor([1, 2, 3]), N=3).tolist()
    _check(torch.linalg.matmul, LA.matmul, RNG.standard_normal((2, 3, 4)),
           RNG.standard_normal((4, 2)))


def test_singular_inputs_as_torch():
    sing = np.stack([np.eye(3), np.diag([1.0, 0.0, 2.0])])
    b = np.ones((2, 3, 1))
    got, want = LA.solve_ex(cg.tensor(sing), cg.tensor(b)), torch.linalg.solve_ex(
        torch.tensor(sing), torch.tensor(b))
    assert got.info.numpy().tolist() == want.info.tolist() == [0, 2]
    np.testing.assert_array_equal(got.result.numpy()[0], want.result.numpy()[0])
    assert not np.all(np.isfinite(got.result.numpy()[1]))
    with pytest.raises(LA.LinAlgError, match="linalg.solve_ex.*batch index \\(1,\\)"):
        LA.solve_ex(cg.tensor(sing), cg.tensor(b), check_errors=True)
    for p in ("fro", 1, math.inf):
        assert (LA.cond(cg.tensor(sing), p).numpy().tolist()
                == torch.linalg.cond(torch.tensor(sing), p).tolist())
    tri = np.triu(np.ones((3, 3)))
    tri[1, 1] = 0.0
    got = LA.solve_triangular(cg.tensor(tri), cg.ones(3, 1, dtype=cg.float64), upper=True)
    want = torch.linalg.solve_triangular(torch.tensor(tri), torch.ones(3, 1, dtype=torch.float64),
                                         upper=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- the matrix exponential


def test_matrix_exp():
    a = RNG.standard_normal((2, 4, 4))
    _check(torch.linalg.matrix_exp, LA.matrix_exp, a, tol=1e-9)
    _check(torch.matrix_exp, cg.matrix_exp, 3 * RNG.standard_normal((3, 3)), tol=1e-9)
    nil = np.triu(RNG.standard_normal((3, 3)), 1)  # exp is a polynomial: exact
    _check(torch.linalg.matrix_exp, LA.matrix_exp, nil, tol=1e-12)
    got = LA.matrix_exp(cg.zeros(0, 2, 2, dtype=cg.float64))
    assert tuple(got.shape) == (0, 2, 2)


# -- LU


def _lu_factor(lib):
    return (lambda t: torch.linalg.lu_factor(t).LU) if lib is torch else (
        lambda t: LA.lu_factor(t).LU)


def test_lu_factor_lu_unpack():
    for shape in ((2, 4, 4), (5, 3), (3, 5)):
        a = RNG.standard_normal(shape)
        got, want = LA.lu_factor(cg.tensor(a)), torch.linalg.lu_factor(torch.tensor(a))
        assert got._fields == ("LU", "pivots") and got.pivots.dtype == np.int32
        assert got.pivots.numpy().tolist() == want.pivots.tolist()
        np.testing.assert_allclose(got.LU.numpy(), want.LU.numpy(), atol=1e-13)
        for kw in ({}, {"unpack_data": False}, {"unpack_pivots": False}):
            gu = cg.lu_unpack(*got, **kw)
            wu = torch.lu_unpack(*want, **kw)
            for g, w in zip(gu, wu):
                assert tuple(g.shape) == tuple(w.shape)
                np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-13)
        ex = LA.lu_factor_ex(cg.tensor(a))
        assert ex._fields == ("LU", "pivots", "info") and ex.info.dtype == np.int32
        p, low, up = LA.lu(cg.tensor(a))
        for g, w in zip((p, low, up), torch.linalg.lu(torch.tensor(a))):
            np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-13)
        np.testing.assert_allclose((p @ low @ up).numpy(), a, atol=1e-13)


def test_lu_gradients_square():
    a = RNG.standard_normal((2, 4, 4))
    _check(_lu_factor(torch), _lu_factor(cg), a, tol=1e-9)
    _check(torch.linalg.lu, LA.lu, a, tol=1e-9)
    _check(lambda t: torch.lu_unpack(*torch.linalg.lu_factor(t)),
           lambda t: cg.lu_unpack(*LA.lu_factor(t)), a, tol=1e-9)


@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False),
                                          (False, True)])
def test_lu_solve(left, adjoint):
    a = _general(2, 4, 4)
    lu_t = torch.linalg.lu_factor(torch.tensor(a))
    b = RNG.standard_normal((3, 1, 4, 2) if left else (3, 1, 2, 4))
    piv_t, piv_c = lu_t.pivots, cg.tensor(lu_t.pivots.numpy(), dtype=cg.int32)
    _check(lambda s, t: torch.linalg.lu_solve(s, piv_t, t, left=left, adjoint=adjoint),
           lambda s, t: LA.lu_solve(s, piv_c, t, left=left, adjoint=adjoint),
           lu_t.LU.numpy(), b)
    # and from A through lu_factor, against torch.linalg.solve
    _check(lambda s, t: torch.linalg.lu_solve(*torch.linalg.lu_factor(s), t, left=left,
                                              adjoint=adjoint),
           lambda s, t: LA.lu_solve(*LA.lu_factor(s), t, left=left, adjoint=adjoint),
           a, b, tol=1e-9)


def test_singular_lu():
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    got, want = LA.lu_factor_ex(cg.tensor(sing)), torch.linalg.lu_factor_ex(torch.tensor(sing))
    assert got.info.numpy().tolist() == want.info.tolist() == 2
    np.testing.assert_array_equal(got.LU.numpy(), want.LU.numpy())
    with pytest.raises(LA.LinAlgError, match=r"linalg.lu_factor: U\[1,1\] is zero"):
        LA.lu_factor(cg.tensor(sing))
    with pytest.raises(LA.LinAlgError, match="linalg.lu_factor_ex.*singular"):
        LA.lu_factor_ex(cg.tensor(sing), check_errors=True)
    for g, w in zip(LA.lu(cg.tensor(sing)), torch.linalg.lu(torch.tensor(sing))):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


# -- float32


FLOAT32_CASES = {
    "solve_triangular": (lambda s, t: torch.linalg.solve_triangular(s, t, upper=True),
                         lambda s, t: LA.solve_triangular(s, t, upper=True),
                         lambda: [_triangular(2, 6, 6), RNG.standard_normal((2, 6, 3))]),
    "cholesky_solve": (torch.cholesky_solve, cg.cholesky_solve,
                       lambda: [RNG.standard_normal((2, 6, 3)),
                                np.linalg.cholesky(_spd(2, 6, 6))]),
    "matrix_exp": (torch.linalg.matrix_exp, LA.matrix_exp,
                   lambda: [RNG.standard_normal((2, 6, 6))]),
    "lu_factor": (_lu_factor(torch), _lu_factor(cg), lambda: [_general(2, 6, 6)]),
    "cond": (torch.linalg.cond, LA.cond, lambda: [_general(2, 6, 6)]),
    "tensorsolve": (torch.linalg.tensorsolve, LA.tensorsolve,
                    lambda: [_general(6, 6).reshape(2, 3, 6), RNG.standard_normal((2, 3))]),
}


@pytest.mark.parametrize("name", sorted(FLOAT32_CASES))
def test_float32_within_twice_torchs_error(name):
    """float32 values and gradients against torch float64, within twice torch float32's
    error on the same float32 values (relative 2-norm)."""
    fn_t, fn_c, make = FLOAT32_CASES[name]
    arrays = [a.astype(np.float32).astype(np.float64) for a in make()]
    w, found = None, []
    for lib, dtype in ((torch, np.float64), (torch, np.float32), (cg, np.float32)):
        ins = [lib.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
        out = (fn_t if lib is torch else fn_c)(*ins)
        if w is None:
            w = RNG.standard_normal(tuple(out.shape))
        (out * lib.tensor(w.astype(dtype))).sum().backward()
        values = out.detach().numpy() if lib is torch else out.numpy()
        assert values.dtype == dtype
        found.append([np.asarray(values, np.float64)]
                     + [np.asarray(i.grad.numpy(), np.float64) for i in ins])
    exact, theirs, ours = found
    for e, t, o in zip(exact, theirs, ours):
        scale = np.linalg.norm(e)
        t_err, o_err = np.linalg.norm(t - e) / scale, np.linalg.norm(o - e) / scale
        assert o_err <= 2 * max(t_err, 2.0 ** -24), (name, o_err, t_err)


# -- argument errors


def test_argument_errors():
    sq, f64 = cg.tensor(_general(3, 3)), cg.float64
    with pytest.raises(ValueError, match="linalg.solve_triangular: A must be a batch of square"):
        LA.solve_triangular(cg.ones(2, 3, dtype=f64), cg.ones(2, 1, dtype=f64), upper=True)
    with pytest.raises(ValueError, match="B must have at least 2 dimensions"):
        LA.solve_triangular(sq, cg.ones(3, dtype=f64), upper=True)
    with pytest.raises(ValueError, match="expected 3 rows"):
        LA.solve_triangular(sq, cg.ones(4, 2, dtype=f64), upper=True)
    with pytest.raises(ValueError, match="expected 3 columns"):
        LA.solve_triangular(sq, cg.ones(4, 2, dtype=f64), upper=True, left=False)
    with pytest.raises(ValueError, match="do not broadcast"):
        LA.solve_triangular(cg.tensor(_general(2, 3, 3)), cg.ones(4, 3, 1, dtype=f64),
                            upper=True)
    with pytest.raises(TypeError, match="dtype float32"):
        LA.solve_triangular(sq, cg.ones(3, 1), upper=False)
    with pytest.raises(TypeError, match="cholesky_solve: B has dtype float32"):
        cg.cholesky_solve(cg.ones(3, 1), sq)
    with pytest.raises(ValueError, match="cholesky_solve: L must be a batch of square"):
        cg.cholesky_solve(cg.ones(3, 1, dtype=f64), cg.ones(3, 2, dtype=f64))
    with pytest.raises(ValueError, match="ind=0 must be a strictly positive int"):
        LA.tensorinv(sq, ind=0)
    with pytest.raises(ValueError, match="product of A's first ind=1 dims \\(2\\)"):
        LA.tensorinv(cg.ones(2, 3, dtype=f64), ind=1)
    with pytest.raises(ValueError, match="leading dims .* must be B's shape"):
        LA.tensorsolve(cg.ones(2, 3, 6, dtype=f64), cg.ones(3, 2, dtype=f64))
    with pytest.raises(ValueError, match="p=3 is not supported"):
        LA.cond(sq, 3)
    with pytest.raises(ValueError, match="linalg.cond: A must be a batch of square"):
        LA.cond(cg.ones(2, 3, dtype=f64), "fro")
    with pytest.raises(ValueError, match="N=1 must be greater than 1"):
        LA.vander(cg.ones(3), N=1)
    with pytest.raises(ValueError, match="at least 1 dimension"):
        LA.vander(cg.tensor(2.0))
    with pytest.raises(ValueError, match="linalg.matrix_exp: A must be a batch of square"):
        LA.matrix_exp(cg.ones(2, 3))
    with pytest.raises(TypeError, match="linalg.matrix_exp: A has dtype int64"):
        LA.matrix_exp(cg.tensor([[1, 0], [0, 1]], dtype=cg.int64))
    with pytest.raises(ValueError, match="pivot=False .* not implemented"):
        LA.lu_factor(sq, pivot=False)
    lu, piv = LA.lu_factor(sq)
    with pytest.raises(TypeError, match="pivots must be an int32 Tensor"):
        LA.lu_solve(lu, piv.to(cg.float64), sq)
    with pytest.raises(ValueError, match="pivots has shape \\(2,\\); expected \\(3,\\)"):
        LA.lu_solve(lu, piv[:2], sq)
    with pytest.raises(ValueError, match="LU_pivots must lie in \\[1, 3\\]"):
        cg.lu_unpack(lu, piv * 0)
    with pytest.raises(ValueError, match="linalg.lu_solve: LU must be a batch of square"):
        LA.lu_solve(cg.ones(3, 2, dtype=f64), piv[:2], sq)
    with pytest.raises(ValueError, match="B must have at least 2 dimensions"):
        LA.lu_solve(lu, piv, cg.ones(3, dtype=f64))
    with pytest.raises(NotImplementedError, match="square matrices only"):
        LA.lu_factor(cg.ones(3, 2, dtype=f64, requires_grad=True) + cg.tensor(
            np.eye(3, 2))).LU.sum().backward()
