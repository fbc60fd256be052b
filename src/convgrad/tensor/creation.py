"""Creation functions with torch's signatures: ``full``, ``empty``, ``rand``, ``randint``,
``randperm``, ``arange``, ``linspace``, ``eye`` and the ``*_like`` forms.

Each takes ``dtype``, ``device`` (the CPU only) and ``requires_grad``; the random ones
take ``generator`` (a numpy Generator or an int seed; None: the library-wide generator
of ``cg.manual_seed``).  The ``*_like`` forms take torch's ``memory_format``, by default
``preserve_format``: the result lies in memory as the input does (a channels-last
input gives a channels-last result).  Default dtypes are torch's: the default float dtype
(float32 unless ``set_default_dtype``) for floats, int64 for integers (``full(shape, 3)``,
``arange(5)``, ``randint``, ``randperm``), bool for bools.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from .. import devices as _device
from .. import random as _random
from ..autograd import tensor_type
from ..default_dtype import get_default_dtype
from ..ops import layouts as _layouts
from . import memory_format as _mf
from .args import check_dtype as _check_dtype
from .args import shape_arg as _shape_arg
from .args import tensor_dtype as _tensor_dtype

Tensor = Any  # annotations: the registered Tensor class

__all__ = ["arange", "empty", "empty_like", "eye", "full", "full_like", "linspace", "ones_like",
           "rand", "rand_like", "randint", "randn_like", "randperm", "zeros_like"]


def _leaf(fn: str, data: np.ndarray, device: Any, requires_grad: bool) -> Tensor:
    _device.check_device(fn, device)
    t = tensor_type()._wrap(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _shape(fn: str, shape: tuple, size: Any = None) -> tuple[int, ...]:
    shape = _shape_arg(shape, size, fn)
    if any(isinstance(s, bool) or not isinstance(s, Integral) or s < 0 for s in shape):
        raise ValueError(f"{fn}: size={tuple(shape)!r} must be ints >= 0")
    return tuple(int(s) for s in shape)


def _scalar_dtype(value: Any) -> np.dtype:
    """torch's default dtype for a Python number: bool, int64 or the default float dtype."""
    if isinstance(value, bool | np.bool_):
        return np.dtype(np.bool_)
    if isinstance(value, Integral):
        return np.dtype(np.int64)
    return get_default_dtype()


def _like_dtype(fn: str, t: Any, dtype: Any) -> np.dtype:
    if not isinstance(t, tensor_type()):
        raise TypeError(f"{fn}: input must be a convgrad.Tensor, got {type(t).__name__}")
    return t.data.dtype if dtype is None else _tensor_dtype(fn, dtype)


def full(size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (dtype from the value, as torch)."""
    if not isinstance(fill_value, Real | np.bool_):
        raise TypeError(f"full: fill_value={fill_value!r} must be a number")
    dt = _scalar_dtype(fill_value) if dtype is None else _tensor_dtype("full", dtype)
    return _leaf("full", np.full(_shape("full", (size,)), fill_value, dt), device,
                 requires_grad)


def empty(*shape: Any, size: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor (its values are whatever the memory held)."""
    dt = get_default_dtype() if dtype is None else _tensor_dtype("empty", dtype)
    return _leaf("empty", np.empty(_shape("empty", shape, size), dt), device, requires_grad)


def _like_array(fn: str, input: Tensor, dtype: Any, memory_format: Any) -> np.ndarray:  # noqa: A002
    """An uninitialised array of ``input``'s shape, of ``dtype`` (None: input's), laid out
    per ``memory_format`` (``preserve_format``: as ``input``'s array, its dims' order in
    memory kept)."""
    dt = _like_dtype(fn, input, dtype)
    fmt = _mf.check_format(fn, memory_format)
    a = input.data
    if fmt is _mf.preserve_format:
        return np.empty_like(a, dtype=dt, order="K")
    _mf.check_rank(fmt, a.ndim)
    return _layouts.empty(a.shape, fmt is not _mf.contiguous_format, dt)


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None,  # noqa: A002
               requires_grad: bool = False, memory_format: Any = _mf.preserve_format
               ) -> Tensor:
    out = _like_array("zeros_like", input, dtype, memory_format)
    out[...] = 0
    return _leaf("zeros_like", out, device, requires_grad)


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None,  # noqa: A002
              requires_grad: bool = False, memory_format: Any = _mf.preserve_format
              ) -> Tensor:
    out = _like_array("ones_like", input, dtype, memory_format)
    out[...] = 1
    return _leaf("ones_like", out, device, requires_grad)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None,  # noqa: A002
              device: Any = None, requires_grad: bool = False,
              memory_format: Any = _mf.preserve_format) -> Tensor:
    out = _like_array("full_like", input, dtype, memory_format)
    out[...] = fill_value
    return _leaf("full_like", out, device, requires_grad)


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None,  # noqa: A002
               requires_grad: bool = False, memory_format: Any = _mf.preserve_format
               ) -> Tensor:
    out = _like_array("empty_like", input, dtype, memory_format)
    return _leaf("empty_like", out, device, requires_grad)


