"""Matrix functions and constructions: ``matrix_exp``, ``cond`` (the condition number),
``vander`` (increasing powers, unlike ``cg.vander``) and ``matmul`` (the alias of
``cg.matmul``)."""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import numpy as np

from ..tensor import Tensor, stack, where
from ..tensor.functions import matmul
from . import _checks as C
from .basic import _per_matrix_info, inv
from .decompositions import svdvals
from .functions import MatrixExp
from .norms import matrix_norm

__all__ = ["cond", "matmul", "matrix_exp", "vander"]


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of each square matrix (SciPy's scaling and squaring, in
    float64); its gradient (of every order) is the adjoint Frechet derivative, as
    torch's."""
    return MatrixExp.apply(C.square("linalg.matrix_exp", "A", A))


def vander(x: Tensor, N: int | None = None) -> Tensor:  # noqa: N803 (torch's name)
    """The Vandermonde matrices of the vectors in x's last dim, powers increasing:
    ``out[..., i, j] = x[..., i] ** j`` for j < N (default ``x.shape[-1]``; N >= 2).
    Built by repeated products, so its gradient at x = 0 is finite."""
    fn = "linalg.vander"
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}: x must be a Tensor, got {type(x).__name__}")
    if x.ndim < 1:
        raise ValueError(f"{fn}: x must have at least 1 dimension, got shape {tuple(x.shape)}")
    if N is None:
        N = x.shape[-1]
    elif isinstance(N, bool) or not isinstance(N, Integral):
        raise TypeError(f"{fn}: N={N!r} must be an int or None")
    if N <= 1:
        raise ValueError(f"{fn}: N={N} must be greater than 1")
    powers = [x * 0 + 1, x]
    for _ in range(N - 2):
        powers.append(powers[-1] * x)
    return stack(powers, -1)


_NORM_PS = ("fro", "nuc", math.inf, -math.inf, 1, -1)


def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number of each matrix in the norm ``p``: None or 2 (any shape) the
    ratio of the largest to the smallest singular value, -2 its inverse; 'fro', 'nuc',
    inf, -inf, 1, -1 (square A) ``norm(A) * norm(A^-1)``, inf where A is singular (as
    torch)."""
    fn = "linalg.cond"
    A = C.matrix(fn, "A", A)
    if p is None or (not isinstance(p, bool | str) and p in (2, -2)):
        s = svdvals(A)
        first, last = s.narrow(-1, 0, 1).squeeze(-1), s.narrow(-1, -1, 1).squeeze(-1)
        return last / first if p == -2 else first / last
    if isinstance(p, bool) or p not in _NORM_PS:
        raise ValueError(f"{fn}: p={p!r} is not supported; expected None, 2, -2, 'fro', "
                         "'nuc', inf, -inf, 1 or -1")
    A = C.square(fn, "A", A)
    singular = _per_matrix_info(np.ascontiguousarray(A.data), "getrf") > 0
    if not np.any(singular):
        return matrix_norm(A, p) * matrix_norm(inv(A), p)
    mask = Tensor._wrap(singular)
    eye = Tensor._wrap(np.eye(A.shape[-1], dtype=A.dtype))
    safe = where(mask.unsqueeze(-1).unsqueeze(-1), eye, A)
    return where(mask, math.inf, matrix_norm(safe, p) * matrix_norm(inv(safe), p))
