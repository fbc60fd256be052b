"""The one strided copy between memory layouts (:func:`copy`), for every kernel family
and Tensor operation that lays an array out anew: ``contiguous(memory_format)``, the
pixel shuffles, padding's inner block, a gradient staged into its input's layout.

oneDNN's reorder (:mod:`.onednn.copy`) copies between any two layouts on every thread at
memory speed; NumPy's copy loops over the destination's innermost dim, however short.
(Above :mod:`.layouts`, which oneDNN's runtime imports.)
"""

from __future__ import annotations

import numpy as np

from . import copy_loops, layouts
from .onednn import copy as onednn_copy
from .parallel import num_threads

__all__ = ["COPY_MIN_SIZE", "ROWS_MIN_SIZE", "SHORT_RUN_MIN_SIZE", "concatenate", "copy",
           "laid_out", "row_matrix", "span"]

#: float32 elements from which :func:`copy` runs oneDNN's reorder where NumPy copies runs
#: of 16 or more contiguous elements (measured, 2 threads: a channel slice of a
#: channels-last (8, 64, H, W) array, 256K elements 51 us NumPy / 75 us oneDNN, 1M
#: 264 / 252, 4M 2655 / 2399; the reorder's call costs 15-30 us from Python)
COPY_MIN_SIZE = 1 << 20
#: the same where NumPy's innermost run is shorter (NCHW to channels-last of 64
#: channels: 64K elements 34 / 36 us, 256K 130 / 108; a pixel shuffle's runs of 2:
#: NumPy 10x slower throughout)
SHORT_RUN_MIN_SIZE = 1 << 16
#: the run NumPy copies fast: a cache line of float32
_LONG_RUN = 16
#: float32 elements from which a copy of rows at two pitches (a channel slice of a
#: channels-last array, into or out of a concatenation) runs the compiled loop
#: (:mod:`.copy_loops`) on every thread; measured on an Intel Xeon, 2 threads, us, NumPy /
#: oneDNN / the loop: 65536 elements in 32-float rows 6.4 / 13.8 / 6.1, 131072 in
#: 16-float rows 48 / 36 / 27, 8192 3.2 / 10.3 / 3.7 (below: NumPy's one call)
ROWS_MIN_SIZE = 1 << 16


def copy(dst: np.ndarray, src: np.ndarray) -> str:
    """``dst[...] = src`` (one shape, any strides), and the algorithm that ran: the
    compiled row copy for a large copy of rows at two pitches (a channel slice of a
    channels-last array, :func:`row_matrix`), oneDNN's reorder (every thread, at memory speed,
    whatever the two layouts) for large float32 arrays with positive strides
    (:func:`_plan`), else NumPy's copy, which loops over ``dst``'s innermost dim however
    short: NCHW to channels-last of (16, 64, 64, 64) took
    12.6 ms so, 2.7 ms in oneDNN; a pixel unshuffle by 2 (an inner dim of 2) 15.7 ms and
    1.4.  The caller records the event (its name says what the copy is for)."""
    if _copy_rows(dst, src):
        return "numba"
    plan = _plan(dst, src)
    if plan is not None:
        plan.run(src, dst)
        return "onednn"
    np.copyto(dst, src)
    return "numpy"


def _copy_rows(dst: np.ndarray, src: np.ndarray) -> bool:
    """``dst[...] = src`` by the compiled row copy (:mod:`.copy_loops`) where both are
    float32 matrices of the same rows at their own pitches (:func:`row_matrix`) of at least
    :data:`ROWS_MIN_SIZE` elements and Numba runs; whether it did."""
    if src.size < ROWS_MIN_SIZE:
        return False
    found = row_matrix(dst, src)  # first: another shape never waits for Numba's loading
    if found is None or not _rows_run_here(dst, src):
        return False
    _run_rows(dst, src, found)
    return True


