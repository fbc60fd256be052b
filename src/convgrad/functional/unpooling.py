"""Max unpooling (``max_unpool1d/2d/3d``, the partial inverse of max pooling with
``return_indices``) and power-average pooling (``lp_pool1d/2d/3d``), with
``torch.nn.functional``'s arguments, output sizes and checks."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor
from ..tensor.gather import Unpool
from .conv_args import per_dim
from .pooling import avg_pool1d, avg_pool2d, avg_pool3d, pool_input

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d",
           "max_unpool3d", "unpooled_size"]


def unpooled_size(fn: str, spatial: tuple, kernel: tuple, stride: tuple, padding: tuple,
                  output_size: Any) -> tuple:
    """The unpooled spatial size: ``(n - 1) s + k - 2 p`` per dim, or ``output_size``
    (spatial, or with N and C in front), which must lie strictly within ``s`` of it."""
    nd = len(kernel)
    default = tuple((n - 1) * s + k - 2 * p for n, k, s, p in zip(spatial, kernel, stride,
                                                                   padding))
    if output_size is None:
        return default
    sizes = tuple(output_size.shape if isinstance(output_size, Tensor) else output_size)
    if len(sizes) == nd + 2:
        sizes = sizes[2:]
    if len(sizes) != nd or not all(isinstance(v, int | np.integer) for v in sizes):
        raise ValueError(f"{fn}: output_size={output_size!r} must be {nd} ints (or {nd + 2} "
                         "with N and C)")
    for d, (v, m, s) in enumerate(zip(sizes, default, stride)):
        if not m - s < v < m + s:
            raise ValueError(f"{fn}: output_size={tuple(sizes)} is invalid: dim {d} must be "
                             f"between {m - s} and {m + s}, exclusive")
    return tuple(int(v) for v in sizes)


def _max_unpool(fn: str, nd: int, input: Any, indices: Any, kernel_size: Any, stride: Any,
                padding: Any, output_size: Any) -> Tensor:
    x, unbatched = pool_input(fn, input, nd)
    idx = indices.data if isinstance(indices, Tensor) else np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{fn}: indices have dtype {idx.dtype}; expected int64 (as max "
                        "pooling's return_indices gives)")
    if unbatched:
        idx = idx[None]
    if idx.shape != x.shape:
        raise ValueError(f"{fn}: indices of shape {idx.shape} must have the input's shape "
                         f"{x.shape}")
    k = per_dim("kernel_size", kernel_size, nd, fn)
    s = k if stride is None else per_dim("stride", stride, nd, fn)
    p = per_dim("padding", padding, nd, fn, minimum=0)
    out = unpooled_size(fn, x.shape[2:], k, s, p, output_size)
    length = math.prod(out)
    flat = idx.reshape(*idx.shape[:2], -1).astype(np.int64, copy=False)
    if flat.size and (flat.min() < 0 or flat.max() >= length):
        raise ValueError(f"{fn}: indices must lie in [0, {length}) for an output of spatial "
                         f"size {out}; found {flat.min()}..{flat.max()}")
    y = Unpool.apply(x.reshape(*x.shape[:2], -1), index=flat, length=length)
    y = y.reshape(*x.shape[:2], *out)
    return y.squeeze(0) if unbatched else y


def max_unpool1d(input: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """Each value of ``(N, C, L)`` or ``(C, L)`` input placed at its ``indices`` (max
    pooling's, flat within each plane) in a zero output of the unpooled length."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """:func:`max_unpool1d` for ``(N, C, H, W)`` or ``(C, H, W)`` input."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """:func:`max_unpool1d` for ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)


_AVG = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}


def _lp_pool(fn: str, nd: int, input: Any, norm_type: Any, kernel_size: Any, stride: Any,
             ceil_mode: bool) -> Tensor:
    if isinstance(norm_type, bool) or not isinstance(norm_type, int | float | np.number) or (
            not 0 < float(norm_type) < math.inf):
        raise ValueError(f"{fn}: norm_type={norm_type!r} must be a positive finite number")
    k = per_dim("kernel_size", kernel_size, nd, fn)
    x = as_tensor(input)
    # torch's composition: the window mean of x^p, times the window size, to the 1/p
    mean = _AVG[nd](x.pow(norm_type), k, k if stride is None else stride, 0, ceil_mode)
    return (mean.sign() * mean.abs().relu()).mul(math.prod(k)).pow(1.0 / float(norm_type))


def lp_pool1d(input: Any, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """``(sum of x^p over each window)^(1/p)`` of ``(N, C, L)`` or ``(C, L)`` input."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Any, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """:func:`lp_pool1d` over 2-d windows."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Any, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """:func:`lp_pool1d` over 3-d windows."""
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)
