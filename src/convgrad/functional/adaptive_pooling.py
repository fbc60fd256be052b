"""Adaptive average and max pooling: the output size is given, the windows follow.

Output ``o`` of an axis of length ``n`` pooled to ``m`` covers inputs
``floor(o n / m) <= i < ceil((o + 1) n / m)``, as in torch.  When ``m`` divides ``n`` on
every axis that is plain average pooling (a convolution with a constant kernel);
otherwise each axis is a constant averaging matrix
(:mod:`convgrad.tensor.axis_matrix`).  Max pooling likewise: plain max pooling where the
windows divide the input, else the pool family's window argmax, axis by axis
(:func:`convgrad.ops.pooling.adaptive_argmax`).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from ..ops import pooling as pooling_kernels
from ..tensor import Tensor
from ..tensor.axis_matrix import AxisMap, AxisMatrix
from .pooling import (
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    picked,
    pool_input,
)

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
]


def output_size_arg(fn: str, output_size: Any, spatial: tuple) -> tuple[int, ...]:
    """An int or one entry per spatial dim (``None`` keeps that dim's size)."""
    nd = len(spatial)
    sizes = (output_size,) * nd if not isinstance(output_size, tuple | list) else output_size
    if len(sizes) != nd or not all(
            v is None or (isinstance(v, Integral) and not isinstance(v, bool) and v >= 1)
            for v in sizes):
        raise ValueError(f"{fn}: output_size={output_size!r} must be a positive int or {nd} "
                         "of them (None keeps a dim's size)")
    if 0 in spatial:
        raise ValueError(f"{fn}: input of spatial size {spatial} has an empty dim")
    return tuple(n if v is None else int(v) for v, n in zip(sizes, spatial))


def check_output_size(fn: str, x: Tensor, out: tuple) -> None:
    """The output ``x.shape[:2] + out`` must be an array NumPy can hold."""
    nbytes = int(np.prod(x.shape[:2] + tuple(out), dtype=object)) * x.data.itemsize
    if nbytes > np.iinfo(np.intp).max:
        raise ValueError(f"{fn}: an output of spatial size {tuple(out)} for input of shape "
                         f"{x.shape} would need {nbytes} bytes, more than any array can hold")


def averaging_matrix(n: int, m: int) -> AxisMatrix:
    """The ``(m, n)`` matrix of adaptive average pooling along one axis."""
    start, stop = pooling_kernels.adaptive_bounds(n, m)
    width = int((stop - start).max())
    taps = start[:, None] + np.arange(width)
    inside = taps < stop[:, None]
    weight = inside / (stop - start)[:, None]
    return AxisMatrix(np.where(inside, taps, start[:, None]), weight, n)


_AVG = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}
_MAX = {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}


def _adaptive_avg(fn: str, nd: int, input: Any, output_size: Any) -> Tensor:
    x, unbatched = pool_input(fn, input, nd)
    spatial = x.shape[2:]
    out = output_size_arg(fn, output_size, spatial)
    check_output_size(fn, x, out)
    if all(m == 1 for m in out):  # global: the accurate mean (torch's error, not a
        # window's running sum: oneDNN's was 3x torch's on a 7x7 mean of values near 3)
        y = x.mean(tuple(range(2, 2 + nd)), keepdim=True)
    elif all(n % m == 0 for n, m in zip(spatial, out)):
        k = tuple(n // m for n, m in zip(spatial, out))
        y = x if all(v == 1 for v in k) else _AVG[nd](x, k, k)
    else:
        y = x
        for a, (n, m) in enumerate(zip(spatial, out)):
            if n != m:
                y = AxisMap.apply(y, matrix=averaging_matrix(n, m), axis=2 + a)
    return y.squeeze(0) if unbatched else y


def adaptive_avg_pool1d(input: Any, output_size: Any) -> Tensor:
    """Average ``(N, C, L)`` or ``(C, L)`` input down (or up) to length ``output_size``."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Any, output_size: Any) -> Tensor:
    """Average ``(N, C, H, W)`` or ``(C, H, W)`` input to ``output_size`` (an int or a
    pair; ``None`` keeps a dim)."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input: Any, output_size: Any) -> Tensor:
    """Average ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input to ``output_size``."""
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _adaptive_max(fn: str, nd: int, input: Any, output_size: Any, return_indices: Any) -> Any:
    x, unbatched = pool_input(fn, input, nd)
    x._eager(fn)  # max pooling's winners are picked in place: a dask array is refused
    spatial = x.shape[2:]
    out = output_size_arg(fn, output_size, spatial)
    check_output_size(fn, x, out)
    if all(n % m == 0 for n, m in zip(spatial, out)):
        # windows of k = n / m, k apart: plain max pooling (oneDNN's kernel for float32;
        # its indices and NaN handling are torch's, as here)
        k = tuple(n // m for n, m in zip(spatial, out))
        res = _MAX[nd](x, k, k, return_indices=bool(return_indices))
        if unbatched:
            res = (res[0].squeeze(0), res[1].squeeze(0)) if return_indices else res.squeeze(0)
        return res
    flat = pooling_kernels.adaptive_argmax(x.data, out)
    return picked(x, flat, unbatched, return_indices)


def adaptive_max_pool1d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """Max of ``(N, C, L)`` or ``(C, L)`` input over adaptive windows (see module doc)."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """Max of ``(N, C, H, W)`` or ``(C, H, W)`` input over adaptive windows; with
    ``return_indices`` also the flat per-plane int64 indices of the maxima."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """Max of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input over adaptive windows."""
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)
