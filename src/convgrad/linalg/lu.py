"""The LU decomposition with partial pivoting ``A = P L U``: ``lu_factor``,
``lu_factor_ex``, ``lu``, ``lu_solve``, torch's top-level ``lu_unpack`` and ``solve_ex``
(whose singular matrices are solved through the LU) (batched over
leading dims; pivots int32 and 1-based, as LAPACK's and torch's)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, args
from . import _checks as C
from .basic import _per_matrix_info, _same_dtype, solve
from .functions import LUFactor
from .solvers import broadcast_batch, solve_triangular

__all__ = ["lu", "lu_factor", "lu_factor_ex", "lu_solve", "lu_unpack", "solve_ex"]


def _getrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK ``getrf`` of each matrix: packed LU, 0-based pivots (int32), info (int32)."""
    from scipy.linalg import lapack

    m, n = a.shape[-2:]
    k = min(m, n)
    flat = a.reshape(-1, m, n)
    lu = np.empty(flat.shape, a.dtype)
    piv = np.zeros((len(flat), k), np.int32)
    info = np.zeros(len(flat), np.int32)
    if k:
        func = lapack.get_lapack_funcs("getrf", (flat[:1],))
        for i, mat in enumerate(flat):
            lu[i], p, info[i] = func(mat)
            piv[i] = p[:k]
    else:
        lu[...] = flat
    batch = a.shape[:-2]
    return lu.reshape(a.shape), piv.reshape(*batch, k), info.reshape(batch)


def _permutation(piv0: np.ndarray, m: int, dtype: Any) -> np.ndarray:
    """The permutation matrices P (``A = P L U``) of 0-based LAPACK pivots ``(*, k)``."""
    batch = piv0.shape[:-1]
    flat = piv0.reshape(-1, piv0.shape[-1])
    out = np.zeros((len(flat), m, m), dtype)
    for b, row in enumerate(flat):
        order = np.arange(m)
        for i, p in enumerate(row):
            order[i], order[p] = order[p], order[i]
        out[b, order, np.arange(m)] = 1  # P^T A = A[order]: P's column j is e_order[j]
    return out.reshape(*batch, m, m)


def _pivot_arg(fn: str, pivot: Any) -> None:
    if not args.flag(fn, "pivot", pivot):
        raise ValueError(f"{fn}: pivot=False (LU without pivoting) is not implemented on the "
                         "CPU (as torch); expected pivot=True")


def lu_factor_ex(A: Tensor, *, pivot: bool = True,
                 check_errors: bool = False) -> C.lu_factor_ex:
    """``(LU, pivots, info)``: the packed factors of ``A = P L U`` (L unit lower under the
    diagonal, U upper on and above it), the 1-based int32 row interchanges (k = min(m, n)
    of them) and ``info`` (0, or the 1-based index of the first zero on U's diagonal).
    Differentiable in A for square matrices (as torch's formula)."""
    fn = "linalg.lu_factor_ex"
    A = C.matrix(fn, "A", A)
    _pivot_arg(fn, pivot)
    check_errors = args.flag(fn, "check_errors", check_errors)
    lu, piv, info = _getrf(np.ascontiguousarray(A.data))
    if check_errors:
        C.check_info(fn, info, "singular (a zero pivot)")
    perm = _permutation(piv, A.shape[-2], A.dtype)
    packed = LUFactor.apply(A, lu=lu, perm=perm)
    return C.lu_factor_ex(packed, Tensor._wrap(piv + 1), Tensor._wrap(info))


def lu_factor(A: Tensor, *, pivot: bool = True) -> C.lu_factor:
    """``(LU, pivots)`` as :func:`lu_factor_ex`; a matrix with a zero on U's diagonal
    (singular) raises :class:`LinAlgError` (as torch: use ``lu_factor_ex`` or ``lu``)."""
    fn = "linalg.lu_factor"
    LU, pivots, info = lu_factor_ex(C.matrix(fn, "A", A), pivot=pivot)
    if np.any(info.data > 0):
        where = np.argwhere(np.atleast_1d(info.data) > 0)[0]
        i = int(np.atleast_1d(info.data)[tuple(where)]) - 1
        batch = f" (batch index {tuple(int(j) for j in where)})" if info.ndim else ""
        raise C.LinAlgError(f"{fn}: U[{i},{i}]{batch} is zero (the matrix is singular) and "
                            "lu_solve would divide by it; use linalg.lu_factor_ex or "
                            "linalg.lu to factor it anyway")
    return C.lu_factor(LU, pivots)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,  # noqa: N803
              unpack_pivots: bool = True) -> C.lu:
    """``torch.lu_unpack``: ``(P, L, U)`` from ``lu_factor``'s results: P ``(*, m, m)``,
    L ``(*, m, k)`` unit lower, U ``(*, k, n)`` upper (k = min(m, n)); each part not
    unpacked is an empty Tensor.  Differentiable in LU_data."""
    fn = "lu_unpack"
    LU = C.matrix(fn, "LU_data", LU_data)
    unpack_data = args.flag(fn, "unpack_data", unpack_data)
    unpack_pivots = args.flag(fn, "unpack_pivots", unpack_pivots)
    piv = _pivots(fn, LU_pivots, LU, "LU_pivots")
    m, n = LU.shape[-2:]
    k = min(m, n)
    empty = Tensor._wrap(np.zeros((0,), LU.dtype))
    P = (Tensor._wrap(_permutation(piv - 1, m, LU.dtype)) if unpack_pivots else empty)
    if not unpack_data:
        return C.lu(P, empty, empty)
    eye = Tensor._wrap(np.eye(m, k, dtype=LU.dtype))
    L = LU.narrow(-1, 0, k).tril(-1) + eye
    U = LU.narrow(-2, 0, k).triu()
    return C.lu(P, L, U)


