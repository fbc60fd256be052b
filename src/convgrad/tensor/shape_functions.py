"""torch's shape and dtype functions that are not (only) Tensor methods, composed of the
library's differentiable operations: ``broadcast_to``, ``broadcast_tensors``,
``broadcast_shapes``, ``atleast_1d`` / ``2d`` / ``3d``, ``moveaxis``, ``ravel``,
``dstack``, ``column_stack``, ``row_stack``, ``hsplit`` / ``vsplit`` / ``dsplit``,
``split_with_sizes``, ``unsafe_split`` / ``unsafe_chunk``, ``rsub``; and
torch's type promotion: ``result_type``, ``promote_types``, ``can_cast``."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from .args import tensor_dtype
from .operands import KIND_RANK, kind_default
from .tensor import Tensor, as_tensor, concatenate

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
           "broadcast_to", "can_cast", "column_stack", "dsplit", "dstack", "hsplit",
           "moveaxis", "promote_types", "ravel", "result_type", "row_stack",
           "rsub", "split_with_sizes", "unsafe_chunk", "unsafe_split", "vsplit"]


def broadcast_to(input: Any, size: Any) -> Tensor:  # noqa: A002 (torch's name)
    """``input`` broadcast to ``size`` (-1 keeps a size), as ``Tensor.expand``."""
    return as_tensor(input).expand(size)


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """The shape that tensors of ``shapes`` broadcast to (an int is a 1-d shape)."""
    norm = []
    for s in shapes:
        s = (s,) if isinstance(s, Integral) else s
        if isinstance(s, bool) or not isinstance(s, Sequence) or any(
                isinstance(n, bool) or not isinstance(n, Integral) or n < 0 for n in s):
            raise TypeError(f"broadcast_shapes: shape {s!r} must be an int or a sequence "
                            "of ints >= 0")
        norm.append(tuple(int(n) for n in s))
    try:
        return tuple(np.broadcast_shapes(*norm))
    except ValueError:
        raise ValueError(f"broadcast_shapes: the shapes {', '.join(map(str, norm))} do not "
                         "broadcast together") from None


def broadcast_tensors(*tensors: Any) -> tuple[Tensor, ...]:
    """The Tensors expanded to their common broadcast shape."""
    ts = [as_tensor(t) for t in tensors]
    try:
        shape = np.broadcast_shapes(*(tuple(t.shape) for t in ts))
    except ValueError:
        raise ValueError("broadcast_tensors: the shapes "
                         f"{', '.join(str(tuple(t.shape)) for t in ts)} do not broadcast "
                         "together") from None
    return tuple(t.expand(*shape) for t in ts)


def _at_least(fn: str, tensors: tuple, make: Any) -> Any:
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        return tuple(make(as_tensor(t)) for t in tensors[0])
    out = tuple(make(as_tensor(t)) for t in tensors)
    return out[0] if len(out) == 1 else out


def atleast_1d(*tensors: Any) -> Any:
    """A 0-d Tensor as shape (1,), others as they are (a tuple for several)."""
    return _at_least("atleast_1d", tensors, lambda t: t.reshape(1) if t.ndim == 0 else t)


def atleast_2d(*tensors: Any) -> Any:
    """0-d as (1, 1), 1-d (n,) as (1, n), others as they are."""
    return _at_least("atleast_2d", tensors,
                     lambda t: t.reshape((1,) * (2 - t.ndim) + tuple(t.shape))
                     if t.ndim < 2 else t)


def _three(t: Tensor) -> Tensor:
    if t.ndim == 0:
        return t.reshape(1, 1, 1)
    if t.ndim == 1:
        return t.reshape(1, t.shape[0], 1)
    return t.unsqueeze(-1) if t.ndim == 2 else t


def atleast_3d(*tensors: Any) -> Any:
    """0-d as (1, 1, 1), (n,) as (1, n, 1), (m, n) as (m, n, 1), others as they are."""
    return _at_least("atleast_3d", tensors, _three)


def moveaxis(input: Any, source: Any, destination: Any) -> Tensor:  # noqa: A002
    """``movedim`` (NumPy's name)."""
    return as_tensor(input).movedim(source, destination)


def ravel(input: Any) -> Tensor:  # noqa: A002
    """The elements as a 1-d Tensor."""
    return as_tensor(input).reshape(-1)


def _tensors(fn: str, tensors: Any) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, Sequence):
        raise TypeError(f"{fn}: tensors must be a sequence of Tensors, got "
                        f"{type(tensors).__name__}")
    ts = [as_tensor(t) for t in tensors]
    if not ts:
        raise ValueError(f"{fn}: tensors is empty")
    return ts


