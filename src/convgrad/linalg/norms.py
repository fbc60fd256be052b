"""Vector and matrix norms (``vector_norm``, ``matrix_norm``, ``norm``), composed of
differentiable Tensor operations: their gradients are torch's, with 0 (not NaN) where the
norm or an element is 0."""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np

from ..tensor import Tensor, args, where
from ._checks import as_float
from .decompositions import svdvals

__all__ = ["matrix_norm", "norm", "vector_norm"]

_MATRIX_ORDS = (math.inf, -math.inf, 1, -1, 2, -2)


def _input(fn: str, x: Any, dtype: Any) -> Tensor:
    x = as_float(fn, "x" if fn.endswith("vector_norm") else "A", x)
    if dtype is not None:
        dt = args.check_dtype(fn, dtype)
        if dt.itemsize < x.dtype.itemsize:
            raise TypeError(f"{fn}: dtype={dtype!r} would narrow the input's dtype "
                            f"{x.dtype}; expected a dtype at least as wide")
        if dt != x.dtype:
            x = x.to(dt)
    return x


def _safe_pow(s: Tensor, p: float) -> Tensor:
    """``s ** p`` for ``s >= 0``, 0 where ``s`` is 0, with gradient 0 there (not NaN)."""
    zero = s == 0
    return where(zero, 0.0, where(zero, 1.0, s) ** p)


def _vector_norm(x: Tensor, ord: float, dims: tuple, keepdim: bool) -> Tensor:
    if ord == math.inf:
        return x.abs().amax(dims, keepdim)
    if ord == -math.inf:
        return x.abs().amin(dims, keepdim)
    if ord == 0:  # the count of nonzero elements; sign's gradient is 0
        return x.sign().abs().sum(dims, keepdim)
    if ord == 1:
        return x.abs().sum(dims, keepdim)
    if ord == 2:
        return _safe_pow((x * x).sum(dims, keepdim), 0.5)
    if ord < 0:
        return (x.abs() ** ord).sum(dims, keepdim) ** (1.0 / ord)
    return _safe_pow(_safe_pow(x.abs(), ord).sum(dims, keepdim), 1.0 / ord)


def _ord(fn: str, ord: Any) -> float:
    if isinstance(ord, bool) or not isinstance(ord, Real):
        raise TypeError(f"{fn}: ord={ord!r} must be a number (int, float, inf or -inf)")
    if math.isnan(ord):
        raise ValueError(f"{fn}: ord={ord!r} must not be NaN")
    return float(ord)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """``(sum |x|^ord) ** (1 / ord)`` over ``dim`` (all dims when None), as
    ``torch.linalg.vector_norm``: ``ord`` inf / -inf the largest / smallest ``|x|``, 0 the
    count of nonzero elements."""
    fn = "linalg.vector_norm"
    x = _input(fn, x, dtype)
    p = _ord(fn, ord)
    keepdim = args.flag(fn, "keepdim", keepdim)
    if x.ndim == 0:
        x = x.reshape(1)
        return _vector_norm(x, p, (0,), False)
    dims = args.dims(fn, dim, x.ndim)
    if dims is None or dims == ():
        dims = tuple(range(x.ndim))
    if x.numel() == 0 and p < 0 or (x.numel() == 0 and p == math.inf):
        raise ValueError(f"{fn}: ord={ord!r} is not defined for an empty input")
    return _vector_norm(x, p, dims, keepdim)


def _matrix_dims(fn: str, dim: Any, ndim: int) -> tuple[int, int]:
    """The two dims, normalised, in the given order (``args.dims`` sorts them)."""
    try:
        pair = tuple(dim)
    except TypeError:
        raise TypeError(f"{fn}: dim={dim!r} must be a tuple of two ints") from None
    if len(pair) != 2:
        raise ValueError(f"{fn}: dim={dim!r} must be a tuple of two dims")
    if pair[0] == pair[1] or (pair[0] % ndim == pair[1] % ndim
                              if all(isinstance(d, int) for d in pair) else False):
        raise ValueError(f"{fn}: dim={dim!r} must name two different dims")
    return args.dim(fn, pair[0], ndim), args.dim(fn, pair[1], ndim)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """The matrix norm over the two dims ``dim``, as ``torch.linalg.matrix_norm``:
    ``'fro'`` (Frobenius), ``'nuc'`` (sum of singular values), 2 / -2 (largest / smallest
    singular value), 1 / -1 (largest / smallest column sum of ``|A|``), inf / -inf (row
    sums)."""
    fn = "linalg.matrix_norm"
    A = _input(fn, A, dtype)
    if A.ndim < 2:
        raise ValueError(f"{fn}: A must have at least 2 dimensions, got shape "
                         f"{tuple(A.shape)}")
    keepdim = args.flag(fn, "keepdim", keepdim)
    if isinstance(ord, str):
        known = ord in ("fro", "nuc")
    else:
        known = not isinstance(ord, bool) and isinstance(ord, Real) and ord in _MATRIX_ORDS
    if not known:
        raise ValueError(f"{fn}: ord={ord!r} is not supported; expected 'fro', 'nuc', inf, "
                         "-inf, 1, -1, 2 or -2")
    d0, d1 = _matrix_dims(fn, dim, A.ndim)
    if ord == "fro":
        return _vector_norm(A, 2.0, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        out = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
    rows, cols = (d0, d1) if abs(ord) == 1 else (d1, d0)  # 1: sum over rows (d0) first
    sums = A.abs().sum(rows, keepdim=True)
    out = sums.amax(cols, keepdim=True) if ord > 0 else sums.amin(cols, keepdim=True)
    return out if keepdim else out.squeeze(max(d0, d1)).squeeze(min(d0, d1))


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """A vector or matrix norm, as ``torch.linalg.norm``: ``dim`` an int or one dim → the
    vector norm, two dims → the matrix norm; ``dim=None`` → the 2-norm of the flattened
    input when ``ord`` is None, else the vector norm of a 1-D or the matrix norm of a 2-D
    input."""
    fn = "linalg.norm"
    A = as_float(fn, "A", A)
    if dim is not None:
        dims = (dim,) if isinstance(dim, int | np.integer) else dim
        try:
            count = len(dims)
        except TypeError:
            raise TypeError(f"{fn}: dim={dim!r} must be an int or a tuple of ints") from None
        if count == 1:
            if isinstance(ord, str):
                raise ValueError(f"{fn}: ord={ord!r} is a matrix norm, but dim={dim!r} "
                                 "names one dim (a vector norm)")
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if count == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise ValueError(f"{fn}: dim={dim!r} must name one dim (a vector norm) or two "
                         "(a matrix norm)")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1 and not isinstance(ord, str):
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise ValueError(f"{fn}: with dim=None and ord={ord!r}, A must be 1-D (a vector norm) "
                     f"or 2-D (a matrix norm), got shape {tuple(A.shape)}")
