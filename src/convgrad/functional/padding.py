"""``F.pad`` with ``torch.nn.functional.pad``'s semantics, differentiable to any order.

Negative pads crop first; the positive pads then come from the cropped tensor.  Constant
padding is one op (``PadConstant``); reflect, circular and replicate one op for every
padded dim (``PadEdges``: the input copied into one output, then strided copies of each
dim's borders), except on dask arrays and for a replicate pad that crops, which gather
by source index, a dim at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor, lazy
from ..tensor.shape import PadConstant, PadEdges

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def _source_index(mode: str, n: int, lo: int, hi: int) -> np.ndarray:
    """For each output position along a dim padded by (lo, hi), the input index it copies."""
    i = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "circular":
        return i % n
    i = np.abs(i)  # reflect about the first and the last element, which are not repeated
    return np.where(i > n - 1, 2 * (n - 1) - i, i)


def pad(x: Any, pad: Sequence[int], mode: str = "constant", value: float = 0.0) -> Tensor:
    """Pad (or crop, with negative sizes) the last ``len(pad) // 2`` dims of ``x``.

    ``pad = (left, right, top, bottom, ...)`` starts from the last dim, as in torch;
    ``mode`` is one of constant, reflect, replicate, circular.
    """
    x = as_tensor(x)
    if mode not in _MODES:
        raise ValueError(f"pad: mode={mode!r} is not supported; expected one of {_MODES}")
    pad = tuple(pad)
    if (len(pad) % 2 or len(pad) // 2 > x.ndim
            or not all(isinstance(p, int | np.integer) and not isinstance(p, bool) for p in pad)):
        raise ValueError(f"pad: pad={pad} must hold an even number of ints, at most 2 per dim "
                         f"of the input (which has {x.ndim} dims)")
    pairs = [(0, 0)] * x.ndim  # (lo, hi) per dim, dim order
    for i in range(len(pad) // 2):
        pairs[x.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))

    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(pairs, x.shape))
    sizes = [n + lo + hi for (lo, hi), n in zip(pairs, x.shape)]
    if min(sizes) < 0 or (mode != "constant" and any(
            s == 0 for s, p in zip(sizes, pairs) if p != (0, 0))):
        raise ValueError(f"pad: pad={pad} would leave the input of shape {x.shape} with "
                         f"shape {tuple(sizes)}; expected sizes >= 1 in the padded dims")
    if mode == "replicate":  # out[j] = x[clip(j - lo)]: a crop to nothing repeats the edge
        for d, ((lo, hi), n) in enumerate(zip(pairs, x.shape)):
            if (lo, hi) != (0, 0) and n == 0:
                raise ValueError(f"pad: pad={pad} in replicate mode needs a non-empty dim {d} "
                                 f"(input shape {x.shape})")
        pads = tuple((d, lo, hi) for d, (lo, hi) in enumerate(pairs) if (lo, hi) != (0, 0))
        if all(lo >= 0 and hi >= 0 for _, lo, hi in pads) and not lazy.is_dask_array(x.data):
            return PadEdges.apply(x, mode=mode, pads=pads) if pads else x
        for d, lo, hi in pads:
            n = x.shape[d]
            idx = np.clip(np.arange(n + lo + hi) - lo, 0, n - 1)
            x = x[(slice(None),) * d + (idx,)]
        return x
    if any(lo < 0 or hi < 0 for lo, hi in pairs):
        x = x[crop]
    pairs = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    if all(p == (0, 0) for p in pairs):
        return x
    if mode == "constant":
        return PadConstant.apply(x, widths=tuple(pairs), value=value)
    for d, ((lo, hi), n) in enumerate(zip(pairs, x.shape)):
        limit = {"reflect": n - 1, "circular": n}.get(mode, max(lo, hi))  # replicate: any
        if (lo, hi) != (0, 0) and (n == 0 or max(lo, hi) > limit):
            raise ValueError(f"pad: pad={pad} in {mode} mode needs pads <= {limit} for dim {d} "
                             f"of size {n} (input shape {x.shape})")
    pads = tuple((d, lo, hi) for d, (lo, hi) in enumerate(pairs) if (lo, hi) != (0, 0))
    if not lazy.is_dask_array(x.data):
        return PadEdges.apply(x, mode=mode, pads=pads)
    for d, lo, hi in pads:  # (dask gathers lazily by index)
        x = x[(slice(None),) * d + (_source_index(mode, x.shape[d], lo, hi),)]
    return x
