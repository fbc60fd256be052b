"""Inverses, determinants, linear solves, the Cholesky factor and matrix products:
``inv``, ``inv_ex``, ``det``, ``slogdet``, ``logdet``, ``solve``, ``cholesky``,
``cholesky_ex``, ``matrix_power``, ``multi_dot``, ``cross``, ``vecdot``, ``diagonal``,
each batched over leading dims as torch.linalg's."""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from ..tensor import Tensor, args, cat
from . import _checks as C
from .functions import Cholesky, Det, Inv, LogAbsDet, Solve

__all__ = ["cholesky", "cholesky_ex", "cross", "det", "diagonal", "inv", "inv_ex", "logdet",
           "matrix_power", "multi_dot", "slogdet", "solve", "vecdot"]


def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix; a singular one is a :class:`LinAlgError`."""
    return Inv.apply(C.square("linalg.inv", "A", A))


def _per_matrix_info(a: np.ndarray, routine: str) -> np.ndarray:
    """LAPACK's ``info`` of ``getrf`` / ``potrf`` for each matrix of a batch (int32)."""
    from scipy.linalg import lapack

    flat = a.reshape(-1, *a.shape[-2:])
    func = lapack.get_lapack_funcs(routine, (flat,))
    info = np.zeros(len(flat), np.int32)
    for i, m in enumerate(flat):
        info[i] = func(m, lower=True)[-1] if routine == "potrf" else func(m)[-1]
    return info.reshape(a.shape[:-2])


