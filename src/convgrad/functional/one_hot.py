"""``one_hot``: class indices to int64 indicator vectors along a new last dim."""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from ..tensor import Tensor

__all__ = ["one_hot"]


def one_hot(tensor: Any, num_classes: int = -1) -> Tensor:
    """``out[..., c] = 1`` where ``tensor[...] == c``, else 0 (int64).

    ``num_classes=-1`` takes one more than the largest index.  ``tensor`` holds integers
    (an int array or Tensor; a float one holding whole numbers is accepted too).
    """
    fn = "one_hot"
    t = tensor.data if isinstance(tensor, Tensor) else np.asarray(tensor)
    if t.dtype.kind == "f" and np.array_equal(t, np.round(t)):
        t = t.astype(np.int64)
    if t.dtype.kind not in "iu":
        raise TypeError(f"{fn}: tensor of dtype {t.dtype} must hold integer class indices")
    if isinstance(num_classes, bool) or not isinstance(num_classes, Integral) or (
            num_classes < -1):
        raise ValueError(f"{fn}: num_classes={num_classes!r} must be -1 or a count >= 0")
    if t.size and t.min() < 0:
        raise ValueError(f"{fn}: class values must be non-negative, got {t.min()}")
    if num_classes == -1:
        if t.size == 0:
            raise ValueError(f"{fn}: num_classes=-1 cannot be inferred from an empty tensor")
        num_classes = int(t.max()) + 1
    if t.size and t.max() >= num_classes:
        raise ValueError(f"{fn}: class values must be smaller than num_classes={num_classes}, "
                         f"got {t.max()}")
    out = (t[..., None] == np.arange(int(num_classes))).astype(np.int64)
    return Tensor._wrap(out)
