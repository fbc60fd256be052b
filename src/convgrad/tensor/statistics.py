"""Statistics as torch's Tensor methods: ``cov``, ``corrcoef``, ``dist``, ``renorm``,
``histc`` and ``histogram``; and the integrals ``trapezoid`` (``trapz``) and
``cumulative_trapezoid`` as functions.

``cov``, ``corrcoef``, ``dist``, ``renorm`` and the integrals are compositions of the
differentiable operations (their gradients, of every order, are theirs); the histograms
count, and have no gradient, as torch.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from ..autograd import tensor_type
from . import args, operands
from . import return_types as _rt

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["StatisticsMixin", "cumulative_trapezoid", "trapezoid", "trapz"]


def _t():
    return tensor_type()


def _as(x: Any, like: Tensor) -> Tensor:
    """``x`` as a Tensor: itself, or a constant in ``like``'s dtype."""
    T = _t()
    return x if isinstance(x, T) else T(np.asarray(x, like.data.dtype))


def _weights(fn: str, name: str, w: Any, n: int, integer: bool) -> Tensor | None:
    if w is None:
        return None
    T = _t()
    w = w if isinstance(w, T) else T(np.asarray(w))
    kinds = "iu" if integer else "f"
    if w.data.dtype.kind not in kinds:
        raise TypeError(f"{fn}: {name} of dtype {w.data.dtype} must be "
                        f"{'an integer' if integer else 'a floating point'} tensor")
    if w.ndim > 1 or (w.ndim == 1 and w.shape[0] != n) or (w.ndim == 0 and n != 1):
        raise ValueError(f"{fn}: {name} of shape {tuple(w.shape)} must be 1-d with {n} "
                         "entries (one per observation)")
    if (w.data < 0).any():
        raise ValueError(f"{fn}: {name} must hold non-negative values")
    return w.reshape(-1)


def _histogram_range(fn: str, a: np.ndarray, lo: Any, hi: Any, widen: float
                     ) -> tuple[float, float]:
    """The histogram's range: [lo, hi], the data's own where both are None (or equal,
    for histc), widened by ``widen`` each way where empty (as torch: 1 for histc, 0.5
    for histogram)."""
    if lo is None and hi is None:
        lo, hi = (float(a.min()), float(a.max())) if a.size else (0.0, 0.0)
    else:
        lo = args.number(fn, "min", lo)
        hi = args.number(fn, "max", hi)
    if lo > hi:
        raise ValueError(f"{fn}: the range min={lo} must not exceed max={hi}")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"{fn}: the range [{lo}, {hi}] must be finite")
    if lo == hi:
        lo, hi = lo - widen, hi + widen
    return lo, hi


