"""Decompositions and what is computed from them: ``qr``, ``eigh``, ``eigvalsh``,
``svd``, ``svdvals``, ``pinv``, ``matrix_rank``, ``lstsq`` (batched over leading dims).
The gradients of eigen- and singular vectors are torch's: defined for distinct
eigenvalues / singular values only."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, args, cat
from . import _checks as C
from .functions import QR, Eigh, Pinv, Svd, cutoff, unpack

__all__ = ["eigh", "eigvalsh", "lstsq", "matrix_rank", "pinv", "qr", "svd", "svdvals"]

_QR_MODES = ("reduced", "complete", "r")


def qr(A: Tensor, mode: str = "reduced") -> C.qr:
    """``(Q, R)`` with ``A = Q R``, Q orthonormal columns, R upper triangular.  ``mode``
    'reduced' (k = min(m, n) columns of Q), 'complete' (Q m x m) or 'r' (Q empty).
    Differentiable except for 'complete' with m > n (as torch); a wide A (m < n) is
    ``[X | Y]`` with X square: ``Q, U = qr(X)``, ``R = [U | Q^T Y]``."""
    fn = "linalg.qr"
    A = C.matrix(fn, "A", A)
    if mode not in _QR_MODES:
        raise ValueError(f"{fn}: mode={mode!r} is not supported; expected 'reduced', "
                         "'complete' or 'r'")
    m, n = A.shape[-2:]
    if m < n:
        q, u = qr(A.narrow(-1, 0, m))
        r = cat([u, q.mT @ A.narrow(-1, m, n - m)], -1)
    else:
        packed = QR.apply(A, mode="complete" if mode == "complete" else "reduced")
        q, r = unpack(packed, _qr_shapes(m, n, mode))
    if mode == "r":
        q = Tensor._wrap(np.zeros((0,), A.dtype))
    return C.qr(q, r)


def _qr_shapes(m: int, n: int, mode: str) -> list[tuple]:
    k = m if mode == "complete" else min(m, n)
    return [(m, k), (k, n)]


def eigh(A: Tensor, UPLO: str = "L") -> C.eigh:  # noqa: N803 (torch's name)
    """``(eigenvalues, eigenvectors)`` of each symmetric matrix (read from its ``UPLO``
    triangle, 'L' or 'U'): ascending eigenvalues, eigenvectors as columns."""
    fn = "linalg.eigh"
    A = C.square(fn, "A", A)
    if UPLO not in ("L", "U"):
        raise ValueError(f"{fn}: UPLO={UPLO!r} must be 'L' or 'U'")
    n = A.shape[-1]
    v, w = unpack(Eigh.apply(A, uplo=UPLO), [(n, n), (n,)])
    return C.eigh(w, v)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The ascending eigenvalues of each symmetric matrix (its ``UPLO`` triangle)."""
    return eigh(A, UPLO).eigenvalues


