"""The zero-padded input region that a block of outputs reads: its extent and a copy."""

from __future__ import annotations

import numpy as np

__all__ = ["padded_slab", "slab_extent"]


def slab_extent(outputs: int, taps: int, stride: int, dilation: int) -> int:
    """Input samples that ``outputs`` consecutive outputs read through ``taps`` taps:
    ``(outputs - 1) * stride + (taps - 1) * dilation + 1``."""
    return (outputs - 1) * stride + (taps - 1) * dilation + 1


def padded_slab(x: np.ndarray, start: list, ext: list, dtype, contiguous: bool = False):
    """``x[..., start:start+ext]`` per spatial dim, zero outside ``x``; None if all zero.

    A view of ``x`` when no padding is needed (unless ``contiguous``), else a new array.
    """
    L = x.shape[3:]
    nd = len(L)
    src = tuple(slice(max(start[i], 0), min(start[i] + ext[i], L[i])) for i in range(nd))
    if any(s.start >= s.stop for s in src):
        return None
    inside = all(start[i] >= 0 and start[i] + ext[i] <= L[i] for i in range(nd))
    if inside and not contiguous:
        return x[(Ellipsis, *src)]
    slab = (np.empty if inside else np.zeros)((*x.shape[:3], *ext), dtype=dtype)
    dst = tuple(slice(s.start - start[i], s.stop - start[i]) for i, s in enumerate(src))
    slab[(Ellipsis, *dst)] = x[(Ellipsis, *src)]
    return slab
