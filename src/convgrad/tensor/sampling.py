"""Samples with torch's signatures, drawn from the library's seeded generator (the one
behind ``cg.manual_seed``) unless a ``generator`` is given: ``normal`` (torch's four call
forms), ``poisson``, ``bernoulli`` (function and method).

As in torch the samples are not reparameterised: a result requires grad when a Tensor
argument does, and the gradient to that argument is zero.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np

from .. import random as _random
from ..autograd import tensor_type
from ..default_dtype import get_default_dtype
from ..devices import check_device
from . import operands
from .args import check_dtype, shape_arg

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["SamplingMethodsMixin", "bernoulli", "normal", "poisson"]


def _float_tensor(fn: str, name: str, x: Any) -> Tensor:
    T = tensor_type()
    if not isinstance(x, T):
        raise TypeError(f"{fn}: {name} must be a Tensor or a number, got {type(x).__name__}")
    if x.data.dtype.kind != "f":
        raise TypeError(f"{fn}: {name} of dtype {x.data.dtype} must be a float Tensor")
    return x


def _sampled(values: np.ndarray, dtype: np.dtype, *inputs: Tensor) -> Tensor:
    """``values`` in ``dtype``, tied to the Tensor ``inputs`` with a zero gradient (a
    ``where`` that never picks them), so it requires grad as torch's sample does."""
    T = tensor_type()
    out = T._wrap(np.asarray(values, dtype))
    tied = [t for t in inputs if isinstance(t, T) and t.requires_grad]
    if not tied:
        return out
    total = tied[0]
    for t in tied[1:]:
        total = total + t
    return operands.where(np.zeros(out.shape, bool), total, out)


def _std_check(fn: str, std: np.ndarray) -> None:
    if np.any(std < 0) or np.any(np.isnan(std)):
        raise ValueError(f"{fn}: std must be >= 0 everywhere, got a minimum {np.min(std)}")


def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, generator: Any = None,
           dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Normal samples, in torch's four forms: ``normal(mean_t, std_t)`` (broadcast),
    ``normal(mean_t, std=1.0)``, ``normal(mean, std_t)`` (each the Tensor's shape and
    dtype) and ``normal(mean, std, size)`` of numbers (the default float dtype unless
    ``dtype``)."""
    fn = "normal"
    T = tensor_type()
    rng = _random.generator(generator, fn)
    tensors = isinstance(mean, T) or isinstance(std, T)
    if not tensors:
        for name, v in (("mean", mean), ("std", std)):
            if isinstance(v, bool) or not isinstance(v, Real):
                raise TypeError(f"{fn}: {name}={v!r} must be a Tensor or a number")
        if size is None:
            raise TypeError(f"{fn}: with numbers for mean and std, size is required")
        shape = tuple(shape_arg((size,)))
        if any(isinstance(s, bool) or not isinstance(s, int | np.integer) or s < 0
               for s in shape):
            raise ValueError(f"{fn}: size={size!r} must be ints >= 0")
        _std_check(fn, np.asarray(float(std)))
        dt = get_default_dtype() if dtype is None else check_dtype(fn, dtype)
        check_device(fn, device)
        z = rng.standard_normal(shape)
        out = T._wrap(np.asarray(float(mean) + float(std) * z, dt))
        return out.requires_grad_(True) if requires_grad else out
    if size is not None:
        raise TypeError(f"{fn}: size={size!r} is only for numbers as mean and std")
    m = _float_tensor(fn, "mean", mean) if isinstance(mean, T) else None
    s = _float_tensor(fn, "std", std) if isinstance(std, T) else None
    mv = m.data if m is not None else np.asarray(mean, np.float64)
    sv = s.data if s is not None else np.asarray(std, np.float64)
    if m is None and (isinstance(mean, bool) or not isinstance(mean, Real)):
        raise TypeError(f"{fn}: mean={mean!r} must be a Tensor or a number")
    if s is None and (isinstance(std, bool) or not isinstance(std, Real)):
        raise TypeError(f"{fn}: std={std!r} must be a Tensor or a number")
    try:
        shape = np.broadcast_shapes(np.shape(mv), np.shape(sv))
    except ValueError:
        raise ValueError(f"{fn}: mean of shape {np.shape(mv)} and std of shape "
                         f"{np.shape(sv)} do not broadcast") from None
    _std_check(fn, sv)
    dts = [t.data.dtype for t in (m, s) if t is not None]
    dt = np.result_type(*dts)
    z = rng.standard_normal(shape)
    values = np.asarray(mv, np.float64) + np.asarray(sv, np.float64) * z
    return _sampled(values, dt, m, s)


def poisson(input: Any, generator: Any = None) -> Tensor:  # noqa: A002 (torch's name)
    """Poisson samples with the rates ``input`` (a float Tensor, rates >= 0), in its
    shape and dtype."""
    rates = _float_tensor("poisson", "input", input)
    r = np.asarray(rates.data, np.float64)
    if np.any(r < 0) or np.any(np.isnan(r)):
        raise ValueError("poisson: the rates in input must be >= 0")
    rng = _random.generator(generator, "poisson")
    return _sampled(rng.poisson(r), rates.data.dtype, rates)


def bernoulli(input: Any, p: Any = None, *, generator: Any = None) -> Tensor:  # noqa: A002
    """1 with probability ``input`` (each element, in [0, 1]), else 0, in ``input``'s
    shape and dtype; with a number ``p``, that probability everywhere."""
    fn = "bernoulli"
    T = tensor_type()
    if not isinstance(input, T):
        raise TypeError(f"{fn}: input must be a Tensor, got {type(input).__name__}")
    if p is None:
        if input.data.dtype.kind != "f":
            raise TypeError(f"{fn}: input of dtype {input.data.dtype} holds probabilities: "
                            "it must be a float Tensor")
        pr = np.asarray(input.data, np.float64)
        where = "input"
    else:
        if isinstance(p, bool) or not isinstance(p, Real):
            raise TypeError(f"{fn}: p={p!r} must be a number")
        pr = np.full(input.shape, float(p))
        where = f"p={p!r}"
    if np.any(~((pr >= 0) & (pr <= 1))):
        raise ValueError(f"{fn}: the probabilities in {where} must be in [0, 1]")
    rng = _random.generator(generator, fn)
    draws = rng.random(pr.shape) < pr
    return _sampled(draws, input.data.dtype, input if input.data.dtype.kind == "f" else None)


class SamplingMethodsMixin:
    """``bernoulli`` as a Tensor method."""

    __slots__ = ()

    def bernoulli(self, p: Any = None, *, generator: Any = None) -> Tensor:
        """See :func:`bernoulli`."""
        return bernoulli(self, p, generator=generator)
