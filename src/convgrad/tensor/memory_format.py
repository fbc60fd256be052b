"""torch's memory formats: ``channels_last`` and friends, as data and one Function.

A Tensor stays logically (N, C, *spatial); a memory format only says how its array
lies in memory: ``contiguous_format`` (C order), ``channels_last`` (a 4-d array
stored as (N, H, W, C)), ``channels_last_3d`` (a 5-d one stored as (N, D, H, W, C)),
or ``preserve_format`` (as it is).  Strides are :mod:`convgrad.ops.layouts`'s.

The predicates follow torch's definition of contiguity: a dim of size 1 may have any
stride, every other dim the stride of the dense layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function
from ..ops import layouts, relayout

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format", "is_in_format", "ToMemoryFormat", "check_format", "check_rank"]


class memory_format:  # noqa: N801 (torch's name)
    """One of torch's memory formats (compare by identity, as torch does)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"convgrad.{self.name}"

    def __reduce__(self) -> str:  # pickles as the module attribute of its name
        return self.name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

#: the rank each channels-last format requires (torch raises on any other)
_RANK = {"channels_last": 4, "channels_last_3d": 5}


def check_format(fn: str, fmt: Any) -> memory_format:
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be convgrad.memory_format, "
                        f"not {type(fmt).__name__}")
    return fmt


def check_rank(fmt: memory_format, ndim: int) -> None:
    """torch's error for a channels-last format on an array of the wrong rank."""
    rank = _RANK.get(fmt.name)
    if rank is not None and ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")


def _dense_in(shape: tuple, strides: tuple, dense: tuple) -> bool:
    # torch: the size-1 dims' strides do not matter
    return all(s == d for n, s, d in zip(shape, strides, dense) if n != 1)


def is_in_format(a: np.ndarray, fmt: memory_format) -> bool:
    """``Tensor.is_contiguous(memory_format=fmt)`` of the array ``a``."""
    rank = _RANK.get(fmt.name)
    if rank is None:  # contiguous_format, and preserve_format as torch reads it
        return bool(a.flags.c_contiguous)
    if a.ndim != rank:
        return False
    if any(s % a.itemsize for s in a.strides):
        return False
    return _dense_in(a.shape, tuple(s // a.itemsize for s in a.strides),
                     layouts.channels_last_strides(a.shape))


class ToMemoryFormat(Function):
    """A copy of ``x`` laid out channels-last (``channels_last``) or in C order."""

    reads = ()

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, channels_last: bool) -> np.ndarray:
        with layouts.LAYOUT.record("to_channels_last" if channels_last else "to_contiguous",
                                   x.shape) as rec:
            out = layouts.empty(x.shape, channels_last=channels_last, dtype=x.dtype)
            rec.algorithm = relayout.copy(out, x)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        # a copy is the identity on values, whatever the memory holds
        return grad