class StatisticsMixin:
    """The methods listed in the module's docstring."""

    __slots__ = ()

    def cov(self, *, correction: int = 1, fweights: Any = None, aweights: Any = None
            ) -> Tensor:
        """The covariance matrix of the variables (rows) over the observations (columns)
        of a 1-d or 2-d tensor; ``fweights`` (integer repeat counts) and ``aweights``
        (float weights) weight the observations, ``correction`` is subtracted from the
        (weighted) count, as torch.  A 1-d input gives a 0-d result."""
        fn = "cov"
        if self.ndim > 2:
            raise ValueError(f"{fn}: input of shape {tuple(self.shape)} must be 1-d or 2-d")
        if isinstance(correction, bool) or not isinstance(correction, Integral):
            raise TypeError(f"{fn}: correction={correction!r} must be an int")
        x = self._floating()
        x2 = x.reshape(1, -1) if x.ndim < 2 else x
        n = x2.shape[1]
        fw = _weights(fn, "fweights", fweights, n, True)
        aw = _weights(fn, "aweights", aweights, n, False)
        w = fw.to(x.data.dtype) if fw is not None else None
        if aw is not None:
            w = aw if w is None else w * aw
        if w is None:
            avg = x2.mean(1, keepdim=True)
            count = x2.new_tensor(float(n))
        else:
            count = w.sum()
            avg = (x2 * w).sum(1, keepdim=True) / count
        if w is None or aw is None:
            factor = count - correction
        else:
            factor = count - correction * (w * aw).sum() / count
        factor = factor.clamp(min=0)
        centred = x2 - avg
        weighted = centred if w is None else centred * w
        out = weighted @ centred.t() / factor
        return out.reshape(()) if x.ndim < 2 else out

    def corrcoef(self) -> Tensor:
        """Pearson's correlation coefficients of the variables (rows), clamped to
        [-1, 1]; a 1-d input gives a 0-d result."""
        c = self.cov()
        if c.ndim == 0:
            return c / c
        sd = c.diagonal().sqrt()
        c = c / sd.reshape(-1, 1)
        c = c / sd.reshape(1, -1)
        return c.clamp(-1, 1)

    def dist(self, other: Any, p: Any = 2) -> Tensor:
        """The ``p``-norm of ``self - other`` (broadcast): p > 0, 0 (the count of
        differing elements), inf or -inf (the largest or smallest absolute difference)."""
        fn = "dist"
        if isinstance(p, bool) or not isinstance(p, Real):
            raise TypeError(f"{fn}: p={p!r} must be a number")
        if self.data.dtype.kind != "f":
            raise TypeError(f"{fn}: input of dtype {self.data.dtype} must be float32 or "
                            "float64")
        diff = self - _as(other, self)
        if p == 0:
            return diff.new_tensor(float(np.count_nonzero(diff.data)))
        if p == float("-inf"):
            return diff.abs().amin()
        if p < 0 or p != p:
            raise ValueError(f"{fn}: p={p!r} must be >= 0, inf or -inf")
        return diff.norm(p)

    def renorm(self, p: Any, dim: int, maxnorm: Any) -> Tensor:
        """Each sub-tensor along ``dim`` (index i of ``dim``) whose ``p``-norm exceeds
        ``maxnorm`` scaled to norm ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as torch);
        the others as they are."""
        fn = "renorm"
        d = args.dim(fn, dim, max(self.ndim, 1))
        if isinstance(p, bool) or not isinstance(p, Real) or not p > 0:
            raise ValueError(f"{fn}: p={p!r} must be a number > 0")
        maxnorm = args.number(fn, "maxnorm", maxnorm, 0)
        x = self._floating()
        if x.ndim < 2:
            raise ValueError(f"{fn}: the input of shape {tuple(x.shape)} must have at least "
                             "2 dims")
        others = tuple(i for i in range(x.ndim) if i != d)
        norms = x.norm(p, others, keepdim=True) if others else x.abs()
        over = norms.data > maxnorm
        scale = operands.where(over, maxnorm / (norms + 1e-7), x.data.dtype.type(1))
        return x * scale

    def histc(self, bins: int = 100, min: Any = 0, max: Any = 0) -> Tensor:  # noqa: A002
        """Counts of the values in ``bins`` equal bins over [min, max] (the data's range
        where min == max), values outside left out; the input's float dtype."""
        fn = "histc"
        if self.data.dtype.kind != "f":
            raise TypeError(f"{fn}: input of dtype {self.data.dtype} must be float")
        if isinstance(bins, bool) or not isinstance(bins, Integral) or bins < 1:
            raise ValueError(f"{fn}: bins={bins!r} must be an int >= 1")
        a = self.data.reshape(-1)
        lo, hi = args.number(fn, "min", min), args.number(fn, "max", max)
        if lo == hi:
            lo, hi = _histogram_range(fn, a[np.isfinite(a)], None, None, 1.0)
        elif lo > hi:
            raise ValueError(f"{fn}: min={lo} must not exceed max={hi}")
        inside = a[(a >= lo) & (a <= hi)].astype(np.float64)
        pos = ((inside - lo) * bins / (hi - lo)).astype(np.int64)
        counts = np.bincount(np.minimum(pos, bins - 1), minlength=bins)
        return _t()._wrap(counts.astype(self.data.dtype))

    def histogram(self, bins: Any = 100, *, range: Any = None,  # noqa: A002
                  weight: Any = None, density: bool = False) -> Any:
        """``(hist, bin_edges)``: the counts (or summed ``weight``) of the values in
        ``bins`` equal bins over ``range`` (the data's range if None), or between the
        given increasing edges (a 1-d Tensor); the last bin holds its right edge.
        ``density`` divides by the total and the bin widths."""
        fn = "histogram"
        T = _t()
        if self.data.dtype.kind != "f":
            raise TypeError(f"{fn}: input of dtype {self.data.dtype} must be float")
        a = self.data.reshape(-1)
        dt = self.data.dtype
        if isinstance(bins, T):
            if bins.ndim != 1 or bins.shape[0] < 1:
                raise ValueError(f"{fn}: bins of shape {tuple(bins.shape)} must be a 1-d "
                                 "Tensor of edges")
            if range is not None:
                raise ValueError(f"{fn}: range applies to a number of bins, not to edges")
            edges = bins.data.astype(dt)
            if (np.diff(edges) < 0).any():
                raise ValueError(f"{fn}: bins must be increasing edges, got {edges}")
        else:
            if isinstance(bins, bool) or not isinstance(bins, Integral) or bins < 1:
                raise ValueError(f"{fn}: bins={bins!r} must be an int >= 1 or a Tensor")
            if range is None:
                lo, hi = _histogram_range(fn, a, None, None, 0.5)
            else:
                lo, hi = _histogram_range(fn, a, *range, 0.5)
            edges = np.linspace(lo, hi, int(bins) + 1).astype(dt)
        w = None
        if weight is not None:
            w = np.asarray(getattr(weight, "data", weight))
            if w.shape != self.data.shape:
                raise ValueError(f"{fn}: weight of shape {w.shape} must have the input's "
                                 f"shape {tuple(self.shape)}")
            w = w.reshape(-1).astype(np.float64)
        hist, _ = np.histogram(a, bins=edges.astype(np.float64), weights=w)
        if density:
            widths = np.diff(edges.astype(np.float64))
            total = hist.sum()
            hist = hist / (total * widths) if total else np.zeros_like(hist, np.float64)
        return _rt.histogram(T._wrap(hist.astype(dt)), T._wrap(edges))


