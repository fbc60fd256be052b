"""torch's functions that are not Tensor methods, composed of the library's
differentiable operations: ``meshgrid``, ``hstack``, ``vstack``, ``cdist``, ``std_mean``,
``var_mean``; the integer ones ``bincount``, ``tril_indices``, ``triu_indices`` (no
gradient); ``finfo`` / ``iinfo`` (NumPy's, which carry torch's attribute names:
``eps``, ``max``, ``min``, ``tiny``, ``bits``, ``resolution``); and torch's legacy typed
constructors ``FloatTensor``, ``DoubleTensor``, ``LongTensor``, ``IntTensor``,
``BoolTensor`` (data, or sizes: zeros), functions here, not classes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..devices import check_device
from .args import check_dtype, tensor_dtype
from .distances import row_distances
from .tensor import Tensor, as_tensor, concatenate

__all__ = ["BoolTensor", "DoubleTensor", "FloatTensor", "IntTensor", "LongTensor", "bincount",
           "cdist", "finfo", "hstack", "iinfo", "meshgrid", "std_mean", "tril_indices",
           "triu_indices", "var_mean", "vstack"]


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Each 1-d Tensor expanded over the grid of all of them (``indexing="xy"``: the
    grid's first two dims in the other order, NumPy's Cartesian one)."""
    if len(tensors) == 1 and isinstance(tensors[0], Sequence):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing={indexing!r} must be 'ij' or 'xy'")
    ts = [as_tensor(t) for t in tensors]
    for i, t in enumerate(ts):
        if t.ndim > 1:
            raise ValueError(f"meshgrid: tensors[{i}] of shape {tuple(t.shape)} must be 0-d "
                             "or 1-d")
    ts = [t.reshape(-1) for t in ts]
    if indexing == "xy" and len(ts) >= 2:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        out.append(t.reshape(*view).expand(*shape))
    if indexing == "xy" and len(out) >= 2:  # the grid of (t1, t0, t2, ...), in input order
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def _at_least(t: Tensor, nd: int) -> Tensor:
    return t.reshape((1,) * (nd - t.ndim) + tuple(t.shape)) if t.ndim < nd else t


def hstack(tensors: Sequence[Any]) -> Tensor:
    """Joined along dim 1 (dim 0 for 1-d Tensors), as torch."""
    ts = [as_tensor(t) for t in tensors]
    if not ts:
        raise ValueError("hstack: tensors is empty")
    ts = [_at_least(t, 1) for t in ts]
    return concatenate(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Any]) -> Tensor:
    """1-d Tensors as rows, then joined along dim 0."""
    ts = [as_tensor(t) for t in tensors]
    if not ts:
        raise ValueError("vstack: tensors is empty")
    return concatenate([_at_least(t, 2) for t in ts], 0)


def cdist(x1: Any, x2: Any, p: float = 2.0) -> Tensor:
    """The p-norm distances between the rows of x1 (*, P, M) and x2 (*, R, M): (*, P, R)
    (:mod:`.distances`: a zero distance has a zero gradient, as torch's)."""
    a, b = as_tensor(x1)._floating(), as_tensor(x2)._floating()
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"cdist: x1 of shape {tuple(a.shape)} and x2 of shape "
                         f"{tuple(b.shape)} must be (*, P, M) and (*, R, M)")
    if isinstance(p, bool) or not isinstance(p, int | float) or p < 0:
        raise ValueError(f"cdist: p={p!r} must be a number >= 0")
    return row_distances(a, b, float(p))


def bincount(input: Any, weights: Any = None, minlength: int = 0) -> Tensor:  # noqa: A002
    """How many times each value of a 1-d non-negative integer Tensor occurs (or the sum
    of its ``weights``); int64 counts, the weights' dtype for sums."""
    a = np.asarray(getattr(input, "data", input))
    if a.ndim != 1 or (a.size and (a.dtype.kind not in "iu" or a.min() < 0)):
        raise ValueError("bincount: input must be a 1-d Tensor of non-negative integers, "
                         f"got {a.dtype} of shape {a.shape}")
    if weights is None:
        return Tensor._wrap(np.bincount(a, minlength=minlength).astype(np.int64))
    w = as_tensor(weights)
    counts = np.bincount(a, weights=np.asarray(w.data, np.float64), minlength=minlength)
    dt = w.data.dtype if w.data.dtype.kind == "f" else np.float64
    return Tensor._wrap(counts.astype(dt))


def _indices(fn: str, row: Any, col: Any, offset: Any, upper: bool, dtype: Any,
             device: Any) -> Tensor:
    check_device(fn, device)
    for name, v in (("row", row), ("col", col), ("offset", offset)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise TypeError(f"{fn}: {name}={v!r} must be an int")
    if row < 0 or col < 0:
        raise ValueError(f"{fn}: row={row} and col={col} must be >= 0")
    r, c = (np.triu_indices if upper else np.tril_indices)(row, offset, col)
    dt = np.dtype(np.int64) if dtype is None else check_dtype(fn, dtype)
    return Tensor._wrap(np.stack([r, c]).astype(dt))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: Any = None) -> Tensor:
    """The (2, n) indices of the lower triangle (``offset`` as ``tril``'s diagonal)."""
    return _indices("tril_indices", row, col, offset, False, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: Any = None) -> Tensor:
    """The (2, n) indices of the upper triangle."""
    return _indices("triu_indices", row, col, offset, True, dtype, device)


def std_mean(input: Any, dim: Any = None, *, correction: Any = 1,  # noqa: A002
             keepdim: bool = False) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over ``dim`` (``correction`` 1: the unbiased std, as torch)."""
    x = as_tensor(input)
    return x.std(dim, keepdim=keepdim, correction=correction), x.mean(dim, keepdim)


def var_mean(input: Any, dim: Any = None, *, correction: Any = 1,  # noqa: A002
             keepdim: bool = False) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over ``dim``."""
    x = as_tensor(input)
    return x.var(dim, keepdim=keepdim, correction=correction), x.mean(dim, keepdim)


def finfo(dtype: Any = None) -> Any:
    """The float dtype's limits (by default the default float dtype's, as torch)."""
    dt = get_default_dtype() if dtype is None else check_dtype("finfo", dtype)
    if dt.kind != "f":
        raise TypeError(f"finfo: dtype={dtype!r} is not a float dtype (iinfo is for integers)")
    return np.finfo(dt)


def iinfo(dtype: Any) -> Any:
    """The integer dtype's limits."""
    dt = tensor_dtype("iinfo", dtype)
    if dt.kind not in "iu":
        raise TypeError(f"iinfo: dtype={dtype!r} is not an integer dtype")
    return np.iinfo(dt)


def _typed(name: str, dtype: Any) -> Any:
    def make(*args: Any) -> Tensor:
        if all(isinstance(a, int | np.integer) and not isinstance(a, bool) for a in args):
            return Tensor._wrap(np.zeros(tuple(int(a) for a in args) if args else (0,), dtype))
        if len(args) != 1:
            raise TypeError(f"{name}: expected data or sizes (ints), got {args!r}")
        data = args[0]
        arr = np.array(getattr(data, "data", data), dtype=dtype)
        return Tensor._wrap(arr)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"torch's legacy ``{name}(data)`` (a {np.dtype(dtype)} copy) or "
                    f"``{name}(*sizes)`` (zeros).")
    return make


FloatTensor = _typed("FloatTensor", np.float32)
DoubleTensor = _typed("DoubleTensor", np.float64)
LongTensor = _typed("LongTensor", np.int64)
IntTensor = _typed("IntTensor", np.int32)
BoolTensor = _typed("BoolTensor", np.bool_)
