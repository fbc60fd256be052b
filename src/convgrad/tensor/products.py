"""torch's product functions, composed of ``@``, reshapes and indexing (so their
gradients, of every order, are those of the parts): ``tensordot``, the function forms of
``addmm``, ``addmv``, ``addr``, ``addbmm``, ``baddbmm``, ``vdot``, ``ger``; and
``chain_matmul`` (in the order of fewest multiplications, as torch's ``multi_dot``),
``block_diag``, ``cartesian_prod``, ``combinations``, ``vander``."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from numbers import Integral
from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from . import shape as _sh
from .shape_functions import promote_types
from .tensor import Tensor, as_tensor, concatenate, stack

__all__ = ["addbmm", "addmm", "addmv", "addr", "baddbmm", "block_diag", "cartesian_prod",
           "chain_matmul", "combinations", "ger", "tensordot", "vander", "vdot"]


def _int(fn: str, name: str, value: Any, low: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{fn}: {name}={value!r} must be an int")
    if low is not None and value < low:
        raise ValueError(f"{fn}: {name}={value!r} must be >= {low}")
    return int(value)


def addmm(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1,  # noqa: A002 (torch's name)
          alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``; see :meth:`Tensor.addmm`."""
    return as_tensor(input).addmm(mat1, mat2, beta=beta, alpha=alpha)


def addmv(input: Any, mat: Any, vec: Any, *, beta: Any = 1,  # noqa: A002
          alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return as_tensor(input).addmv(mat, vec, beta=beta, alpha=alpha)


def addr(input: Any, vec1: Any, vec2: Any, *, beta: Any = 1,  # noqa: A002
         alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    return as_tensor(input).addr(vec1, vec2, beta=beta, alpha=alpha)


def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1,  # noqa: A002
           alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    return as_tensor(input).addbmm(batch1, batch2, beta=beta, alpha=alpha)


def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1,  # noqa: A002
            alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)``."""
    return as_tensor(input).baddbmm(batch1, batch2, beta=beta, alpha=alpha)


def vdot(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The dot product of two 1-d Tensors."""
    return as_tensor(input).vdot(other)


def ger(input: Any, vec2: Any) -> Tensor:  # noqa: A002
    """``outer``."""
    return as_tensor(input).outer(vec2)


def _dims(fn: str, dims: Any, a: Tensor, b: Tensor) -> tuple[list[int], list[int]]:
    if isinstance(dims, Integral) and not isinstance(dims, bool):
        k = _int(fn, "dims", dims, 0)
        if k > min(a.ndim, b.ndim):
            raise ValueError(f"{fn}: dims={k} exceeds the dims of a of shape "
                             f"{tuple(a.shape)} or b of shape {tuple(b.shape)}")
        return list(range(a.ndim - k, a.ndim)), list(range(k))
    if (isinstance(dims, Sequence) and len(dims) == 2
            and all(isinstance(d, Sequence) for d in dims)):
        da, db = ([_int(fn, "dims", d) for d in part] for part in dims)
        if len(da) != len(db):
            raise ValueError(f"{fn}: dims={dims!r} must list as many dims of a as of b")
        out = []
        for part, t, name in ((da, a, "a"), (db, b, "b")):
            norm = []
            for d in part:
                if not -t.ndim <= d < t.ndim:
                    raise ValueError(f"{fn}: dim {d} is out of range for {name} of shape "
                                     f"{tuple(t.shape)}")
                norm.append(d % t.ndim)
            if len(set(norm)) != len(norm):
                raise ValueError(f"{fn}: dims={dims!r} repeats a dim of {name}")
            out.append(norm)
        return out[0], out[1]
    raise TypeError(f"{fn}: dims={dims!r} must be an int or a pair of lists of dims")


def tensordot(a: Any, b: Any, dims: Any = 2) -> Tensor:
    """The sum of products over ``dims``: an int k (the last k dims of ``a`` with the
    first k of ``b``) or a pair of lists of dims; shape ``a``'s other dims then ``b``'s.
    One matrix product of the two permuted, flattened operands."""
    fn = "tensordot"
    a, b = as_tensor(a), as_tensor(b)
    if a.data.dtype != b.data.dtype:
        raise TypeError(f"{fn}: a of dtype {a.data.dtype} and b of dtype {b.data.dtype} "
                        "must have one dtype")
    da, db = _dims(fn, dims, a, b)
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"{fn}: dim {i} of a of shape {tuple(a.shape)} and dim {j} of "
                             f"b of shape {tuple(b.shape)} differ in size")
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    k = int(np.prod([a.shape[d] for d in da]))
    left = a.permute(fa + da).reshape(-1, k)
    right = b.permute(db + fb).reshape(k, -1)
    return (left @ right).reshape(*[a.shape[d] for d in fa], *[b.shape[d] for d in fb])


