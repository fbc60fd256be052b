"""Writes at indices, as torch's Tensor methods, out of place and in place:
``index_copy``, ``index_fill``, ``index_put``, ``masked_scatter``, ``scatter_reduce``,
``index_reduce``, ``select_scatter``, ``slice_scatter``, ``diagonal_scatter``; and
``diag_embed``, ``diagflat``.

Each finds the written places on the ndarray (the flat positions of the elements the
index means) and composes the differentiable ``ScatterAdd`` (its adjoint a gather) with
``where``: the gradient of a written place goes to the value written there, the others'
to ``self``.  ``scatter_reduce``'s prod, amax and amin reduce tables of each place's
contributors with ``prod``, ``amax`` and ``amin``, so their gradients are those
operations' (amax/amin: shared evenly among equal values, as torch), each table bounded
by a multiple of the contributors (:func:`_reduce_groups`).  The in-place forms
run through :meth:`InPlaceMixin._apply_`, so version checks keep working.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from ..autograd import tensor_type
from . import args, operands
from . import gather as _ga
from . import shape as _sh

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["IndexingMixin"]

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _t():
    return tensor_type()


def _source(fn: str, name: str, src: Any, like: Tensor) -> Tensor:
    """``src`` as a Tensor of ``like``'s dtype (a Tensor must have it already)."""
    T = _t()
    if isinstance(src, T):
        if src.data.dtype != like.data.dtype:
            raise TypeError(f"{fn}: {name} of dtype {src.data.dtype} must have self's dtype "
                            f"{like.data.dtype}")
        return src
    return T(np.asarray(src, like.data.dtype))


def _index_1d(fn: str, index: Any, size: int, d: int) -> np.ndarray:
    """A 0-d or 1-d integer index along a dim of ``size``, negatives counted from the
    end; an index out of range is named."""
    idx = index.data if isinstance(index, _t()) else np.asarray(index)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{fn}: index of dtype {idx.dtype} must be an integer tensor")
    if idx.ndim > 1:
        raise ValueError(f"{fn}: index of shape {idx.shape} must be 0-d or 1-d")
    idx = idx.reshape(-1).astype(np.int64)
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        raise IndexError(f"{fn}: index {int(idx[bad][0])} is out of range for dim {d} of "
                         f"size {size}")
    return np.where(idx < 0, idx + size, idx)


def _positions(shape: tuple) -> np.ndarray:
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)


def _embed(x: Tensor, pos: np.ndarray, src: Tensor) -> Tensor:
    """``x`` with the values of ``src`` (of ``pos``'s shape) written at the flat
    positions ``pos``; of a repeated position the last write stays."""
    flat_pos = pos.reshape(-1)
    values = src.reshape(-1)
    n = flat_pos.size
    if n and np.unique(flat_pos).size != n:
        _, last = np.unique(flat_pos[::-1], return_index=True)
        keep = np.sort(n - 1 - last)
        flat_pos, values = flat_pos[keep], values[keep]
    size = x.numel()
    written = np.zeros(size, bool)
    written[flat_pos] = True
    placed = _ga.ScatterAdd.apply(values, index=flat_pos.astype(np.intp), dim=0, shape=(size,))
    return operands.where(written, placed, x.reshape(-1)).reshape(tuple(x.shape))


def _index_along(shape: tuple, d: int, idx: np.ndarray) -> np.ndarray:
    """The flat positions of ``x.index_select(d, idx)`` in a tensor of ``shape``."""
    return np.take(_positions(shape), idx, axis=d)