def _rows_run_here(*arrays: np.ndarray) -> bool:
    """The compiled row copy may take these arrays: float32, not pinned elsewhere, Numba
    loaded (waits for the warm-up's loading, as every compiled kernel)."""
    return (all(a.dtype == np.float32 for a in arrays)
            and layouts.LAYOUT.pinned() not in ("numpy", "onednn")
            and copy_loops.loops() is not None)


def span(a: np.ndarray, rows: int, pitch: int, run: int) -> np.ndarray:
    """The flat memory of ``rows`` rows of ``run`` elements at ``pitch``, from ``a``'s first
    element (its positive strides put that first in memory)."""
    return np.lib.stride_tricks.as_strided(a, ((rows - 1) * pitch + run,), (a.itemsize,))


def _run_rows(dst: np.ndarray, src: np.ndarray, found: tuple) -> None:
    rows, run, s_pitch, t_pitch = found
    copy_loops.loops()["copy_rows"](span(src, rows, s_pitch, run), s_pitch,
                                    span(dst, rows, t_pitch, run), t_pitch, rows, run)


def _joinable(slices: list, found: list) -> bool:
    """Two parts whose rows lie side by side in one row of the output: the same rows at
    one pitch, the second part's run starting where the first's ends, the pitch their
    two runs (a channels-last concatenation along C)."""
    if len(found) != 2:
        return False
    (rows, a_run, _, pitch), (rows_b, b_run, _, pitch_b) = found
    item = slices[0].itemsize
    return (rows == rows_b and pitch == pitch_b == a_run + b_run
            and slices[1].ctypes.data == slices[0].ctypes.data + a_run * item)


def _join_rows(out: np.ndarray, parts: list, found: list) -> None:
    """Two parts into ``out`` in one pass over its rows (``found``: each part's
    (rows, run, pitch, out pitch), the same rows)."""
    (rows, a_run, a_pitch, pitch), (_, b_run, b_pitch, _) = found
    a, b = parts
    copy_loops.loops()["join_rows"](span(a, rows, a_pitch, a_run), a_pitch, a_run,
                                    span(b, rows, b_pitch, b_run), b_pitch, b_run,
                                    span(out, rows, pitch, a_run + b_run), pitch, rows)


def row_matrix(dst: np.ndarray, src: np.ndarray) -> tuple[int, int, int, int] | None:
    """(rows, run, src pitch, dst pitch) in elements where ``src`` and ``dst`` (one shape,
    positive strides) are the same matrix of rows: the innermost dim of both (``dst``'s
    memory order) contiguous, every other dim folding into one row index at one pitch in
    each (a channel slice of a channels-last array: N * spatial rows of C_slice); None
    otherwise, or where there is one row."""
    item = dst.itemsize
    dims = sorted(((t, s, n) for n, s, t in zip(src.shape, src.strides, dst.strides) if n > 1),
                  reverse=True)
    if len(dims) < 2 or any(t <= 0 or s <= 0 for t, s, _ in dims):
        return None
    t_in, s_in, run = dims[-1]
    if t_in != item or s_in != item:
        return None
    t_pitch, s_pitch, rows = dims[-2]
    for (t, s, n), (ti, si, ni) in zip(dims[-3::-1], dims[-2:0:-1]):
        if t != ti * ni or s != si * ni:
            return None
        rows *= n
    if t_pitch % item or s_pitch % item or t_pitch < run * item:
        return None
    return rows, run, s_pitch // item, t_pitch // item


def _plan(dst: np.ndarray, src: np.ndarray):
    """oneDNN's plan for copying ``src`` into ``dst``, or None where NumPy's copy is as
    fast (small arrays, long contiguous runs below :data:`COPY_MIN_SIZE`) or oneDNN
    cannot take it (another dtype, a stride that is not a positive multiple of the
    element, no fast reorder)."""
    if (src.dtype != np.float32 or dst.dtype != np.float32 or src.size < SHORT_RUN_MIN_SIZE
            or layouts.LAYOUT.pinned() == "numpy"):
        return None
    dims = _merged(src, dst)
    if dims is None:
        return None
    run = max((n for n, s, t in dims if s == t == 1), default=1)
    if run >= _LONG_RUN and src.size < COPY_MIN_SIZE:
        return None
    shape, s, t = zip(*dims)
    return onednn_copy.plan(shape, (s, t), num_threads())