def _pivots(fn: str, pivots: Any, LU: Tensor, name: str) -> np.ndarray:  # noqa: N803
    if not isinstance(pivots, Tensor) or pivots.dtype not in (np.int32, np.int64):
        raise TypeError(f"{fn}: {name} must be an int32 Tensor (lu_factor's pivots), got "
                        f"{getattr(pivots, 'dtype', type(pivots).__name__)}")
    k = min(LU.shape[-2:])
    if tuple(pivots.shape) != (*LU.shape[:-2], k):
        raise ValueError(f"{fn}: {name} has shape {tuple(pivots.shape)}; expected "
                         f"{(*LU.shape[:-2], k)} for LU of shape {tuple(LU.shape)}")
    piv = np.asarray(pivots.data, np.int64)
    if piv.size and (piv.min() < 1 or piv.max() > LU.shape[-2]):
        raise ValueError(f"{fn}: {name} must lie in [1, {LU.shape[-2]}] (1-based row "
                         f"indices), got values from {piv.min()} to {piv.max()}")
    return piv


def lu(A: Tensor, *, pivot: bool = True) -> C.lu:
    """``(P, L, U)`` with ``A = P L U``: P a permutation, L ``(*, m, k)`` unit lower, U
    ``(*, k, n)`` upper.  Differentiable in A for square matrices (torch's formula); a
    singular matrix is factored too."""
    LU, pivots, _ = lu_factor_ex(C.matrix("linalg.lu", "A", A), pivot=pivot)
    return lu_unpack(LU, pivots)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,  # noqa: N803
             adjoint: bool = False) -> Tensor:
    """The solution X of ``A X = B`` from A's ``lu_factor`` results: ``A^T X = B`` with
    ``adjoint``, ``X A = B`` (``X A^T = B``) with ``left=False``.  Differentiable in B and
    in LU (L's strict lower triangle and U's upper triangle, as torch's)."""
    fn = "linalg.lu_solve"
    LU = C.square(fn, "LU", LU)
    B = C.as_float(fn, "B", B)
    _same_dtype(fn, LU, B)
    left = args.flag(fn, "left", left)
    adjoint = args.flag(fn, "adjoint", adjoint)
    piv = _pivots(fn, pivots, LU, "pivots")
    if B.ndim < 2:
        raise ValueError(f"{fn}: B must have at least 2 dimensions (a batch of matrices), "
                         f"got shape {tuple(B.shape)}")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT
    LU, B = broadcast_batch(fn, LU, B, "LU", "B")
    P = Tensor._wrap(_permutation(piv - 1, LU.shape[-1], LU.dtype))
    if adjoint:  # U^T L^T P^T X = B
        y = solve_triangular(LU.mT, B, upper=False)
        y = solve_triangular(LU.mT, y, upper=True, unitriangular=True)
        return P @ y
    y = solve_triangular(LU, P.mT @ B, upper=False, unitriangular=True)
    return solve_triangular(LU, y, upper=True)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True,
             check_errors: bool = False) -> C.solve_ex:
    """``(result, info)``: ``info`` (int32, A's batch shape) 0 where A is invertible, else
    the 1-based index of the zero pivot; then the result is not finite (where it holds
    inf/NaN, as torch's).  With ``check_errors`` a singular A raises."""
    fn = "linalg.solve_ex"
    A = C.square(fn, "A", A)
    check_errors = args.flag(fn, "check_errors", check_errors)
    info = _per_matrix_info(A.data, "getrf")
    if check_errors:
        C.check_info(fn, info, "singular")
    if not np.any(info):
        return C.solve_ex(solve(A, B, left=left), Tensor._wrap(info))
    # some matrices are singular: their results through an LU that does not stop (inf/NaN)
    B = C.as_float(fn, "B", B)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    lu, pivots, _ = lu_factor_ex(A)
    X = lu_solve(lu, pivots, B.unsqueeze(-1) if vector else B, left=left)
    return C.solve_ex(X.squeeze(-1) if vector else X, Tensor._wrap(info))
