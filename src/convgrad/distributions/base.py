"""The ``Distribution`` base class of ``convgrad.distributions`` and the helpers its
families share: parameter conversion and broadcasting, ``sample_shape`` handling, the
library's generator and probability clamping."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import random as _random
from ..default_dtype import get_default_dtype
from ..tensor import Tensor, as_tensor

__all__ = ["Distribution"]


def _float(x: Any, like: Tensor | None = None) -> Tensor:
    """``x`` as a floating Tensor (integers take ``like``'s dtype or the default one)."""
    t = as_tensor(x)
    if t.data.dtype.kind != "f":
        t = t.to(like.data.dtype if like is not None else get_default_dtype())
    return t


def _params(cls: str, **values: Any) -> tuple:
    """The named parameters as floating Tensors broadcast to one shape (torch's
    ``broadcast_all``); the shape is returned last.  Unbroadcastable shapes are a
    ValueError naming them."""
    first = next((as_tensor(v) for v in values.values() if isinstance(v, Tensor)
                  and as_tensor(v).data.dtype.kind == "f"), None)
    ts = [_float(v, first) for v in values.values()]
    try:
        shape = tuple(np.broadcast_shapes(*(tuple(t.shape) for t in ts)))
    except ValueError:
        got = ", ".join(f"{k}.shape={tuple(t.shape)}" for k, t in zip(values, ts))
        raise ValueError(f"{cls}: the parameters must broadcast to one shape; got {got}"
                         ) from None
    return (*[t if tuple(t.shape) == shape else t.expand(*shape) for t in ts], shape)


def _clamped(p: Tensor) -> Tensor:
    """Probabilities kept in [eps, 1 - eps] before a log (torch's ``clamp_probs``): a zero
    probability then has a finite logit, and no NaN reaches a gradient."""
    eps = float(np.finfo(p.data.dtype).eps)
    return p.clamp(eps, 1 - eps)


def _shape(sample_shape: Any) -> tuple:
    """``sample_shape`` (an int or a sequence of ints) as a tuple."""
    if isinstance(sample_shape, (int, np.integer)) and not isinstance(sample_shape, bool):
        return (int(sample_shape),)
    try:
        if isinstance(sample_shape, str):
            raise TypeError
        shape = tuple(int(s) for s in sample_shape)
    except (TypeError, ValueError):
        raise TypeError(f"sample_shape={sample_shape!r} must be an int or a sequence of "
                        "ints") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"sample_shape={sample_shape!r} must not be negative")
    return shape


def _rng(fn: str) -> np.random.Generator:
    """The library's generator (``cg.manual_seed``)."""
    return _random.generator(None, fn)


def _wrap(a: np.ndarray, dtype: Any) -> Tensor:
    return Tensor._wrap(np.asarray(a).astype(dtype, copy=False))


class Distribution:
    """What the distributions share: ``batch_shape``, ``event_shape``, ``sample`` without
    a gradient, ``rsample`` where the family is reparameterised, ``stddev`` and
    ``variance`` from each other."""

    batch_shape: tuple = ()
    event_shape: tuple = ()
    has_rsample = False

    def __init__(self, validate_args: Any = None) -> None:
        if validate_args:
            raise ValueError(f"{type(self).__name__}: validate_args=True is not supported; "
                             "pass None or False")

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape`` (no gradient)."""
        return self._draw(_shape(sample_shape)).detach()

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A reparameterised draw (differentiable in the parameters)."""
        if not self.has_rsample:
            raise NotImplementedError(f"{type(self).__name__} has no rsample "
                                      "(has_rsample is False); use sample")
        return self._draw(_shape(sample_shape))

    def _draw(self, shape: tuple) -> Tensor:
        raise NotImplementedError

    def _extended(self, shape: tuple) -> tuple:
        return shape + tuple(self.batch_shape) + tuple(self.event_shape)

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    @property
    def variance(self) -> Tensor:
        return self.stddev ** 2

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_shape={self.batch_shape})"
