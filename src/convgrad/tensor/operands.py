"""Operands of the tensor layer's operations: Python scalars, ndarrays and Tensors
made ready for one Function, with torch's promotion across dtype kinds.

Used by the Tensor class and by its method families (in-place, torch's methods) alike,
so none of them imports another; the Tensor class is the one registered with the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..autograd import tensor_type
from ..default_dtype import get_default_dtype
from . import elementwise as _ew
from . import lazy as _lazy
from .args import DTYPES as _DTYPES

Tensor = Any  # annotations: the registered Tensor class

__all__ = ["KIND_RANK", "SCALARS", "kind_default", "no_bool", "operand", "pair", "promote",
           "where", "widened"]

KIND_RANK = {"b": 0, "i": 1, "u": 1, "f": 2}  # torch's promotion order: bool < int < float
_DEFAULT = (np.dtype(np.bool_), np.dtype(np.int64))  # per rank; floats: the default dtype
SCALARS = (int, float, bool)
_KIND_RANK = KIND_RANK
_SCALARS = SCALARS


def kind_default(rank: int) -> np.dtype:
    """torch's dtype for a Python number of kind ``rank`` (``KIND_RANK``): bool, int64 or
    the default float dtype."""
    return get_default_dtype() if rank == 2 else _DEFAULT[rank]


def operand(x: Any) -> Any:
    """An operand of a binary op: a Tensor, a weak Python scalar or an ndarray of a Tensor
    dtype (other integers become int64, other floats float32)."""
    Tensor = tensor_type()
    if isinstance(x, Tensor):
        return x
    if isinstance(x, bool | int | float):
        return float(x) if isinstance(x, np.floating) else x  # np.float64 is a float too
    arr = x if _lazy.is_dask_array(x) else np.asarray(x)  # (dask stays lazy)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"unsupported operand {x!r} of type {type(x).__name__}; "
                        "expected a Tensor, an ndarray or a real number")
    if arr.dtype in _DTYPES:
        return arr
    return arr.astype(np.float32 if arr.dtype.kind == "f" else np.int64)



def promote(operands: Sequence[Any], true_div: bool = False) -> list:
    """The operands of one op cast as torch promotes across kinds (bool < int < float).

    Within the highest kind present NumPy decides (float32 with float64 gives float64);
    tensors and arrays of a lower kind are cast to the result dtype: the highest-kind
    tensors' dtype, or the kind's default (:func:`kind_default`) when only a Python scalar
    has that kind.  ``true_div``: division of integers gives the default float dtype, as
    torch.
    """
    Tensor = tensor_type()
    ranks = [_KIND_RANK[x.dtype.kind] if isinstance(x, Tensor | np.ndarray)
             else 0 if isinstance(x, bool) else 1 if isinstance(x, int) else 2
             for x in operands]
    top = max(ranks)
    if true_div and top < 2:
        top, target = 2, kind_default(2)
    else:
        tops = [x.dtype for x, r in zip(operands, ranks)
                if r == top and isinstance(x, Tensor | np.ndarray)]
        target = np.result_type(*tops) if tops else kind_default(top)
    out = []
    for x, r in zip(operands, ranks):
        if r < top and isinstance(x, Tensor):  # not differentiable: a constant cast
            x = Tensor._wrap(x.data.astype(target))
        elif r < top and isinstance(x, np.ndarray):
            x = x.astype(target)
        out.append(x)
    return out



def pair(t: Tensor, other: Any, true_div: bool = False) -> tuple:
    """(t, other) ready for a binary op (the common float case passes straight through)."""
    Tensor = tensor_type()
    if t.data.dtype.kind == "f" and (type(other) in _SCALARS or (
            isinstance(other, Tensor) and other.data.dtype.kind == "f")):
        return t, other
    o = operand(other)
    if t.data.dtype.kind == "f" and (type(o) in _SCALARS or o.dtype.kind == "f"):
        return t, o
    return tuple(promote((t, o), true_div))



def no_bool(fn: str, t: Tensor, other: Any, both: bool = False) -> None:
    """As torch: no subtraction with a bool tensor (``~`` inverts a mask); no bool ** bool."""
    Tensor = tensor_type()
    bools = [isinstance(x, bool) and not both
             or isinstance(x, Tensor | np.ndarray) and x.dtype == np.bool_ for x in (t, other)]
    if all(bools) if both else any(bools):
        raise TypeError(f"{fn}: not supported for bool tensors"
                        + ("" if both else "; to invert a mask use ~ or logical_not()"))



def where(cond: Any, a: Any, b: Any) -> Tensor:
    """``a`` where ``cond`` is true, else ``b`` (broadcasting; gradients to a and b).

    ``cond`` is a bool Tensor or ndarray (other dtypes: nonzero is true).
    """
    Tensor = tensor_type()
    if not (isinstance(cond, Tensor) and cond.data.dtype == np.bool_):
        cond = cond.data if isinstance(cond, Tensor) else cond
        if not _lazy.is_dask_array(cond):
            cond = np.asarray(cond)
        cond = cond.astype(bool, copy=False)
    a, b = operand(a), operand(b)
    if isinstance(a, Tensor | np.ndarray) or isinstance(b, Tensor | np.ndarray):
        a, b = promote((a, b))
    return _ew.Where.apply(cond, a, b)


def widened(*tensors: Any) -> tuple[list, bool]:
    """``tensors`` (Tensors) cast to float64 when every one is float32, and whether they
    were: an operation whose float32 roundings cancel (a difference of nearly equal
    terms, a long product) is evaluated on them and its result rounded once with
    ``.float()``.  Any other mix is returned as it is."""
    single = all(t.dtype == np.float32 for t in tensors)
    return ([t.double() for t in tensors] if single else list(tensors)), single
