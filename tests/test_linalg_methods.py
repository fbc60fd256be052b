"""torch's linear-algebra Tensor methods (``A.det()``, ``A.inverse()``, ``L.cholesky_inverse()``,
...), which ``convgrad.linalg`` provides to the tensor layer.  Oracle: torch's same methods,
float64 values and gradients of a random weighting of every output."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import convgrad as cg

RNG = np.random.default_rng(42)


def _spd(n: int = 4, batch: tuple = ()) -> np.ndarray:
    a = RNG.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _lower(n: int = 4) -> np.ndarray:
    return np.linalg.cholesky(_spd(n))


def _outputs(r):
    return list(r) if isinstance(r, tuple) else [r]


def _compare(method, *arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    cs = [cg.tensor(a, requires_grad=True) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation notes for its older forms
        want, got = _outputs(method(*ts)), _outputs(method(*cs))
    assert len(want) == len(got)
    loss_t = loss_c = 0
    for w, g in zip(want, got):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
        if w.requires_grad:
            weight = RNG.standard_normal(tuple(w.shape))
            loss_t = loss_t + (w * torch.tensor(weight)).sum()
            loss_c = loss_c + (g * cg.tensor(weight)).sum()
    loss_t.backward()
    loss_c.backward()
    for t, c in zip(ts, cs):
        if t.grad is not None:
            np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name, method, make", [
    ("det", lambda a: a.det(), lambda: [_spd(3, (2,))]),
    ("logdet", lambda a: a.logdet(), lambda: [_spd()]),
    ("slogdet", lambda a: a.slogdet()[1], lambda: [_spd()]),
    ("inverse", lambda a: a.inverse(), lambda: [_spd(3, (2,))]),
    ("cholesky", lambda a: a.cholesky(), lambda: [_spd()]),
    ("cholesky upper", lambda a: a.cholesky(upper=True), lambda: [_spd()]),
    ("cholesky_solve", lambda b, L: b.cholesky_solve(L.tril()), lambda: [RNG.standard_normal(
        (4, 2)), _lower()]),
    ("cholesky_inverse", lambda L: L.tril().cholesky_inverse(), lambda: [_lower()]),
    ("cholesky_inverse upper", lambda U: U.triu().cholesky_inverse(upper=True),
     lambda: [_lower().T.copy()]),
    ("qr", lambda a: a.qr(), lambda: [RNG.standard_normal((5, 3))]),
    ("svd values", lambda a: a.svd()[1], lambda: [RNG.standard_normal((5, 3))]),
    ("pinverse", lambda a: a.pinverse(), lambda: [RNG.standard_normal((5, 3))]),
    ("matrix_power", lambda a: a.matrix_power(3), lambda: [RNG.standard_normal((3, 3))]),
    ("matrix_power -2", lambda a: a.matrix_power(-2), lambda: [_spd(3)]),
    ("matrix_exp", lambda a: a.matrix_exp(), lambda: [RNG.standard_normal((3, 3)) / 2]),
    ("triangular_solve", lambda b, a: b.triangular_solve(a.triu()),
     lambda: [RNG.standard_normal((3, 2)), _lower(3).T + np.eye(3)]),
])
def test_method_equals_torchs(name, method, make):
    _compare(method, *make())


def test_svd_reconstructs_and_has_torchs_convention():
    """``A.svd()`` is torch.svd's (U, S, V), V not transposed: A = U diag(S) V^T."""
    a = RNG.standard_normal((5, 3))
    u, s, v = cg.tensor(a).svd()
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().T, a, atol=1e-12)
    assert u.shape == (5, 3) and v.shape == (3, 3)
    assert tuple(cg.tensor(a).svd(some=False)[0].shape) == (5, 5)


def test_method_errors_name_the_argument():
    with pytest.raises(ValueError, match="square"):
        cg.tensor(RNG.standard_normal((2, 3))).det()
    with pytest.raises((TypeError, ValueError), match="int"):
        cg.tensor(_spd(3)).matrix_power(1.5)
