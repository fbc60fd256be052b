"""The four convolution kernels on dask arrays, lazily and chunk by chunk.

``x`` (and ``gy``) may be chunked along the batch and spatial dims; the channel dim is
one chunk and the weight an in-memory ndarray.  Each output chunk is one dask task that
runs the in-memory kernel of :mod:`convgrad.ops.conv` on the input region it reads,
with the padding moved to that region (:meth:`.halo.Axis.block_padding`), so it uses
whichever algorithm the dispatch point picks for its shape:

* forward: the output is chunked like the input, each boundary ``b`` moved to
  ``ceil((b*di + lo - E//2) / s)`` (stride ``s``, input dilation ``di``, ``E`` the
  dilated kernel extent minus one): a ``"same"`` convolution keeps the input's chunks,
  a stride-2 one halves them.  Each input block carries the halo its output block reads
  beyond it (``dask.array.overlap`` with ``boundary="none"``: the padding stays the
  spec's, at the array's ends only), and each task crops its block to exactly the
  samples its outputs read;
* input gradient: the same with the roles swapped: each chunk of ``gx`` (boundaries
  ``ceil((c*s - lo + E//2) / di)`` of ``gy``'s boundaries ``c``, so a gradient comes back
  chunked like the forward's input) gathers the ``gy`` samples whose windows reach it;
* weight gradient: each pair of an ``x`` block (with its halo) and the ``gy`` block it
  produced gives a partial weight gradient; the partials are summed by dask's tree
  reduction.  ``gy`` must pair with ``x`` block for block (same batch chunks, as many
  chunks per spatial dim), as ``conv_forward``'s output does;
* bias gradient: a tree reduction of per-block sums.

Rechunking: halos come from the neighbouring blocks only, so a chunk smaller than the
halo it must lend (or one whose output chunk would be empty, e.g. cropped away by
negative padding) is merged with a neighbour before the overlap; the output follows the
merged chunks.  Chunk boundaries that are not aligned to the stride need no rechunk:
the halo is the largest any block needs and every task crops its own.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Any

import dask.array as da
import numpy as np

from .. import kernels as memory
from ..spec import ConvSpec, check_float_array, is_int
from . import is_dask_array
from .halo import Axis, ChunkMap, bounds, chunk_map

__all__ = ["conv_forward", "conv_input_grad", "conv_weight_grad", "conv_bias_grad"]


# ---------------------------------------------------------------- argument checks
def _check_spec(spec: Any, fn: str) -> ConvSpec:
    if not isinstance(spec, ConvSpec):
        raise TypeError(f"{fn}: spec must be a ConvSpec, got {type(spec).__name__}")
    return spec


def _check_weight(w: Any, fn: str) -> np.ndarray:
    if is_dask_array(w):
        raise ValueError(f"{fn}: weight is a dask array {w!r}; with a dask input the weight "
                         "must be an in-memory numpy.ndarray (compute it first)")
    return check_float_array("weight", w, fn)


def _check_lazy(name: str, a: Any, fn: str) -> Any:
    if not is_dask_array(a):
        raise TypeError(f"{fn}: {name} must be a dask array here, got {type(a).__name__}")
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"{fn}: {name} has dtype {a.dtype}; expected float32 or float64")
    if any(math.isnan(c) for dim in a.chunks for c in dim):
        raise ValueError(f"{fn}: {name} has unknown chunk sizes {a.chunks}; expected known "
                         f"chunks (call {name}.compute_chunk_sizes() first)")
    return a


def _check_channels(name: str, a: Any, fn: str) -> None:
    if len(a.chunks[1]) != 1:
        raise ValueError(f"{fn}: {name} is chunked along the channel dim (chunks "
                         f"{a.chunks[1]}); expected the channel dim in one chunk "
                         f"(chunk along batch and spatial dims only: {name}.rechunk({{1: -1}}))")


def _check_shape(name: str, shape: Any, ndim: int, fn: str) -> tuple[int, ...]:
    if not isinstance(shape, tuple | list) or not all(is_int(s) for s in shape):
        raise TypeError(f"{fn}: {name}={shape!r} must be a shape tuple of ints")
    out = tuple(int(s) for s in shape)
    if len(out) != ndim or any(s < 0 for s in out):
        raise ValueError(f"{fn}: {name}={out} must be {ndim} non-negative ints")
    return out


# ---------------------------------------------------------------- plans and blocks
def _axes(spec: ConvSpec, x_shape: tuple, w_shape: tuple, y_shape: tuple) -> tuple[Axis, ...]:
    return tuple(
        Axis(length=x_shape[2 + d], out_length=y_shape[2 + d], stride=spec.stride[d],
             extent=(w_shape[2 + d] - 1) * spec.kernel_dilation[d],
             input_dilation=spec.input_dilation[d], lo=spec.padding[d][0])
        for d in range(spec.ndim))


def _forward_plan(ax: Axis, x_chunks: tuple) -> ChunkMap:
    """x is the source, y the target: y's boundaries follow x's."""
    src = bounds(x_chunks)
    return chunk_map(src, (0, *(ax.y_boundary(b) for b in src[1:-1]), ax.out_length), ax.x_reads)


def _input_plan(ax: Axis, gy_chunks: tuple) -> ChunkMap:
    """gy is the source, gx the target: gx's boundaries follow gy's."""
    src = bounds(gy_chunks)
    return chunk_map(src, (0, *(ax.x_boundary(c) for c in src[1:-1]), ax.length), ax.y_reads)


def _forward_plans(x_chunks: tuple, axes: tuple[Axis, ...]) -> tuple[ChunkMap, ...]:
    return tuple(_forward_plan(ax, x_chunks[2 + d]) for d, ax in enumerate(axes))


def _input_plans(gy_chunks: tuple, axes: tuple[Axis, ...]) -> tuple[ChunkMap, ...]:
    return tuple(_input_plan(ax, gy_chunks[2 + d]) for d, ax in enumerate(axes))


def _paired_plans(x_chunks: tuple, gy_chunks: tuple, axes: tuple[Axis, ...]
                  ) -> tuple[ChunkMap, ...] | None:
    """x -> gy plans for a weight gradient; None when some dim does not pair.

    Per dim, gy may be chunked as ``conv_forward`` chunks its output (for x's chunks), x
    as ``conv_input_grad`` chunks its result (for gy's chunks), or the two may simply
    have as many chunks (paired in order)."""
    plans = []
    for d, ax in enumerate(axes):
        xb, gb = bounds(x_chunks[2 + d]), bounds(gy_chunks[2 + d])
        fwd, inp = _forward_plan(ax, x_chunks[2 + d]), _input_plan(ax, gy_chunks[2 + d])
        if fwd.tgt == gb:
            pairs = fwd.src, fwd.tgt
        elif inp.tgt == xb:
            pairs = inp.tgt, inp.src
        elif len(xb) == len(gb):
            pairs = xb, gb
        else:
            return None
        plans.append(chunk_map(*pairs, ax.x_reads))
    return tuple(plans)


def _with_halos(a: Any, plans: tuple[ChunkMap, ...]) -> Any:
    """``a`` rechunked to the plans' source chunks, each block extended by its halo."""
    a = a.rechunk((a.chunks[0], a.chunks[1], *(p.src_chunks for p in plans)))
    depth = {2 + d: p.depth for d, p in enumerate(plans) if p.depth != (0, 0)}
    if not depth:
        return a
    return da.overlap.overlap(a, depth=depth, boundary="none", allow_rechunk=False)


def _meta(ndim: int, dtype: np.dtype) -> np.ndarray:
    return np.empty((0,) * ndim, dtype)


def _block_region(axes: tuple[Axis, ...], plans: tuple[ChunkMap, ...], block: tuple,
                  source_reads: str) -> tuple[tuple[list, list] | None, list]:
    """For target block ``block`` (one index per spatial dim): ((the crop of the source
    block, the block spec's padding) or None when some dim reads nothing, so that the
    target block is zeros; the target block's spatial shape).  ``source_reads`` names
    the :class:`.halo.Axis` method mapping a target range to its source range."""
    crop, pads, shape = [], [], []
    empty = False
    for ax, pl, j in zip(axes, plans, block):
        t0, t1 = pl.target(j)
        i0, i1 = getattr(ax, source_reads)(t0, t1)
        shape.append(t1 - t0)
        if t1 <= t0 or i1 <= i0:
            empty = True
            continue
        start = pl.block_start(j)
        crop.append(slice(i0 - start, i1 - start))
        if source_reads == "x_reads":  # source x[i0:i1] -> target y[t0:t1]
            pads.append(ax.block_padding((i0, i1), (t0, t1)))
        else:  # source gy[i0:i1] -> target gx[t0:t1]
            pads.append(ax.block_padding((t0, t1), (i0, i1)))
    return (None if empty else (crop, pads)), shape


def _forward_block(xb: np.ndarray, *, w: np.ndarray, spec: ConvSpec, axes: tuple,
                   plans: tuple, block_id: tuple) -> np.ndarray:
    region, shape = _block_region(axes, plans, block_id[2:], "x_reads")
    if region is None:
        return np.zeros((xb.shape[0], w.shape[0], *shape), np.result_type(xb, w))
    crop, pads = region
    block_spec = replace(spec, padding=tuple(pads))
    xc = xb[(slice(None), slice(None), *crop)]
    return memory.conv_forward(xc, w, block_spec, block_spec.output_shape(xc.shape, w.shape))


def _input_block(gyb: np.ndarray, *, w: np.ndarray, spec: ConvSpec, c_in: int, axes: tuple,
                 plans: tuple, block_id: tuple) -> np.ndarray:
    region, shape = _block_region(axes, plans, block_id[2:], "y_reads")
    x_shape = (gyb.shape[0], c_in, *shape)
    if region is None:
        return np.zeros(x_shape, np.result_type(gyb, w))
    crop, pads = region
    return memory.conv_input_grad(gyb[(slice(None), slice(None), *crop)], w,
                                  replace(spec, padding=tuple(pads)), x_shape)


def _weight_block(xb: np.ndarray, gyb: np.ndarray, *, w_shape: tuple, spec: ConvSpec,
                  axes: tuple, plans: tuple, block_id: tuple) -> np.ndarray:
    region, _ = _block_region(axes, plans, block_id[1:1 + spec.ndim], "x_reads")
    if region is None or xb.shape[0] == 0:
        gw = np.zeros(w_shape, np.result_type(xb, gyb))
    else:
        crop, pads = region
        gw = memory.conv_weight_grad(xb[(slice(None), slice(None), *crop)], gyb,
                                     replace(spec, padding=tuple(pads)), w_shape)
    return gw.reshape((1,) * (1 + spec.ndim) + w_shape)


def _bias_chunk(g: np.ndarray, axis: tuple, keepdims: bool) -> np.ndarray:
    return memory.conv_bias_grad(g).reshape(1, -1, *(1,) * (g.ndim - 2))


# ---------------------------------------------------------------- the kernels
def conv_forward(x: Any, w: np.ndarray, spec: ConvSpec) -> Any:
    """``y = conv(x, w)`` per ``spec`` for a dask ``x``: a dask array, nothing computed.

    ``y`` is chunked like ``x`` (batch chunks kept, each spatial boundary ``b`` moved to
    ``ceil((b*input_dilation + lo - E//2) / stride)``); chunks smaller than the halo
    they lend are merged with a neighbour first (a rechunk of ``x``).
    """
    fn = "conv_forward"
    spec, w = _check_spec(spec, fn), _check_weight(w, fn)
    x = _check_lazy("x", x, fn)
    y_shape = spec.output_shape(x.shape, w.shape, fn)
    _check_channels("x", x, fn)
    axes = _axes(spec, x.shape, w.shape, y_shape)
    plans = _forward_plans(x.chunks, axes)
    dtype = np.result_type(x.dtype, w.dtype)
    block = partial(_forward_block, w=w, spec=spec, axes=axes, plans=plans)
    return da.map_blocks(block, _with_halos(x, plans), dtype=dtype, meta=_meta(x.ndim, dtype),
                         chunks=(x.chunks[0], (y_shape[1],), *(p.tgt_chunks for p in plans)),
                         token="conv_forward")


def conv_input_grad(gy: Any, w: np.ndarray, spec: ConvSpec, x_shape: tuple) -> Any:
    """``d(sum(conv(x, w) * gy)) / dx`` for a dask ``gy``: a dask array of ``x_shape``.

    ``gx`` is chunked like ``gy`` mapped back (boundary ``c`` -> ``ceil((c*stride - lo +
    E//2) / input_dilation)``, the chunks of the forward's input when its boundaries are
    multiples of the stride); ``gy`` chunks smaller than their halo are merged first.
    """
    fn = "conv_input_grad"
    spec, w = _check_spec(spec, fn), _check_weight(w, fn)
    gy = _check_lazy("gy", gy, fn)
    x_shape = _check_shape("x_shape", x_shape, spec.ndim + 2, fn)
    y_shape = spec.output_shape(x_shape, w.shape, fn)
    if gy.shape != y_shape:
        raise ValueError(f"{fn}: gy has shape {gy.shape}; the convolution's output is {y_shape}")
    _check_channels("gy", gy, fn)
    axes = _axes(spec, x_shape, w.shape, y_shape)
    plans = _input_plans(gy.chunks, axes)
    dtype = np.result_type(gy.dtype, w.dtype)
    block = partial(_input_block, w=w, spec=spec, c_in=x_shape[1], axes=axes, plans=plans)
    return da.map_blocks(block, _with_halos(gy, plans), dtype=dtype,
                         meta=_meta(gy.ndim, dtype),
                         chunks=(gy.chunks[0], (x_shape[1],), *(p.tgt_chunks for p in plans)),
                         token="conv_input_grad")


def _lazy_partner(a: Any, name: str, chunks: tuple, fn: str) -> Any:
    """An in-memory ``x`` or ``gy`` next to a dask one, as a dask array with ``chunks``."""
    return da.from_array(check_float_array(name, a, fn), chunks=chunks)


def conv_weight_grad(x: Any, gy: Any, spec: ConvSpec, w_shape: tuple) -> Any:
    """``d(sum(conv(x, w) * gy)) / dw`` for dask ``x``/``gy``: a dask array of ``w_shape``.

    ``gy`` must pair with ``x`` block for block: the same batch chunks and as many
    chunks per spatial dim (as ``conv_forward(x, ...)`` is chunked); an ndarray next to a
    dask array is wrapped with matching chunks.  Each block pair gives a partial
    gradient and dask sums them in a tree.
    """
    fn = "conv_weight_grad"
    spec = _check_spec(spec, fn)
    nd = spec.ndim
    w_shape = _check_shape("w_shape", w_shape, nd + 2, fn)
    if not is_dask_array(x):
        x_shape = np.shape(check_float_array("x", x, fn))
        _check_lazy("gy", gy, fn)
        axes = _axes(spec, x_shape, w_shape, spec.output_shape(x_shape, w_shape, fn))
        plans = _input_plans(gy.chunks, axes)
        x = _lazy_partner(x, "x", (gy.chunks[0], (x_shape[1],), *(p.tgt_chunks for p in plans)),
                          fn)
    x = _check_lazy("x", x, fn)
    y_shape = spec.output_shape(x.shape, w_shape, fn)
    axes = _axes(spec, x.shape, w_shape, y_shape)
    if not is_dask_array(gy):
        plans = _forward_plans(x.chunks, axes)
        gy = _lazy_partner(gy, "gy", (x.chunks[0], (y_shape[1],), *(p.tgt_chunks for p in plans)),
                           fn)
    gy = _check_lazy("gy", gy, fn)
    if gy.shape != y_shape:
        raise ValueError(f"{fn}: gy has shape {gy.shape}; the convolution's output is {y_shape}")
    _check_channels("x", x, fn)
    _check_channels("gy", gy, fn)
    plans = _paired_plans(x.chunks, gy.chunks, axes)
    if gy.chunks[0] != x.chunks[0] or plans is None:
        expected = (x.chunks[0], (y_shape[1],),
                    *(p.tgt_chunks for p in _forward_plans(x.chunks, axes)))
        raise ValueError(
            f"{fn}: gy's chunks {gy.chunks} do not pair with x's {x.chunks}: gy needs x's "
            f"batch chunks and, in every spatial dim, the chunks conv_forward gives "
            f"(gy.rechunk({expected})) or as many chunks as x")
    gy = gy.rechunk((gy.chunks[0], gy.chunks[1], *(p.tgt_chunks for p in plans)))
    xo = _with_halos(x, plans)
    dtype = np.result_type(x.dtype, gy.dtype)
    block = partial(_weight_block, w_shape=w_shape, spec=spec, axes=axes, plans=plans)
    partials = da.map_blocks(
        block, xo, gy, drop_axis=1, new_axis=list(range(1 + nd, 3 + 2 * nd)),
        chunks=(((1,) * x.numblocks[0],) + tuple((1,) * n for n in xo.numblocks[2:])
                + tuple((s,) for s in w_shape)),
        dtype=dtype, meta=_meta(3 + 2 * nd, dtype), token="conv_weight_grad_partial")
    return partials.sum(axis=tuple(range(1 + nd)))


def conv_bias_grad(gy: Any) -> Any:
    """Sum of a dask ``gy`` (N, C_out, *spatial) over batch and spatial dims: (C_out,).

    Each block is summed by the in-memory kernel; dask adds the block sums in a tree.
    The channel dim may be chunked here.
    """
    fn = "conv_bias_grad"
    gy = _check_lazy("gy", gy, fn)
    if gy.ndim < 3:
        raise ValueError(f"{fn}: gy must have shape (N, C_out, *spatial), got {gy.shape}")
    return da.reduction(gy, _bias_chunk, np.sum, axis=(0, *range(2, gy.ndim)), dtype=gy.dtype,
                        name="conv_bias_grad")
