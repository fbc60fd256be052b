"""More Tensor methods that PyTorch scripts call, each composed of the library's
differentiable operations (so its gradients, of every order, are theirs):

* products: ``prod`` (a tree of pairwise products along the dim: exact with zeros),
  ``cumprod`` (a scan of products, log2(n) rounds), ``dot``, ``mv``;
* arithmetic: ``addcmul``, ``addcdiv``, ``lerp`` (torch's two formulas), ``remainder``
  and ``fmod`` (the value NumPy's, the gradient 1 and ``-floor`` / ``-trunc`` of the
  quotient), ``nan_to_num`` (no gradient where a value is replaced), ``softmax``,
  ``log_softmax``;
* logic: ``logical_and``, ``logical_or``, ``logical_xor`` (bool, no gradient);
* shape: ``tile``, ``swapaxes``, ``unflatten``;
* selection: ``masked_select``, ``nonzero``, ``diag``, ``diagonal``, ``trace``,
  ``index_add``, ``scatter_add``, ``unique``;
* ``multinomial`` (draws from the library's generator), ``is_floating_point``,
  ``element_size``.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from .. import random as _random
from ..autograd import Context, Function, tensor_type
from . import args, operands
from . import gather as _ga
from . import reduce as _red
from . import shape as _sh

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["ScriptMethodsMixin"]


def _t():
    return tensor_type()


def _cat(parts: list, dim: int) -> Tensor:
    """Join Tensors of one dtype along ``dim`` (differentiable)."""
    return _sh.Concatenate.apply(*parts, dim=dim)


def _int(fn: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{fn}: {name}={value!r} must be an int")
    return int(value)


def _tensor(x: Any, like: Tensor) -> Tensor:
    T = _t()
    return x if isinstance(x, T) else T(np.asarray(x, like.data.dtype if np.ndim(x) == 0
                                                    or np.asarray(x).dtype.kind in "iub"
                                                    else None))


class Remainder(Function):
    """``x - q y`` with ``q = floor(x / y)`` (``remainder``) or ``trunc`` (``fmod``),
    NumPy's values; d/dx = 1, d/dy = -q (q is piecewise constant)."""

    reads = (0, 1)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, y: np.ndarray, python: bool) -> np.ndarray:
        ctx.python = python
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.remainder(x, y) if python else np.fmod(x, y)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        x, y = (getattr(v, "data", v) for v in ctx.inputs)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.floor_divide(x, y) if ctx.python else np.trunc(np.true_divide(x, y))
        q = np.asarray(q, dtype=grad.data.dtype)
        return grad, grad * _t()._wrap(-q)


