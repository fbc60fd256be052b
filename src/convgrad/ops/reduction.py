"""Accurate sums over any axes, whatever the memory layout: the one reduction kernel.

NumPy sums pairwise only along the inner loop of its iteration, which runs over the
reduced axes only when they are the innermost of memory.  Over any other axes it adds
whole rows into the accumulator one after another, so a float32 sum of n terms drifts by
about sqrt(n) roundings instead of log2(n): the mean over (H, W) of a channels-last
(4, 16, 384, 384) convolution output was off by 1.6e-5 relative, torch's by 1.6e-7.

``total`` keeps NumPy's pairwise float32 sum where it applies.  Where the reduced axes
lie together in memory with kept ones inside them (a bias gradient or a BatchNorm
statistic of a channels-last activation: rows of C channels; its mean over (H, W): such
a matrix per sample), it sums blocks of :data:`BLOCK_ROWS` rows in float32 (one
compiled pass, :mod:`.reduction_loops`, where Numba is installed; else a row of ones
times the block, through BLAS) and the block sums in float64: faster than NumPy's
float32 sum and more accurate than torch's (1.2e-7 against 1.7e-7 relative, NumPy's
float32 4.2e-6).  Any other layout accumulates in float64 (exact to the final rounding
for any realistic n; the sum over (H, W) of a channels-last (16, 64, 64, 64) array took
4.1 ms so, 0.3 ms in the compiled pass, torch 0.15 ms).  Every sum of the library
(Tensor sums and means, normalisation statistics and their backward terms, bias
gradients, softmax) goes through here.  Measured on an AMD EPYC, 2 cores.

Large sums run on the thread pool (:mod:`.parallel`), each thread summing a range of
the kept positions (channels, say) with the same algorithm: every output is summed as
on one thread, so the result does not depend on the thread count.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from . import jit, reduction_loops
from .parallel import num_threads, run_chunks
from .registry import family

__all__ = ["REDUCE", "column_sums", "compiled_channel_sums", "finish_channel_sums", "mean",
           "part_sums", "sum_over", "total"]

REDUCE = family("reduce", ("numba", "blas", "numpy"))

# Reduced positions outside the innermost contiguous block are added one after another
# into the pairwise partial sums: up to 16 of them (the batch of a BatchNorm or a bias
# gradient over NCHW or NCL) add at most ~4 roundings (measured on (16, 64, 4096) over
# (0, 2): 1.2e-7 relative, as the float64 path's cost there was 1.9x).
_SEQUENTIAL_LIMIT = 16
# Rows summed in float32 before a float64 accumulator takes over: 16 rows add ~4
# roundings to a block's sum (a sum of 64 rows, one block of 64, had 2.5x torch's error;
# of 16, 0.84x), and the blocks' float32 sums still cost one pass over memory.
BLOCK_ROWS = 16
# Below this many elements a sum runs on the calling thread: a pass over 2^18 float32
# takes ~60 us, about what handing tasks to the pool and back costs.
PARALLEL_MIN_SIZE = 1 << 18


def _axes(ndim: int, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int | np.integer):
        axis = (axis,)
    return tuple(int(a) % ndim for a in axis) if ndim else ()


def _sequential_terms(x: np.ndarray, axes: tuple[int, ...]) -> int:
    """How many partial sums NumPy adds one after another when summing ``x`` over ``axes``.

    The reduced axes that are the innermost of memory and contiguous form the inner loop,
    summed pairwise; every other reduced position adds one term in sequence.
    """
    reduced = [d for d in axes if x.shape[d] > 1]
    inner = set()
    expected = x.itemsize
    for d in sorted((d for d in range(x.ndim) if x.shape[d] > 1),
                    key=lambda d: abs(x.strides[d])):
        if d not in reduced or x.strides[d] != expected:
            break
        inner.add(d)
        expected *= x.shape[d]
    return prod(x.shape[d] for d in reduced if d not in inner)


def _rows(x: np.ndarray, axes: tuple[int, ...]
          ) -> tuple[np.ndarray, list[int], list[int]] | None:
    """``x`` as a (batch, reduced positions, kept positions) array without a copy, and
    the kept axes outside and inside the reduced ones in memory order, when the reduced
    axes lie together in memory, the inner kept ones dense, the reduced ones dense among
    themselves from a row pitch of at least the inner extent (a dense array, or a
    channel slice of a channels-last one, as the backward of a concatenation hands each
    part), and the outer kept ones (the batch: the samples of a channels-last array
    summed over its pixels) dense among themselves.  None otherwise."""
    order = sorted((d for d in range(x.ndim) if x.shape[d] > 1),
                   key=lambda d: -abs(x.strides[d]))
    at = [i for i, d in enumerate(order) if d in axes]
    if not at or at[-1] + 1 == len(order) or at[-1] - at[0] + 1 != len(at):
        return None
    outer, reduced, inner = order[:at[0]], order[at[0]:at[-1] + 1], order[at[-1] + 1:]
    expected = x.itemsize
    for d in reversed(inner):
        if x.strides[d] != expected:
            return None
        expected *= x.shape[d]
    pitch = x.strides[reduced[-1]]
    if pitch < expected or pitch % x.itemsize:
        return None
    for group in (reduced, outer):
        expected = x.strides[group[-1]] if group else 0
        for d in reversed(group):
            if x.strides[d] != expected:
                return None
            expected *= x.shape[d]
    batch = prod(x.shape[d] for d in outer)
    rows = prod(x.shape[d] for d in reduced)
    width = prod(x.shape[d] for d in inner)
    step = x.strides[outer[-1]] if outer else 0
    return (np.lib.stride_tricks.as_strided(x, (batch, rows, width), (step, pitch, x.itemsize)),
            outer, inner)


def compiled_channel_sums(x: np.ndarray, axes: tuple[int, ...]) -> tuple[int, int] | None:
    """(rows, width) where :func:`total` of ``x`` over ``axes`` is the compiled column sums
    of one dense (rows, width) matrix, the memory of ``x`` as it lies (a channels-last
    gradient summed over all but its channels: a bias gradient); else None.  A kernel
    that produces such an ``x`` may sum it as it writes it, into :func:`part_sums`'s
    partial sums, and :func:`finish_channel_sums` gives :func:`total`'s bits."""
    found = _channel_geometry(x, axes)
    if found is None or reduction_loops.loops() is None:
        return None
    return found[0], found[1]