def dstack(tensors: Sequence[Any]) -> Tensor:
    """Joined along dim 2 after ``atleast_3d``."""
    return concatenate([_three(t) for t in _tensors("dstack", tensors)], 2)


def column_stack(tensors: Sequence[Any]) -> Tensor:
    """0-d and 1-d Tensors as columns (n, 1), then joined along dim 1."""
    ts = _tensors("column_stack", tensors)
    return concatenate([t.reshape(t.numel(), 1) if t.ndim < 2 else t for t in ts], 1)


def row_stack(tensors: Sequence[Any]) -> Tensor:
    """``vstack``: 1-d Tensors as rows, then joined along dim 0."""
    ts = _tensors("row_stack", tensors)
    return concatenate([t.reshape((1,) * (2 - t.ndim) + tuple(t.shape)) if t.ndim < 2
                        else t for t in ts], 0)


def hsplit(input: Any, indices_or_sections: Any) -> tuple:  # noqa: A002
    """See :meth:`Tensor.hsplit`."""
    return as_tensor(input).hsplit(indices_or_sections)


def vsplit(input: Any, indices_or_sections: Any) -> tuple:  # noqa: A002
    """See :meth:`Tensor.vsplit`."""
    return as_tensor(input).vsplit(indices_or_sections)


def dsplit(input: Any, indices_or_sections: Any) -> tuple:  # noqa: A002
    """See :meth:`Tensor.dsplit`."""
    return as_tensor(input).dsplit(indices_or_sections)


def split_with_sizes(input: Any, split_sizes: Any, dim: int = 0) -> tuple:  # noqa: A002
    """See :meth:`Tensor.split_with_sizes`."""
    return as_tensor(input).split_with_sizes(split_sizes, dim)


def unsafe_split(input: Any, split_size: Any, dim: int = 0) -> tuple:  # noqa: A002
    """``split``."""
    return as_tensor(input).split(split_size, dim)


def unsafe_chunk(input: Any, chunks: int, dim: int = 0) -> tuple:  # noqa: A002
    """``chunk``."""
    return as_tensor(input).chunk(chunks, dim)


def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``other - alpha * input``."""
    return as_tensor(input).rsub(other, alpha=alpha)


# -- type promotion (torch's: bool < integers < floats; within a kind the wider dtype)
def _rank(dt: np.dtype) -> int:
    return KIND_RANK[dt.kind]


def promote_types(type1: Any, type2: Any) -> np.dtype:
    """The dtype two Tensors of ``type1`` and ``type2`` combine to: the higher kind's
    dtype, within a kind the wider (``promote_types(int64, float32)`` is float32)."""
    a, b = tensor_dtype("promote_types", type1), tensor_dtype("promote_types", type2)
    if _rank(a) != _rank(b):
        return a if _rank(a) > _rank(b) else b
    return np.promote_types(a, b)


def can_cast(from_: Any, to: Any) -> bool:
    """Whether torch's casting rule allows ``from_`` to ``to``: never to a lower kind
    (float to integer, integer to bool); within a kind, narrowing is allowed."""
    a, b = tensor_dtype("can_cast", from_), tensor_dtype("can_cast", to)
    return _rank(b) >= _rank(a)


def result_type(tensor1: Any, tensor2: Any) -> np.dtype:
    """The dtype of an arithmetic result of ``tensor1`` and ``tensor2`` (Tensors or
    numbers), by torch's rule: Tensors with dims decide, unless a 0-d Tensor is of a
    higher kind (then it decides), unless a number is of a higher kind still (then that
    kind's default: int64, the default float dtype)."""
    groups: list[list[np.dtype]] = [[], [], []]  # dimensioned, 0-d, numbers
    for i, x in enumerate((tensor1, tensor2)):
        if isinstance(x, Tensor):
            groups[0 if x.ndim else 1].append(x.data.dtype)
        elif isinstance(x, bool | np.bool_):
            groups[2].append(kind_default(0))
        elif isinstance(x, Integral):
            groups[2].append(kind_default(1))
        elif isinstance(x, Real):
            groups[2].append(kind_default(2))
        else:
            raise TypeError(f"result_type: tensor{i + 1}={x!r} must be a Tensor or a number")
    result = None
    for k, group in enumerate(groups):
        if not group:
            continue
        top = max(_rank(d) for d in group)
        if result is not None and top <= _rank(result):
            continue
        if k == 2:
            result = kind_default(top)
        else:
            result = np.result_type(*(d for d in group if _rank(d) == top))
    return result
