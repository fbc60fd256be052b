"""Differentiable shape and indexing operations, and matrix products.

Each ``backward`` is written with Tensor operations, so it is itself differentiable;
``GetItem`` and ``IndexAdd`` are each other's adjoints, as are ``Sum`` and
``BroadcastTo`` (values picked along a dim, as ``max(dim)`` does, are a ``Gather``).
``reads`` says which values a rule reads (see :class:`convgrad.autograd.Function`):
moving values reads none.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function
from ..ops import gather, layouts, matmul, relayout
from . import lazy

Tensor = Any  # annotations: these rules see the tensor layer's Tensor


class Reshape(Function):
    reads = ()
    view = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, shape: tuple) -> np.ndarray:
        if type(x) is np.ndarray:
            try:
                return x.reshape(shape, copy=False)
            except ValueError:  # no view has this shape (a channels-last activation
                # flattened): the one recorded copy in C order, on every thread (NumPy's
                # own reshape copied silently on one: (32, 256, 14, 14) 1.5 ms)
                with layouts.LAYOUT.record("to_contiguous", x.shape) as rec:
                    out = layouts.empty(x.shape, channels_last=False, dtype=x.dtype)
                    rec.algorithm = relayout.copy(out, x)
                return out.reshape(shape)
        return x.reshape(shape)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # a reshape moves no values: the gradient takes back the input's shape
        return grad.reshape(ctx.inputs[0].shape)


class Permute(Function):
    reads = ()
    view = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, perm: tuple) -> np.ndarray:
        ctx.perm = perm
        return x.transpose(perm)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # y = x.permute(p)  =>  dx = dy.permute(inverse of p)
        return grad.permute(tuple(np.argsort(ctx.perm)))


class BroadcastTo(Function):
    reads = ()
    view = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, shape: tuple) -> np.ndarray:
        return np.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # each input element was copied to several outputs: sum their gradients
        return grad.sum_to_size(ctx.inputs[0].shape)


def _is_basic(index: tuple) -> bool:
    """Only ints, slices, None and Ellipsis: every element is picked at most once."""
    return all(i is None or i is Ellipsis or isinstance(i, slice)
               or (isinstance(i, int | np.integer) and not isinstance(i, bool)) for i in index)


class GetItem(Function):
    reads = ()
    view = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, index: tuple) -> np.ndarray:
        ctx.index = index
        if lazy.is_dask_array(x):  # (dask indexes lazily, but not every index)
            return lazy.get_item(x, index)
        return x[index]

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # y = x[index] copies elements: each gradient returns to its source, summed over repeats
        x = ctx.inputs[0].data
        return IndexAdd.apply(grad, index=ctx.index, shape=ctx.inputs[0].shape,
                              channels_last=isinstance(x, np.ndarray)
                              and layouts.is_channels_last(x))


class IndexAdd(Function):
    """``zeros(shape)`` with ``g`` added at ``index`` (repeats accumulate): GetItem's
    adjoint, channels-last in memory with ``channels_last`` (as the indexed input was)."""

    reads = ()

    @staticmethod
    def forward(ctx: Context, g: np.ndarray, index: tuple, shape: tuple,
                channels_last: bool = False) -> np.ndarray:
        ctx.index = index
        if lazy.is_dask_array(g):  # a full-size np.zeros would defeat the chunking
            return lazy.index_add(g, index, shape)
        if _is_basic(index):
            out = np.zeros(shape, g.dtype)
            out[index] = g
            return out
        return gather.index_add(g, index, shape, channels_last)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # out = zeros + g at index is linear in g, so dg = dout[index]
        return GetItem.apply(grad, index=ctx.index)


class Concatenate(Function):
    reads = ()

    @staticmethod
    def forward(ctx: Context, *parts: np.ndarray, dim: int) -> np.ndarray:
        ctx.dim = dim
        # keeps channels-last; two (8, 64, 64, 64) channels-last parts along C: 12 ms in
        # NumPy, oneDNN's concat 11 ms, torch 24 ms (NCHW: 3, 6.5 and 16 ms)
        return relayout.concatenate(parts, dim)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        # each part was copied to its own slice of the output: it gets that slice's gradient
        grads, start, head = [], 0, (slice(None),) * ctx.dim
        for part, need in zip(ctx.inputs, ctx.needs_input_grad):
            stop = start + np.shape(part)[ctx.dim]
            grads.append(grad[head + (slice(start, stop),)] if need else None)
            start = stop
        return tuple(grads)


def _transposed_2d(b: Tensor | np.ndarray) -> bool:
    """``b`` is a 2-d in-memory array stored in Fortran order only (a transposed view)."""
    data = getattr(b, "data", b)
    return (type(data) is np.ndarray and data.ndim == 2 and data.flags.f_contiguous
            and not data.flags.c_contiguous)


def _transposed(x: Tensor | np.ndarray) -> Tensor | np.ndarray:
    """Swap the last two dims."""
    return np.swapaxes(x, -1, -2) if isinstance(x, np.ndarray) else x.transpose(-1, -2)


class MatMul(Function):
    reads = {0: (1,), 1: (0,)}

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return matmul.matmul(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        if np.ndim(a) == 1 and np.ndim(b) == 1:
            # dot product: d(a.b)/da = b, d(a.b)/db = a
            return (grad * b if need_a else None), (grad * a if need_b else None)
        # view a 1-D a as a row (1, k) and a 1-D b as a column (k, 1), as matmul does
        a2 = a.reshape(1, -1) if np.ndim(a) == 1 else a
        b2 = b.reshape(-1, 1) if np.ndim(b) == 1 else b
        g2 = grad.unsqueeze(-2) if np.ndim(a) == 1 else grad
        g2 = g2.unsqueeze(-1) if np.ndim(b) == 1 else g2
        # C = A B  =>  dA = dC B^T,  dB = A^T dC  (summed over broadcast batch dims)
        ga = gb = None
        if need_a:
            ga = (g2 @ _transposed(b2)).sum_to_size(np.shape(a2)).reshape(np.shape(a))
        if need_b:
            if _transposed_2d(b2) and np.ndim(a2) == 2:
                # b is the transpose of a C-ordered array (Linear's weight.T): its gradient
                # computed in that memory order, (g^T a)^T = a^T g, so that the weight's
                # arrives C-ordered (as a Fortran-ordered one it cost a transposing copy)
                gb = _transposed(_transposed(g2) @ a2)
            else:
                gb = (_transposed(a2) @ g2).sum_to_size(np.shape(b2)).reshape(np.shape(b))
        return ga, gb


def _along(a: np.ndarray, dim: int, sl: slice) -> np.ndarray:
    return a[(slice(None),) * dim + (sl,)]


def _edges(mode: str, n: int, lo: int, hi: int) -> tuple[slice, slice]:
    """The input slices copied to the (lo, hi) borders of a dim of size ``n``, each in the
    border's order: reflect (about the end elements, not repeated), circular, or
    replicate (the end element, broadcast over the border)."""
    if mode == "replicate":
        return slice(0, 1), slice(n - 1, n)
    if mode == "reflect":
        return slice(lo, 0, -1), slice(n - 2, (n - 2 - hi) if n - 2 - hi >= 0 else None, -1)
    return slice(n - lo, n), slice(0, hi)  # circular


class PadEdges(Function):
    """Pad each ``(dim, lo, hi)`` of ``pads`` (lo, hi >= 0; in that order, as one pad per
    dim after another) with copies of ``x``'s own elements (``mode`` reflect or circular,
    pads within the dim's size, or replicate), in one output in ``x``'s layout: ``x``
    copied to its inner block, then each dim's borders copied from the output's own
    elements along that dim (over the borders of the dims before it: the corners), one
    strided copy per border.  (Gathering by an index array instead, and its scatter-add
    adjoint, took 108 ms forward and backward for (16, 64, 64, 64) channels-last
    reflected by 1 on H and W, torch 3.4; one output per dim, 12.1 ms.)"""

    reads = ()

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, mode: str, pads: tuple) -> np.ndarray:
        ctx.pad = (mode, pads)
        shape, inner = list(x.shape), [slice(None)] * x.ndim
        for d, lo, hi in pads:
            shape[d] += lo + hi
            inner[d] = slice(lo, lo + x.shape[d])
        with layouts.LAYOUT.record(f"pad_{mode}", x.shape, tuple(shape)) as rec:
            out = layouts.empty(tuple(shape), channels_last=layouts.is_channels_last(x),
                                dtype=x.dtype)
            rec.algorithm = relayout.copy(out[tuple(inner)], x)
            for d, lo, hi in pads:  # the dims after d still at their inner block
                n = x.shape[d]
                inner[d] = slice(None)
                v = out[tuple(inner)]
                left, right = _edges(mode, n, lo, hi)
                own = _along(v, d, slice(lo, lo + n))
                _along(v, d, slice(0, lo))[...] = _along(own, d, left)
                _along(v, d, slice(lo + n, lo + n + hi))[...] = _along(own, d, right)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # out copies x[src(j)] to each j, so dx[i] = sum of dout[j] over the j with src(j) = i
        mode, pads = ctx.pad
        return FoldEdges.apply(grad, mode=mode, pads=pads, shape=ctx.inputs[0].shape)


class FoldEdges(Function):
    """:class:`PadEdges`'s adjoint, back to ``shape``: the pads undone in reverse order,
    each dim's inner block plus each border added back onto the elements it copied, in
    torch's order (an element copied to both borders sums three): reflect the low border,
    then the high; circular the high, then the low; replicate each border's gradients one
    by one in turn (the low, the copy, the high).  One output: the inner block of ``g``
    folded along the later dims, then each border (itself folded along the later dims,
    a border's worth of memory) added."""

    reads = ()

    @staticmethod
    def forward(ctx: Context, g: np.ndarray, mode: str, pads: tuple, shape: tuple
                ) -> np.ndarray:
        ctx.pad = (mode, pads)
        with layouts.LAYOUT.record(f"fold_{mode}", g.shape, shape) as rec:
            rec.algorithm = "numpy"
            return FoldEdges._fold(g, mode, pads, shape, layouts.is_channels_last(g), rec)

    @staticmethod
    def _fold(g: np.ndarray, mode: str, pads: tuple, shape: tuple, channels_last: bool,
              rec: Any, fresh: bool = True) -> np.ndarray:
        """``g`` (a block of the whole gradient) folded along every dim of ``pads``: a
        new array (channels-last or not as said), or where no dim is left to fold and
        ``fresh`` is False, ``g`` itself (read, never written).  The copy of the inner
        block names the algorithm of the event ``rec``."""
        if not pads:
            if not fresh:
                return g
            out = layouts.empty(g.shape, channels_last=channels_last, dtype=g.dtype)
            algorithm = relayout.copy(out, g)
            if out.size == np.prod(shape):  # the inner block
                rec.algorithm = algorithm
            return out
        (d, lo, hi), rest = pads[0], pads[1:]
        n = shape[d]

        def part(sl: slice, fresh: bool = False) -> np.ndarray:  # g's slice, folded
            return FoldEdges._fold(_along(g, d, sl), mode, rest, shape, channels_last, rec,
                                   fresh)

        out = part(slice(lo, lo + n), True)  # written below: never a view of g
        left, right = _edges(mode, n, lo, hi)
        if mode == "replicate":  # the end elements sum their borders, one by one in turn
            if lo:
                first = part(slice(0, 1), True)
                for k in range(1, lo):
                    first += part(slice(k, k + 1))
                first += _along(out, d, slice(0, 1))  # the copy's own gradient
                _along(out, d, slice(0, 1))[...] = first
            for k in range(lo + n, lo + n + hi):
                _along(out, d, slice(n - 1, n))[...] += part(slice(k, k + 1))
            return out
        borders = [(left, slice(0, lo)), (right, slice(lo + n, lo + n + hi))]
        for dst, src in borders if mode == "reflect" else borders[::-1]:
            _along(out, d, dst)[...] += part(src)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # linear in g: its adjoint is the padding itself
        mode, pads = ctx.pad
        return PadEdges.apply(grad, mode=mode, pads=pads)


class PixelShuffle(Function):
    """Channels to space (``up``: ``(*, C r^2, H, W) -> (*, C, H r, W r)``, each group of
    ``r^2`` channels an ``r x r`` block of pixels) or back, in one copy between two 6-d
    views (:func:`~convgrad.ops.relayout.copy`).  A channels-last input gives a
    channels-last output (the channels of a pixel stay together; ``channels_last``
    says so where the input's layout does not: the backward of a one-channel output).
    (As a reshape, permute and reshape of the Tensor, a channels-last (16, 64, 64, 64)
    took 19-22 ms forward and backward, its output NCHW; torch 7.)"""

    reads = ()

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, r: int, up: bool,
                channels_last: bool | None = None) -> np.ndarray:
        cl = x.ndim == 4 and (layouts.is_channels_last(x) if channels_last is None
                              else channels_last)
        ctx.shuffle = (r, up, cl)
        *lead, c, h, w = x.shape
        k = len(lead)
        shape = ((*lead, c // (r * r), h * r, w * r) if up
                 else (*lead, c * r * r, h // r, w // r))
        with layouts.LAYOUT.record("pixel_shuffle" if up else "pixel_unshuffle",
                                   x.shape, shape) as rec:
            if cl:  # in memory order (N, H, W, C)
                n = x.shape[0]
                out = layouts.empty(shape, channels_last=True, dtype=x.dtype)
                xm, om = x.transpose(0, 2, 3, 1), out.transpose(0, 2, 3, 1)
                if up:  # om[n, h, i, w, j, c] = xm[n, h, w, c, i, j]
                    c2 = c // (r * r)
                    src = xm.reshape(n, h, w, c2, r, r).transpose(0, 1, 4, 2, 5, 3)
                    dst = om.reshape(n, h, r, w, r, c2)
                else:  # om[n, h, w, c, i, j] = xm[n, h, i, w, j, c]
                    src = xm.reshape(n, h // r, r, w // r, r, c).transpose(0, 1, 3, 5, 2, 4)
                    dst = om.reshape(n, h // r, w // r, c, r, r)
            else:
                out = np.empty(shape, x.dtype)
                lead_axes = tuple(range(k))
                if up:
                    src = x.reshape(*lead, c // (r * r), r, r, h, w).transpose(
                        *lead_axes, k, k + 3, k + 1, k + 4, k + 2)
                else:
                    src = x.reshape(*lead, c, h // r, r, w // r, r).transpose(
                        *lead_axes, k, k + 2, k + 4, k + 1, k + 3)
                dst = out.reshape(src.shape)
            rec.algorithm = relayout.copy(dst, src)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # a permutation of the values: its adjoint is the inverse permutation, laid out
        # as x was (a one-channel gradient's layout says nothing: a super-resolution
        # head's channels-last (N, r^2, H, W) took an NCHW gradient, copied back later)
        r, up, cl = ctx.shuffle
        return PixelShuffle.apply(grad, r=r, up=not up, channels_last=cl)


class PadConstant(Function):
    """Surround ``x`` with ``value``: ``widths`` holds one (lo, hi) pair (>= 0) per dim."""

    reads = ()

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, widths: tuple, value: float) -> np.ndarray:
        ctx.inner = tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, x.shape))
        if lazy.is_dask_array(x):  # a full-size np.full would defeat the chunking
            return lazy.pad_constant(x, widths, value)
        out = np.full([n + lo + hi for (lo, hi), n in zip(widths, x.shape)], value, x.dtype)
        out[ctx.inner] = x
        return out

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # the border is constant: x's gradient is the inner block of the output's
        return grad[ctx.inner]
