"""``pdist``: the p-norm distances between every pair of rows of one matrix, as torch's
(:mod:`convgrad.tensor.distances`: differentiable operations, a bounded block of
differences at a time)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor
from ..tensor.distances import row_distances

__all__ = ["pdist"]


def pdist(input: Any, p: float = 2.0) -> Tensor:  # noqa: A002
    """``||input[i] - input[j]||_p`` for every ``i < j`` (row-major order, N(N-1)/2
    values) of an (N, M) input; ``p`` >= 0 (0 counts the differing entries, ``inf`` is
    the largest difference).  As torch, a zero distance has a zero gradient."""
    fn = "pdist"
    x = as_tensor(input)
    if x.data.dtype.kind != "f":
        raise TypeError(f"{fn}: input must be a float Tensor, got dtype {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{fn}: input must be 2-D (N, M), got shape {x.shape}")
    if isinstance(p, bool | np.bool_) or not isinstance(p, int | float | np.floating
                                                          | np.integer):
        raise TypeError(f"{fn}: p={p!r} must be a number")
    p = float(p)
    if not p >= 0:
        raise ValueError(f"{fn}: p={p!r} must be >= 0")
    i, j = np.triu_indices(x.shape[0], 1)
    return row_distances(x, x, p)[i, j]
