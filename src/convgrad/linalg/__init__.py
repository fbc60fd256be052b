"""``convgrad.linalg``: PyTorch's ``torch.linalg`` for real float32/float64 Tensors,
batched over leading dims, with gradients (of every order where torch has them).

Modules: ``norms`` (``vector_norm``, ``matrix_norm``, ``norm``), ``basic`` (``inv``,
``inv_ex``, ``det``, ``slogdet``, ``solve``, ``cholesky``, ``cholesky_ex``,
``matrix_power``, ``multi_dot``, ``cross``, ``vecdot``, ``diagonal``), ``decompositions``
(``qr``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals``, ``pinv``, ``matrix_rank``,
``lstsq``), ``solvers`` (``solve_triangular``, ``tensorinv``, ``tensorsolve``,
torch's ``cholesky_solve``), ``lu`` (``lu_factor``, ``lu_factor_ex``, ``lu``,
``lu_solve``, ``solve_ex``, torch's ``lu_unpack``), ``matrix_functions`` (``matrix_exp``,
``cond``, ``vander``, ``matmul``), ``legacy`` (torch's top-level forms), ``functions``
(their autograd Functions: NumPy/LAPACK values, gradients written with Tensor operations)
and ``_checks`` (argument checks, :class:`LinAlgError`, the named tuples).
"""

from __future__ import annotations

from ..tensor.provided_methods import provide as _provide
from . import legacy as _legacy
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
from .lu import lu, lu_factor, lu_factor_ex, lu_solve, solve_ex
from .matrix_functions import cond, matmul, matrix_exp, vander
from .norms import matrix_norm, norm, vector_norm
from .solvers import solve_triangular, tensorinv, tensorsolve

# the Tensor methods torch has for these (``A.det()``, ``A.inverse()``, ...): torch's
# top-level forms, handed to the tensor layer, which imports nothing above it
_provide(**{name: getattr(_legacy, name) for name in (
    "det", "logdet", "slogdet", "inverse", "cholesky", "cholesky_solve", "qr", "svd",
    "pinverse", "matrix_power", "matrix_exp", "triangular_solve")})

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh",
           "eigvalsh", "inv", "inv_ex", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
           "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]