def svd(A: Tensor, full_matrices: bool = True, *, driver: Any = None) -> C.svd:
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, S descending; ``full_matrices=False``
    keeps k = min(m, n) columns of U and rows of Vh.  ``driver`` (CUDA only in torch) must
    be None."""
    fn = "linalg.svd"
    A = C.matrix(fn, "A", A)
    full_matrices = args.flag(fn, "full_matrices", full_matrices)
    if driver is not None:
        raise ValueError(f"{fn}: driver={driver!r} is supported on CUDA inputs only; "
                         "expected None")
    m, n = A.shape[-2:]
    k = min(m, n)
    shapes = [(m, m), (k,), (n, n)] if full_matrices else [(m, k), (k,), (k, n)]
    return C.svd(*unpack(Svd.apply(A, full_matrices=full_matrices), shapes))


def svdvals(A: Tensor, *, driver: Any = None) -> Tensor:
    """The singular values of each matrix, descending (gradient ``U diag(gS) Vh``)."""
    return svd(A, full_matrices=False, driver=driver).S


def _tolerance(fn: str, name: str, value: Any, batch: tuple, dtype: np.dtype) -> np.ndarray:
    if isinstance(value, Tensor):
        value = value.data
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{fn}: {name}={value!r} must be a float or a Tensor")
    arr = np.asarray(value, dtype)
    try:
        return np.broadcast_to(arr, batch)
    except ValueError:
        raise ValueError(f"{fn}: {name} of shape {arr.shape} does not broadcast to the "
                         f"batch shape {batch}") from None


def _tolerances(fn: str, A: Tensor, atol: Any, rtol: Any) -> tuple[np.ndarray, np.ndarray]:
    """torch's rule: rtol defaults to eps * max(m, n) when atol is None or 0, else 0."""
    batch = tuple(A.shape[:-2])
    a = _tolerance(fn, "atol", 0.0 if atol is None else atol, batch, A.dtype)
    if rtol is None:
        eps = np.finfo(A.dtype).eps * max(A.shape[-2:])
        r = np.where(a > 0, 0.0, eps).astype(A.dtype) if atol is not None else np.full(
            batch, eps, A.dtype)
    else:
        r = _tolerance(fn, "rtol", rtol, batch, A.dtype)
    return a, r


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse; singular values at most ``max(atol, rtol *
    s_max)`` count as zero (defaults as torch's).  The gradient holds where the rank is
    constant."""
    fn = "linalg.pinv"
    A = C.matrix(fn, "A", A)
    hermitian = args.flag(fn, "hermitian", hermitian)
    if hermitian and A.shape[-1] != A.shape[-2]:
        raise ValueError(f"{fn}: hermitian=True needs square matrices, got shape "
                         f"{tuple(A.shape)}")
    a, r = _tolerances(fn, A, atol, rtol)
    return Pinv.apply(A, atol=a, rtol=r, hermitian=hermitian)


def matrix_rank(A: Tensor, *, atol: Any = None, rtol: Any = None,
                hermitian: bool = False) -> Tensor:
    """The number of singular values above ``max(atol, rtol * s_max)`` (int64)."""
    fn = "linalg.matrix_rank"
    A = C.matrix(fn, "A", A)
    hermitian = args.flag(fn, "hermitian", hermitian)
    a, r = _tolerances(fn, A, atol, rtol)
    if hermitian:
        s = np.sort(np.abs(np.linalg.eigvalsh(A.data)), axis=-1)[..., ::-1]
    else:
        s = np.linalg.svd(A.data, compute_uv=False)
    return Tensor._wrap(np.asarray((s > cutoff(s, a, r)).sum(-1), np.int64))


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *,
          driver: str | None = None) -> C.lstsq:
    """The least-squares solution X of ``A X = B`` (minimum norm where A is rank
    deficient), as ``torch.linalg.lstsq`` on the CPU: ``(solution, residuals, rank,
    singular_values)``.  ``residuals`` (the squared residual of each column) where m > n,
    A has full rank and the driver is not 'gelsy'; ``rank`` for every driver but 'gels';
    ``singular_values`` for 'gelsd' and 'gelss'; the others are empty.  The solution is
    ``pinv(A) @ B`` (singular values at most ``rcond * s_max`` dropped; default
    eps * max(m, n)), differentiable through both."""
    fn = "linalg.lstsq"
    A = C.matrix(fn, "A", A)
    B = C.as_float(fn, "B", B)
    if A.dtype != B.dtype:
        raise TypeError(f"{fn}: A has dtype {A.dtype} and B has dtype {B.dtype}; expected "
                        "one dtype")
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise ValueError(f"{fn}: driver={driver!r} is not supported; expected one of "
                         f"{', '.join(_DRIVERS)} or None")
    if rcond is not None and (isinstance(rcond, bool) or not isinstance(rcond, int | float)):
        raise TypeError(f"{fn}: rcond={rcond!r} must be a float or None")
    if not (B.ndim == A.ndim or B.ndim == A.ndim - 1):
        raise ValueError(f"{fn}: B must have A.ndim or A.ndim - 1 dims, got shapes "
                         f"{tuple(A.shape)} and {tuple(B.shape)}")
    vector = B.ndim == A.ndim - 1
    if vector:
        B = B.unsqueeze(-1)
    m, n = A.shape[-2:]
    if B.shape[-2] != m:
        raise ValueError(f"{fn}: B must have {m} rows (as A of shape {tuple(A.shape)}), got "
                         f"shape {tuple(B.shape)}")
    a, r = _tolerances(fn, A, None if rcond is None or rcond < 0 else 0.0,
                       None if rcond is None or rcond < 0 else rcond)
    X = Pinv.apply(A, atol=a, rtol=r, hermitian=False) @ B
    s = np.linalg.svd(A.data, compute_uv=False)
    rank = (s > cutoff(s, a, r)).sum(-1).astype(np.int64)
    empty = Tensor._wrap(np.zeros((0,), A.dtype))
    if driver != "gelsy" and m > n and np.all(rank == n):
        residuals = ((A @ X - B) ** 2).sum(-2)
        if vector:
            residuals = residuals.squeeze(-1)
    else:
        residuals = empty
    rank_t = (Tensor._wrap(np.asarray(rank)) if driver != "gels"
              else Tensor._wrap(np.zeros((0,), np.int64)))
    sv = Tensor._wrap(s) if driver in ("gelsd", "gelss") else empty
    return C.lstsq(X.squeeze(-1) if vector else X, residuals, rank_t, sv)
