"""``pdist``: the p-norm distances between every pair of rows of one matrix, as torch's,
made of differentiable Tensor operations (gradients of any order)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor, where
from ..tensor.args import number as _real
from ..tensor.script_functions import triu_indices

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
    i, j = triu_indices(x.shape[0], x.shape[0], 1)
    diff = (x[i] - x[j]).abs()
    if p == 0:
        count = (diff.detach() != 0).to(x.dtype).sum(-1)  # (recorded: a zero gradient)
        return where(np.ones(count.shape, bool), count, diff.sum(-1))
    if math.isinf(p):
        return diff.amax(-1) if x.shape[1] else diff.sum(-1)
    if p == 1:
        return diff.sum(-1)
    if p == 2:
        s = (diff * diff).sum(-1)
    else:  # |d|^p, whose derivative at d = 0 is taken as 0 (infinite for p < 1), as torch
        flat = diff.data == 0
        s = where(flat, 0.0, where(flat, 1.0, diff) ** _real(fn, "p", p)).sum(-1)
    zero = s.data == 0  # (d/ds s^(1/p) is infinite at 0: the masked branch has none)
    safe = where(zero, 1.0, s)
    return where(zero, 0.0, safe.sqrt() if p == 2 else safe ** (1.0 / p))
