"""The default float dtype, as torch's ``set_default_dtype`` / ``get_default_dtype``: the
dtype of every new float that no ``dtype=`` fixes (``zeros``, ``rand``, ``tensor([1.5])``,
``arange(0.5, 3)``, an ``nn`` layer's parameters, ...).  float32 unless a script sets
float64.  A leaf: it imports nothing of convgrad.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = ["get_default_dtype", "set_default_dtype", "set_default_tensor_type"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_default = [_FLOATS[0]]  # one cell, read by every creation function


def get_default_dtype() -> np.dtype:
    """The dtype of new floats made without ``dtype=``: ``cg.float32`` (the start) or
    ``cg.float64``."""
    return _default[0]


def _float_dtype(fn: str, d: Any) -> np.dtype:
    """``d`` as float32 or float64: a NumPy dtype (``cg.float64``) or scalar type
    (``np.float64``); a string, a Python type or any other dtype is a TypeError."""
    ok = isinstance(d, np.dtype) or isinstance(d, type) and issubclass(d, np.generic)
    dt = np.dtype(d) if ok else None
    if dt is None or dt not in _FLOATS:
        raise TypeError(f"{fn}: d={d!r} is not supported; only floating-point types are "
                        "supported as the default type: expected cg.float32 or cg.float64")
    return dt


def set_default_dtype(d: Any) -> None:
    """Make ``d`` (``cg.float32`` or ``cg.float64``) the dtype of new floats made without
    ``dtype=`` (torch's ``set_default_dtype``; convgrad has no float16 tensors)."""
    _default[0] = _float_dtype("set_default_dtype", d)


_TENSOR_TYPES = {"FloatTensor": _FLOATS[0], "DoubleTensor": _FLOATS[1]}


def set_default_tensor_type(t: Any) -> None:
    """torch's deprecated ``set_default_tensor_type``: ``cg.FloatTensor`` or
    ``cg.DoubleTensor`` (or their names, ``"torch.DoubleTensor"``) sets the default dtype
    to float32 or float64.  It warns, as torch, that ``set_default_dtype`` replaces it."""
    name = t if isinstance(t, str) else getattr(t, "__name__", None) if callable(t) else None
    if isinstance(name, str) and name.startswith("torch."):
        name = name[len("torch."):]
    if name not in _TENSOR_TYPES:
        raise TypeError(f"set_default_tensor_type: t={t!r} is not supported; expected "
                        "cg.FloatTensor or cg.DoubleTensor (or 'torch.FloatTensor', "
                        "'torch.DoubleTensor')")
    warnings.warn("set_default_tensor_type() is deprecated (as torch's since 2.1); use "
                  "set_default_dtype()", UserWarning, stacklevel=2)
    _default[0] = _TENSOR_TYPES[name]
