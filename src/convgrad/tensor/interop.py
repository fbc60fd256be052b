"""Exchange with other array libraries: ``from_dlpack`` (and ``Tensor.__dlpack__``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .tensor import _DTYPES, Tensor, is_torch_tensor

__all__ = ["from_dlpack"]


def from_dlpack(ext: Any) -> Tensor:
    """A Tensor sharing the memory of ``ext``, any object with ``__dlpack__`` (a CPU
    torch.Tensor, a NumPy or JAX array); a torch.Tensor requiring grad is detached first."""
    if is_torch_tensor(ext):
        ext = ext.detach()
    if not hasattr(ext, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (a CPU torch.Tensor "
                        f"or an array), got {type(ext).__name__}")
    try:
        arr = np.from_dlpack(ext)
    except (BufferError, RuntimeError, TypeError) as e:
        raise ValueError(f"from_dlpack: cannot read {type(ext).__name__} on the CPU: {e}"
                         ) from None
    if arr.dtype not in _DTYPES:
        raise TypeError(f"from_dlpack: dtype {arr.dtype} is not supported; expected float32, "
                        "float64, int32, int64 or bool")
    return Tensor._wrap(arr)
