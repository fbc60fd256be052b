"""``.safetensors`` files through the ``safetensors`` package's NumPy API.

The format is a length-prefixed JSON header (name -> dtype, shape, byte range) and the
raw little-endian data; its reader checks the header against the file size before any
tensor is read and never runs code.  It is the format PyTorch users exchange weights
in (``safetensors.torch.save_file(model.state_dict(), path)``), so a torch state dict
saved that way loads into the matching convgrad model and back.  The package is an
optional extra (``pip install convgrad[safetensors]``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..tensor import Tensor

__all__ = ["load_safetensors", "save_safetensors"]

# numeric dtypes NumPy can hold (bfloat16 and the float8 kinds it cannot)
_DTYPES = {"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F16", "F32", "F64"}


def _package(fn: str) -> Any:
    try:
        import safetensors
        import safetensors.numpy  # noqa: F401
    except ImportError:
        raise ImportError(f"{fn}: .safetensors files need the safetensors package "
                          "(pip install 'convgrad[safetensors]' or pip install safetensors)"
                          ) from None
    return safetensors


def save_safetensors(obj: Any, path: str, fn: str) -> None:
    """Write a flat mapping of names to arrays (or Tensors) as a ``.safetensors`` file."""
    if not isinstance(obj, Mapping):
        raise TypeError(f"{fn}: a .safetensors file holds a flat mapping of names to arrays "
                        f"(a state dict), got {type(obj).__name__}")
    tensors: dict[str, np.ndarray] = {}
    for key, value in obj.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"{fn}: key {key!r} must be a non-empty str")
        arr = value.data if isinstance(value, Tensor) else value
        if not isinstance(arr, np.ndarray | np.generic):
            raise TypeError(f"{fn}: {key!r} is a {type(value).__name__}; a .safetensors file "
                            "holds arrays only (use a .npz path for nested state)")
        arr = np.asarray(arr)
        if arr.dtype.kind not in "biuf" or arr.dtype.fields is not None:
            raise TypeError(f"{fn}: {key!r} has dtype {arr.dtype}; expected a numeric array")
        tensors[key] = np.array(arr, order="C", copy=True)  # contiguous, owning its memory
    _package(fn).numpy.save_file(tensors, path)


def load_safetensors(path: str, fn: str) -> OrderedDict[str, np.ndarray]:
    """Read every tensor of a ``.safetensors`` file: names -> writeable ndarrays."""
    safetensors = _package(fn)
    out: OrderedDict[str, np.ndarray] = OrderedDict()
    try:
        with safetensors.safe_open(path, framework="np") as f:
            for key in f.keys():
                dtype = f.get_slice(key).get_dtype()
                if dtype not in _DTYPES:
                    raise ValueError(f"{fn}: {path!r}: tensor {key!r} has dtype {dtype}, which "
                                     "NumPy cannot hold; save it as float32 (e.g. "
                                     "{k: v.float() for k, v in state.items()} in torch)")
                out[key] = np.array(f.get_tensor(key), copy=True)
    except ValueError as e:
        if str(e).startswith(fn):
            raise
        raise ValueError(f"{fn}: {path!r} is not a valid .safetensors file: {e}") from None
    except Exception as e:  # the reader's own error types: a bad header, a short file
        raise ValueError(f"{fn}: {path!r} is not a valid .safetensors file: "
                         f"{type(e).__name__}: {e}") from None
    return out