def _merged(src: np.ndarray, dst: np.ndarray) -> list | None:
    """The copy's dims as (extent, src stride, dst stride) in elements, size-1 dims
    dropped and neighbours that are one run in both arrays merged (fewer, longer dims
    for oneDNN to walk: a slice of a channels-last output along H is (N, C, H W)); None
    where a stride is not a positive multiple of the element."""
    dims: list = []
    for n, s, t in zip(src.shape, src.strides, dst.strides):
        if n == 1:
            continue
        if s <= 0 or t <= 0 or s % 4 or t % 4:
            return None
        s, t = s // 4, t // 4
        if dims and dims[-1][1] == s * n and dims[-1][2] == t * n:
            dims[-1] = (dims[-1][0] * n, s, t)
        else:
            dims.append((n, s, t))
    return dims or [(1, 1, 1)]


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


def concatenate(parts: list, axis: int):
    """``np.concatenate(parts, axis)`` in the parts' layout (channels-last stays so), one
    ``layout`` event.  Dense float32 ndarrays of one layout are copied each into its slice
    of the output by oneDNN's reorder where it pays (:func:`_plan`), else one NumPy call;
    anything else is NumPy's.  Two channels-last (2, 16, 64, 64, 64) parts along C took
    17.5 ms in NumPy (runs of 16 channels, 64 bytes), 6.1 ms so; (16, 64, 64, 64) ones
    6.0 and 5.6 ms; (8, 256, 8, 8) ones 0.03 ms in NumPy's one call (0.08 ms as a
    reorder per part, the threshold's reason)."""
    with layouts.LAYOUT.record("concatenate",
                               *(tuple(getattr(p, "shape", ())) for p in parts)) as rec:
        first = parts[0] if parts else None
        ndim = getattr(first, "ndim", 0)
        cl = isinstance(first, np.ndarray) and layouts.is_channels_last(first)
        if not (ndim and -ndim <= axis < ndim) or not all(
                type(p) is np.ndarray and p.dtype == np.float32 and p.ndim == ndim
                and p.shape[:axis % ndim] + p.shape[axis % ndim + 1:]
                == first.shape[:axis % ndim] + first.shape[axis % ndim + 1:]
                and (layouts.is_channels_last(p) if cl else p.flags.c_contiguous)
                for p in parts):
            rec.algorithm = "numpy"  # (NumPy's errors for what it cannot join)
            return np.concatenate(parts, axis=axis)
        axis = axis % ndim
        shape = list(first.shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        out = layouts.empty(tuple(shape), channels_last=cl)
        slices, start = [], 0
        for p in parts:
            slices.append(out[(slice(None),) * axis + (slice(start, start + p.shape[axis]),)])
            start += p.shape[axis]
        found = ([row_matrix(d, p) for d, p in zip(slices, parts)]
                 if out.size >= ROWS_MIN_SIZE else [])
        if found and all(found) and _rows_run_here(out, *parts):
            if _joinable(slices, found):  # each part into its channels of every row
                _join_rows(out, parts, found)
            else:
                for d, p, f in zip(slices, parts, found):
                    _run_rows(d, p, f)
            rec.algorithm = "numba"
            return out
        plans = [_plan(d, p) for d, p in zip(slices, parts)]
        if not any(plans):  # one NumPy call (a copy per part costs more for small parts)
            rec.algorithm = "numpy"
            return np.concatenate(parts, axis=axis, out=out)
        for plan, d, p in zip(plans, slices, parts):
            if plan is None:
                np.copyto(d, p)
            else:
                plan.run(p, d)
        rec.algorithm = "onednn"
        return out
