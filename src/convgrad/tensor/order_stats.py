"""Order statistics along a dim, as torch's Tensor methods: ``cummax``, ``cummin``,
``logcumsumexp``, ``kthvalue``, ``mode``, ``nanmedian``, ``quantile``, ``nanquantile``,
``aminmax``, ``msort`` and ``unique_consecutive``.

The positions are found on the ndarray; the values are then gathered from the tensor
(:class:`~convgrad.tensor.gather.Gather`), so each value's gradient goes to the element it
came from, and ``quantile``'s interpolation is ``lerp`` of two gathered values: every
gradient is that of differentiable operations, of every order.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from ..autograd import tensor_type
from . import args
from . import gather as _ga
from . import return_types as _rt
from . import shape as _sh

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["OrderStatsMixin"]

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _t():
    return tensor_type()


def _int(fn: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{fn}: {name}={value!r} must be an int")
    return int(value)


def _along(fn: str, x: Tensor, dim: Any) -> tuple[Tensor, int]:
    """``x`` (a 0-d one as 1-d) and the checked ``dim``."""
    d = args.dim(fn, dim, max(x.ndim, 1))
    return (x if x.ndim else x.reshape(1)), d


def _pick(x: Tensor, idx: np.ndarray, d: int, keepdim: bool, scalar: bool,
          kind: type) -> Any:
    """The named tuple ``kind`` of the values of ``x`` at ``idx`` (keepdim-shaped) along
    ``d`` and the int64 indices."""
    values = _ga.Gather.apply(x, index=idx, dim=d)
    idx = idx.astype(np.int64)
    if scalar:
        return kind(values.reshape(()), _t()._wrap(idx.reshape(())))
    if not keepdim:
        values, idx = values.squeeze(d), np.squeeze(idx, d)
    return kind(values, _t()._wrap(idx))


def _cumulative_extremum(x: Tensor, dim: Any, largest: bool, kind: type) -> Any:
    fn = kind.__name__
    y, d = _along(fn, x, dim)
    a = y.data
    acc = np.maximum if largest else np.minimum
    running = acc.accumulate(a, axis=d) if a.size else a
    # the last position attaining the running extremum (ties: the later, as torch); a
    # NaN is the extremum from where it stands
    hit = (a == running) | np.isnan(a) if a.dtype.kind == "f" else a == running
    shape = [1] * a.ndim
    shape[d] = a.shape[d]
    pos = np.where(hit, np.arange(a.shape[d]).reshape(shape), -1)
    idx = np.maximum.accumulate(pos, axis=d) if a.size else pos
    values = _ga.Gather.apply(y, index=idx.astype(np.intp), dim=d)
    idx = idx.astype(np.int64)
    if x.ndim == 0:
        return kind(values.reshape(()), _t()._wrap(idx.reshape(())))
    return kind(values, _t()._wrap(idx))


def _sorted_positions(a: np.ndarray, d: int) -> np.ndarray:
    """Stable ascending order along ``d``, NaN last (torch's order)."""
    return np.argsort(a, axis=d, kind="stable")


def _quantile_q(fn: str, q: Any, dtype: np.dtype) -> tuple[np.ndarray, bool]:
    """``q`` as a 1-d array of ``dtype`` in [0, 1], and whether it was a scalar."""
    T = _t()
    if isinstance(q, T):
        if q.data.dtype != dtype:
            raise TypeError(f"{fn}: q of dtype {q.data.dtype} must have the input's dtype "
                            f"{dtype}")
        if q.ndim > 1:
            raise ValueError(f"{fn}: q of shape {tuple(q.shape)} must be a scalar or 1-d")
        arr, scalar = q.data.reshape(-1), q.ndim == 0
    elif isinstance(q, Real) and not isinstance(q, bool):
        arr, scalar = np.asarray([q], dtype), True
    else:
        raise TypeError(f"{fn}: q={q!r} must be a number or a 1-d Tensor")
    if not ((arr >= 0) & (arr <= 1)).all():
        raise ValueError(f"{fn}: q={q!r} must hold values in [0, 1]")
    return arr.astype(dtype), scalar


def _quantile(x: Tensor, q: Any, dim: Any, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    fn = "nanquantile" if ignore_nan else "quantile"
    if x.data.dtype.kind != "f":
        raise TypeError(f"{fn}: input of dtype {x.data.dtype} must be float32 or float64")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"{fn}: interpolation={interpolation!r} must be one of "
                         f"{', '.join(INTERPOLATIONS)}")
    qs, scalar = _quantile_q(fn, q, x.data.dtype)
    if x.numel() == 0:
        raise ValueError(f"{fn}: the input of shape {tuple(x.shape)} is empty")
    if dim is None:
        y, d = x.reshape(-1), 0
    else:
        y, d = _along(fn, x, dim)
    y = y.movedim(d, -1)
    a = y.data
    n = a.shape[-1]
    order = _sorted_positions(a, -1)
    srt = _ga.Gather.apply(y, index=order, dim=y.ndim - 1)     # (..., n), NaN last
    nan = np.isnan(a)
    valid = (n - nan.sum(-1, keepdims=True)) if ignore_nan else np.full(a.shape[:-1] + (1,), n)
    # no valid value (or, for quantile, a NaN in the slice): the last sorted value, a NaN
    # (which takes the gradient, as torch's)
    missing = (valid == 0) if ignore_nan else nan.any(-1, keepdims=True)
    rank = qs * (np.maximum(valid, 1) - 1).astype(a.dtype)          # (..., Q)
    rank = np.where(missing, a.dtype.type(n - 1), rank).astype(a.dtype)
    lo = np.floor(rank)
    hi = np.ceil(rank)
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = np.round(rank)
    below = _ga.Gather.apply(srt, index=lo.astype(np.intp), dim=srt.ndim - 1)
    if interpolation in ("linear", "midpoint"):
        above = _ga.Gather.apply(srt, index=hi.astype(np.intp), dim=srt.ndim - 1)
        weight = (rank - lo) if interpolation == "linear" else np.full_like(rank, 0.5)
        out = below.lerp(above, _t()._wrap(weight.astype(a.dtype)))
    else:
        out = below
    out = out.movedim(-1, 0)                                        # (Q, ...)
    if keepdim and x.ndim:
        if dim is None:
            out = out.reshape((len(qs),) + (1,) * x.ndim)
        else:
            out = out.unsqueeze(d + 1)
    return out.squeeze(0) if scalar else out


class OrderStatsMixin:
    """The methods listed in the module's docstring."""

    __slots__ = ()

    def cummax(self, dim: int) -> Any:
        """Running maxima along ``dim`` and the index of each (the last of equal ones, a
        NaN from where it stands, as torch); the values' gradient goes to those indices."""
        return _cumulative_extremum(self, dim, True, _rt.cummax)

    def cummin(self, dim: int) -> Any:
        """Running minima along ``dim`` and their indices (see :meth:`cummax`)."""
        return _cumulative_extremum(self, dim, False, _rt.cummin)

    def logcumsumexp(self, dim: int) -> Tensor:
        """``log(cumsum(exp(self)))`` along ``dim`` without overflow: a scan of
        ``logaddexp`` (round k joins each element with the one 2^k before it).  float32 is
        scanned in float64 and rounded once."""
        fn = "logcumsumexp"
        x, d = _along(fn, self._floating(), dim)
        if x.data.dtype == np.float32:
            out = x.double().logcumsumexp(d).float()
            return out if self.ndim else out.reshape(())
        n, k = x.shape[d], 1
        while k < n:
            x = _sh.Concatenate.apply(x.narrow(d, 0, k),
                                      x.narrow(d, k, n - k).logaddexp(x.narrow(d, 0, n - k)),
                                      dim=d)
            k *= 2
        return x if self.ndim else x.reshape(())

    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False) -> Any:
        """The ``k``-th smallest value (1-based) along ``dim`` and its index."""
        fn = "kthvalue"
        x, d = _along(fn, self, dim)
        k = _int(fn, "k", k)
        n = x.shape[d]
        if not 1 <= k <= n:
            raise ValueError(f"{fn}: k={k} is out of range for dim {d} of size {n}; "
                             f"expected 1 <= k <= {n}")
        order = _sorted_positions(x.data, d)
        idx = np.take(order, [k - 1], axis=d)
        return _pick(x, idx, d, keepdim, self.ndim == 0, _rt.kthvalue)

    def mode(self, dim: int = -1, keepdim: bool = False) -> Any:
        """The most frequent value along ``dim`` (the smallest of equally frequent ones)
        and the index of its last occurrence, as torch."""
        fn = "mode"
        x, d = _along(fn, self, dim)
        if x.shape[d] == 0:
            raise ValueError(f"{fn}: dim {d} of the input of shape {tuple(x.shape)} is empty")
        rows = np.moveaxis(x.data, d, -1).reshape(-1, x.shape[d])
        picks = np.empty(rows.shape[0], np.intp)
        for r, row in enumerate(rows):
            _, inverse, counts = np.unique(row, return_inverse=True, return_counts=True)
            picks[r] = np.flatnonzero(inverse.reshape(-1) == np.argmax(counts))[-1]
        shape = np.moveaxis(x.data, d, -1).shape[:-1] + (1,)
        idx = np.moveaxis(picks.reshape(shape), -1, d)
        return _pick(x, idx, d, keepdim, self.ndim == 0, _rt.mode)

    def nanmedian(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The lower middle of the non-NaN values (NaN where all are NaN); with ``dim``
        the named tuple (values, indices)."""
        fn = "nanmedian"
        if dim is None:
            flat = self.reshape(-1)
            if flat.shape[0] == 0:
                raise ValueError(f"{fn}: the input is empty")
            a = flat.data
            order = _sorted_positions(a, 0)
            valid = int(a.size - np.isnan(a).sum()) if a.dtype.kind == "f" else a.size
            return flat[int(order[max(valid - 1, 0) // 2])]
        x, d = _along(fn, self, dim)
        if x.shape[d] == 0:
            raise ValueError(f"{fn}: dim {d} of the input of shape {tuple(x.shape)} is empty")
        a = x.data
        order = _sorted_positions(a, d)
        valid = (a.shape[d] - np.isnan(a).sum(d, keepdims=True) if a.dtype.kind == "f"
                 else np.full([1 if i == d else n for i, n in enumerate(a.shape)], a.shape[d]))
        idx = np.take_along_axis(order, np.maximum(valid - 1, 0) // 2, axis=d)
        return _pick(x, idx, d, keepdim, self.ndim == 0, _rt.nanmedian)

    def quantile(self, q: Any, dim: int | None = None, keepdim: bool = False, *,
                 interpolation: str = "linear") -> Tensor:
        """The ``q``-quantiles (a number, or a 1-d Tensor of them: then a leading dim)
        along ``dim`` (of all values if None); between two order statistics by
        ``interpolation`` (linear, lower, higher, midpoint, nearest).  NaN where a slice
        holds a NaN."""
        return _quantile(self, q, dim, keepdim, interpolation, False)

    def nanquantile(self, q: Any, dim: int | None = None, keepdim: bool = False, *,
                    interpolation: str = "linear") -> Tensor:
        """:meth:`quantile` of the non-NaN values (NaN where a slice holds none)."""
        return _quantile(self, q, dim, keepdim, interpolation, True)

    def aminmax(self, *, dim: int | None = None, keepdim: bool = False) -> Any:
        """The named tuple ``(min, max)`` over ``dim`` (all values if None)."""
        if self.numel() == 0:
            raise ValueError(f"aminmax: the input of shape {tuple(self.shape)} is empty")
        if dim is not None:
            args.dim("aminmax", dim, max(self.ndim, 1))
            if self.ndim == 0:
                return _rt.aminmax(self.clone(), self.clone())
        return _rt.aminmax(self.amin(dim, keepdim), self.amax(dim, keepdim))

    def msort(self) -> Tensor:
        """Sorted along the first dim (``sort(0).values``)."""
        return self.sort(0).values

    def unique_consecutive(self, return_inverse: bool = False, return_counts: bool = False,
                           dim: int | None = None) -> Any:
        """The values with each run of equal consecutive ones (along ``dim``: equal
        slices) kept once; on request each element's run number and the run lengths.
        No gradient."""
        T = _t()
        a = self.data
        if dim is None:
            flat = a.reshape(-1)
            starts = np.ones(flat.size, bool)
            starts[1:] = flat[1:] != flat[:-1]
            values = flat[starts]
            inverse_shape = a.shape
        else:
            d = args.dim("unique_consecutive", dim, max(self.ndim, 1))
            moved = np.moveaxis(a, d, 0).reshape(a.shape[d], -1) if a.ndim else a.reshape(1, 1)
            starts = np.ones(moved.shape[0], bool)
            starts[1:] = (moved[1:] != moved[:-1]).any(1)
            values = np.compress(starts, a, axis=d) if a.ndim else a
            inverse_shape = (moved.shape[0],)
        run = np.cumsum(starts) - 1
        out = [T._wrap(np.ascontiguousarray(values))]
        if return_inverse:
            out.append(T._wrap(run.reshape(inverse_shape).astype(np.int64)))
        if return_counts:
            out.append(T._wrap(np.diff(np.append(np.flatnonzero(starts), starts.size))
                               .astype(np.int64)))
        return out[0] if len(out) == 1 else tuple(out)
