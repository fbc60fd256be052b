"""``pixel_shuffle`` and ``pixel_unshuffle``: channels to space and back (pure movement,
one copy: :class:`~convgrad.tensor.shape.PixelShuffle`)."""

from __future__ import annotations

from numbers import Integral
from typing import Any

from ..tensor import Tensor, as_tensor, lazy
from ..tensor.shape import PixelShuffle

__all__ = ["channel_shuffle", "pixel_shuffle", "pixel_unshuffle"]


def _factor(fn: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{fn}: {name}={value!r} must be a positive int")
    return int(value)


def pixel_shuffle(input: Any, upscale_factor: int) -> Tensor:
    """``(*, C r^2, H, W) -> (*, C, H r, W r)``: each group of ``r^2`` channels becomes an
    ``r x r`` block of pixels."""
    fn = "pixel_shuffle"
    x = as_tensor(input)
    r = _factor(fn, "upscale_factor", upscale_factor)
    if x.ndim < 3 or x.shape[-3] % (r * r):
        raise ValueError(f"{fn}: input of shape {x.shape} must be (*, C, H, W) with C "
                         f"divisible by upscale_factor**2={r * r}")
    if not lazy.is_dask_array(x.data):
        return PixelShuffle.apply(x, r=r, up=True)
    *lead, c, h, w = x.shape  # dask: lazy reshapes and a permute
    k = len(lead)
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    y = y.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Any, downscale_factor: int) -> Tensor:
    """``(*, C, H r, W r) -> (*, C r^2, H, W)``: the inverse of :func:`pixel_shuffle`."""
    fn = "pixel_unshuffle"
    x = as_tensor(input)
    r = _factor(fn, "downscale_factor", downscale_factor)
    if x.ndim < 3 or x.shape[-2] % r or x.shape[-1] % r:
        raise ValueError(f"{fn}: input of shape {x.shape} must be (*, C, H, W) with H and W "
                         f"divisible by downscale_factor={r}")
    if not lazy.is_dask_array(x.data):
        return PixelShuffle.apply(x, r=r, up=False)
    *lead, c, h, w = x.shape  # dask: lazy reshapes and a permute
    k = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return y.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Any, groups: int) -> Tensor:
    """``(N, C, *) -> (N, C, *)`` with the channels of ``groups`` groups interleaved:
    channel ``g * (C / groups) + i`` moves to ``i * groups + g`` (ShuffleNet's shuffle)."""
    fn = "channel_shuffle"
    x = as_tensor(input)
    g = _factor(fn, "groups", groups)
    if x.ndim < 3 or x.shape[1] % g:
        raise ValueError(f"{fn}: input of shape {x.shape} must be (N, C, *) with at least "
                         f"one spatial dim and C divisible by groups={g}")
    n, c, *rest = x.shape
    return x.reshape(n, g, c // g, *rest).transpose(1, 2).reshape(x.shape)