def rand(*shape: Any, size: Any = None, generator: Any = None, dtype: Any = None,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    """Samples of U[0, 1)."""
    dt = get_default_dtype() if dtype is None else _check_dtype("rand", dtype)
    data = _random.generator(generator, "rand").random(_shape("rand", shape, size), dtype=dt)
    return _leaf("rand", data, device, requires_grad)


def _random_like(fn: str, draw: str, input: Tensor, generator: Any, dtype: Any,  # noqa: A002
                 device: Any, requires_grad: bool, memory_format: Any) -> Tensor:
    """``input``'s shape and layout filled by the generator's method ``draw``."""
    out = _like_array(fn, input, dtype, memory_format)
    dt = _check_dtype(fn, out.dtype)
    out[...] = getattr(_random.generator(generator, fn), draw)(out.shape, dtype=dt)
    return _leaf(fn, out, device, requires_grad)


def rand_like(input: Tensor, *, generator: Any = None, dtype: Any = None,  # noqa: A002
              device: Any = None, requires_grad: bool = False,
              memory_format: Any = _mf.preserve_format) -> Tensor:
    return _random_like("rand_like", "random", input, generator, dtype, device,
                        requires_grad, memory_format)


def randn_like(input: Tensor, *, generator: Any = None, dtype: Any = None,  # noqa: A002
               device: Any = None, requires_grad: bool = False,
               memory_format: Any = _mf.preserve_format) -> Tensor:
    return _random_like("randn_like", "standard_normal", input, generator, dtype, device,
                        requires_grad, memory_format)


def _int(fn: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{fn}: {name}={value!r} must be an int")
    return int(value)


def randint(low: int = 0, high: Any = None, size: Any = None, *, generator: Any = None,
            dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Integers drawn uniformly from [low, high) (``randint(high, size)`` from [0, high))."""
    if high is None:  # randint(high, size=...)
        low, high = 0, low
    elif size is None and not isinstance(high, Integral):  # randint(high, size)
        low, high, size = 0, low, high
    low, high = _int("randint", "low", low), _int("randint", "high", high)
    if size is None:
        raise TypeError("randint: size is required (a tuple of ints)")
    if low >= high:
        raise ValueError(f"randint: low={low} must be < high={high}")
    dt = np.dtype(np.int64) if dtype is None else _tensor_dtype("randint", dtype)
    data = _random.generator(generator, "randint").integers(low, high, _shape("randint",
                                                                             (size,)))
    return _leaf("randint", data.astype(dt), device, requires_grad)


def randperm(n: int, *, generator: Any = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1 (int64)."""
    n = _int("randperm", "n", n)
    if n < 0:
        raise ValueError(f"randperm: n={n} must be >= 0")
    dt = np.dtype(np.int64) if dtype is None else _tensor_dtype("randperm", dtype)
    data = _random.generator(generator, "randperm").permutation(n).astype(dt)
    return _leaf("randperm", data, device, requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """``start, start + step, ...`` below ``end`` (int64 if every bound is an int, else
    the default float dtype, as torch)."""
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, Real):
            raise TypeError(f"arange: {name}={v!r} must be a number")
    if step == 0:
        raise ValueError("arange: step=0 must be nonzero")
    ints = all(isinstance(v, Integral) for v in (start, end, step))
    dt = (np.dtype(np.int64) if ints else get_default_dtype()) if dtype is None \
        else _tensor_dtype("arange", dtype)
    n = max(0, int(np.ceil((end - start) / step)))
    data = (start + step * np.arange(n, dtype=np.float64 if not ints else np.int64))
    return _leaf("arange", data.astype(dt), device, requires_grad)


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (the default
    float dtype unless ``dtype``)."""
    steps = _int("linspace", "steps", steps)
    if steps < 0:
        raise ValueError(f"linspace: steps={steps} must be >= 0")
    dt = get_default_dtype() if dtype is None else _tensor_dtype("linspace", dtype)
    return _leaf("linspace", np.linspace(start, end, steps).astype(dt), device, requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """The ``n`` x ``m`` identity (the default float dtype unless ``dtype``)."""
    n = _int("eye", "n", n)
    m = n if m is None else _int("eye", "m", m)
    if n < 0 or m < 0:
        raise ValueError(f"eye: n={n} and m={m} must be >= 0")
    dt = get_default_dtype() if dtype is None else _tensor_dtype("eye", dtype)
    return _leaf("eye", np.eye(n, m, dtype=dt), device, requires_grad)
