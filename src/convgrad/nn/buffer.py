"""``nn.Buffer``: a Tensor marked to become a buffer when assigned to a Module attribute
(torch >= 2.5's ``torch.nn.Buffer``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..tensor import Tensor

__all__ = ["Buffer"]


class Buffer(Tensor):
    """``module.name = Buffer(data, persistent=True)`` registers ``data`` as the buffer
    ``name``, as ``register_buffer(name, data, persistent)`` would (a module stores its
    buffers as ndarrays, so ``module.name`` then reads back the array).

    ``data`` is a Tensor or an ndarray (its memory is shared when it is a float32/float64
    array); ``persistent=False`` keeps the buffer out of ``state_dict``.
    """

    def __init__(self, data: Any = None, *, persistent: bool = True) -> None:
        if not isinstance(persistent, bool):
            raise TypeError(f"Buffer: persistent={persistent!r} must be a bool")
        if data is None:
            data = np.empty(0, get_default_dtype())
        if not isinstance(data, Tensor | np.ndarray):
            raise TypeError(f"Buffer: data must be a Tensor or an ndarray, got "
                            f"{type(data).__name__}")
        super().__init__(data.data if isinstance(data, Tensor) else data)
        self.persistent = persistent
