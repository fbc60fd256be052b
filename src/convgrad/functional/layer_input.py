"""The dtype contract of layers, as torch's: an input must be a float32/float64
``convgrad.Tensor`` or ndarray with the dtype of the layer's weight.

A float64 input to a float32 model is a TypeError naming both dtypes (instead of a
silent promotion to float64, which also moves the work to the NumPy engine), and so are
integer, float16 and uint8 inputs; a weight given as a plain ndarray or list (a constant,
such as a window) takes the input's dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..tensor import Tensor
from ..tensor.tensor import is_torch_tensor

__all__ = ["constant", "layer_input", "layer_weight"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def layer_input(fn: str, x: Any, weight: Any = None, name: str = "input") -> Tensor:
    """``x`` as a Tensor after the checks: a float32/float64 dtype, the same as a Tensor
    ``weight``'s (an ndarray or None weight sets no dtype)."""
    if is_torch_tensor(x):
        raise TypeError(f"{fn}: {name} is a torch.Tensor; expected a convgrad.Tensor or a "
                        "numpy.ndarray (convert with convgrad.tensor(t) or convgrad.from_dlpack"
                        "(t))")
    if isinstance(x, Tensor | np.ndarray):
        dt = x.dtype
    elif isinstance(x, list | tuple | int | float | np.generic):
        try:
            dt = np.asarray(x).dtype
        except ValueError as e:
            raise ValueError(f"{fn}: {name} cannot be made into an array: {e}") from None
        if dt.kind in "biu" and not isinstance(x, np.generic):  # Python numbers: default
            dt = get_default_dtype()
    else:
        raise TypeError(f"{fn}: {name} must be a convgrad.Tensor or numpy.ndarray, got "
                        f"{type(x).__module__}.{type(x).__name__}")
    wdt = weight.dtype if isinstance(weight, Tensor) else None
    if dt not in _FLOATS:
        want = f"{wdt}, the weight's dtype" if wdt is not None else "float32 or float64"
        raise TypeError(f"{fn}: {name} has dtype {dt}; expected {want} (as torch, layers "
                        "take floating point inputs: convert with .float())")
    if wdt is not None and wdt != dt:
        raise TypeError(f"{fn}: {name} has dtype {dt} but the weight has dtype {wdt}; "
                        f"expected the same dtype (convert the input with .to({wdt}) or the "
                        f"model with .to({dt}))")
    return x if isinstance(x, Tensor) else Tensor(x, dtype=dt)


def layer_weight(fn: str, w: Any, x: Tensor, name: str = "weight") -> Tensor:
    """A weight or bias for ``x``: a Tensor as it is (checked by :func:`layer_input`), a
    plain ndarray, list or number as a constant of ``x``'s dtype."""
    if isinstance(w, Tensor):
        return w
    return Tensor(constant(fn, w, name).astype(x.dtype, copy=False))


def constant(fn: str, w: Any, name: str = "weight") -> np.ndarray:
    """A weight given as a plain ndarray, list or number, as an ndarray of real numbers."""
    if is_torch_tensor(w):
        raise TypeError(f"{fn}: {name} is a torch.Tensor; expected a convgrad.Tensor or a "
                        "numpy.ndarray")
    if not isinstance(w, np.ndarray | np.generic | list | tuple | int | float):
        raise TypeError(f"{fn}: {name} must be a convgrad.Tensor or numpy.ndarray, got "
                        f"{type(w).__name__}")
    try:
        arr = np.asarray(w)
    except ValueError as e:
        raise ValueError(f"{fn}: {name} cannot be made into an array: {e}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{fn}: {name} has dtype {arr.dtype}; expected real numbers")
    return arr
