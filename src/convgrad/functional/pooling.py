"""Max and average pooling in 1-3 d with ``torch.nn.functional``'s semantics.

* Average pooling is a convolution of each plane with a constant box kernel, through the
  convolution primitives (so the kernel never gets a gradient); windows that reach past
  the padded input (``ceil_mode``) or that ``count_include_pad=False`` shortens are fixed
  by a constant divisor map.
* Max pooling walks the ``prod(kernel_size)`` taps of the window (never the pixels): each
  tap is one strided view of the padded input, and a running comparison keeps the first
  largest value of each window (NaN wins, as in torch).  The result gathers the winners
  from the input, so the gradient goes to them; ``return_indices`` gives torch's indices,
  flat within each ``(N, C)`` plane of the unpadded input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import pooling as K
from ..tensor import Tensor, as_tensor
from ..tensor.pooling import AvgPool, MaxPool
from .conv import conv_general
from .conv_args import per_dim

__all__ = [
    "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
    "pooled_length",
]


def pooled_length(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's output length: floor (or ceil) of ``(n + 2p - d(k-1) - 1) / s`` plus one; with
    ``ceil_mode`` the last window must start inside the input or its left padding."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def pool_input(fn: str, input: Any, nd: int) -> tuple[Tensor, bool]:
    """``input`` as a batched Tensor ``(N, C, *spatial)``; ``True`` if it came unbatched."""
    x = as_tensor(input)
    if x.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"{fn}: input of shape {x.shape} must be (N, C, {nd} spatial dims) "
                         f"or unbatched (C, {nd} spatial dims)")
    if x.ndim == nd + 1:
        return x.unsqueeze(0), True
    return x, False


def _window_args(fn: str, x: Tensor, nd: int, kernel_size: Any, stride: Any, padding: Any,
                 dilation: Any, ceil_mode: Any) -> tuple:
    """Per-dim kernel, stride, padding, dilation and output lengths, checked as torch does."""
    k = per_dim("kernel_size", kernel_size, nd, fn)
    empty = stride is None or (isinstance(stride, tuple | list) and len(stride) == 0)
    s = k if empty else per_dim("stride", stride, nd, fn)
    p = per_dim("padding", padding, nd, fn, minimum=0)
    d = per_dim("dilation", dilation, nd, fn)
    if not isinstance(ceil_mode, bool | np.bool_):
        raise TypeError(f"{fn}: ceil_mode={ceil_mode!r} must be a bool")
    if any(2 * pp > kk for pp, kk in zip(p, k)):
        raise ValueError(f"{fn}: padding={padding!r} must be at most half of "
                         f"kernel_size={kernel_size!r} in every dim")
    spatial = x.shape[2:]
    out = tuple(pooled_length(n, kk, ss, pp, dd, bool(ceil_mode))
                for n, kk, ss, pp, dd in zip(spatial, k, s, p, d))
    if min(out) < 1 or 0 in spatial:
        raise ValueError(f"{fn}: input of spatial size {spatial} gives output size {out} "
                         f"with kernel_size={k}, stride={s}, padding={p}, dilation={d}; "
                         "expected every output length >= 1")
    return k, s, p, d, out


def _axis_shape(nd: int, axis: int, n: int) -> tuple:
    """A shape that puts a length-``n`` vector on spatial ``axis`` of (N, C, *spatial)."""
    return (1, 1) + tuple(n if a == axis else 1 for a in range(nd))


# ----------------------------------------------------------------------------- average
def _avg_pool(fn: str, nd: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: Any, count_include_pad: Any, divisor_override: Any) -> Tensor:
    x, unbatched = pool_input(fn, input, nd)
    k, s, p, _, out = _window_args(fn, x, nd, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and (isinstance(divisor_override, bool) or not isinstance(
            divisor_override, int | np.integer) or divisor_override == 0):
        raise ValueError(f"{fn}: divisor_override={divisor_override!r} must be a non-zero int "
                         "or None")
    n, c, *spatial = x.shape
    # a window that reaches past the right padding is cut there: pad (or crop) the right
    # side so that exactly `out` windows fit
    pads = tuple((pp, (o - 1) * ss + kk - nn - pp)
                 for nn, kk, ss, pp, o in zip(spatial, k, s, p, out))
    window = (k, s, (1,) * nd, p, tuple(hi for _, hi in pads))
    if divisor_override is None and K.choose("avg", x.data, (n, c, *out), window,
                                             bool(count_include_pad)) == "onednn":
        y = AvgPool.apply(x, window=window, y_shape=(n, c, *out),
                          include_pad=bool(count_include_pad))
        return y.squeeze(0) if unbatched else y
    if divisor_override is not None:
        scale = 1.0 / divisor_override
        factors = []
    else:
        factors, scale = [], 1.0
        for a, (nn, kk, ss, pp, o) in enumerate(zip(spatial, k, s, p, out)):
            start = np.arange(o) * ss - pp
            stop = np.minimum(start + kk, nn + pp)
            if not count_include_pad:
                start, stop = np.maximum(start, 0), np.minimum(stop, nn)
            count = stop - start
            if np.all(count == count[0]):
                scale /= count[0]  # a uniform divisor folds into the kernel
            else:
                factors.append((1.0 / count).reshape(_axis_shape(nd, a, o)))
    with K.POOL.record("avg_pool_forward", x.shape, (n, c, *out)) as rec:
        rec.algorithm = "numpy"  # a box convolution per plane (its backward too)
        if tuple(k) == tuple(spatial) and scale == 1.0 / np.prod(spatial) and not any(p):
            y = x.mean(tuple(range(2, 2 + nd)), keepdim=True)  # one window: the mean
            return y.squeeze(0) if unbatched else y
        planes = x.reshape(n * c, 1, *spatial)
        box = np.full((1, 1, *k), scale, dtype=x.dtype)
        y = conv_general(planes, box, stride=s, padding=pads)
        for f in factors:
            y = y * f.astype(x.dtype)
    y = y.reshape(n, c, *out)
    return y.squeeze(0) if unbatched else y


def avg_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over windows of ``(N, C, L)`` or ``(C, L)`` input.

    ``count_include_pad``: whether the zero padding counts in the mean; ``ceil_mode``:
    round the output length up (windows that start inside the input still count).
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over windows of ``(N, C, H, W)`` or ``(C, H, W)`` input (see
    :func:`avg_pool1d`); ``divisor_override`` replaces every window's divisor."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over windows of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (see
    :func:`avg_pool2d`)."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


# ----------------------------------------------------------------------------- max
def flat_gather(x: Tensor, flat: np.ndarray) -> Tensor:
    """``out[n, c, ...] = x[n, c].ravel()[flat[n, c, ...]]`` (gradient: scatter-add back)."""
    # indexed in x's own layout: ``x.reshape(-1)`` would copy a channels-last x whole
    # (12 of the 29 ms of an adaptive max pooling of (16, 64, 64, 64) to 7x7)
    n, c = x.shape[:2]
    batch = np.arange(n).reshape((n,) + (1,) * (flat.ndim - 1))
    channel = np.arange(c).reshape((1, c) + (1,) * (flat.ndim - 2))
    return x[(batch, channel) + np.unravel_index(flat, x.shape[2:])]


def picked(x: Tensor, flat: np.ndarray, unbatched: bool, return_indices: Any) -> Any:
    """A max pooling's result from its winners' flat offsets ``flat``: the gathered
    values (:func:`flat_gather`), unbatched as the input was, with the offsets as an
    index Tensor when ``return_indices``."""
    y = flat_gather(x, flat)
    if unbatched:
        y, flat = y.squeeze(0), flat[0]
    if return_indices:
        return y, Tensor._wrap(flat)
    return y


def _max_pool(fn: str, nd: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: Any, return_indices: Any) -> Any:
    x, unbatched = pool_input(fn, input, nd)
    x._eager(fn)  # its winners are picked in place: a dask array is refused
    k, s, p, d, out = _window_args(fn, x, nd, kernel_size, stride, padding, dilation,
                                   ceil_mode)
    spatial = x.shape[2:]
    # the right padding that makes exactly `out` windows fit (negative: a crop)
    right = tuple((o - 1) * ss + dd * (kk - 1) + 1 - nn - pp
                  for nn, kk, ss, pp, dd, o in zip(spatial, k, s, p, d, out))
    window = (k, s, d, p, right)
    y_shape = (*x.shape[:2], *out)
    if K.choose("max", x.data, y_shape, window) == "onednn":
        if return_indices:  # the indices from oneDNN's workspace, the values gathered
            _, ws = K.max_pool_forward(x.data, y_shape, window)
            flat = K.max_pool_indices(ws, x.shape, y_shape, window, x.data)
            y = flat_gather(x, flat)
        else:
            y = MaxPool.apply(x, window=window, y_shape=y_shape)
            return y.squeeze(0) if unbatched else y
    else:
        with K.POOL.record("max_pool_forward", x.shape, y_shape) as rec:
            rec.algorithm = "numpy"  # composed of Tensor operations (their backward too)
            y, flat = _max_pool_numpy(x, k, s, p, d, out, right)
    if unbatched:
        y, flat = y.squeeze(0), flat[0]
    if return_indices:
        return y, Tensor._wrap(flat)
    return y


def _max_pool_numpy(x: Tensor, k: tuple, s: tuple, p: tuple, d: tuple, out: tuple,
                    right: tuple) -> tuple[Tensor, np.ndarray]:
    """The reference: the maxima gathered from x, and their flat indices."""
    nd = len(k)
    spatial = x.shape[2:]
    # pad with -inf so that every tap of every window is a plain strided view
    hi = [max(r, 0) for r in right]
    xp = x.data
    if any(p) or any(hi):
        xp = np.pad(xp, [(0, 0), (0, 0)] + [(pp, h) for pp, h in zip(p, hi)],
                    constant_values=-np.inf)
    # each window's first in-bounds tap (torch starts the running max there, at -inf)
    first = []
    for a, (kk, ss, pp, dd, o) in enumerate(zip(k, s, p, d, out)):
        start = np.arange(o) * ss - pp
        t0 = np.clip(-(start // dd), 0, kk - 1)  # smallest t with start + t*dd >= 0
        first.append(t0.reshape(_axis_shape(nd, a, o)))
    def tap_view(offs: tuple) -> np.ndarray:
        return xp[(slice(None), slice(None)) + tuple(
            slice(off * dd, off * dd + (o - 1) * ss + 1, ss)
            for off, dd, ss, o in zip(offs, d, s, out))]

    # tap 0 is either in bounds (then it is the first one) or padding (-inf, which any
    # in-bounds value replaces; an all -inf window keeps its first in-bounds tap)
    best = tap_view((0,) * nd).copy()
    tap = np.broadcast_to(np.ravel_multi_index(first, k), best.shape).copy()
    has_nan = bool(np.isnan(x.data).any())
    take = np.empty(best.shape, bool)
    for t, offs in enumerate(np.ndindex(*k)):
        if t == 0:
            continue
        view = tap_view(offs)
        np.greater(view, best, out=take)
        if has_nan:
            take |= np.isnan(view)
        np.copyto(best, view, where=take)
        np.copyto(tap, t, where=take)
    # flat index of each winner within its unpadded plane
    offs = np.unravel_index(tap, k)
    flat = np.zeros(best.shape, np.int64)
    for a in range(nd):
        coord = (np.arange(out[a]) * s[a] - p[a]).reshape(_axis_shape(nd, a, out[a]))
        flat = flat * spatial[a] + (coord + offs[a] * d[a])
    return flat_gather(x, flat), flat


def max_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over windows of ``(N, C, L)`` or ``(C, L)`` input (padding never wins).

    With ``return_indices`` also the int64 indices of the maxima within each plane.
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over windows of ``(N, C, H, W)`` or ``(C, H, W)`` input (see :func:`max_pool1d`);
    indices are flat within each ``H x W`` plane, as torch's."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over windows of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (see
    :func:`max_pool2d`)."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)