def _chain_order(sizes: list[int]) -> list:
    """The cheapest parenthesisation of matrices of ``sizes[i] x sizes[i + 1]``: a tree
    of nested pairs of indices (the classic dynamic programme)."""
    n = len(sizes) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + sizes[i] * sizes[s + 1] * sizes[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def tree(i: int, j: int) -> Any:
        return i if i == j else (tree(i, split[i][j]), tree(split[i][j] + 1, j))

    return tree(0, n - 1)


def chain_matmul(*matrices: Any) -> Tensor:
    """The product of 2-d Tensors, multiplied in the order of fewest operations."""
    fn = "chain_matmul"
    if len(matrices) == 1 and isinstance(matrices[0], list | tuple):
        matrices = tuple(matrices[0])
    ms = [as_tensor(m) for m in matrices]
    if not ms:
        raise ValueError(f"{fn}: expects at least one matrix")
    for i, m in enumerate(ms):
        if m.ndim != 2:
            raise ValueError(f"{fn}: matrices[{i}] of shape {tuple(m.shape)} must be 2-d")
    for i in range(len(ms) - 1):
        if ms[i].shape[1] != ms[i + 1].shape[0]:
            raise ValueError(f"{fn}: matrices[{i}] of shape {tuple(ms[i].shape)} and "
                             f"matrices[{i + 1}] of shape {tuple(ms[i + 1].shape)} cannot "
                             "be multiplied")
    if len(ms) == 1:
        return ms[0].clone()

    def product(node: Any) -> Tensor:
        return ms[node] if isinstance(node, int) else product(node[0]) @ product(node[1])

    return product(_chain_order([ms[0].shape[0]] + [m.shape[1] for m in ms]))


def block_diag(*tensors: Any) -> Tensor:
    """The Tensors (0-d as (1, 1), 1-d as one row) along the diagonal of a matrix of
    zeros, in their promoted dtype."""
    fn = "block_diag"
    ts = [as_tensor(t) for t in tensors]
    for i, t in enumerate(ts):
        if t.ndim > 2:
            raise ValueError(f"{fn}: tensors[{i}] of shape {tuple(t.shape)} must have at "
                             "most 2 dims")
    if not ts:
        return Tensor._wrap(np.zeros((1, 0), get_default_dtype()))
    dt = ts[0].data.dtype
    for t in ts[1:]:
        dt = promote_types(dt, t.data.dtype)
    ts = [t.to(dt).reshape((1,) * (2 - t.ndim) + tuple(t.shape)) for t in ts]
    width = sum(t.shape[1] for t in ts)
    rows, left = [], 0
    for t in ts:
        right = width - left - t.shape[1]
        rows.append(_sh.PadConstant.apply(t, widths=((0, 0), (left, right)), value=0))
        left += t.shape[1]
    return concatenate(rows, 0)


def cartesian_prod(*tensors: Any) -> Tensor:
    """Every combination of one element from each 1-d Tensor, one per row (a single
    Tensor is returned as it is)."""
    fn = "cartesian_prod"
    ts = [as_tensor(t) for t in tensors]
    if not ts:
        raise ValueError(f"{fn}: expects at least one Tensor")
    for i, t in enumerate(ts):
        if t.ndim != 1:
            raise ValueError(f"{fn}: tensors[{i}] of shape {tuple(t.shape)} must be 1-d")
        if t.data.dtype != ts[0].data.dtype:
            raise TypeError(f"{fn}: tensors[{i}] of dtype {t.data.dtype} must have the "
                            f"dtype {ts[0].data.dtype} of tensors[0]")
    if len(ts) == 1:
        return ts[0]
    shape = tuple(t.shape[0] for t in ts)
    cols = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        cols.append(t.reshape(*view).expand(*shape).reshape(-1))
    return stack(cols, 1)


def combinations(input: Any, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """The length-``r`` combinations of a 1-d Tensor's elements, one per row, in order
    (``with_replacement``: an element may repeat); 0 rows when there are none."""
    fn = "combinations"
    x = as_tensor(input)
    if x.ndim != 1:
        raise ValueError(f"{fn}: input of shape {tuple(x.shape)} must be 1-d")
    r = _int(fn, "r", r, 0)
    if r == 0:
        return Tensor._wrap(np.zeros((0,), x.data.dtype))
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = np.array(list(pick(range(x.shape[0]), r)), np.int64).reshape(-1, r)
    return x[idx]


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of a 1-d Tensor: columns ``x^(N-1), ..., x^0`` (the other
    way round with ``increasing``), ``N`` the length of ``x`` by default; running
    products (``cumprod``) of ``x``, integers in int64."""
    fn = "vander"
    t = as_tensor(x)
    if t.ndim != 1:
        raise ValueError(f"{fn}: x of shape {tuple(t.shape)} must be 1-d")
    n = t.shape[0] if N is None else _int(fn, "N", N, 0)
    if t.data.dtype.kind == "b":
        raise TypeError(f"{fn}: x must be a number Tensor, got bool")
    if t.data.dtype.kind != "f":  # no gradient: NumPy's integer powers
        out = np.vander(t.data.astype(np.int64), n, increasing=True)
        out = Tensor._wrap(out.astype(np.int64))
    elif n == 0:
        out = Tensor._wrap(np.zeros((t.shape[0], 0), t.data.dtype))
    else:
        ones = Tensor._wrap(np.ones((t.shape[0], 1), t.data.dtype))
        parts = [ones]
        if n > 1:
            parts.append(t.unsqueeze(1).expand(t.shape[0], n - 1).cumprod(1))
        out = concatenate(parts, 1)
    return out if increasing else out.flip(1)
