"""More creation functions with torch's signatures: ``scalar_tensor``, ``empty_strided``,
``logspace`` and ``randint_like`` (from the library's seeded generator unless a
``generator`` is given).  Each takes ``dtype``, ``device`` (the CPU only) and
``requires_grad``, as :mod:`.creation`'s do."""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from .. import devices as _device
from .. import random as _random
from ..autograd import tensor_type
from ..default_dtype import get_default_dtype
from .args import shape_arg, tensor_dtype

Tensor = Any  # annotations: the registered Tensor class

__all__ = ["empty_strided", "logspace", "randint_like", "scalar_tensor"]


def _leaf(fn: str, data: np.ndarray, device: Any, requires_grad: bool) -> Tensor:
    _device.check_device(fn, device)
    t = tensor_type()._wrap(data)
    if requires_grad:
        if data.dtype.kind != "f":
            raise TypeError(f"{fn}: requires_grad=True needs a float dtype, got {data.dtype}")
        t.requires_grad_(True)
    return t


def _ints(fn: str, name: str, values: Any, low: int = 0) -> tuple[int, ...]:
    values = tuple(shape_arg((values,))) if not isinstance(values, Integral) else (values,)
    if any(isinstance(v, bool) or not isinstance(v, Integral) or v < low for v in values):
        raise ValueError(f"{fn}: {name}={values!r} must be ints >= {low}")
    return tuple(int(v) for v in values)


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d Tensor holding the number ``s`` (the default float dtype unless ``dtype``, as
    torch)."""
    if isinstance(s, tensor_type()) or not isinstance(s, Real | np.bool_):
        raise TypeError(f"scalar_tensor: s={s!r} must be a number")
    dt = get_default_dtype() if dtype is None else tensor_dtype("scalar_tensor", dtype)
    return _leaf("scalar_tensor", np.asarray(s).astype(dt), device, requires_grad)


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """An uninitialised Tensor of ``size`` whose elements lie ``stride`` elements apart
    along each dim (a view of a buffer just large enough; zeros here)."""
    fn = "empty_strided"
    size, stride = _ints(fn, "size", size), _ints(fn, "stride", stride)
    if len(size) != len(stride):
        raise ValueError(f"{fn}: size={size} and stride={stride} must have one entry per dim")
    dt = get_default_dtype() if dtype is None else tensor_dtype(fn, dtype)
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    buffer = np.zeros(extent, dt)
    data = np.lib.stride_tricks.as_strided(
        buffer, size, tuple(s * dt.itemsize for s in stride))
    return _leaf(fn, data, device, requires_grad)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """``base ** v`` for ``steps`` values ``v`` evenly spaced from ``start`` to ``end``
    (the first half counted from ``start``, the rest back from ``end``, as torch); the default
    float dtype unless ``dtype``; computed in float64."""
    fn = "logspace"
    if isinstance(steps, bool) or not isinstance(steps, Integral) or steps < 0:
        raise ValueError(f"{fn}: steps={steps!r} must be an int >= 0")
    for name, v in (("start", start), ("end", end), ("base", base)):
        if isinstance(v, bool) or not isinstance(v, Real):
            raise TypeError(f"{fn}: {name}={v!r} must be a number")
    dt = get_default_dtype() if dtype is None else tensor_dtype(fn, dtype)
    start, end, base = float(start), float(end), float(base)
    i = np.arange(steps, dtype=np.float64)
    if steps == 1:
        exps = np.full(1, start)
    else:
        step = (end - start) / max(steps - 1, 1)
        exps = np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))
    return _leaf(fn, np.power(base, exps).astype(dt), device, requires_grad)


def randint_like(input: Any, low: int = 0, high: int | None = None, *,  # noqa: A002
                 generator: Any = None, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Tensor:
    """Integers drawn uniformly from [low, high) in ``input``'s shape and dtype
    (``randint_like(input, high)`` from [0, high))."""
    fn = "randint_like"
    if not isinstance(input, tensor_type()):
        raise TypeError(f"{fn}: input must be a convgrad.Tensor, got {type(input).__name__}")
    if high is None:
        low, high = 0, low
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, Integral):
            raise TypeError(f"{fn}: {name}={v!r} must be an int")
    if low >= high:
        raise ValueError(f"{fn}: low={low} must be < high={high}")
    dt = input.data.dtype if dtype is None else tensor_dtype(fn, dtype)
    draws = _random.generator(generator, fn).integers(int(low), int(high), input.shape)
    return _leaf(fn, draws.astype(dt), device, requires_grad)
