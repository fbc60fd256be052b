"""The Tensor methods that PyTorch scripts call beyond the core operators: comparisons
by name (``eq``), arithmetic by name (``mul``, ``bmm``), ``new_*`` constructors,
statistics (``std``, ``var``, ``norm``, ``cumsum``), movement (``repeat``, ``flip``,
``roll``, ``chunk``, ``split``, ``narrow``, ``movedim``, ``unfold``), selection
(``masked_fill``, ``where``, ``gather``, ``scatter``, ``topk``, ``sort``) and the in-place
random fills (``normal_``, ``uniform_``, ``bernoulli_``, ``exponential_``).

Each is made of the differentiable operations of ``elementwise``, ``reduce``, ``shape`` and
``gather`` (so its gradient is theirs), and differentiable exactly where torch's is.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any, NamedTuple

import numpy as np

from .. import devices as _device
from .. import random as _random
from ..autograd import tensor_type
from . import args, creation, operands
from . import gather as _ga
from . import shape as _sh

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["TorchMethodsMixin"]


class sort(NamedTuple):  # noqa: N801 (torch.return_types' names)
    values: Any
    indices: Any


class topk(NamedTuple):  # noqa: N801
    values: Any
    indices: Any


def _t():
    return tensor_type()


def _dim(fn: str, dim: Any, ndim: int) -> int:
    return args.dim(fn, dim, max(ndim, 1))


def _int(fn: str, name: str, value: Any, low: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{fn}: {name}={value!r} must be an int")
    if low is not None and value < low:
        raise ValueError(f"{fn}: {name}={value} must be >= {low}")
    return int(value)


def _ints(fn: str, name: str, values: tuple) -> tuple[int, ...]:
    if len(values) == 1 and isinstance(values[0], Sequence | np.ndarray):
        values = tuple(values[0])
    return tuple(_int(fn, name, v) for v in values)


def _index_array(fn: str, index: Any) -> np.ndarray:
    arr = index.data if isinstance(index, _t()) else np.asarray(index)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{fn}: index has dtype {arr.dtype}; expected an int64 tensor")
    return arr.astype(np.intp, copy=False)


class TorchMethodsMixin:
    """Methods of ``Tensor`` named and behaving as torch's."""

    __slots__ = ()

    # -- comparisons and arithmetic by name
    def eq(self, other: Any) -> Tensor:
        return self == other

    def ne(self, other: Any) -> Tensor:
        return self != other

    def lt(self, other: Any) -> Tensor:
        return self < other

    def le(self, other: Any) -> Tensor:
        return self <= other

    def gt(self, other: Any) -> Tensor:
        return self > other

    def ge(self, other: Any) -> Tensor:
        return self >= other

    def equal(self, other: Any) -> bool:
        """Whether ``other`` has the same shape and values."""
        o = other.data if isinstance(other, _t()) else np.asarray(other)
        return self.data.shape == o.shape and bool(np.array_equal(self.data, o))

    def add(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self + (other if alpha == 1 else other * alpha)

    def sub(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self - (other if alpha == 1 else other * alpha)

    def mul(self, other: Any) -> Tensor:
        return self * other

    multiply = mul

    def div(self, other: Any) -> Tensor:
        return self / other

    divide = true_divide = div

    def neg(self) -> Tensor:
        return -self

    def square(self) -> Tensor:
        return self * self

    def reciprocal(self) -> Tensor:
        return 1.0 / self

    def rsqrt(self) -> Tensor:
        return 1.0 / self.sqrt()

    def mm(self, other: Any) -> Tensor:
        if self.ndim != 2 or np.ndim(other) != 2:
            raise ValueError(f"mm: expected two 2-D tensors, got shapes {self.shape} and "
                             f"{np.shape(other)}")
        return self @ other

    def bmm(self, other: Any) -> Tensor:
        """Batched matrix product of (B, n, m) and (B, m, p) tensors."""
        if self.ndim != 3 or np.ndim(other) != 3 or np.shape(other)[0] != self.shape[0]:
            raise ValueError(f"bmm: expected 3-D tensors (B, n, m) and (B, m, p), got shapes "
                             f"{self.shape} and {np.shape(other)}")
        return self @ other

    # -- shapes of and from other tensors
    def view_as(self, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    reshape_as = view_as

    def expand_as(self, other: Tensor) -> Tensor:
        return self.expand(other.shape)

    def new_tensor(self, data: Any, dtype: Any = None, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
        """A new leaf with a copy of ``data``, in this tensor's dtype unless ``dtype``."""
        _device.check_device("new_tensor", device)
        dt = self.data.dtype if dtype is None else args.tensor_dtype("new_tensor", dtype)
        data = data.data if isinstance(data, _t()) else data
        return _t()(np.array(data, dtype=dt, copy=True), requires_grad=requires_grad, dtype=dt)

    def new_zeros(self, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
        return creation.full(args.shape_arg(size), 0, device=device, requires_grad=requires_grad,
                             dtype=self.data.dtype if dtype is None else dtype)

    def new_ones(self, *size: Any, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Tensor:
        return creation.full(args.shape_arg(size), 1, device=device, requires_grad=requires_grad,
                             dtype=self.data.dtype if dtype is None else dtype)

    def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Tensor:
        return creation.full(size, fill_value, dtype=self.data.dtype if dtype is None else dtype,
                             device=device, requires_grad=requires_grad)

    def new_empty(self, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
        return creation.empty(*size, dtype=self.data.dtype if dtype is None else dtype,
                              device=device, requires_grad=requires_grad)

    # -- statistics
    def var(self, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
            correction: Any = None) -> Tensor:
        """Variance over ``dim`` (all if None): the squared deviations summed and divided by
        ``N - correction`` (``correction=1`` by default; ``unbiased=False`` is 0)."""
        if unbiased is not None and correction is not None:
            raise ValueError(f"var: got unbiased={unbiased!r} and correction={correction!r}; "
                             "pass one")
        if isinstance(unbiased, int | np.integer) and not isinstance(unbiased, bool) \
                and dim is None:  # var(dim) given positionally as torch allows: var(1)
            dim, unbiased = unbiased, None
        corr = (1 if unbiased is None else int(bool(unbiased))) if correction is None \
            else correction
        if isinstance(corr, bool) or not isinstance(corr, Real):
            raise TypeError(f"var: correction={corr!r} must be a number")
        mean = self.mean(dim, keepdim=True)
        dims = None if dim is None else dim
        n = self.numel() if dims is None else int(np.prod(
            [self.shape[d] for d in ((dims,) if isinstance(dims, int) else dims)]))
        sq = ((self - mean) ** 2).sum(dims, keepdim=keepdim)
        return sq / max(n - corr, 0)

    def std(self, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
            correction: Any = None) -> Tensor:
        """The square root of :meth:`var` (same arguments)."""
        return self.var(dim, unbiased, keepdim, correction=correction).sqrt()

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Tensor:
        """The vector p-norm over ``dim`` (all if None): ``'fro'``/2, 1, inf, or any p > 0."""
        if p == 1:
            return self.abs().sum(dim, keepdim=keepdim)
        if p in (float("inf"), "inf"):
            return self.abs().amax(dim, keepdim)
        two = p in ("fro", 2, 2.0)
        if not two and (isinstance(p, bool) or not isinstance(p, Real) or p <= 0):
            raise ValueError(f"norm: p={p!r} must be 'fro', inf or a number > 0")
        s = (self * self if two else self.abs() ** p).sum(dim, keepdim=keepdim)
        # the root of a zero sum is 0 with gradient 0 there, as torch's norm (the root's
        # own derivative is infinite at 0, which would give 0 * inf = NaN)
        zero = s.data == 0
        if not zero.any():
            return s.sqrt() if two else s ** (1.0 / p)
        safe = operands.where(zero, s.data.dtype.type(1), s)
        root = safe.sqrt() if two else safe ** (1.0 / p)
        return operands.where(zero, s.data.dtype.type(0), root)

    def amax(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return self.max(tuple(range(self.ndim)) if dim is None else
                        (dim,) if isinstance(dim, int) else tuple(dim), keepdim)

    def amin(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return self.min(tuple(range(self.ndim)) if dim is None else
                        (dim,) if isinstance(dim, int) else tuple(dim), keepdim)

    def cumsum(self, dim: int) -> Tensor:
        d = _dim("cumsum", dim, self.ndim)
        x = self if self.data.dtype.kind == "f" else self.to(np.int64)
        return _ga.Cumsum.apply(x, dim=d) if self.ndim else x.clone()

    # -- movement
    def repeat(self, *sizes: Any) -> Tensor:
        """Tile: ``sizes[i]`` copies along dim i (leading sizes add dims), as torch."""
        sizes = _ints("repeat", "sizes", sizes)
        if len(sizes) < self.ndim or any(s < 0 for s in sizes):
            raise ValueError(f"repeat: sizes={sizes} must be >= 0 and at least one per dim "
                             f"of the tensor's {self.ndim}")
        shape = (1,) * (len(sizes) - self.ndim) + self.shape
        x = self.reshape(shape)
        # interleave a broadcast dim before each dim, then merge: (s0, n0, s1, n1, ...)
        wide = x.reshape(tuple(v for n in shape for v in (1, n)))
        wide = wide.expand(tuple(v for s, n in zip(sizes, shape) for v in (s, n)))
        out = wide.reshape(tuple(s * n for s, n in zip(sizes, shape)))
        # as torch, memory of its own (a reshape may keep the broadcast view, read-only)
        return out.clone() if out.data.base is not None or out.data is self.data else out

    def repeat_interleave(self, repeats: Any, dim: int | None = None) -> Tensor:
        """Each element repeated ``repeats`` times along ``dim`` (flattened if None)."""
        x = self.flatten() if dim is None else self
        d = 0 if dim is None else _dim("repeat_interleave", dim, self.ndim)
        rep = repeats.data if isinstance(repeats, _t()) else np.asarray(repeats)
        if rep.dtype.kind not in "iu" or (rep.ndim and rep.shape != (x.shape[d],)) or \
                (rep < 0).any():
            raise ValueError(f"repeat_interleave: repeats={repeats!r} must be an int >= 0 or "
                             f"one per element along the dim ({x.shape[d]})")
        idx = np.repeat(np.arange(x.shape[d]), np.broadcast_to(rep, (x.shape[d],)))
        return x.index_select(d, idx)

    def index_select(self, dim: int, index: Any) -> Tensor:
        d = _dim("index_select", dim, self.ndim)
        idx = _index_array("index_select", index).reshape(-1)
        return _sh.GetItem.apply(self, index=(slice(None),) * d + (idx,))

    def flip(self, *dims: Any) -> Tensor:
        dims = _ints("flip", "dims", dims)
        index = [slice(None)] * self.ndim
        for d in dims:
            index[_dim("flip", d, self.ndim)] = slice(None, None, -1)
        return _sh.GetItem.apply(self, index=tuple(index))

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        """Shift elements cyclically by ``shifts`` along ``dims`` (the flattened tensor if
        None)."""
        if dims is None:
            return self.flatten().roll(shifts, 0).reshape(self.shape)
        shifts = (shifts,) if isinstance(shifts, Integral) else tuple(shifts)
        dims = (dims,) if isinstance(dims, Integral) else tuple(dims)
        if len(shifts) != len(dims):
            raise ValueError(f"roll: shifts={shifts} and dims={dims} must have one entry each")
        index = [slice(None)] * self.ndim
        for s, d in zip(shifts, dims):
            d = _dim("roll", d, self.ndim)
            n = self.shape[d]
            index[d] = (np.arange(n) - _int("roll", "shifts", s)) % n if n else slice(None)
        out = self
        for d, i in enumerate(index):  # one dim at a time: fancy indices do not combine
            if not isinstance(i, slice):
                out = _sh.GetItem.apply(out, index=(slice(None),) * d + (i,))
        return out

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        d = _dim("narrow", dim, self.ndim)
        n = self.shape[d]
        start, length = _int("narrow", "start", start), _int("narrow", "length", length, 0)
        start = start + n if start < 0 else start
        if not 0 <= start <= n or start + length > n:
            raise ValueError(f"narrow: start={start} and length={length} exceed dim {d} of "
                             f"size {n}")
        return _sh.GetItem.apply(self, index=(slice(None),) * d + (slice(start, start + length),))

    def split(self, split_size_or_sections: Any, dim: int = 0) -> tuple:
        """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given
        section sizes."""
        d = _dim("split", dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size_or_sections, Integral):
            size = _int("split", "split_size", split_size_or_sections, 1 if n else 0)
            sizes = [min(size, n - s) for s in range(0, n, size)] if size else [0]
        else:
            sizes = [_int("split", "sections", s, 0) for s in split_size_or_sections]
            if sum(sizes) != n:
                raise ValueError(f"split: sections={sizes} sum to {sum(sizes)}, expected the "
                                 f"size {n} of dim {d}")
        starts = np.cumsum([0] + sizes[:-1])
        return tuple(self.narrow(d, int(s), k) for s, k in zip(starts, sizes))

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        """Up to ``chunks`` pieces of ceil(n / chunks) along ``dim``, as torch."""
        chunks = _int("chunk", "chunks", chunks, 1)
        n = self.shape[_dim("chunk", dim, self.ndim)]
        return self.split(max(-(-n // chunks), 1), dim)

    def unbind(self, dim: int = 0) -> tuple:
        d = _dim("unbind", dim, self.ndim)
        return tuple(_sh.GetItem.apply(self, index=(slice(None),) * d + (i,))
                     for i in range(self.shape[d]))

    def movedim(self, source: Any, destination: Any) -> Tensor:
        src = (source,) if isinstance(source, Integral) else tuple(source)
        dst = (destination,) if isinstance(destination, Integral) else tuple(destination)
        if len(src) != len(dst):
            raise ValueError(f"movedim: source={source} and destination={destination} must "
                             "have as many dims")
        src = [_dim("movedim", s, self.ndim) for s in src]
        dst = [_dim("movedim", s, self.ndim) for s in dst]
        order = [d for d in range(self.ndim) if d not in src]
        for d, s in sorted(zip(dst, src)):
            order.insert(d, s)
        return self.permute(order)

    moveaxis = movedim

    def unfold(self, dimension: int, size: int, step: int) -> Tensor:
        """Every window of ``size`` along ``dimension``, ``step`` apart, in a new last dim."""
        d = _dim("unfold", dimension, self.ndim)
        size, step = _int("unfold", "size", size, 0), _int("unfold", "step", step, 1)
        n = self.shape[d] if self.ndim else 1
        if size > n:
            raise ValueError(f"unfold: size={size} exceeds the size {n} of dim {d}")
        idx = np.arange(0, n - size + 1, step)[:, None] + np.arange(size)  # (windows, size)
        x = self if self.ndim else self.reshape(1)
        out = _sh.GetItem.apply(x, index=(slice(None),) * d + (idx,))
        return out.movedim(d + 1, -1)

    # -- selection
    def masked_fill(self, mask: Any, value: Any) -> Tensor:
        """``value`` where ``mask`` (a bool tensor, broadcast) is true, else this tensor."""
        m = mask.data if isinstance(mask, _t()) else np.asarray(mask)
        if m.dtype != np.bool_:
            raise TypeError(f"masked_fill: mask has dtype {m.dtype}; expected bool")
        if isinstance(value, _t()):
            if value.ndim != 0:
                raise ValueError(f"masked_fill: value must be a number or a 0-d tensor, got "
                                 f"shape {value.shape}")
            value = value.to(self.data.dtype)
        else:
            value = np.asarray(value, self.data.dtype)
        return operands.where(m, value, self).to(self.data.dtype)

    def where(self, condition: Any, other: Any) -> Tensor:
        """``self`` where ``condition`` is true, else ``other`` (torch's method form)."""
        return operands.where(condition, self, other)

    def gather(self, dim: int, index: Any) -> Tensor:
        """``out[i][j][k] = self[i][index[i][j][k]][k]`` for dim 1 (differentiable in self)."""
        d = _dim("gather", dim, self.ndim)
        idx = _index_array("gather", index)
        if idx.ndim != self.ndim:
            raise ValueError(f"gather: index has {idx.ndim} dims, expected {self.ndim}")
        return _ga.Gather.apply(self, index=idx, dim=d)

    def scatter(self, dim: int, index: Any, src: Any = None, *, value: Any = None) -> Tensor:
        """A copy with ``src`` (or ``value``) written at ``index`` along ``dim``;
        differentiable in self (off the written places) and in src."""
        d = _dim("scatter", dim, self.ndim)
        idx = _index_array("scatter", index)
        T = _t()
        if (src is None) == (value is None):
            raise ValueError("scatter: pass one of src and value")
        full = _ga.full_index(idx, d)
        written = np.zeros(self.shape, bool)
        written[full] = True
        if src is None or not isinstance(src, T):
            v = value if src is None else src
            if np.ndim(v) == 0:
                out = self.data.copy()
                out[full] = v
                return operands.where(written, T._wrap(out), self)
            src = T(np.asarray(v, self.data.dtype))
        part = src[tuple(slice(0, n) for n in idx.shape)]
        return operands.where(written, _ga.ScatterAdd.apply(part, index=idx, dim=d,
                                                            shape=self.shape), self)

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> sort:
        """``(values, indices)`` along ``dim`` (a stable order; values differentiable)."""
        d = _dim("sort", dim, self.ndim)
        x = self if self.ndim else self.reshape(1)
        key = -x.data if descending and x.data.dtype.kind != "b" else x.data
        if descending and x.data.dtype.kind == "b":
            key = ~x.data
        idx = np.argsort(key, axis=d, kind="stable")
        values = _ga.Gather.apply(x, index=idx, dim=d)
        T = _t()
        if not self.ndim:
            return sort(values.reshape(()), T._wrap(np.zeros((), np.int64)))
        return sort(values, T._wrap(idx.astype(np.int64)))

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
        return self.sort(dim, descending).indices

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> topk:
        """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
        d = _dim("topk", dim, self.ndim)
        n = self.shape[d] if self.ndim else 1
        k = _int("topk", "k", k, 0)
        if k > n:
            raise ValueError(f"topk: k={k} exceeds the size {n} of dim {d}")
        values, indices = self.sort(d, descending=largest)
        head = (slice(None),) * d + (slice(0, k),)
        return topk(values[head], indices[head])

    # -- in-place random fills (from ``generator``, else the library-wide generator)
    def _fill_random(self, fn: str, draw: Any, generator: Any) -> Tensor:
        if self.data.dtype.kind != "f" and fn != "bernoulli_":
            raise TypeError(f"{fn}: the tensor has dtype {self.data.dtype}; expected a float "
                            "dtype")
        values = draw(_random.generator(generator, fn), self.shape)
        return self.copy_(np.asarray(values).astype(self.data.dtype))

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
        if std < 0:
            raise ValueError(f"normal_: std={std} must be >= 0")
        return self._fill_random("normal_", lambda g, s: g.normal(mean, std, s), generator)

    def uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator: Any = None
                 ) -> Tensor:
        if from_ > to:
            raise ValueError(f"uniform_: from={from_} must be <= to={to}")
        return self._fill_random("uniform_", lambda g, s: g.uniform(from_, to, s), generator)

    def bernoulli_(self, p: Any = 0.5, *, generator: Any = None) -> Tensor:
        pr = p.data if isinstance(p, _t()) else np.asarray(p, np.float64)
        if (pr < 0).any() or (pr > 1).any():
            raise ValueError(f"bernoulli_: p={p!r} must be in [0, 1]")
        return self._fill_random("bernoulli_", lambda g, s: g.random(s) < pr, generator)

    def exponential_(self, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
        if lambd <= 0:
            raise ValueError(f"exponential_: lambd={lambd} must be > 0")
        return self._fill_random("exponential_",
                                 lambda g, s: g.exponential(1.0 / lambd, s), generator)