# ----------------------------------------------------------------------------- integrals
def _integrand(fn: str, y: Any, x: Any, dx: Any, dim: int) -> tuple:
    T = _t()
    y = y if isinstance(y, T) else T(y)
    y = y._floating()
    if y.ndim == 0:
        raise ValueError(f"{fn}: y must have at least 1 dim")
    d = args.dim(fn, dim, y.ndim)
    if x is not None and dx is not None:
        raise ValueError(f"{fn}: pass one of x and dx")
    if x is not None:
        x = _as(x, y)._floating()
        if x.ndim == 1:
            if x.shape[0] != y.shape[d]:
                raise ValueError(f"{fn}: x of length {x.shape[0]} must match y's dim {d} of "
                                 f"size {y.shape[d]}")
            shape = [1] * y.ndim
            shape[d] = x.shape[0]
            x = x.reshape(shape)
            xd = d
        else:
            if x.ndim != y.ndim:
                raise ValueError(f"{fn}: x of shape {tuple(x.shape)} must be 1-d or have "
                                 f"y's {y.ndim} dims")
            xd = d
        n = x.shape[xd]
        spacing = x.narrow(xd, 1, n - 1) - x.narrow(xd, 0, n - 1) if n > 1 else None
    else:
        spacing = 1.0 if dx is None else args.number(fn, "dx", dx)
    return y, d, spacing


def _pair_sums(y: Tensor, d: int) -> Tensor:
    n = y.shape[d]
    return y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)


def trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule's integral of ``y`` along ``dim``: at the points ``x`` (1-d,
    or y's shape) or spaced ``dx`` apart (default 1)."""
    y, d, spacing = _integrand("trapezoid", y, x, dx, dim)
    if y.shape[d] < 2:
        return y.sum(d) * 0
    if isinstance(spacing, float):
        return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * spacing
    return (spacing * _pair_sums(y, d)).sum(d) / 2


trapz = trapezoid


def cumulative_trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoidal integrals of ``y`` along ``dim`` (one fewer than y's
    points), at the points ``x`` or spaced ``dx`` apart (default 1)."""
    y, d, spacing = _integrand("cumulative_trapezoid", y, x, dx, dim)
    if y.shape[d] < 2:
        return y.narrow(d, 0, 0)
    return (_pair_sums(y, d) * (spacing / 2 if isinstance(spacing, float) else spacing / 2)
            ).cumsum(d)
