"""The one strided copy between memory layouts (:func:`copy`), for every kernel family
and Tensor operation that lays an array out anew: ``contiguous(memory_format)``, the
pixel shuffles, padding's inner block, a gradient staged into its input's layout.

oneDNN's reorder (:mod:`.onednn.copy`) copies between any two layouts on every thread at
memory speed; NumPy's copy loops over the destination's innermost dim, however short.
(Above :mod:`.layouts`, which oneDNN's runtime imports.)
"""

from __future__ import annotations

import numpy as np

from . import layouts
from .onednn import copy as onednn_copy
from .parallel import num_threads

__all__ = ["COPY_MIN_SIZE", "copy", "laid_out"]

#: float32 elements from which :func:`copy` runs oneDNN's reorder: a call costs ~15 us,
#: what NumPy takes to copy 64K elements in their order
COPY_MIN_SIZE = 1 << 16


def copy(dst: np.ndarray, src: np.ndarray) -> str:
    """``dst[...] = src`` (one shape, any strides), and the algorithm that ran: oneDNN's
    reorder (every thread, at memory speed, whatever the two layouts) for large float32
    arrays with positive strides, else NumPy's copy, which loops over ``dst``'s innermost
    dim however short: NCHW to channels-last of (16, 64, 64, 64) took 12.6 ms so, 2.7 ms
    in oneDNN; a pixel unshuffle by 2 (an inner dim of 2) 15.7 ms and 1.4.  The caller
    records the event (its name says what the copy is for)."""
    if (src.dtype == dst.dtype == np.float32 and src.size >= COPY_MIN_SIZE
            and layouts.LAYOUT.pinned() != "numpy"):
        keep = [d for d in range(src.ndim) if src.shape[d] > 1]  # size-1 dims: no stride
        s, t = src.strides, dst.strides
        if all(s[d] > 0 and t[d] > 0 and not s[d] % 4 and not t[d] % 4 for d in keep):
            plan = onednn_copy.plan(tuple(src.shape[d] for d in keep),
                                    (tuple(s[d] // 4 for d in keep),
                                     tuple(t[d] // 4 for d in keep)), num_threads())
            if plan is not None:
                plan.run(src, dst)
                return "onednn"
    np.copyto(dst, src)
    return "numpy"


def laid_out(a: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``a`` in ``like``'s dense layout (channels-last or C order) and dtype: ``a`` itself
    when it lies so already, else a copy (a gradient handed back in another layout),
    logged as a ``layout`` event ``copy``."""
    cl = layouts.is_channels_last(like)
    if a.dtype == like.dtype and (layouts.is_channels_last(a) if cl else a.flags.c_contiguous):
        return a
    with layouts.LAYOUT.record("copy", a.shape) as rec:
        out = layouts.empty(a.shape, channels_last=cl, dtype=like.dtype)
        rec.algorithm = copy(out, a)
    return out