def inv_ex(A: Tensor, *, check_errors: bool = False) -> C.inv_ex:
    """``(inverse, info)``: ``info`` 0 where a matrix is invertible, else the (1-based)
    index of the zero pivot; with ``check_errors`` a singular matrix raises."""
    A = C.square("linalg.inv_ex", "A", A)
    info = _per_matrix_info(A.data, "getrf")
    if check_errors:
        C.check_info("linalg.inv_ex", info, "singular")
    if not np.any(info):
        return C.inv_ex(Inv.apply(A), Tensor._wrap(info))
    flat = A.data.reshape(-1, *A.shape[-2:])
    out = np.full(flat.shape, np.nan, flat.dtype)
    for i, bad in enumerate(info.reshape(-1)):
        if not bad:
            out[i] = np.linalg.inv(flat[i])
    return C.inv_ex(Tensor._wrap(out.reshape(A.shape)), Tensor._wrap(info))


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix (the gradient needs an invertible one)."""
    return Det.apply(C.square("linalg.det", "A", A))


def slogdet(A: Tensor) -> C.slogdet:
    """``(sign, logabsdet)`` of the determinant: sign 0 and logabsdet -inf where A is
    singular.  The gradient flows through ``logabsdet`` (``A^-T``)."""
    A = C.square("linalg.slogdet", "A", A)
    sign = np.asarray(np.linalg.slogdet(A.data)[0], A.dtype)
    return C.slogdet(Tensor._wrap(sign), LogAbsDet.apply(A))


def logdet(A: Tensor) -> Tensor:
    """``log(det A)``, as ``torch.logdet``: NaN where the determinant is negative, -inf
    where it is 0."""
    sign, logabs = slogdet(A)
    nan = np.where(sign.data < 0, np.nan, 0.0).astype(A.dtype)
    return logabs + Tensor._wrap(nan)


def _same_dtype(fn: str, a: Tensor, b: Tensor) -> None:
    if a.dtype != b.dtype:
        raise TypeError(f"{fn}: A has dtype {a.dtype} and B has dtype {b.dtype}; expected "
                        "one dtype")


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``).  B is a batch of
    vectors ``(*, n)`` when it is 1-D or has the shape ``A.shape[:-1]``, else of matrices
    ``(*, n, k)``; the batch dims broadcast."""
    fn = "linalg.solve"
    A = C.square(fn, "A", A)
    B = C.as_float(fn, "B", B)
    _same_dtype(fn, A, B)
    left = args.flag(fn, "left", left)
    n = A.shape[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        if not left:
            raise ValueError(f"{fn}: left=False needs B of shape (*, k, n), got shape "
                             f"{tuple(B.shape)}")
        B = B.unsqueeze(-1)
    elif B.ndim < 2:
        raise ValueError(f"{fn}: B must have at least 1 dimension, got shape "
                         f"{tuple(B.shape)}")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return solve(A.mT, B.mT).mT
    if B.shape[-2] != n:
        raise ValueError(f"{fn}: B of shape {tuple(B.shape[:-1] if vector else B.shape)} "
                         f"does not match A of shape {tuple(A.shape)}: expected {n} rows")
    try:
        batch = np.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]))
    except ValueError:
        raise ValueError(f"{fn}: the batch dims of A {tuple(A.shape)} and B "
                         f"{tuple(B.shape)} do not broadcast") from None
    if tuple(A.shape[:-2]) != batch:
        A = A.expand(*batch, n, n)
    if tuple(B.shape[:-2]) != batch:
        B = B.expand(*batch, *B.shape[-2:])
    X = Solve.apply(A, B)
    return X.squeeze(-1) if vector else X


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of each symmetric positive-definite matrix: lower L with
    ``A = L L^T`` (read from A's lower triangle), or upper ``U = L^T`` with ``upper=True``
    (read from the upper triangle).  A matrix that is not positive definite is a
    :class:`LinAlgError`."""
    A = C.square("linalg.cholesky", "A", A)
    if args.flag("linalg.cholesky", "upper", upper):
        return Cholesky.apply(A.mT).mT
    return Cholesky.apply(A)


def cholesky_ex(A: Tensor, *, upper: bool = False,
                check_errors: bool = False) -> C.cholesky_ex:
    """``(L, info)``: ``info`` 0 where the factorization succeeded, else the order of the
    leading minor that is not positive definite; with ``check_errors`` that raises."""
    fn = "linalg.cholesky_ex"
    A = C.square(fn, "A", A)
    upper = args.flag(fn, "upper", upper)
    src = A.mT if upper else A
    info = _per_matrix_info(src.data, "potrf")
    if check_errors:
        C.check_info(fn, info, "not positive definite")
    if not np.any(info):
        return C.cholesky_ex(cholesky(A, upper=upper), Tensor._wrap(info))
    from scipy.linalg import lapack

    flat = np.ascontiguousarray(src.data).reshape(-1, *A.shape[-2:])
    func = lapack.get_lapack_funcs("potrf", (flat,))
    out = np.stack([np.tril(func(m, lower=True)[0]) for m in flat]).reshape(A.shape)
    low = Tensor._wrap(out)
    return C.cholesky_ex(low.mT if upper else low, Tensor._wrap(info))


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times (by repeated squaring); ``n = 0`` the identity,
    ``n < 0`` the power of the inverse."""
    fn = "linalg.matrix_power"
    A = C.square(fn, "A", A)
    if isinstance(n, bool) or not isinstance(n, Integral):
        raise TypeError(f"{fn}: n={n!r} must be an int")
    n = int(n)
    if n == 0:
        return A * 0.0 + Tensor._wrap(np.eye(A.shape[-1], dtype=A.dtype))
    base = inv(A) if n < 0 else A
    n = abs(n)
    out = None
    while n:
        if n & 1:
            out = base if out is None else out @ base
        n >>= 1
        if n:
            base = base @ base
    return out.clone() if out is A else out


def multi_dot(tensors: Any) -> Tensor:
    """The product of two or more matrices; the first may be a 1-D row vector and the last
    a 1-D column vector, the others 2-D."""
    fn = "linalg.multi_dot"
    try:
        ts = list(tensors)
    except TypeError:
        raise TypeError(f"{fn}: tensors must be a sequence of Tensors") from None
    if len(ts) < 2:
        raise ValueError(f"{fn}: expected at least 2 tensors, got {len(ts)}")
    ts = [C.as_float(fn, f"tensors[{i}]", t) for i, t in enumerate(ts)]
    for i, t in enumerate(ts):
        ok = (1, 2) if i in (0, len(ts) - 1) else (2,)
        if t.ndim not in ok:
            raise ValueError(f"{fn}: tensors[{i}] must be "
                             f"{'1-D or 2-D' if len(ok) == 2 else '2-D'}, got shape "
                             f"{tuple(t.shape)}")
        if t.dtype != ts[0].dtype:
            raise TypeError(f"{fn}: tensors[{i}] has dtype {t.dtype}, expected "
                            f"{ts[0].dtype} (one dtype for all)")
    first, last = ts[0].ndim == 1, ts[-1].ndim == 1
    if first:
        ts[0] = ts[0].unsqueeze(0)
    if last:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i in range(1, len(ts)):
        if ts[i - 1].shape[-1] != ts[i].shape[0]:
            raise ValueError(f"{fn}: tensors[{i - 1}] and tensors[{i}] cannot be multiplied "
                             f"(shapes {tuple(ts[i - 1].shape)} and {tuple(ts[i].shape)})")
    out = ts[0]
    for t in ts[1:]:
        out = out @ t
    if last:
        out = out.squeeze(-1)
    if first:
        out = out.squeeze(0)
    return out


def _broadcast(fn: str, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    try:
        shape = np.broadcast_shapes(tuple(x.shape), tuple(y.shape))
    except ValueError:
        raise ValueError(f"{fn}: the shapes {tuple(x.shape)} and {tuple(y.shape)} do not "
                         "broadcast") from None
    return x.expand(*shape), y.expand(*shape)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (inputs of one ndim; they
    broadcast)."""
    fn = "linalg.cross"
    a, b = C.as_float(fn, "input", input), C.as_float(fn, "other", other)
    if a.ndim != b.ndim:
        raise ValueError(f"{fn}: input and other must have the same number of dims, got "
                         f"shapes {tuple(a.shape)} and {tuple(b.shape)}")
    a, b = _broadcast(fn, a, b)
    d = args.dim(fn, dim, a.ndim)
    if a.shape[d] != 3:
        raise ValueError(f"{fn}: dim={dim} has size {a.shape[d]}; expected 3")
    a1, a2, a3 = (a.narrow(d, i, 1) for i in range(3))
    b1, b2, b3 = (b.narrow(d, i, 1) for i in range(3))
    return cat([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], d)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of vectors along ``dim`` (the inputs broadcast)."""
    fn = "linalg.vecdot"
    x, y = _broadcast(fn, C.as_float(fn, "x", x), C.as_float(fn, "y", y))
    return (x * y).sum(args.dim(fn, dim, x.ndim))


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonal (``offset`` above it, below where negative) of the matrices in the
    dims ``dim1`` and ``dim2`` (a view, as ``torch.linalg.diagonal``)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.diagonal: A must be a Tensor, got {type(A).__name__}")
    return A.diagonal(offset, dim1, dim2)
