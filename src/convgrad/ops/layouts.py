"""Memory layouts: the one module that says how an activation lies in memory.

A Tensor's logical layout is always channels first, (N, C, *spatial); its memory may be
C-contiguous or channels-last (dense (N, *spatial, C)), which oneDNN runs fastest and
which NumPy's elementwise operations keep.  Every kernel family asks here: the
predicates on an array or on element strides, the strides of a layout, and allocation
in a layout.  Conversions between layouts are the ``layout`` kernel family
(:data:`LAYOUT`): oneDNN's reorders inside a plan and NumPy's copies, each a profiler
event.  Which layout a pass writes is the dispatch point's decision
(:func:`convgrad.ops.dispatch.output_channels_last`).
"""

from __future__ import annotations

import numpy as np

from .registry import family

__all__ = ["ALIGNMENT", "LAYOUT", "axis_view", "channels_last_strides", "dense_channels_last",
           "dense_strides", "empty", "is_aligned", "is_channels_last", "is_dense",
           "memory_order", "strides_like"]

#: conversions between layouts: ``onednn`` (a reorder: a step of a oneDNN plan, or
#: :func:`.relayout.copy`), ``numpy`` (a copy)
LAYOUT = family("layout", ("onednn", "numba", "numpy"))

#: bytes: the alignment of oneDNN's arena buffers and of :func:`empty` on request,
#: oneDNN's assumption for the arrays it writes: its resampling kernel stores a large
#: output (past its cache estimate) with non-temporal stores, which raise a
#: general-protection fault on less (NumPy's large arrays lie 16 bytes past a page); its
#: other kernels check, or store plainly
ALIGNMENT = 64


def _innermost_first(ndim: int) -> tuple[int, ...]:
    """The dims of a channels-last array from the innermost: C, the spatial dims
    backwards, N."""
    return (1, *range(ndim - 1, 1, -1), 0)


def dense_channels_last(shape: tuple, strides: tuple) -> bool:
    """Dense (N, *spatial, C) memory in element ``strides``, with C > 1."""
    if len(shape) < 3 or shape[1] < 2:
        return False
    acc = 1
    for d in _innermost_first(len(shape)):
        if shape[d] > 1 and strides[d] != acc:
            return False
        acc *= shape[d]
    return True


def is_channels_last(a: np.ndarray) -> bool:
    """Whether ``a`` (N, C, *spatial) is laid out densely as (N, *spatial, C) with C > 1.

    Asked of every activation by several kernels a call: written as one loop over the
    byte strides (the generator version cost 1.4 us, a tenth of a small kernel's glue)."""
    shape, strides, item = a.shape, a.strides, a.itemsize
    ndim = len(shape)
    if ndim < 3 or shape[1] < 2 or strides[1] != item:
        return False
    acc = item * shape[1]
    for d in range(ndim - 1, -1, -1):
        if d == 1:
            continue
        n, s = shape[d], strides[d]
        if n > 1:
            if s != acc:
                return False
            acc *= n
        elif s % item:
            return False
    return True


def channels_innermost(a: np.ndarray) -> bool:
    """Whether ``a`` (N, C, *spatial) has its channels innermost in memory with positive
    strides: channels-last, or a channel slice of a channels-last array (as a
    concatenation's backward hands each part)."""
    big = [st for st, n in zip(a.strides, a.shape) if n > 1]
    return a.ndim >= 3 and a.shape[1] > 1 and a.strides[1] == a.itemsize and min(big) > 0 and (
        a.strides[1] == min(big))


def is_dense(a: np.ndarray) -> bool:
    """Whether ``a``'s elements fill one gap-free run of memory, in any order of its dims
    (C-contiguous, channels-last, any transpose of them) with positive strides, so that
    its data pointer is its first byte: an elementwise kernel may treat it as flat."""
    if a.flags.c_contiguous:
        return True
    acc = a.itemsize
    for s, n in sorted((s, n) for n, s in zip(a.shape, a.strides) if n > 1):
        if s != acc:
            return False
        acc *= n
    return True


def channels_last_strides(shape: tuple) -> tuple[int, ...]:
    """Element strides of a dense channels-last array of ``shape``."""
    out = [0] * len(shape)
    acc = 1
    for d in _innermost_first(len(shape)):
        out[d] = acc
        acc *= shape[d]
    return tuple(out)


def dense_strides(shape: tuple, channels_last: bool) -> tuple[int, ...]:
    """Element strides of a dense array of ``shape``, channels-last or in C order."""
    if channels_last:
        return channels_last_strides(shape)
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def strides_like(x: np.ndarray, shape: tuple) -> tuple[int, ...]:
    """Element strides of a dense array of ``shape`` in ``x``'s layout (channels-last, or
    else C order)."""
    return dense_strides(shape, is_channels_last(x))


def empty(shape: tuple, channels_last: bool = False, dtype=np.float32,
          aligned: bool = False) -> np.ndarray:
    """An uninitialised (N, C, *spatial) array, channels-last in memory if asked, its
    first byte on an :data:`ALIGNMENT` boundary if ``aligned`` (a view into a slightly
    larger buffer)."""
    shape = tuple(shape)
    alloc = _aligned_empty if aligned else np.empty
    if not channels_last or len(shape) < 3:
        return alloc(shape, dtype=dtype)
    nd = len(shape)  # memory (N, *spatial, C), viewed back as (N, C, *spatial)
    return alloc((shape[0], *shape[2:], shape[1]), dtype=dtype).transpose(
        0, nd - 1, *range(1, nd - 1))


def _aligned_empty(shape: tuple, dtype=np.float32) -> np.ndarray:
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    if nbytes == 0:  # no memory to place
        return np.empty(shape, dtype=dtype)
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def is_aligned(a: np.ndarray) -> bool:
    """Whether ``a``'s first byte lies on an :data:`ALIGNMENT` boundary."""
    return a.ctypes.data % ALIGNMENT == 0


def memory_order(a: np.ndarray) -> list[int]:
    """``a``'s dims from the outermost of its memory to the innermost (ties by dim)."""
    return sorted(range(a.ndim), key=lambda d: (-a.strides[d], d))


def axis_view(a: np.ndarray, axis: int, order: list[int] | None = None
              ) -> np.ndarray | None:
    """``a`` as the ``(outer, a.shape[axis], inner)`` view of its memory, its dims taken in
    ``order`` (outermost first; default: :func:`memory_order`), or None when ``a`` is not
    C-contiguous in that order.  Two arrays of one shape viewed in one order line up
    element for element; so does an array with ``axis`` of size 1 (the view's middle
    dim 1) with the positions of a full one."""
    order = memory_order(a) if order is None else order
    t = a.transpose(order)
    if not t.flags.c_contiguous:
        return None
    i = order.index(axis)
    outer = int(np.prod(t.shape[:i], dtype=np.int64))
    return t.reshape(outer, a.shape[axis], int(np.prod(t.shape[i + 1:], dtype=np.int64)))