class ScriptMethodsMixin:
    """The methods listed in the module's docstring."""

    __slots__ = ()

    # -- products
    def prod(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        """The product of the elements (along ``dim``): pairwise products, round by
        round, so a zero factor gives the others' product as its gradient, as torch."""
        x = self._floating() if dtype is None else self.to(dtype)
        if dim is None:
            x, d = x.reshape(-1), 0
        else:
            d = args.dim("prod", dim, max(x.ndim, 1))
        if x.ndim == 0:
            return x.clone()
        while x.shape[d] > 1:
            n = x.shape[d]
            half = n // 2
            lo = x.narrow(d, 0, half)
            hi = x.narrow(d, half, half)
            paired = lo * hi
            x = paired if n % 2 == 0 else _cat([paired, x.narrow(d, n - 1, 1)], d)
        if x.shape[d] == 0:  # the empty product
            shape = list(x.shape)
            shape[d] = 1
            x = _t()._wrap(np.ones(shape, x.data.dtype))
        if dim is None:
            return x.reshape(())
        return x if keepdim else x.squeeze(d)

    def cumprod(self, dim: int, *, dtype: Any = None) -> Tensor:
        """Running products along ``dim`` (a scan: round k multiplies each element by the
        one 2^k before it)."""
        x = self._floating() if dtype is None else self.to(dtype)
        d = args.dim("cumprod", dim, max(x.ndim, 1))
        if x.ndim == 0:
            return x.clone()
        n, k = x.shape[d], 1
        while k < n:
            x = _cat([x.narrow(d, 0, k), x.narrow(d, k, n - k) * x.narrow(d, 0, n - k)],
                             d)
            k *= 2
        return x

    def dot(self, other: Any) -> Tensor:
        if self.ndim != 1 or getattr(other, "ndim", None) != 1:
            raise ValueError(f"dot: expects two 1-d Tensors, got shapes {tuple(self.shape)} "
                             f"and {tuple(getattr(other, 'shape', ()))}")
        return self @ other

    def mv(self, vec: Any) -> Tensor:
        if self.ndim != 2 or getattr(vec, "ndim", None) != 1:
            raise ValueError(f"mv: expects a 2-d matrix and a 1-d vector, got shapes "
                             f"{tuple(self.shape)} and {tuple(getattr(vec, 'shape', ()))}")
        return self @ vec

    # -- arithmetic
    def addcmul(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        """``self + value * tensor1 * tensor2``."""
        return self + (tensor1 * tensor2) * value

    def addcdiv(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        """``self + value * tensor1 / tensor2``."""
        return self + (tensor1 / tensor2) * value

    def lerp(self, end: Any, weight: Any) -> Tensor:
        """``self + weight (end - self)`` where weight < 0.5, ``end - (end - self)(1 -
        weight)`` elsewhere (torch's two formulas, exact at both ends)."""
        end = _tensor(end, self)
        diff = end - self
        if isinstance(weight, Real) and not isinstance(weight, bool):
            return self + diff * weight if abs(weight) < 0.5 else end - diff * (1 - weight)
        w = _tensor(weight, self)
        small = np.abs(w.data) < 0.5
        return operands.where(small, self + diff * w, end - diff * (1 - w))

    def remainder(self, other: Any) -> Tensor:
        """Python's ``%``: the result has the divisor's sign."""
        return Remainder.apply(self._floating(), _tensor(other, self), python=True)

    def fmod(self, other: Any) -> Tensor:
        """C's ``fmod``: the result has the dividend's sign."""
        return Remainder.apply(self._floating(), _tensor(other, self), python=False)

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> Tensor:
        """NaN, +inf and -inf replaced (by 0 and the dtype's largest and lowest values by
        default); no gradient flows to a replaced value."""
        x = self._floating()
        info = np.finfo(x.data.dtype)
        a = x.data
        out = np.nan_to_num(a, nan=nan, posinf=info.max if posinf is None else posinf,
                            neginf=info.min if neginf is None else neginf)
        return operands.where(np.isfinite(a), x, _t()._wrap(out.astype(a.dtype)))

    def softmax(self, dim: int, dtype: Any = None) -> Tensor:
        """``F.softmax`` along ``dim`` (of the Tensor converted to ``dtype`` first)."""
        x = self if dtype is None else self.to(dtype)
        return _red.along(_red.Softmax, x, args.dim("softmax", dim, max(x.ndim, 1)))

    def log_softmax(self, dim: int, dtype: Any = None) -> Tensor:
        """``F.log_softmax`` along ``dim`` (of the Tensor converted to ``dtype`` first)."""
        x = self if dtype is None else self.to(dtype)
        return _red.along(_red.LogSoftmax, x, args.dim("log_softmax", dim, max(x.ndim, 1)))

    # -- logic (bool results)
    def logical_and(self, other: Any) -> Tensor:
        return _t()._wrap(np.logical_and(self.data, getattr(other, "data", other)))

    def logical_or(self, other: Any) -> Tensor:
        return _t()._wrap(np.logical_or(self.data, getattr(other, "data", other)))

    def logical_xor(self, other: Any) -> Tensor:
        return _t()._wrap(np.logical_xor(self.data, getattr(other, "data", other)))

    # -- shape
    def tile(self, *dims: Any) -> Tensor:
        """``repeat`` with ``dims`` padded with leading ones to the Tensor's rank (and the
        Tensor with leading unit dims to theirs)."""
        if len(dims) == 1 and isinstance(dims[0], Sequence):
            dims = tuple(dims[0])
        reps = tuple(_int("tile", "dims", r) for r in dims)
        x = self
        if len(reps) > x.ndim:
            x = x.reshape((1,) * (len(reps) - x.ndim) + tuple(x.shape))
        reps = (1,) * (x.ndim - len(reps)) + reps
        return x.repeat(*reps)

    def swapaxes(self, axis0: int, axis1: int) -> Tensor:
        return self.transpose(axis0, axis1)

    swapdims = swapaxes

    def unflatten(self, dim: int, sizes: Any) -> Tensor:
        """Dim ``dim`` split into ``sizes`` (one entry may be -1)."""
        d = args.dim("unflatten", dim, max(self.ndim, 1))
        sizes = tuple(_int("unflatten", "sizes", s) for s in sizes)
        shape = tuple(self.shape)
        return self.reshape(shape[:d] + sizes + shape[d + 1:])

    # -- selection
    def masked_select(self, mask: Any) -> Tensor:
        """The elements where ``mask`` (broadcast against self) is True, 1-d, in order."""
        m = np.asarray(getattr(mask, "data", mask))
        if m.dtype != np.bool_:
            raise TypeError(f"masked_select: mask of dtype {m.dtype} must be bool")
        shape = np.broadcast_shapes(tuple(self.shape), m.shape)
        x = self if tuple(self.shape) == shape else self.expand(*shape)
        return x[np.broadcast_to(m, shape)]

    def nonzero(self, *, as_tuple: bool = False) -> Any:
        """The indices of the non-zero elements: an int64 (n, ndim) Tensor, or one 1-d
        Tensor per dim with ``as_tuple``."""
        found = np.nonzero(self.data)
        T = _t()
        if as_tuple:
            return tuple(T._wrap(np.asarray(i, np.int64)) for i in found)
        return T._wrap(np.stack(found, 1).astype(np.int64) if found else
                       np.zeros((0, 0), np.int64))

    def diag(self, diagonal: int = 0) -> Tensor:
        """A 1-d Tensor's square matrix with it on diagonal ``diagonal``; a 2-d Tensor's
        diagonal ``diagonal``."""
        k = _int("diag", "diagonal", diagonal)
        if self.ndim == 2:
            return self.diagonal(k)
        if self.ndim != 1:
            raise ValueError(f"diag: input of shape {tuple(self.shape)} must be 1-d or 2-d")
        n = self.shape[0] + abs(k)
        rows = np.arange(self.shape[0]) + max(-k, 0)
        cols = np.arange(self.shape[0]) + max(k, 0)
        place = np.zeros((n, n), np.int64) + self.shape[0]  # the appended zero
        place[rows, cols] = np.arange(self.shape[0])
        padded = _cat([self._floating(), self._floating().new_zeros((1,))], 0)
        return padded[place]

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The diagonal ``offset`` of the planes (dim1, dim2), as a last dim."""
        k = _int("diagonal", "offset", offset)
        a = args.dim("diagonal", dim1, self.ndim)
        b = args.dim("diagonal", dim2, self.ndim)
        if a == b:
            raise ValueError(f"diagonal: dim1={dim1} and dim2={dim2} must differ")
        x = self.movedim((a, b), (-2, -1))
        n, m = x.shape[-2], x.shape[-1]
        length = max(0, min(n - max(-k, 0), m - max(k, 0)))
        rows = np.arange(length) + max(-k, 0)
        cols = np.arange(length) + max(k, 0)
        return x[(Ellipsis, rows, cols)]

    def trace(self) -> Tensor:
        if self.ndim != 2:
            raise ValueError(f"trace: input of shape {tuple(self.shape)} must be 2-d")
        return self.diagonal().sum()

    def scatter_add(self, dim: int, index: Any, src: Any) -> Tensor:
        """A copy with ``src`` added at ``index`` along ``dim`` (differentiable in self
        and src)."""
        d = args.dim("scatter_add", dim, max(self.ndim, 1))
        idx = np.asarray(getattr(index, "data", index))
        if idx.dtype.kind not in "iu":
            raise TypeError(f"scatter_add: index of dtype {idx.dtype} must hold integers")
        if idx.ndim != self.ndim:
            raise ValueError(f"scatter_add: index has {idx.ndim} dims, expected {self.ndim}")
        src = _tensor(src, self)
        part = src[tuple(slice(0, n) for n in idx.shape)]
        return self + _ga.ScatterAdd.apply(part, index=idx.astype(np.int64), dim=d,
                                           shape=tuple(self.shape))

    def index_add(self, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Tensor:
        """A copy with ``alpha * source[..., i, ...]`` added at ``self[..., index[i], ...]``
        along ``dim`` (repeated indices add up)."""
        d = args.dim("index_add", dim, max(self.ndim, 1))
        idx = np.asarray(getattr(index, "data", index))
        if idx.ndim != 1 or idx.dtype.kind not in "iu":
            raise TypeError(f"index_add: index must be a 1-d integer Tensor, got "
                            f"{idx.dtype} of shape {idx.shape}")
        source = _tensor(source, self)
        if source.ndim != self.ndim or source.shape[d] != idx.size:
            raise ValueError(f"index_add: source of shape {tuple(source.shape)} must have "
                             f"{idx.size} entries along dim {d} and self's other dims")
        shape = [1] * self.ndim
        shape[d] = idx.size
        full = np.broadcast_to(idx.reshape(shape).astype(np.int64), tuple(source.shape))
        added = _ga.ScatterAdd.apply(source, index=np.ascontiguousarray(full), dim=d,
                                     shape=tuple(self.shape))
        return self + (added * alpha if alpha != 1 else added)

    def unique(self, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
               return_counts: bool = False, dim: int | None = None) -> Any:
        """The distinct values (sorted), and on request each element's index into them and
        their counts; no gradient."""
        T = _t()
        a = self.data
        if dim is None:
            values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True)
            inverse = inverse.reshape(a.shape)
        else:
            d = args.dim("unique", dim, max(self.ndim, 1))
            values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True,
                                                axis=d)
            inverse = inverse.reshape(-1)
        out = [T._wrap(values)]
        if return_inverse:
            out.append(T._wrap(inverse.astype(np.int64)))
        if return_counts:
            out.append(T._wrap(counts.astype(np.int64)))
        return out[0] if len(out) == 1 else tuple(out)

    def multinomial(self, num_samples: int, replacement: bool = False, *,
                    generator: Any = None) -> Tensor:
        """``num_samples`` category indices per row, drawn with probability proportional
        to the row's weights (without replacement: each at most once); int64."""
        fn = "multinomial"
        n = _int(fn, "num_samples", num_samples)
        w = np.asarray(self.data, np.float64)
        if w.ndim not in (1, 2):
            raise ValueError(f"{fn}: input of shape {w.shape} must be 1-d or 2-d")
        rows = w.reshape(-1, w.shape[-1])
        if (rows < 0).any() or not np.isfinite(rows).all():
            raise ValueError(f"{fn}: the weights must be finite and non-negative")
        if (rows.sum(1) <= 0).any():
            raise ValueError(f"{fn}: every row of weights needs a positive sum")
        if n < 1 or (not replacement and n > rows.shape[1]):
            raise ValueError(f"{fn}: num_samples={n} must be in [1, {rows.shape[1]}] "
                             "without replacement (>= 1 with)")
        if not replacement and n > (rows > 0).sum(1).min():
            raise ValueError(f"{fn}: num_samples={n} exceeds the categories with positive "
                             "weight, without replacement")
        rng = _random.generator(generator, fn)
        out = np.empty((rows.shape[0], n), np.int64)
        for i, r in enumerate(rows):
            out[i] = rng.choice(r.size, size=n, replace=bool(replacement), p=r / r.sum())
        return _t()._wrap(out.reshape(w.shape[:-1] + (n,)))

    # -- about the Tensor
    def is_floating_point(self) -> bool:
        return self.data.dtype.kind == "f"

    def element_size(self) -> int:
        return int(self.data.dtype.itemsize)