class IndexingMixin:
    """The methods listed in the module's docstring."""

    __slots__ = ()

    # -- along one dim, at a 1-d index
    def index_copy(self, dim: int, index: Any, source: Any) -> Tensor:
        """A copy with ``source[..., i, ...]`` written at ``self[..., index[i], ...]``
        along ``dim``."""
        fn = "index_copy"
        d = args.dim(fn, dim, max(self.ndim, 1))
        x = self if self.ndim else self.reshape(1)
        idx = _index_1d(fn, index, x.shape[d], d)
        src = _source(fn, "source", source, self)
        src = src if src.ndim else src.reshape(1)
        want = tuple(x.shape[:d]) + (idx.size,) + tuple(x.shape[d + 1:])
        if tuple(src.shape) != want:
            raise ValueError(f"{fn}: source of shape {tuple(src.shape)} must have shape "
                             f"{want} (self's, with len(index) along dim {d})")
        return _embed(x, _index_along(tuple(x.shape), d, idx), src).reshape(self.shape)

    def index_fill(self, dim: int, index: Any, value: Any) -> Tensor:
        """A copy with ``value`` (a number or a 0-d Tensor, then differentiable) written
        at the indices ``index`` along ``dim``."""
        fn = "index_fill"
        d = args.dim(fn, dim, max(self.ndim, 1))
        x = self if self.ndim else self.reshape(1)
        idx = _index_1d(fn, index, x.shape[d], d)
        if isinstance(value, _t()):
            if value.ndim != 0:
                raise ValueError(f"{fn}: value must be a number or a 0-d Tensor, got shape "
                                 f"{tuple(value.shape)}")
        elif isinstance(value, bool) or not isinstance(value, Real):
            raise TypeError(f"{fn}: value={value!r} must be a number or a 0-d Tensor")
        mask = np.zeros(x.shape[d], bool)
        mask[idx] = True
        shape = [1] * x.ndim
        shape[d] = x.shape[d]
        return x.masked_fill(mask.reshape(shape), value).reshape(self.shape)

    def index_reduce(self, dim: int, index: Any, source: Any, reduce: str, *,
                     include_self: bool = True) -> Tensor:
        """``self[..., index[i], ...]`` reduced (prod, mean, amax, amin) with
        ``source[..., i, ...]`` along ``dim`` (see :meth:`scatter_reduce`)."""
        fn = "index_reduce"
        if reduce not in ("prod", "mean", "amax", "amin"):
            raise ValueError(f"{fn}: reduce={reduce!r} must be one of prod, mean, amax, amin")
        d = args.dim(fn, dim, max(self.ndim, 1))
        x = self if self.ndim else self.reshape(1)
        idx = _index_1d(fn, index, x.shape[d], d)
        src = _source(fn, "source", source, self)
        src = src if src.ndim else src.reshape(1)
        want = tuple(x.shape[:d]) + (idx.size,) + tuple(x.shape[d + 1:])
        if tuple(src.shape) != want:
            raise ValueError(f"{fn}: source of shape {tuple(src.shape)} must have shape "
                             f"{want} (self's, with len(index) along dim {d})")
        shape = [1] * x.ndim
        shape[d] = idx.size
        full = np.ascontiguousarray(np.broadcast_to(idx.reshape(shape), want))
        return x.scatter_reduce(d, full, src, reduce,
                                include_self=include_self).reshape(self.shape)

    # -- scattered reductions
    def scatter_reduce(self, dim: int, index: Any, src: Any, reduce: str, *,
                       include_self: bool = True) -> Tensor:
        """A copy where each place ``index`` sends ``src`` values to (along ``dim``, as
        ``scatter``) holds their reduction (sum, prod, mean, amax, amin), with its own
        value among them if ``include_self``; other places keep theirs.  Gradients as
        torch's: amax/amin share among the values equal to the result."""
        fn = "scatter_reduce"
        if reduce not in REDUCTIONS:
            raise ValueError(f"{fn}: reduce={reduce!r} must be one of {', '.join(REDUCTIONS)}")
        args.flag(fn, "include_self", include_self)
        d = args.dim(fn, dim, max(self.ndim, 1))
        x = self if self.ndim else self.reshape(1)
        idx = index.data if isinstance(index, _t()) else np.asarray(index)
        if idx.dtype.kind not in "iu":
            raise TypeError(f"{fn}: index of dtype {idx.dtype} must be an integer tensor")
        idx = idx.reshape(1) if idx.ndim == 0 else idx
        src = _source(fn, "src", src, self)
        src = src if src.ndim else src.reshape(1)
        if idx.ndim != x.ndim or src.ndim != x.ndim:
            raise ValueError(f"{fn}: index ({idx.ndim} dims) and src ({src.ndim} dims) must "
                             f"have self's {x.ndim} dims")
        for i, n in enumerate(idx.shape):
            if n > src.shape[i] or (i != d and n > x.shape[i]):
                raise ValueError(f"{fn}: index of shape {idx.shape} must not exceed src's "
                                 f"{tuple(src.shape)} nor self's {tuple(x.shape)} "
                                 f"(but along dim {d})")
        size = x.shape[d]
        bad = (idx < -size) | (idx >= size)
        if bad.any():
            raise IndexError(f"{fn}: index {int(idx[bad][0])} is out of range for dim {d} of "
                             f"size {size}")
        idx = np.where(idx < 0, idx + size, idx).astype(np.intp)
        dest = np.ravel_multi_index(_ga.full_index(idx, d), tuple(x.shape)).reshape(-1)
        part = src[tuple(slice(0, n) for n in idx.shape)].reshape(-1)
        out = _scatter_reduced(x.reshape(-1), dest, part, reduce, bool(include_self))
        return out.reshape(self.shape)

    # -- by advanced index, by mask
    def index_put(self, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
        """A copy with ``values`` (broadcast) written at ``self[indices]`` (a tuple of
        integer or bool Tensors, as advanced indexing), or added there with
        ``accumulate`` (repeated places add up)."""
        fn = "index_put"
        args.flag(fn, "accumulate", accumulate)
        if not isinstance(indices, tuple | list):
            raise TypeError(f"{fn}: indices must be a tuple of Tensors, got "
                            f"{type(indices).__name__}")
        parts, d = [], 0
        for i in indices:
            a = i.data if isinstance(i, _t()) else np.asarray(i)
            if a.dtype == np.bool_:
                want = tuple(self.shape[d:d + a.ndim])
                if a.shape != want:
                    raise IndexError(f"{fn}: a mask of shape {a.shape} must match self's "
                                     f"dims {d}..{d + a.ndim - 1} of shape {want}")
                parts.extend(a.nonzero())
                d += a.ndim
                continue
            if a.dtype.kind not in "iu":
                raise TypeError(f"{fn}: an index of dtype {a.dtype} must be integer or bool")
            if d >= self.ndim:
                raise IndexError(f"{fn}: {len(indices)} indices for a tensor of {self.ndim} "
                                 "dims")
            size = self.shape[d]
            bad = (a < -size) | (a >= size)
            if bad.any():
                raise IndexError(f"{fn}: index {int(a[bad].reshape(-1)[0])} is out of range "
                                 f"for dim {d} of size {size}")
            parts.append(a.astype(np.intp))
            d += 1
        pos = _positions(tuple(self.shape))[tuple(parts)]
        vals = _source(fn, "values", values, self)
        try:
            np.broadcast_shapes(tuple(vals.shape), pos.shape)
            if np.broadcast_shapes(tuple(vals.shape), pos.shape) != pos.shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"{fn}: values of shape {tuple(vals.shape)} cannot be broadcast "
                             f"to the indexed shape {pos.shape}") from None
        vals = vals.expand(*pos.shape) if tuple(vals.shape) != pos.shape else vals
        if not accumulate:
            return _embed(self, pos, vals)
        added = _ga.ScatterAdd.apply(vals.reshape(-1), index=pos.reshape(-1).astype(np.intp),
                                     dim=0, shape=(self.numel(),))
        return self + added.reshape(tuple(self.shape))

    def masked_scatter(self, mask: Any, source: Any) -> Tensor:
        """A copy with the elements of ``source``, in order, written where ``mask`` (bool,
        broadcast to self) is True."""
        fn = "masked_scatter"
        m = mask.data if isinstance(mask, _t()) else np.asarray(mask)
        if m.dtype != np.bool_:
            raise TypeError(f"{fn}: mask of dtype {m.dtype} must be bool")
        try:
            m = np.broadcast_to(m, tuple(self.shape))
        except ValueError:
            raise ValueError(f"{fn}: mask of shape {m.shape} cannot be broadcast to self's "
                             f"{tuple(self.shape)}") from None
        src = _source(fn, "source", source, self)
        pos = np.flatnonzero(m)
        if src.numel() < pos.size:
            raise ValueError(f"{fn}: source has {src.numel()} elements, the mask selects "
                             f"{pos.size}")
        return _embed(self, pos, src.reshape(-1)[:pos.size])

    # -- slices written back
    def select_scatter(self, src: Any, dim: int, index: int) -> Tensor:
        """A copy with ``src`` written at ``self.select(dim, index)``."""
        fn = "select_scatter"
        d = args.dim(fn, dim, self.ndim) if self.ndim else args.dim(fn, dim, 0)
        if isinstance(index, bool) or not isinstance(index, Integral):
            raise TypeError(f"{fn}: index={index!r} must be an int")
        size = self.shape[d]
        if not -size <= index < size:
            raise IndexError(f"{fn}: index {index} is out of range for dim {d} of size {size}")
        pos = np.take(_positions(tuple(self.shape)), int(index) % size, axis=d)
        return self._scatter_view(fn, pos, src)

    def slice_scatter(self, src: Any, dim: int = 0, start: int | None = None,
                      end: int | None = None, step: int = 1) -> Tensor:
        """A copy with ``src`` written at ``self[..., start:end:step, ...]`` (along
        ``dim``)."""
        fn = "slice_scatter"
        d = args.dim(fn, dim, max(self.ndim, 1))
        if isinstance(step, bool) or not isinstance(step, Integral) or step < 1:
            raise ValueError(f"{fn}: step={step!r} must be an int >= 1")
        pos = _positions(tuple(self.shape))[(slice(None),) * d + (slice(start, end, step),)]
        return self._scatter_view(fn, pos, src)

    def diagonal_scatter(self, src: Any, offset: int = 0, dim1: int = 0,
                         dim2: int = 1) -> Tensor:
        """A copy with ``src`` written at ``self.diagonal(offset, dim1, dim2)``."""
        fn = "diagonal_scatter"
        a = args.dim(fn, dim1, self.ndim)
        b = args.dim(fn, dim2, self.ndim)
        if a == b:
            raise ValueError(f"{fn}: dim1={dim1} and dim2={dim2} must differ")
        if isinstance(offset, bool) or not isinstance(offset, Integral):
            raise TypeError(f"{fn}: offset={offset!r} must be an int")
        pos = np.diagonal(_positions(tuple(self.shape)), int(offset), a, b)
        return self._scatter_view(fn, pos, src)

    def _scatter_view(self, fn: str, pos: np.ndarray, src: Any) -> Tensor:
        s = _source(fn, "src", src, self)
        if tuple(s.shape) != pos.shape:
            raise ValueError(f"{fn}: src of shape {tuple(s.shape)} must have the written "
                             f"part's shape {pos.shape}")
        return _embed(self, pos, s)

    # -- diagonal matrices
    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        """The last dim's values on diagonal ``offset`` of new square planes (dims
        ``dim1``, ``dim2`` of the result, one dim more than self), zeros elsewhere."""
        fn = "diag_embed"
        if isinstance(offset, bool) or not isinstance(offset, Integral):
            raise TypeError(f"{fn}: offset={offset!r} must be an int")
        x = self if self.ndim else self.reshape(1)
        a = args.dim(fn, dim1, x.ndim + 1)
        b = args.dim(fn, dim2, x.ndim + 1)
        if a == b:
            raise ValueError(f"{fn}: dim1={dim1} and dim2={dim2} must differ")
        m = x.shape[-1] + abs(int(offset))
        shape = tuple(x.shape[:-1]) + (m, m)
        base = _t()._wrap(np.zeros(shape, x.data.dtype))
        pos = np.diagonal(_positions(shape), int(offset), -2, -1)
        out = _embed(base, pos, x)
        return out.movedim((-2, -1), (a, b))

    def diagflat(self, offset: int = 0) -> Tensor:
        """The flattened values on diagonal ``offset`` of a square matrix."""
        if isinstance(offset, bool) or not isinstance(offset, Integral):
            raise TypeError(f"diagflat: offset={offset!r} must be an int")
        return self.reshape(-1).diag(int(offset))

    # -- in place
    def index_copy_(self, dim: int, index: Any, source: Any) -> Tensor:
        return self._apply_("index_copy_", lambda t: t.index_copy(dim, index, source), source)

    def index_fill_(self, dim: int, index: Any, value: Any) -> Tensor:
        return self._apply_("index_fill_", lambda t: t.index_fill(dim, index, value), value)

    def index_put_(self, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
        return self._apply_("index_put_", lambda t: t.index_put(indices, values, accumulate),
                            values)

    def masked_scatter_(self, mask: Any, source: Any) -> Tensor:
        return self._apply_("masked_scatter_", lambda t: t.masked_scatter(mask, source),
                            source)

    def scatter_reduce_(self, dim: int, index: Any, src: Any, reduce: str, *,
                        include_self: bool = True) -> Tensor:
        return self._apply_("scatter_reduce_", lambda t: t.scatter_reduce(
            dim, index, src, reduce, include_self=include_self), src)

    def index_reduce_(self, dim: int, index: Any, source: Any, reduce: str, *,
                      include_self: bool = True) -> Tensor:
        return self._apply_("index_reduce_", lambda t: t.index_reduce(
            dim, index, source, reduce, include_self=include_self), source)


def _identity(reduce: str, dtype: np.dtype) -> Any:
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is None:  # bool
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


def _scatter_reduced(flat: Tensor, dest: np.ndarray, part: Tensor, reduce: str,
                     include_self: bool) -> Tensor:
    """``flat`` (1-d) with each place of ``dest`` replaced by the ``reduce`` of the
    ``part`` values sent there (and its own, if ``include_self``)."""
    size = flat.shape[0]
    dt = flat.data.dtype
    received = np.zeros(size, bool)
    received[dest] = True
    if reduce in ("sum", "mean"):
        total = _ga.ScatterAdd.apply(part, index=dest.astype(np.intp), dim=0, shape=(size,))
        if include_self:
            total = total + flat
        if reduce == "mean":
            count = np.bincount(dest, minlength=size) + (1 if include_self else 0)
            count = np.maximum(count, 1).astype(dt)
            if dt.kind == "f":
                total = total / _t()._wrap(count)
            else:
                total = _t()._wrap(np.floor_divide(total.data, count).astype(dt))
        return operands.where(received, total, flat)
    # prod / amax / amin: the contributors of each received place reduced by tables
    places, inverse = np.unique(dest, return_inverse=True)
    pieces, group = [part], inverse.reshape(-1)
    if include_self:
        pieces.append(flat[places])
        group = np.concatenate([group, np.arange(places.size)])
    reduced = _reduce_groups(_sh.Concatenate.apply(*pieces, dim=0), group, places.size,
                             reduce, _identity(reduce, dt))
    placed = _ga.ScatterAdd.apply(reduced.to(dt), index=places.astype(np.intp), dim=0,
                                  shape=(size,))
    return operands.where(received, placed, flat)


#: a reduction table holds at most this many times the candidates' count (plus one row per
#: group): one place receiving most of the values must not make a (count x places) table
TABLE_FACTOR = 4


def _reduce_groups(cand: Tensor, group: np.ndarray, groups: int, reduce: str,
                   identity: Any) -> Tensor:
    """The ``reduce`` (prod, amax, amin) of the 1-d ``cand`` per ``group`` (ids in
    ``[0, groups)``, each present), through ``prod``/``amax``/``amin`` over the rows of a
    table (group members down a column, padded with ``identity``), so the gradients are
    those operations'.  A table is at most :data:`TABLE_FACTOR` times the candidates plus
    a row of groups: where one group is longer, each round reduces blocks of ``width``
    members and the next round reduces the blocks' results (amax/amin then share a tie's
    gradient evenly within a block, not across blocks)."""
    while True:
        n = group.size
        counts = np.bincount(group, minlength=groups)
        order = np.argsort(group, kind="stable")
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
        longest = int(counts.max())
        width = longest if longest * groups <= TABLE_FACTOR * n + groups else \
            max(2, (TABLE_FACTOR * n) // (2 * groups))
        blocks_of = (counts + width - 1) // width  # each group's blocks, in group order
        first = np.cumsum(blocks_of) - blocks_of
        block = first[group] + rank // width
        padded = _sh.Concatenate.apply(
            cand, _t()._wrap(np.asarray([identity], cand.data.dtype)), dim=0)
        table = np.full((width, int(blocks_of.sum())), n, np.int64)
        table[rank % width, block] = np.arange(n)
        gathered = padded[table]
        cand = (gathered.prod(0) if reduce == "prod" else
                gathered.amax(0) if reduce == "amax" else gathered.amin(0))
        if width >= longest:
            return cand
        group = np.repeat(np.arange(groups), blocks_of)
