"""torch's older top-level forms of the linear-algebra functions, for ``cg.<name>``:
``det``, ``logdet``, ``slogdet``, ``inverse``, ``cholesky``, ``qr`` (``some``), ``svd``
(``(U, S, V)``, ``some``, ``compute_uv``), ``pinverse`` (``rcond``), ``matrix_power``,
``matrix_exp``, ``triangular_solve``, ``cholesky_solve``, ``lu_unpack``."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor, args
from . import _checks as C
from . import basic, decompositions
from .lu import lu_unpack
from .matrix_functions import matrix_exp
from .solvers import cholesky_solve, triangular_solve

__all__ = ["cholesky", "cholesky_solve", "det", "inverse", "logdet", "lu_unpack", "matrix_exp",
           "matrix_power", "pinverse", "qr", "slogdet", "svd", "triangular_solve"]

det = basic.det
logdet = basic.logdet
slogdet = basic.slogdet
matrix_power = basic.matrix_power


def inverse(input: Tensor) -> Tensor:
    """``torch.inverse``: ``linalg.inv``."""
    return basic.inv(input)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky``: ``linalg.cholesky`` with ``upper`` positional."""
    return basic.cholesky(input, upper=upper)


def qr(input: Tensor, some: bool = True) -> C.qr:
    """``torch.qr``: ``linalg.qr`` in mode 'reduced' (``some``) or 'complete'."""
    some = args.flag("qr", "some", some)
    return decompositions.qr(input, "reduced" if some else "complete")


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> C.svd_v:
    """``torch.svd``: ``(U, S, V)`` with ``A = U diag(S) V^T`` (V, not Vh); ``some`` keeps
    min(m, n) columns; without ``compute_uv`` U and V are square zero matrices (as torch)."""
    some = args.flag("svd", "some", some)
    if not args.flag("svd", "compute_uv", compute_uv):
        A = C.matrix("svd", "input", input)
        m, n = A.shape[-2:]
        batch = tuple(A.shape[:-2])
        return C.svd_v(Tensor._wrap(np.zeros((*batch, m, m), A.dtype)),
                       decompositions.svdvals(A),
                       Tensor._wrap(np.zeros((*batch, n, n), A.dtype)))
    u, s, vh = decompositions.svd(input, full_matrices=not some)
    return C.svd_v(u, s, vh.mT)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``linalg.pinv`` with ``rtol=rcond``."""
    return decompositions.pinv(input, rtol=rcond)