def _channel_geometry(x: np.ndarray, axes: tuple[int, ...]) -> tuple | None:
    """:func:`compiled_channel_sums`'s (rows, width) and ``x``'s kept axes outside and
    inside the reduced ones, remembered per dtype, shape, strides, alignment and axes: a
    network asks each step for the same few, and working it out took 16 us a call (40-50
    in a training step's cold caches, before each fused ReLU and bias gradient)."""
    axes = _axes(x.ndim, axes)
    key = (x.dtype, x.shape, x.strides, x.flags.aligned, axes)
    found = _geometries.get(key, _UNKNOWN)
    if found is _UNKNOWN:
        found = None
        if not (x.dtype != np.float32 or x.size <= _SEQUENTIAL_LIMIT or not x.flags.aligned
                or _sequential_terms(x, axes) <= _SEQUENTIAL_LIMIT):
            rows = _rows(x, axes)
            if rows is not None:
                m, outer, inner = rows
                if m.shape[0] == 1 and m.strides[1] == m.shape[2] * x.itemsize and not outer:
                    found = (m.shape[1], m.shape[2], outer, inner)
        if len(_geometries) >= _GEOMETRIES_KEPT:
            _geometries.clear()
        _geometries[key] = found
    return found


_UNKNOWN = object()
_geometries: dict = {}
_GEOMETRIES_KEPT = 256  # a network has a few dozen shapes


