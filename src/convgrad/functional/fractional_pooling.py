"""Fractional max pooling in 2 and 3 d (Graham 2014), torch's
``F.fractional_max_pool2d/3d`` (and their ``_with_indices`` forms).

Each ``(N, C)`` plane has one sample ``u`` in [0, 1) per spatial dim (torch's order: the
last dim's sample first in 2-d, ``(T, H, W)`` in 3-d).  Along a dim of input length ``n``,
output length ``m`` and kernel ``k``, with ``alpha = (n - k) / (m - 1)`` computed in the
input's dtype, window ``i < m - 1`` starts at ``int((i + u) * alpha) - int(u * alpha)`` and
the last one at ``n - k``.  The maxima are picked in NumPy (the first largest of each
window; a NaN wins) and gathered from the input, so the gradient goes to them.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..random import default_generator
from ..tensor import Tensor
from .conv_args import per_dim
from .pooling import picked, pool_input

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _window_starts(u: np.ndarray, n: int, m: int, k: int) -> np.ndarray:
    """The start of each of the ``m`` windows for samples ``u`` (any shape) -> (..., m)."""
    u = u[..., None]
    if m == 1:
        return np.full(u.shape, n - k, np.int64)
    dt = u.dtype.type
    alpha = dt(n - k) / dt(m - 1)
    i = np.arange(m - 1).astype(u.dtype)
    starts = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    last = np.full(u.shape, n - k, np.int64)
    return np.concatenate([starts, last], axis=-1)


def _sizes(fn: str, spatial: tuple, nd: int, kernel_size: Any, output_size: Any,
           output_ratio: Any) -> tuple[tuple, tuple]:
    """The checked kernel and output sizes."""
    if kernel_size is None:
        raise ValueError(f"{fn}: kernel_size=None; expected an int or {nd} ints")
    k = per_dim("kernel_size", kernel_size, nd, fn)
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{fn}: requires either output_size or output_ratio, got "
                             "neither")
        ratios = (output_ratio,) * nd if isinstance(output_ratio, numbers.Real) else (
            output_ratio)
        if not (isinstance(ratios, tuple | list) and len(ratios) == nd and all(
                isinstance(r, numbers.Real) and not isinstance(r, bool) for r in ratios)):
            raise TypeError(f"{fn}: output_ratio={output_ratio!r} must be a float or "
                            f"{nd} floats")
        if not all(0 < r < 1 for r in ratios):
            raise ValueError(f"{fn}: output_ratio={output_ratio!r} must be in (0, 1) in "
                             "every dim")
        out = tuple(int(n * float(r)) for n, r in zip(spatial, ratios))
    else:
        out = per_dim("output_size", output_size, nd, fn)
    # (torch's bound: output + kernel - 1 <= input in 2-d, but < input in 3-d)
    strict = nd == 3
    for n, kk, m in zip(spatial, k, out):
        if m + kk - 1 > n - strict:
            rel = "<" if strict else "<="
            raise ValueError(f"{fn}: output_size {out} with kernel_size {k} is too large "
                             f"for input of spatial size {spatial} (need output + kernel - "
                             f"1 {rel} input in every dim)")
        if m < 1:
            raise ValueError(f"{fn}: output size {out} must be >= 1 in every dim")
    return k, out


def _fractional_max_pool(fn: str, nd: int, input: Any, kernel_size: Any, output_size: Any,
                         output_ratio: Any, return_indices: Any, _random_samples: Any
                         ) -> Any:
    x, unbatched = pool_input(fn, input, nd)
    if x.dtype.kind != "f":
        raise TypeError(f"{fn}: input of dtype {x.dtype} must be floating")
    if not isinstance(return_indices, bool | np.bool_):
        raise TypeError(f"{fn}: return_indices={return_indices!r} must be a bool")
    spatial = tuple(x.shape[2:])
    k, out = _sizes(fn, spatial, nd, kernel_size, output_size, output_ratio)
    n, c = x.shape[:2]
    if _random_samples is None:
        samples = default_generator().random((n, c, nd)).astype(x.dtype)
    else:
        samples = np.asarray(_random_samples.data if isinstance(_random_samples, Tensor)
                             else _random_samples)
        if samples.shape != (n, c, nd):
            raise ValueError(f"{fn}: _random_samples of shape {samples.shape} must have "
                             f"shape {(n, c, nd)} (batch, channels, spatial dims)")
        if samples.dtype != x.dtype:
            raise TypeError(f"{fn}: _random_samples of dtype {samples.dtype} must have the "
                            f"input's dtype {x.dtype}")
    # torch's sample order: (W, H) in 2-d, (T, H, W) in 3-d
    order = (1, 0) if nd == 2 else (0, 1, 2)
    starts = [_window_starts(samples[:, :, order[a]], spatial[a], out[a], k[a])
              for a in range(nd)]  # each (N, C, out[a])
    # coordinate along dim a of window position (o_0..o_{nd-1}) and tap t_a: broadcast
    # to (N, C, *out, *k)
    coords = []
    for a in range(nd):
        s = starts[a].reshape((n, c) + tuple(out[a] if b == a else 1 for b in range(nd))
                              + (1,) * nd)
        t = np.arange(k[a]).reshape((1, 1) + (1,) * nd
                                    + tuple(k[a] if b == a else 1 for b in range(nd)))
        coords.append(s + t)
    full = (n, c) + out + k
    flat_taps = np.zeros(full, np.int64)
    for a in range(nd):
        flat_taps = flat_taps * spatial[a] + coords[a]
    flat_taps = flat_taps.reshape((n, c) + out + (-1,))
    vals = np.take_along_axis(x.data.reshape(n, c, -1),
                              flat_taps.reshape(n, c, -1), axis=2).reshape(flat_taps.shape)
    # running comparison over the taps, in window order: the first largest, a NaN wins
    best = vals[..., 0].copy()
    win = np.zeros(best.shape, np.int64)
    for t in range(1, vals.shape[-1]):
        take = (vals[..., t] > best) | np.isnan(vals[..., t])
        np.copyto(best, vals[..., t], where=take)
        np.copyto(win, t, where=take)
    flat = np.take_along_axis(flat_taps, win[..., None], axis=-1)[..., 0]
    return picked(x, flat, unbatched, return_indices)


def fractional_max_pool2d_with_indices(input: Any, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> tuple[Tensor, Tensor]:
    """:func:`fractional_max_pool2d` returning ``(output, indices)`` (indices flat in each
    ``(N, C)`` plane)."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size,
                                output_ratio, True, _random_samples)


def fractional_max_pool2d(input: Any, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """2-d fractional max pooling of ``(N, C, H, W)`` or ``(C, H, W)`` input to
    ``output_size`` (or ``int(input_size * output_ratio)``) with windows of
    ``kernel_size``; ``_random_samples`` ``(N, C, 2)`` fixes the pseudo-random windows."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)


def fractional_max_pool3d_with_indices(input: Any, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> tuple[Tensor, Tensor]:
    """:func:`fractional_max_pool3d` returning ``(output, indices)``."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size,
                                output_ratio, True, _random_samples)


def fractional_max_pool3d(input: Any, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """3-d fractional max pooling of ``(N, C, T, H, W)`` or ``(C, T, H, W)`` input;
    ``_random_samples`` ``(N, C, 3)`` fixes the windows."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)
