"""Argument checks shared by ``convgrad.linalg``: the error class, float inputs, matrices
(square or not, batched over leading dims), and the named tuples the functions return."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..tensor import Tensor

__all__ = ["LinAlgError", "as_float", "matrix", "square", "check_info"]


class LinAlgError(ValueError):
    """A matrix the operation cannot handle: singular (``inv``, ``solve``) or not positive
    definite (``cholesky``); torch's ``torch.linalg.LinAlgError``."""


def as_float(fn: str, name: str, x: Any) -> Tensor:
    """``x`` as a float32/float64 Tensor; an integer or bool Tensor is a TypeError."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}: {name} must be a Tensor, got {type(x).__name__}")
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"{fn}: {name} has dtype {x.dtype}; expected a float32 or float64 "
                        "Tensor")
    return x


def matrix(fn: str, name: str, x: Any) -> Tensor:
    """A float Tensor of at least 2 dims (a batch of matrices)."""
    x = as_float(fn, name, x)
    if x.ndim < 2:
        raise ValueError(f"{fn}: {name} must have at least 2 dimensions (a batch of "
                         f"matrices), got shape {tuple(x.shape)}")
    return x


def square(fn: str, name: str, x: Any) -> Tensor:
    """A float Tensor of square matrices (shape ``(*, n, n)``)."""
    x = matrix(fn, name, x)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{fn}: {name} must be a batch of square matrices, got shape "
                         f"{tuple(x.shape)}")
    return x


def check_info(fn: str, info: np.ndarray, what: str) -> None:
    """Raise :class:`LinAlgError` where some matrix failed (``info`` > 0)."""
    if np.any(info > 0):
        where = np.argwhere(np.atleast_1d(info) > 0)[0]
        batch = f" (batch index {tuple(int(i) for i in where)})" if info.ndim else ""
        raise LinAlgError(f"{fn}: the input matrix{batch} is {what}; the operation could "
                          "not be completed")


class slogdet(NamedTuple):  # noqa: N801 (torch.return_types' names)
    """``linalg.slogdet(A)``: the sign of the determinant and the log of its absolute value."""

    sign: Any
    logabsdet: Any


class inv_ex(NamedTuple):  # noqa: N801
    """``linalg.inv_ex(A)``: the inverse and ``info`` (0 where A is invertible)."""

    inverse: Any
    info: Any


class cholesky_ex(NamedTuple):  # noqa: N801
    """``linalg.cholesky_ex(A)``: the factor L and ``info`` (0, or the order of the first
    leading minor that is not positive definite)."""

    L: Any  # noqa: N815
    info: Any


class qr(NamedTuple):  # noqa: N801
    """``linalg.qr(A)``: Q and R."""

    Q: Any  # noqa: N815
    R: Any  # noqa: N815


class eigh(NamedTuple):  # noqa: N801
    """``linalg.eigh(A)``: ascending eigenvalues and the eigenvectors (columns)."""

    eigenvalues: Any
    eigenvectors: Any


class svd(NamedTuple):  # noqa: N801
    """``linalg.svd(A)``: U, S (descending) and Vh, with ``A = U diag(S) Vh``."""

    U: Any  # noqa: N815
    S: Any  # noqa: N815
    Vh: Any  # noqa: N815


class svd_v(NamedTuple):  # noqa: N801
    """``torch.svd(A)``: U, S and V (not transposed)."""

    U: Any  # noqa: N815
    S: Any  # noqa: N815
    V: Any  # noqa: N815


class lstsq(NamedTuple):  # noqa: N801
    """``linalg.lstsq(A, B)``: the solution, the squared residuals, the rank and the
    singular values (the last three empty where the driver does not compute them)."""

    solution: Any
    residuals: Any
    rank: Any
    singular_values: Any


class solve_ex(NamedTuple):  # noqa: N801
    """``linalg.solve_ex(A, B)``: the solution and ``info`` (0 where A is invertible)."""

    result: Any
    info: Any


class triangular_solve(NamedTuple):  # noqa: N801
    """``torch.triangular_solve(b, A)``: the solution and a copy of A."""

    solution: Any
    cloned_coefficient: Any


class lu_factor(NamedTuple):  # noqa: N801
    """``linalg.lu_factor(A)``: the packed factors and the (1-based, int32) pivots."""

    LU: Any  # noqa: N815
    pivots: Any


class lu_factor_ex(NamedTuple):  # noqa: N801
    """``linalg.lu_factor_ex(A)``: ``lu_factor``'s results and ``info`` (0, or the 1-based
    index of the first zero pivot)."""

    LU: Any  # noqa: N815
    pivots: Any
    info: Any


class lu(NamedTuple):  # noqa: N801
    """``linalg.lu(A)`` and ``lu_unpack``: P, L and U with ``A = P L U``."""

    P: Any  # noqa: N815
    L: Any  # noqa: N815
    U: Any  # noqa: N815
