"""``convgrad.linalg``: PyTorch's ``torch.linalg`` for real float32/float64 Tensors,
batched over leading dims, with gradients (of every order where torch has them).

Modules: ``norms`` (``vector_norm``, ``matrix_norm``, ``norm``), ``basic`` (``inv``,
``inv_ex``, ``det``, ``slogdet``, ``solve``, ``cholesky``, ``cholesky_ex``,
``matrix_power``, ``multi_dot``, ``cross``, ``vecdot``, ``diagonal``), ``decompositions``
(``qr``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals``, ``pinv``, ``matrix_rank``,
``lstsq``), ``functions`` (their autograd Functions: NumPy/LAPACK values, gradients
written with Tensor operations) and ``_checks`` (argument checks, :class:`LinAlgError`,
the named tuples).
"""

from __future__ import annotations

from ._checks import LinAlgError
from .basic import (
    cholesky,
    cholesky_ex,
    cross,
    det,
    diagonal,
    inv,
    inv_ex,
    matrix_power,
    multi_dot,
    slogdet,
    solve,
    vecdot,
)
from .decompositions import eigh, eigvalsh, lstsq, matrix_rank, pinv, qr, svd, svdvals
from .norms import matrix_norm, norm, vector_norm

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cross", "det", "diagonal", "eigh",
           "eigvalsh", "inv", "inv_ex", "lstsq", "matrix_norm", "matrix_power", "matrix_rank",
           "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "vecdot",
           "vector_norm"]
