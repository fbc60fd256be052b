"""Linear solves beyond ``linalg.solve``: ``solve_triangular``, ``cholesky_solve`` (torch's
top-level form), ``tensorinv`` and ``tensorsolve``, batched over leading
dims (the batch dims of the two operands broadcast)."""

from __future__ import annotations

from math import prod
from numbers import Integral
from typing import Any

import numpy as np

from ..tensor import Tensor, args
from . import _checks as C
from .basic import _same_dtype, inv, solve
from .functions import CholeskySolve, SolveTriangular

__all__ = ["broadcast_batch", "cholesky_solve", "solve_triangular", "tensorinv", "tensorsolve"]


def broadcast_batch(fn: str, A: Tensor, B: Tensor, a_name: str = "A",
                    b_name: str = "B") -> tuple[Tensor, Tensor]:
    """A ``(*, n, n)`` and B ``(*, n, k)`` expanded to their common batch shape; B must
    have n rows."""
    n = A.shape[-1]
    if B.ndim < 2:
        raise ValueError(f"{fn}: {b_name} must have at least 2 dimensions (a batch of "
                         f"matrices), got shape {tuple(B.shape)}")
    if B.shape[-2] != n:
        raise ValueError(f"{fn}: {b_name} of shape {tuple(B.shape)} does not match "
                         f"{a_name} of shape {tuple(A.shape)}: expected {n} rows")
    try:
        batch = np.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]))
    except ValueError:
        raise ValueError(f"{fn}: the batch dims of {a_name} {tuple(A.shape)} and {b_name} "
                         f"{tuple(B.shape)} do not broadcast") from None
    if tuple(A.shape[:-2]) != batch:
        A = A.expand(*batch, n, n)
    if tuple(B.shape[:-2]) != batch:
        B = B.expand(*batch, *B.shape[-2:])
    return A, B


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``) for triangular A:
    only its upper (``upper=True``) or lower triangle is read, and its diagonal taken as
    ones where ``unitriangular``.  A zero on the diagonal gives inf/NaN (no error, as
    torch).  A's gradient lies in the triangle read (as torch's)."""
    fn = "linalg.solve_triangular"
    A = C.square(fn, "A", A)
    B = C.as_float(fn, "B", B)
    _same_dtype(fn, A, B)
    upper = args.flag(fn, "upper", upper)
    left = args.flag(fn, "left", left)
    unit = args.flag(fn, "unitriangular", unitriangular)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        if B.ndim >= 2 and B.shape[-1] != A.shape[-1]:
            raise ValueError(f"{fn}: B of shape {tuple(B.shape)} does not match A of shape "
                             f"{tuple(A.shape)} (left=False): expected {A.shape[-1]} columns")
        return solve_triangular(A.mT, B.mT if B.ndim >= 2 else B, upper=not upper,
                                unitriangular=unit).mT
    A, B = broadcast_batch(fn, A, B)
    return SolveTriangular.apply(A, B, upper=upper, unit=unit)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> C.triangular_solve:
    """``torch.triangular_solve``: ``(solution, cloned_coefficient)`` with the solution X
    of ``A X = b`` (``A^T X = b`` with ``transpose``) and a copy of A."""
    fn = "triangular_solve"
    A = C.square(fn, "A", A)
    upper = args.flag(fn, "upper", upper)
    transpose = args.flag(fn, "transpose", transpose)
    coef = A.mT if transpose else A
    x = solve_triangular(coef, C.as_float(fn, "b", b), upper=upper != transpose,
                         unitriangular=unitriangular)
    return C.triangular_solve(x, A.clone())


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky_solve``: the solution X of ``A X = B`` given the Cholesky factor of
    A: lower ``L`` (``A = L L^T``), or upper (``A = U^T U``) with ``upper=True``; only that
    triangle is read.  L's gradient is torch's (not restricted to the triangle)."""
    fn = "cholesky_solve"
    L = C.square(fn, "L", L)
    B = C.as_float(fn, "B", B)
    if L.dtype != B.dtype:
        raise TypeError(f"{fn}: B has dtype {B.dtype} and L has dtype {L.dtype}; expected "
                        "one dtype")
    upper = args.flag(fn, "upper", upper)
    low = L.mT if upper else L
    low, B = broadcast_batch(fn, low, B, "L", "B")
    return CholeskySolve.apply(B, low)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A read as a linear map from its first ``ind`` dims to the rest
    (their sizes' products equal): shape ``A.shape[ind:] + A.shape[:ind]``."""
    fn = "linalg.tensorinv"
    A = C.as_float(fn, "A", A)
    if isinstance(ind, bool) or not isinstance(ind, Integral) or ind <= 0:
        raise ValueError(f"{fn}: ind={ind!r} must be a strictly positive int")
    ind = int(ind)
    if ind > A.ndim:
        raise ValueError(f"{fn}: ind={ind} exceeds A's number of dims {A.ndim}")
    rows, cols = prod(A.shape[:ind]), prod(A.shape[ind:])
    if rows != cols:
        raise ValueError(f"{fn}: the product of A's first ind={ind} dims ({rows}) must equal "
                         f"that of the others ({cols}), got shape {tuple(A.shape)}")
    return inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])


def tensorsolve(A: Tensor, B: Tensor, dims: Any = None) -> Tensor:
    """The X with ``tensordot(A, X, X.ndim) = B``: A's leading dims are B's shape, the
    others X's (their sizes' products equal).  ``dims``: dims of A moved to the end
    first."""
    fn = "linalg.tensorsolve"
    A, B = C.as_float(fn, "A", A), C.as_float(fn, "B", B)
    _same_dtype(fn, A, B)
    if dims is not None:
        ds = args.dims(fn, dims, A.ndim)
        A = A.movedim(ds, tuple(range(A.ndim - len(ds), A.ndim)))
    if tuple(A.shape[:B.ndim]) != tuple(B.shape):
        raise ValueError(f"{fn}: A's leading dims {tuple(A.shape)} must be B's shape "
                         f"{tuple(B.shape)}")
    xshape = tuple(A.shape[B.ndim:])
    rows, cols = prod(B.shape), prod(xshape)
    if rows != cols:
        raise ValueError(f"{fn}: the product of B's dims ({rows}) must equal that of A's "
                         f"remaining dims {xshape} ({cols})")
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(*xshape)