def part_sums(rows: int, width: int) -> np.ndarray:
    """The (1, parts, width) float64 partial sums the compiled column sums fill: a part of
    ``reduction_loops.PART_ROWS`` rows, blocks of :data:`BLOCK_ROWS` rows in float32."""
    return np.empty((1, -(-rows // reduction_loops.PART_ROWS), width))


def finish_channel_sums(parts: np.ndarray, x: np.ndarray, axes: tuple[int, ...]
                        ) -> np.ndarray:
    """:func:`total` of ``x`` over ``axes`` from the partial sums a kernel wrote while
    producing ``x`` (see :func:`compiled_channel_sums`), bit for bit."""
    s = np.empty((1, parts.shape[2]), np.float64)
    parts.sum(axis=1, out=s)
    axes = _axes(x.ndim, axes)
    found = _channel_geometry(x, axes)
    _, outer, inner = _rows(x, axes) if found is None else (None, *found[2:])
    return _kept_shape(s, x, axes, outer, inner, False)


def _blocked(x: np.ndarray, axes: tuple[int, ...], keepdims: bool
             ) -> tuple[np.ndarray, str] | None:
    """Blocks of rows summed in float32, the block sums in float64 (see the module), and
    the algorithm: ``numba`` (the compiled pass) or ``blas`` (block products)."""
    found = _rows(x, axes)
    if found is None:
        return None
    m, outer, inner = found
    s = np.empty((m.shape[0], m.shape[2]), np.float64)
    lp = reduction_loops.loops() if m.dtype == np.float32 else None
    if lp is not None:  # one compiled pass on every core, the parts' sums added in order
        parts = np.empty((m.shape[0], -(-m.shape[1] // reduction_loops.PART_ROWS), m.shape[2]))
        if jit.thread_safe():
            jit.set_threads(num_threads() if m.size >= PARALLEL_MIN_SIZE else 1)
        lp["column_sums"](m, BLOCK_ROWS, parts)
        parts.sum(axis=1, out=s)
        algorithm = "numba"
    else:
        algorithm = "blas"
        for_ranges(m.shape[2], m.size, lambda a, b: column_sums(m[..., a:b], s[:, a:b]))
    return _kept_shape(s, x, axes, outer, inner, keepdims), algorithm


def _kept_shape(s: np.ndarray, x: np.ndarray, axes: tuple[int, ...], outer: list,
                inner: list, keepdims: bool) -> np.ndarray:
    """The float64 sums ``s`` (batch, width) of :func:`_rows`'s matrix as the result of a
    sum of ``x`` over ``axes``: the kept dims in logical order, ``x``'s dtype."""
    kept = outer + inner  # memory order
    out_axes = sorted(d for d in range(x.ndim) if d not in axes)  # logical order
    s = s.reshape([x.shape[d] for d in kept])
    s = s.transpose([kept.index(d) for d in out_axes if d in kept]) if len(kept) > 1 else s
    s = s.reshape([x.shape[d] for d in out_axes])  # size-1 kept dims back in place
    if keepdims:
        s = s.reshape([1 if d in axes else n_ for d, n_ in enumerate(x.shape)])
    return s.astype(x.dtype)


def column_sums(m: np.ndarray, out: np.ndarray) -> int:
    """The column sums of ``m`` (rows, width), or of each matrix of ``m`` (batch, rows,
    width), any strides, into ``out`` (float64; (width,) or (batch, width)): blocks of
    :data:`BLOCK_ROWS` rows summed in float32, the block sums in float64.

    A block's sums are a row of ones times the block, a matrix product: BLAS sums with
    fused multiply-adds over the block's 64 rows, 2-16x faster than NumPy's sum over
    the rows (which adds whole rows one after another: 0.68 ns per element for 64
    columns against 0.13) and no less accurate (2.1e-8 against 6.6e-8 relative).
    """
    rows = m.shape[-2]
    n = (rows // BLOCK_ROWS) * BLOCK_ROWS
    if n:
        blocks = m[..., :n, :].reshape(*m.shape[:-2], -1, BLOCK_ROWS, m.shape[-1])
        np.matmul(_ones(m.dtype), blocks).sum(axis=(-3, -2), dtype=np.float64, out=out)
    else:
        out[...] = 0.0
    if n < rows:
        out += m[..., n:, :].sum(axis=-2, dtype=np.float64)
    return 0


def _ones(dtype: np.dtype) -> np.ndarray:
    """A (1, BLOCK_ROWS) row of ones of ``dtype`` (read-only, shared)."""
    ones = _ONES.get(dtype)
    if ones is None:
        ones = _ONES[dtype] = np.ones((1, BLOCK_ROWS), dtype)
        ones.flags.writeable = False
    return ones


_ONES: dict = {}


def for_ranges(n: int, size: int, fn: Any) -> None:
    """``fn(a, b)`` over ranges covering ``range(n)``: one per thread on the pool when
    ``size`` (the elements the calls read) is large, else one call."""
    parts = min(num_threads(), n) if size >= PARALLEL_MIN_SIZE else 1
    if parts <= 1:
        fn(0, n)
        return
    cuts = [n * i // parts for i in range(parts + 1)]
    run_chunks([lambda a=a, b=b: fn(a, b) or 0 for a, b in zip(cuts, cuts[1:])])


def _numpy_sum(x: np.ndarray, axes: tuple[int, ...], keepdims: bool, dtype: Any) -> Any:
    """``np.sum`` over ``axes`` (in ``dtype``), large arrays split along their longest
    kept axis across the pool (each output summed as the whole call would)."""
    kept = [d for d in range(x.ndim) if d not in axes and x.shape[d] > 1]
    if x.size < PARALLEL_MIN_SIZE or not kept or num_threads() <= 1:
        return np.sum(x, axis=axes, dtype=dtype, keepdims=keepdims)
    d = max(kept, key=lambda k: x.shape[k])
    out = np.empty([1 if i in axes else n for i, n in enumerate(x.shape)],
                   dtype or x.dtype)
    lead = (slice(None),) * d

    def part(a: int, b: int) -> None:
        np.sum(x[(*lead, slice(a, b))], axis=axes, dtype=dtype, keepdims=True,
               out=out[(*lead, slice(a, b))])

    for_ranges(x.shape[d], x.size, part)
    return out if keepdims else out.reshape([n for i, n in enumerate(x.shape) if i not in axes])


def total(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``np.sum(x, axis, keepdims=keepdims)`` with float16/32 summed accurately.

    The result has ``x``'s dtype.  Dask arrays (whose chunks' layouts are unknown here)
    always accumulate float32 in float64, chunk by chunk.
    """
    return _total(x, axis, keepdims)[0]


def sum_over(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """:func:`total`, logged as a ``sum`` event of the ``reduce`` family with the
    algorithm that ran (the Tensor sums and means; the kernels' own sums are part of
    their events)."""
    with REDUCE.record("sum", np.shape(x)) as rec:
        out, rec.algorithm = _total(x, axis, keepdims)
    return out


def _total(x: Any, axis: Any, keepdims: bool) -> tuple[Any, str]:
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind != "f" or dtype.itemsize >= 8:
        return np.sum(x, axis=axis, keepdims=keepdims), "numpy"
    if isinstance(x, np.ndarray):
        if x.size <= _SEQUENTIAL_LIMIT or (axis is None and x.flags.c_contiguous):
            return np.sum(x, axis=axis, keepdims=keepdims), "numpy"  # few terms, or pairwise
        axes = _axes(x.ndim, axis)
        if _sequential_terms(x, axes) <= _SEQUENTIAL_LIMIT:
            return _numpy_sum(x, axes, keepdims, None), "numpy"
        blocked = _blocked(x, axes, keepdims)
        if blocked is not None:
            return blocked
        return _numpy_sum(x, axes, keepdims, np.float64).astype(dtype), "numpy"
    return np.sum(x, axis=axis, dtype=np.float64, keepdims=keepdims).astype(dtype), "numpy"


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``np.mean`` through :func:`total` (an empty reduction gives NaN, as NumPy's)."""
    axes = _axes(np.ndim(x), axis)
    count = prod(np.shape(x)[d] for d in axes)
    s = total(x, axis=axis, keepdims=keepdims)
    if count == 0:
        return np.full_like(s, np.nan) if np.ndim(s) else s.dtype.type(np.nan)
    return s / s.dtype.type(count)


@jit.exercise
def _exercise() -> None:
    """The compiled column sums once (:func:`.jit.warm_up`), of a dense batch and of a
    strided one (each its own machine code)."""
    sums = reduction_loops.loops()["column_sums"]
    sums(np.zeros((1, 2, 3), np.float32), BLOCK_ROWS, np.empty((1, 1, 3)))
    sums(np.zeros((2, 2, 4), np.float32)[:, :, :3], BLOCK_ROWS, np.empty((2, 1, 3)))
