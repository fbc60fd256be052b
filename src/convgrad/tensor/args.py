"""Argument checks of the tensor layer, shared by every layer above it: dtypes, dims,
PyTorch names with their NumPy aliases, shapes.  A leaf: it imports nothing of convgrad
but the engine's registered Tensor class."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..autograd import tensor_type

__all__ = ["DTYPES", "FLOATS", "alias", "check_dtype", "dim", "dims", "flag", "number",
           "shape_arg", "tensor_dtype"]

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
DTYPES = FLOATS + (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_))
_FLOATS, _DTYPES = FLOATS, DTYPES


def check_dtype(fn: str, dtype: Any) -> np.dtype:
    """A differentiable dtype: float32 or float64."""
    dt = _numpy_dtype(dtype)
    if dt is None or dt not in _FLOATS:
        raise TypeError(f"{fn}: dtype={dtype!r} is not supported; expected float32 or float64")
    return dt


def _numpy_dtype(dtype: Any) -> np.dtype | None:
    """``dtype`` as NumPy's (a torch dtype by its name, ``torch.float32``), None where it
    names none (NumPy's ``dtype == None`` is True for float64: never compare None)."""
    text = str(dtype)
    if text.startswith("torch.") and type(dtype).__name__ == "dtype":
        dtype = text[len("torch."):]
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


def tensor_dtype(fn: str, dtype: Any) -> np.dtype:
    """Any dtype a Tensor holds: float32, float64, int32, int64 or bool."""
    if isinstance(dtype, tensor_type()):
        raise TypeError(f"{fn}: dtype must be a dtype, got a Tensor")
    dt = _numpy_dtype(dtype)
    if dt is None or dt not in _DTYPES:
        raise TypeError(f"{fn}: dtype={dtype!r} is not supported; expected float32, float64, "
                        "int32, int64 or bool")
    return dt


def dims(fn: str, dim: Any, ndim: int) -> tuple[int, ...] | None:
    """Normalise ``dim`` (None, an int or a sequence of ints, negatives allowed)."""
    if dim is None:
        return None
    try:
        dims = (dim,) if isinstance(dim, int | np.integer) else tuple(dim)
    except TypeError:
        raise TypeError(f"{fn}: dim={dim!r} must be an int or a tuple of ints") from None
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int | np.integer):
            raise TypeError(f"{fn}: dim={dim!r} must be an int or a tuple of ints")
        if not -ndim <= d < ndim:
            raise ValueError(f"{fn}: dim={dim!r} is out of range for a tensor with {ndim} "
                             f"dims; expected -{ndim} <= dim < {ndim}")
        out.append(int(d) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{fn}: dim={dim!r} repeats a dimension")
    return tuple(sorted(out))


def dim(fn: str, dim: Any, ndim: int) -> int:
    """Normalise one dim index (negative allowed)."""
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer):
        raise TypeError(f"{fn}: dim={dim!r} must be an int")
    return dims(fn, dim, ndim)[0]


def alias(fn: str, name: str, value: Any, alias: str, alias_value: Any, default: Any) -> Any:
    """Merge a PyTorch argument with its NumPy alias (``dim``/``axis``)."""
    if alias_value is None:
        return default if value is None else value
    if value is not None and value != alias_value:
        raise ValueError(f"{fn}: got {name}={value!r} and {alias}={alias_value!r}; pass one")
    return alias_value


def shape_arg(shape: tuple, size: Any = None, fn: str = "") -> tuple:
    """Accept ``f(2, 3)``, ``f((2, 3))`` and torch's keyword ``f(size=(2, 3))`` (a
    TypeError when both are given)."""
    if size is not None:
        if shape:
            raise TypeError(f"{fn}: the shape is given twice, as {shape!r} and as "
                            f"size={size!r}; expected one of them")
        shape = (size,)
    return (tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], Sequence | np.ndarray)
            else shape)


def number(fn: str, name: str, value: Any, low: float | None = None,
           high: float | None = None) -> float:
    """A finite real number (not a bool) in ``[low, high]``, as a float.

    A TypeError for anything but a real number, a ValueError for a non-finite one or one
    out of range; both name the function, the argument and the value.
    """
    from numbers import Real

    if isinstance(value, bool | np.bool_) or not isinstance(value, Real):
        raise TypeError(f"{fn}: {name}={value!r} must be a number")
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{fn}: {name}={value!r} must be a finite number")
    if (low is not None and value < low) or (high is not None and value > high):
        lo = "-inf" if low is None else low
        hi = "inf" if high is None else high
        raise ValueError(f"{fn}: {name}={value!r} must be in [{lo}, {hi}]")
    return value


def flag(fn: str, name: str, value: Any) -> bool:
    """A bool (a NumPy bool too), as a Python bool."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{fn}: {name}={value!r} must be a bool")
    return bool(value)
