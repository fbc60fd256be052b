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
  ``element_size``;
* more of the same kind: ``logaddexp``, ``xlogy`` (0 where x is 0), ``logit`` (``eps``),
  ``frac``, ``deg2rad``, ``rad2deg``, ``nansum``, ``nanmean`` (NaNs left out, no
  gradient to them), ``median`` (the lower middle, torch's; with ``dim`` the values and
  indices), ``count_nonzero``, ``fliplr``, ``flipud``, ``rot90``, ``diff``, ``take``,
  ``take_along_dim``, ``tensor_split``, ``select``, ``outer``, ``inner``, ``kron``,
  ``cross``, and ``stride``, ``data_ptr``, ``get_device`` (-1: the CPU), ``pin_memory``.
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
from . import return_types as _rt
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
    """``x`` as a Tensor: itself, or a constant in ``like``'s dtype (a float ndarray keeps
    its own)."""
    T = _t()
    if isinstance(x, T):
        return x
    a = np.asarray(x)
    return T(a if a.dtype.kind == "f" and a.ndim else a.astype(like.data.dtype))


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
        round, so a zero factor gives the others' product as its gradient, as torch.
        float32 is multiplied in float64 and rounded once (in float32 the gradient's
        products reached 3x torch's float32 error)."""
        x = self._floating() if dtype is None else self.to(dtype)
        if x.data.dtype == np.float32:
            return x.double().prod(dim, keepdim).float()
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
        one 2^k before it).  float32 is scanned in float64 and rounded once: in float32
        the scan's products had up to 3x torch's float32 error (its gradient 2.5x)."""
        x = self._floating() if dtype is None else self.to(dtype)
        d = args.dim("cumprod", dim, max(x.ndim, 1))
        if x.ndim == 0:
            return x.clone()
        if x.data.dtype == np.float32:
            return x.double().cumprod(d).float()
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

    # -- more of the same kind
    def logaddexp(self, other: Any) -> Tensor:
        """``log(e^self + e^other)``, computed as ``m + log(e^(self-m) + e^(other-m))``."""
        other = _tensor(other, self)
        m = operands.where(self.data >= np.asarray(other.data), self, other).detach()
        m = operands.where(np.isfinite(m.data), m, _t()._wrap(np.zeros_like(m.data)))
        return m + ((self - m).exp() + (other - m).exp()).log()

    def xlogy(self, other: Any) -> Tensor:
        """``self * log(other)``, 0 where self is 0 (unless other is NaN); its gradient in
        self ``log(other)``, in other ``self / other``, as torch (0 in both where self is 0
        and other is not positive)."""
        other = _tensor(other, self)
        x = self._floating()
        y = np.asarray(other.data)
        zero = np.broadcast_to((x.data == 0) & ~np.isnan(y) & (y <= 0),
                               np.broadcast_shapes(x.shape, y.shape))
        if zero.any():  # log of 0 or less times a zero x: the value is 0, not NaN
            ones = _t()._wrap(np.ones(zero.shape, x.data.dtype))
            log = operands.where(zero, ones, other).log()
        else:
            log = other.log()
        return x * log + 0.0  # (+0.0: a zero x gives 0, not -0, as torch)

    def logit(self, eps: float | None = None) -> Tensor:
        """``log(p / (1 - p))``, p clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
        p = self._floating()
        if eps is not None:
            p = p.clamp(eps, 1 - eps)
        return (p / (1 - p)).log()

    def frac(self) -> Tensor:
        return self - self.trunc()

    def deg2rad(self) -> Tensor:
        return self._floating() * (np.pi / 180)

    def rad2deg(self) -> Tensor:
        return self._floating() * (180 / np.pi)

    def nansum(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        x = self._floating()
        clean = operands.where(np.isnan(x.data), _t()._wrap(np.zeros_like(x.data)), x)
        return clean.sum(dim, keepdim)

    def nanmean(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        x = self._floating()
        count = _t()._wrap((~np.isnan(x.data)).astype(x.data.dtype)).sum(dim, keepdim)
        return x.nansum(dim, keepdim) / count

    def median(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The lower of the two middle values (torch's median); with ``dim``, the named
        tuple (values, indices).  A NaN is the median of a slice holding one, as torch."""
        if dim is None:
            flat = self.reshape(-1)
            if flat.shape[0] == 0:
                raise ValueError("median: the input is empty")
            order = np.argsort(np.where(np.isnan(flat.data), np.inf, flat.data), kind="stable")
            nan = np.flatnonzero(np.isnan(flat.data))
            pick = nan[0] if nan.size else order[(flat.shape[0] - 1) // 2]
            return flat[int(pick)]
        d = args.dim("median", dim, max(self.ndim, 1))
        moved = np.moveaxis(self.data, d, -1)
        keyed = np.where(np.isnan(moved), np.inf, moved)
        order = np.argsort(keyed, axis=-1, kind="stable")
        n = moved.shape[-1]
        idx = np.take(order, [(n - 1) // 2], axis=-1)
        nan_first = np.argmax(np.isnan(moved), axis=-1)[..., None]
        idx = np.where(np.isnan(moved).any(-1, keepdims=True), nan_first, idx)
        idx = np.moveaxis(idx, -1, d).astype(np.int64)
        values = self.gather(d, idx)
        if not keepdim:
            values, idx = values.squeeze(d), np.squeeze(idx, d)
        return _rt.median(values, _t()._wrap(idx))

    def count_nonzero(self, dim: Any = None) -> Tensor:
        axis = None if dim is None else tuple(args.dims("count_nonzero", dim, self.ndim))
        return _t()._wrap(np.asarray(np.count_nonzero(self.data, axis=axis), np.int64))

    def fliplr(self) -> Tensor:
        if self.ndim < 2:
            raise ValueError(f"fliplr: input of shape {tuple(self.shape)} must be >= 2-d")
        return self.flip(1)

    def flipud(self) -> Tensor:
        if self.ndim < 1:
            raise ValueError("flipud: a 0-d input has no dim to flip")
        return self.flip(0)

    def rot90(self, k: int = 1, dims: Any = (0, 1)) -> Tensor:
        """Rotated by 90 degrees ``k`` times in the plane ``dims``, from the first
        towards the second, as torch."""
        k = _int("rot90", "k", k) % 4
        a, b = (args.dim("rot90", d, self.ndim) for d in dims)
        if a == b:
            raise ValueError(f"rot90: dims={tuple(dims)} must be two different dims")
        if k == 0:
            return self.clone()
        if k == 1:
            return self.flip(b).transpose(a, b)
        if k == 2:
            return self.flip(a, b)
        return self.transpose(a, b).flip(b)

    def diff(self, n: int = 1, dim: int = -1, prepend: Any = None,
             append: Any = None) -> Tensor:
        """The ``n``-th forward difference along ``dim`` (with ``prepend`` / ``append``
        joined first)."""
        d = args.dim("diff", dim, max(self.ndim, 1))
        x = self
        parts = [p for p in (prepend, x, append) if p is not None]
        if len(parts) > 1:
            x = _cat([_tensor(p, self) for p in parts], d)
        for _ in range(_int("diff", "n", n)):
            m = x.shape[d]
            x = x.narrow(d, 1, m - 1) - x.narrow(d, 0, m - 1) if m > 0 else x
        return x

    def take(self, index: Any) -> Tensor:
        """Elements at flat ``index`` of the Tensor read row-major."""
        idx = np.asarray(getattr(index, "data", index)).astype(np.int64)
        return self.reshape(-1)[idx]

    def take_along_dim(self, indices: Any, dim: int | None = None) -> Tensor:
        idx = np.asarray(getattr(indices, "data", indices)).astype(np.int64)
        if dim is None:
            return self.reshape(-1)[idx.reshape(-1)]
        d = args.dim("take_along_dim", dim, max(self.ndim, 1))
        shape = np.broadcast_shapes(tuple(self.shape[:d]) + (1,) + tuple(self.shape[d + 1:]),
                                    idx.shape[:d] + (1,) + idx.shape[d + 1:])
        x = self.expand(*shape[:d], self.shape[d], *shape[d + 1:])
        full = np.broadcast_to(idx, shape[:d] + (idx.shape[d],) + shape[d + 1:])
        return x.gather(d, np.ascontiguousarray(full))

    def tensor_split(self, indices_or_sections: Any, dim: int = 0) -> tuple:
        """Split into ``n`` nearly equal parts (the first ones one longer), or at the
        given indices."""
        d = args.dim("tensor_split", dim, max(self.ndim, 1))
        n = self.shape[d]
        if isinstance(indices_or_sections, Integral) and not isinstance(indices_or_sections,
                                                                      bool):
            k = int(indices_or_sections)
            if k < 1:
                raise ValueError(f"tensor_split: sections={k} must be >= 1")
            sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
            cuts = np.cumsum([0] + sizes)
        else:
            cuts = [0, *[min(max(int(i), 0), n) for i in indices_or_sections], n]
        return tuple(self.narrow(d, int(a), max(int(b) - int(a), 0))
                     for a, b in zip(cuts[:-1], cuts[1:]))

    def select(self, dim: int, index: int) -> Tensor:
        d = args.dim("select", dim, max(self.ndim, 1))
        return self[(slice(None),) * d + (_int("select", "index", index),)]

    def outer(self, vec2: Any) -> Tensor:
        vec2 = _tensor(vec2, self)
        if self.ndim != 1 or vec2.ndim != 1:
            raise ValueError(f"outer: expects two 1-d Tensors, got shapes {tuple(self.shape)} "
                             f"and {tuple(vec2.shape)}")
        return self.unsqueeze(1) * vec2.unsqueeze(0)

    def inner(self, other: Any) -> Tensor:
        """The sum over the last dims of both: shape ``self[:-1] + other[:-1]``."""
        other = _tensor(other, self)
        if self.ndim == 0 or other.ndim == 0:
            return self * other
        k = self.shape[-1]
        if other.shape[-1] != k:
            raise ValueError(f"inner: the last dims differ: {tuple(self.shape)} and "
                             f"{tuple(other.shape)}")
        out = self.reshape(-1, k) @ other.reshape(-1, k).transpose(0, 1)
        return out.reshape(*self.shape[:-1], *other.shape[:-1])

    def kron(self, other: Any) -> Tensor:
        """The Kronecker product (the lower-rank one given leading unit dims); float32
        evaluated in float64 and rounded once (its gradient's sums reached 2x torch's
        float32 error in float32)."""
        other = _tensor(other, self)
        if self.data.dtype == np.float32 and other.data.dtype == np.float32:
            return self.double().kron(other.double()).float()
        nd = max(self.ndim, other.ndim)
        a = self.reshape(*([1] * (nd - self.ndim)), *self.shape)
        b = other.reshape(*([1] * (nd - other.ndim)), *other.shape)
        inter_a = [v for s in a.shape for v in (s, 1)]
        inter_b = [v for s in b.shape for v in (1, s)]
        out = a.reshape(*inter_a) * b.reshape(*inter_b)
        return out.reshape(*[sa * sb for sa, sb in zip(a.shape, b.shape)])

    def cross(self, other: Any, dim: int | None = None) -> Tensor:
        """The cross product of 3-vectors along ``dim`` (the first dim of size 3 when
        None, as torch's ``cross``)."""
        other = _tensor(other, self)
        if dim is None:
            sizes = [i for i, s in enumerate(self.shape) if s == 3]
            if not sizes:
                raise ValueError(f"cross: no dim of size 3 in shape {tuple(self.shape)}")
            dim = sizes[0]
        d = args.dim("cross", dim, max(self.ndim, 1))
        if self.shape[d] != 3 or other.shape[d] != 3:
            raise ValueError(f"cross: dim {d} must have size 3 in both, got "
                             f"{tuple(self.shape)} and {tuple(other.shape)}")
        a = [self.narrow(d, i, 1) for i in range(3)]
        b = [other.narrow(d, i, 1) for i in range(3)]
        return _cat([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]], d)

    def stride(self, dim: int | None = None) -> Any:
        """Element strides (the Tensor's memory layout, channels-last ones included)."""
        st = tuple(s // self.data.itemsize for s in self.data.strides)
        return st if dim is None else st[args.dim("stride", dim, max(self.ndim, 1))]

    def data_ptr(self) -> int:
        return int(self.data.ctypes.data)

    def get_device(self) -> int:
        return -1

    def pin_memory(self) -> Tensor:
        return self

    def clamp_min(self, min: Any) -> Tensor:  # noqa: A002 (torch's name)
        return self.clamp(min=min)

    def clamp_max(self, max: Any) -> Tensor:  # noqa: A002
        return self.clamp(max=max)

    @property
    def mT(self) -> Tensor:  # noqa: N802 (torch's name)
        """The last two dims swapped."""
        if self.ndim < 2:
            raise ValueError(f"mT: a Tensor of shape {tuple(self.shape)} has fewer than 2 dims")
        return self.transpose(-2, -1)

    def argwhere(self) -> Tensor:
        return self.nonzero()

    def new(self, *args: Any) -> Tensor:
        """torch's legacy constructor: ``new(*sizes)`` an empty Tensor of this dtype (zeros),
        ``new(data)`` a copy of ``data`` in it."""
        if not args or all(isinstance(a, Integral) and not isinstance(a, bool) for a in args):
            return self.new_zeros(*args) if args else self.new_zeros((0,))
        if len(args) != 1:
            raise TypeError(f"new: expected sizes (ints) or one data argument, got {args!r}")
        return self.new_tensor(args[0])

    def half(self) -> Tensor:
        raise TypeError("half: float16 Tensors are not supported (float32 and float64 are); "
                        "keep float32")

    def bfloat16(self) -> Tensor:
        raise TypeError("bfloat16: bfloat16 Tensors are not supported (float32 and float64 "
                        "are); keep float32")

    # -- about the Tensor
    def is_floating_point(self) -> bool:
        return self.data.dtype.kind == "f"

    def element_size(self) -> int:
        return int(self.data.dtype.itemsize)
