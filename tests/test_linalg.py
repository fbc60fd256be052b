"""``convgrad.linalg`` against ``torch.linalg``.  Oracle: torch float64 on the same
values: results, the gradients of a random weighting of them and (where torch has them)
second-order gradients, to rounding; float32 within twice torch float32's error against
torch float64.  Eigen- and singular vectors are compared through sign-invariant
functions of them (their squares), on well-separated spectra; matrices are
well-conditioned."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import convgrad as cg
import convgrad.linalg as LA

RNG = np.random.default_rng(7)


def _general(*shape):
    """Well-conditioned square matrices: noise plus a multiple of the identity."""
    n = shape[-1]
    return RNG.standard_normal(shape) / math.sqrt(n) + 2.0 * np.eye(n)


def _spd(*shape):
    x = RNG.standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) / shape[-1] + np.eye(shape[-1])


def _symmetric(*shape):
    """Symmetric with eigenvalues 1, 2, ..., n (well separated), a random basis."""
    n = shape[-1]
    q = np.linalg.qr(RNG.standard_normal(shape))[0]
    return (q * np.arange(1.0, n + 1)[..., None, :]) @ np.swapaxes(q, -1, -2)


def _outputs(out):
    """The float results of a call, as a list (named tuples flattened)."""
    items = list(out) if isinstance(out, tuple) else [out]
    return [o for o in items if o.numel() and o.dtype in (torch.float64, torch.float32,
                                                           np.float64, np.float32)]


def _weighted(outs, ws, lib):
    return sum((o * lib.tensor(w)).sum() for o, w in zip(outs, ws))


def _check(fn_t, fn_c, *arrays, second=True, tol=1e-10):
    """Values, first and (``second``) second-order gradients against torch float64."""
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    cs = [cg.tensor(a, requires_grad=True) for a in arrays]
    want, got = _outputs(fn_t(*ts)), _outputs(fn_c(*cs))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert tuple(g.shape) == tuple(w.shape) and g.dtype == w.detach().numpy().dtype
        np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=tol, atol=tol)
    ws = [RNG.standard_normal(tuple(w.shape)) for w in want]
    gt = torch.autograd.grad(_weighted(want, ws, torch), ts, create_graph=second,
                             allow_unused=True)
    gc = cg.grad(_weighted(got, ws, cg), cs, create_graph=second, allow_unused=True)
    _same_grads(gc, gt, tol)
    if not second:
        return
    vs = [RNG.standard_normal(a.shape) for a in arrays]
    ht_sum, hc_sum = _weighted(gt, vs, torch), _weighted(gc, vs, cg)
    # (a constant gradient has no second-order graph: its gradient is None, i.e. zero)
    ht = (torch.autograd.grad(ht_sum, ts, allow_unused=True) if ht_sum.requires_grad
          else [None] * len(ts))
    hc = cg.grad(hc_sum, cs, allow_unused=True) if hc_sum.requires_grad else [None] * len(cs)
    _same_grads(hc, ht, tol * 10)


def _same_grads(ours, theirs, tol):
    """Gradients equal to rounding; None (unused) counts as zero."""
    for a, b in zip(ours, theirs):
        a = np.zeros(1) if a is None else a.numpy()
        b = np.zeros(1) if b is None else b.detach().numpy(force=True)
        np.testing.assert_allclose(*np.broadcast_arrays(a, b), rtol=tol, atol=tol)


# -- norms

VECTOR_ORDS = [2, 1, 3, 0.5, 1.5, math.inf, -math.inf, 0, -1]


@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norm(ord):
    x = RNG.standard_normal((3, 4, 5))
    _check(lambda t: torch.linalg.vector_norm(t, ord), lambda t: LA.vector_norm(t, ord), x,
           second=ord not in (math.inf, -math.inf, 0))
    _check(lambda t: torch.linalg.vector_norm(t, ord, dim=(0, 2), keepdim=True),
           lambda t: LA.vector_norm(t, ord, dim=(0, 2), keepdim=True), x, second=False)
    _check(lambda t: torch.linalg.vector_norm(t, ord, dim=-1),
           lambda t: LA.vector_norm(t, ord, dim=-1), x, second=False)


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, math.inf])
def test_vector_norm_of_zeros_has_gradient_zero_not_nan(ord):
    x = np.array([[1.0, -3.0, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    _check(lambda t: torch.linalg.vector_norm(t, ord, dim=1),
           lambda t: LA.vector_norm(t, ord, dim=1), x, second=False)


def test_vector_norm_dtype_and_scalar():
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    got = LA.vector_norm(cg.tensor(x), dtype=cg.float64)
    want = torch.linalg.vector_norm(torch.tensor(x), dtype=torch.float64)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14)
    _check(lambda t: torch.linalg.vector_norm(t, 3), lambda t: LA.vector_norm(t, 3),
           np.array(-1.5))


MATRIX_ORDS = ["fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2]


@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norm(ord):
    a = RNG.standard_normal((2, 4, 3))
    _check(lambda t: torch.linalg.matrix_norm(t, ord), lambda t: LA.matrix_norm(t, ord), a,
           second=ord in ("fro", "nuc", 2, -2))
    _check(lambda t: torch.linalg.matrix_norm(t, ord, dim=(2, 0), keepdim=True),
           lambda t: LA.matrix_norm(t, ord, dim=(2, 0), keepdim=True), a, second=False)


@pytest.mark.parametrize("shape,ord,dim", [
    ((3, 4), None, None), ((2, 3, 4), None, None), ((5,), 3, None), ((3, 4), "nuc", None),
    ((3, 4), 1, None), ((2, 3, 4), 1, 1), ((2, 3, 4), None, (0, 2)), ((2, 3, 4), -2, (1, 2)),
    ((2, 3, 4), math.inf, (2,))])
def test_norm_dispatches_as_torch(shape, ord, dim):
    a = RNG.standard_normal(shape)
    _check(lambda t: torch.linalg.norm(t, ord, dim), lambda t: LA.norm(t, ord, dim), a,
           second=False)


def test_norm_errors():
    a = cg.tensor(RNG.standard_normal((2, 3, 4)))
    with pytest.raises(ValueError, match="1-D .* or 2-D"):
        LA.norm(a, 2)
    with pytest.raises(ValueError, match="ord='fro' is a matrix norm"):
        LA.norm(a, "fro", dim=1)
    with pytest.raises(ValueError, match="ord=3 is not supported"):
        LA.matrix_norm(a, 3)
    with pytest.raises(TypeError, match="ord='fro' must be a number"):
        LA.vector_norm(a, "fro")
    with pytest.raises(TypeError, match="dtype int64"):
        LA.vector_norm(cg.tensor([1, 2], dtype=cg.int64))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        LA.matrix_norm(cg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="would narrow the input's dtype float64"):
        LA.vector_norm(a, dtype=cg.float32)
    with pytest.raises(ValueError, match="two different dims"):
        LA.matrix_norm(a, dim=(1, 1))


# -- inverses, determinants, solves


def test_inv_det_slogdet():
    a = _general(2, 4, 4)
    _check(torch.linalg.inv, LA.inv, a)
    _check(torch.linalg.det, LA.det, a)
    neg = a.copy()
    neg[0, 0] *= -1  # a negative determinant
    _check(torch.linalg.slogdet, LA.slogdet, neg)
    _check(lambda t: torch.linalg.inv_ex(t).inverse, lambda t: LA.inv_ex(t).inverse, a)
    sign, logabs = LA.slogdet(cg.tensor(neg))
    assert sign.numpy().tolist() == torch.linalg.slogdet(torch.tensor(neg)).sign.tolist()
    assert LA.slogdet(cg.tensor(neg)).logabsdet is logabs or True


def test_det_gradient_of_a_singular_matrix_is_the_adjugate():
    """(torch gives the adjugate under create_graph, which _check uses; 0 without)"""
    a = np.stack([[[1.0, 2.0], [2.0, 4.0]], _general(2, 2), [[0.0, 0.0], [0.0, 1.0]]])
    _check(torch.linalg.det, LA.det, a)
    a = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [1.0, 1.0, 3.0]])
    _check(torch.linalg.det, LA.det, a)


def test_solve_shapes_and_broadcasting():
    a = _general(2, 3, 3)
    for b in (RNG.standard_normal((2, 3)), RNG.standard_normal(3),
              RNG.standard_normal((2, 3, 4)), RNG.standard_normal((5, 1, 3, 2))):
        _check(torch.linalg.solve, LA.solve, a, b)
    b = RNG.standard_normal((2, 4, 3))
    _check(lambda s, t: torch.linalg.solve(s, t, left=False),
           lambda s, t: LA.solve(s, t, left=False), a, b)


def test_cholesky():
    a = _spd(2, 4, 4)
    _check(torch.linalg.cholesky, LA.cholesky, a)
    _check(lambda t: torch.linalg.cholesky(t, upper=True),
           lambda t: LA.cholesky(t, upper=True), a)
    _check(lambda t: torch.linalg.cholesky_ex(t).L, lambda t: LA.cholesky_ex(t).L, a,
           second=False)


def test_info_tensors_and_singular_errors():
    bad = np.stack([np.eye(3), np.zeros((3, 3))])
    got, want = LA.inv_ex(cg.tensor(bad)), torch.linalg.inv_ex(torch.tensor(bad))
    assert got.info.numpy().tolist() == want.info.tolist() and got.info.dtype == np.int32
    np.testing.assert_array_equal(got.inverse.numpy()[0], np.eye(3))
    notpd = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0])])
    got, want = LA.cholesky_ex(cg.tensor(notpd)), torch.linalg.cholesky_ex(
        torch.tensor(notpd))
    assert got.info.numpy().tolist() == want.info.tolist()
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.inv(cg.tensor(bad))
    with pytest.raises(LA.LinAlgError, match="batch index"):
        LA.inv_ex(cg.tensor(bad), check_errors=True)
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.solve(cg.tensor(bad), cg.ones(2, 3, dtype=cg.float64))
    with pytest.raises(LA.LinAlgError, match="not positive definite"):
        LA.cholesky(cg.tensor(notpd))
    with pytest.raises(LA.LinAlgError, match="not positive definite"):
        LA.cholesky_ex(cg.tensor(notpd), check_errors=True)
    assert issubclass(LA.LinAlgError, ValueError)


def test_argument_errors():
    sq = cg.tensor(_general(3, 3))
    with pytest.raises(ValueError, match="linalg.inv: A must be a batch of square"):
        LA.inv(cg.ones(2, 3))
    with pytest.raises(ValueError, match="linalg.det: A must have at least 2 dim"):
        LA.det(cg.ones(3))
    with pytest.raises(TypeError, match="linalg.inv: A has dtype int64"):
        LA.inv(cg.tensor([[1, 0], [0, 1]], dtype=cg.int64))
    with pytest.raises(TypeError, match="A must be a Tensor"):
        LA.det([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="expected 3 rows"):
        LA.solve(sq, cg.ones(4, 2, dtype=cg.float64))
    with pytest.raises(TypeError, match="dtype float32"):
        LA.solve(sq, cg.ones(3))
    with pytest.raises(TypeError, match="n=1.5 must be an int"):
        LA.matrix_power(sq, 1.5)
    with pytest.raises(ValueError, match="mode='full'"):
        LA.qr(sq, mode="full")
    with pytest.raises(ValueError, match="UPLO='X'"):
        LA.eigh(sq, UPLO="X")
    with pytest.raises(ValueError, match="driver='gelsx'"):
        LA.lstsq(sq, sq, driver="gelsx")
    with pytest.raises(ValueError, match="dim=0 has size 2; expected 3"):
        LA.cross(cg.ones(2, 3), cg.ones(2, 3), dim=0)
    with pytest.raises(ValueError, match="the same number of dims"):
        LA.cross(cg.ones(2, 3), cg.ones(3))
    with pytest.raises(ValueError, match="tensors\\[1\\] must be 2-D"):
        LA.multi_dot([cg.ones(2, 3), cg.ones(3), cg.ones(3, 2)])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -3])
def test_matrix_power(n):
    _check(lambda t: torch.linalg.matrix_power(t, n), lambda t: LA.matrix_power(t, n),
           _general(2, 3, 3) / 2, second=n != 0)


def test_products():
    x, y = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((1, 4, 3))
    _check(torch.linalg.cross, LA.cross, x, y)
    _check(lambda s, t: torch.linalg.cross(s, t, dim=-1),
           lambda s, t: LA.cross(s, t, dim=-1), x, y)
    _check(torch.linalg.vecdot, LA.vecdot, x, y)
    _check(lambda s: torch.linalg.diagonal(s, offset=1), lambda s: LA.diagonal(s, offset=1),
           x)
    ms = [RNG.standard_normal(s) for s in ((3,), (3, 4), (4, 2), (2,))]
    _check(lambda *t: torch.linalg.multi_dot(t), lambda *t: LA.multi_dot(t), *ms)
    ms = [RNG.standard_normal(s) for s in ((2, 3), (3, 4))]
    _check(lambda *t: torch.linalg.multi_dot(t), lambda *t: LA.multi_dot(t), *ms)


# -- decompositions


@pytest.mark.parametrize("shape,mode", [((5, 3), "reduced"), ((2, 4, 4), "reduced"),
                                        ((3, 5), "reduced"), ((4, 4), "complete")])
def test_qr(shape, mode):
    _check(lambda t: torch.linalg.qr(t, mode), lambda t: LA.qr(t, mode),
           RNG.standard_normal(shape))


def test_qr_values_of_the_other_modes():
    a = RNG.standard_normal((2, 5, 3))
    for mode in ("complete", "r"):
        got, want = LA.qr(cg.tensor(a), mode), torch.linalg.qr(torch.tensor(a), mode)
        for g, w in zip(got, want):
            assert tuple(g.shape) == tuple(w.shape)
            np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-12)
    q, r = LA.qr(cg.tensor(a, requires_grad=True), "complete")
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        q.sum().backward()


def _eigh_invariant(lib, uplo="L"):
    def fn(t):
        w, v = lib.linalg.eigh(t, uplo) if lib is torch else LA.eigh(t, uplo)
        return w, v * v
    return fn


def test_eigh():
    a = _symmetric(2, 4, 4)
    _check(_eigh_invariant(torch), _eigh_invariant(cg), a, tol=1e-9)
    lower_only = np.tril(a) + np.triu(RNG.standard_normal((4, 4)), 1)
    _check(_eigh_invariant(torch), _eigh_invariant(cg), lower_only, tol=1e-9)
    upper_only = np.triu(a) + np.tril(RNG.standard_normal((4, 4)), -1)
    _check(_eigh_invariant(torch, "U"), _eigh_invariant(cg, "U"), upper_only, tol=1e-9)
    _check(torch.linalg.eigvalsh, LA.eigvalsh, a, tol=1e-9)


def test_eigvalsh_of_repeated_eigenvalues_has_a_finite_gradient():
    x = cg.tensor(np.eye(3), requires_grad=True)
    LA.eigvalsh(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.eye(3), atol=1e-12)


def _svd_invariant(lib, full):
    def fn(t):
        u, s, vh = lib.linalg.svd(t, full) if lib is torch else LA.svd(t, full)
        k = s.shape[-1]
        return u[..., :k] * u[..., :k], s, vh[..., :k, :] * vh[..., :k, :]
    return fn


@pytest.mark.parametrize("shape,full", [((2, 5, 3), False), ((3, 5), False), ((4, 4), True),
                                        ((5, 3), True)])
def test_svd(shape, full):
    a = RNG.standard_normal(shape)
    _check(_svd_invariant(torch, full), _svd_invariant(cg, full), a, tol=1e-9)
    _check(torch.linalg.svdvals, LA.svdvals, a, tol=1e-9)


def test_pinv_rank_lstsq():
    for shape in ((5, 3), (2, 3, 4)):
        a = RNG.standard_normal(shape)
        _check(torch.linalg.pinv, LA.pinv, a)
    a = _general(3, 3) + _general(3, 3).T
    _check(lambda t: torch.linalg.pinv(t, hermitian=True),
           lambda t: LA.pinv(t, hermitian=True), a, second=False)
    low = RNG.standard_normal((2, 5, 2)) @ RNG.standard_normal((2, 2, 4))
    for kw in ({}, {"hermitian": False, "rtol": 0.5}, {"atol": 1e-3}, {"atol": 1e-300}):
        assert (LA.matrix_rank(cg.tensor(low), **kw).numpy().tolist()
                == torch.linalg.matrix_rank(torch.tensor(low), **kw).tolist())
    sym = low @ np.swapaxes(low, -1, -2)  # 5 x 5 of rank 2
    assert (LA.matrix_rank(cg.tensor(sym), hermitian=True).numpy().tolist()
            == torch.linalg.matrix_rank(torch.tensor(sym), hermitian=True).tolist() == [2, 2])
    A, B = RNG.standard_normal((2, 6, 3)), RNG.standard_normal((2, 6, 2))
    for driver in ("gels", "gelsy", "gelsd", "gelss"):
        _check(lambda s, t, d=driver: torch.linalg.lstsq(s, t, driver=d),
               lambda s, t, d=driver: LA.lstsq(s, t, driver=d), A, B, second=False)
        got = LA.lstsq(cg.tensor(A), cg.tensor(B), driver=driver)
        want = torch.linalg.lstsq(torch.tensor(A), torch.tensor(B), driver=driver)
        assert got.rank.numpy().tolist() == want.rank.tolist()
        assert tuple(got.residuals.shape) == tuple(want.residuals.shape)
        assert tuple(got.singular_values.shape) == tuple(want.singular_values.shape)
    _check(lambda s, t: torch.linalg.lstsq(s, t).solution,
           lambda s, t: LA.lstsq(s, t).solution, A[0], B[0, :, 0])


# -- float32


FLOAT32_CASES = {
    "vector_norm": (lambda t: torch.linalg.vector_norm(t, dim=-1),
                    lambda t: LA.vector_norm(t, dim=-1), lambda: RNG.standard_normal((4, 50))),
    "vector_norm_3": (lambda t: torch.linalg.vector_norm(t, 3, dim=-1),
                      lambda t: LA.vector_norm(t, 3, dim=-1),
                      lambda: RNG.standard_normal((4, 50))),
    "matrix_norm_nuc": (lambda t: torch.linalg.matrix_norm(t, "nuc"),
                        lambda t: LA.matrix_norm(t, "nuc"), lambda: _general(2, 6, 6)),
    "inv": (torch.linalg.inv, LA.inv, lambda: _general(2, 6, 6)),
    "det": (torch.linalg.det, LA.det, lambda: _general(2, 6, 6)),
    "logabsdet": (lambda t: torch.linalg.slogdet(t).logabsdet,
                  lambda t: LA.slogdet(t).logabsdet, lambda: _general(2, 6, 6)),
    "cholesky": (torch.linalg.cholesky, LA.cholesky, lambda: _spd(2, 6, 6)),
    "eigvalsh": (torch.linalg.eigvalsh, LA.eigvalsh, lambda: _symmetric(2, 6, 6)),
    "eigh_vectors": (lambda t: torch.linalg.eigh(t).eigenvectors ** 2,
                     lambda t: LA.eigh(t).eigenvectors ** 2, lambda: _symmetric(2, 6, 6)),
    "svdvals": (torch.linalg.svdvals, LA.svdvals, lambda: _general(2, 6, 6)[..., :4, :]),
    "svd_u": (lambda t: torch.linalg.svd(t, False).U ** 2,
              lambda t: LA.svd(t, False).U ** 2, lambda: _general(2, 6, 6)[..., :4]),
    "qr_r": (lambda t: torch.linalg.qr(t).R, lambda t: LA.qr(t).R,
             lambda: _general(2, 6, 6)[..., :4]),
    "pinv": (torch.linalg.pinv, LA.pinv, lambda: _general(2, 6, 6)[..., :4]),
}


def _solve32(lib):
    return lambda a, b: lib.linalg.solve(a, b) if lib is torch else LA.solve(a, b)


@pytest.mark.parametrize("name", sorted(FLOAT32_CASES) + ["solve"])
def test_float32_within_twice_torchs_error(name):
    """float32 values and gradients against torch float64, within twice torch float32's
    error on the same float32 values (relative 2-norm)."""
    if name == "solve":
        fn_t, fn_c = _solve32(torch), _solve32(cg)
        arrays = [_general(2, 6, 6), RNG.standard_normal((2, 6, 3))]
    else:
        fn_t, fn_c, make = FLOAT32_CASES[name]
        arrays = [make()]
    arrays = [a.astype(np.float32).astype(np.float64) for a in arrays]
    w, found = None, []
    for lib, dtype in ((torch, np.float64), (torch, np.float32), (cg, np.float32)):
        ins = [lib.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
        out = (fn_t if lib is torch else fn_c)(*ins)
        if w is None:
            w = RNG.standard_normal(tuple(out.shape))
        (out * lib.tensor(w.astype(dtype))).sum().backward()
        assert out.dtype == (torch.float64 if dtype == np.float64 else torch.float32) or (
            lib is cg and out.dtype == np.float32)
        values = out.detach().numpy() if lib is torch else out.numpy()
        found.append([np.asarray(values, np.float64)]
                     + [np.asarray(i.grad.numpy(), np.float64) for i in ins])
    exact, theirs, ours = found
    for e, t, o in zip(exact, theirs, ours):
        scale = np.linalg.norm(e)
        t_err, o_err = np.linalg.norm(t - e) / scale, np.linalg.norm(o - e) / scale
        assert o_err <= 2 * max(t_err, 2.0 ** -24), (name, o_err, t_err)


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0)])
def test_empty_batches_and_matrices(shape):
    for name in ("inv", "det", "svdvals", "eigvalsh", "pinv", "norm"):
        got = getattr(LA, name)(cg.zeros(*shape, dtype=cg.float64))
        want = getattr(torch.linalg, name)(torch.zeros(*shape, dtype=torch.float64))
        assert tuple(got.shape) == tuple(want.shape), name
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = LA.qr(cg.zeros(*shape, dtype=cg.float64))
    want = torch.linalg.qr(torch.zeros(*shape, dtype=torch.float64))
    assert [tuple(g.shape) for g in got] == [tuple(w.shape) for w in want]


def test_import_paths():
    import importlib

    assert importlib.import_module("convgrad.linalg") is cg.linalg
    assert cg.linalg.inv is LA.inv


def _legacy_svd(lib, some=True):
    def fn(t):
        u, s, v = lib.svd(t, some)
        k = s.shape[-1]
        return u[..., :k] ** 2, s, v[..., :k] ** 2
    return fn


@pytest.mark.filterwarnings("ignore:torch.(cholesky|qr|svd) is deprecated")
def test_top_level_forms():
    a, spd = _general(2, 3, 3), _spd(3, 3)
    _check(torch.det, cg.det, a)
    _check(torch.logdet, cg.logdet, a)
    _check(torch.slogdet, cg.slogdet, a)
    _check(torch.inverse, cg.inverse, a)
    _check(torch.cholesky, cg.cholesky, spd)
    _check(lambda t: torch.cholesky(t, True), lambda t: cg.cholesky(t, True), spd)
    _check(lambda t: torch.matrix_power(t, 3), lambda t: cg.matrix_power(t, 3), a)
    wide = RNG.standard_normal((4, 3))
    _check(torch.pinverse, cg.pinverse, wide)
    _check(torch.qr, cg.qr, wide)
    _check(lambda t: torch.qr(t, False), lambda t: cg.qr(t, False), wide.T.copy())
    _check(_legacy_svd(torch), _legacy_svd(cg), wide, tol=1e-9)
    _check(_legacy_svd(torch, False), _legacy_svd(cg, False), wide, tol=1e-9)
    got, want = cg.svd(cg.tensor(wide), compute_uv=False), torch.svd(torch.tensor(wide),
                                                                     compute_uv=False)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-12)
    neg = np.diag([1.0, -2.0, 3.0])
    assert np.isnan(cg.logdet(cg.tensor(neg)).item()) and np.isnan(
        torch.logdet(torch.tensor(neg)).item())
