"""``linear``: torch's ``F.linear``, ``input W^T + bias``, one node where W is 2-d
(:class:`..tensor.linear.Linear`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from ..tensor.linear import Linear
from .layer_input import layer_input, layer_weight

__all__ = ["linear"]


def linear(input: Any, weight: Any, bias: Any = None) -> Tensor:  # noqa: A002 (torch's name)
    """``input W^T + bias`` over the last dim of ``input`` (``(*, in_features)``):
    ``weight`` ``(out_features, in_features)`` (or ``(in_features,)``, which drops the
    output dim), ``bias`` ``(out_features,)``, broadcastable to it, or None."""
    fn = "linear"
    w = weight if isinstance(weight, Tensor) else None
    x = layer_input(fn, input, w)
    w = layer_weight(fn, weight, x)
    if x.ndim == 0:
        raise ValueError(f"{fn}: input must have at least 1 dim, got a 0-d input")
    if w.ndim not in (1, 2):
        raise ValueError(f"{fn}: weight of shape {tuple(w.shape)} must be 2-d (out_features, "
                         "in_features) or 1-d (in_features,)")
    if x.shape[-1] != w.shape[-1]:
        raise ValueError(f"{fn}: input of shape {tuple(x.shape)} must end with in_features="
                         f"{w.shape[-1]}, weight's last dim (weight shape {tuple(w.shape)})")
    b = None if bias is None else layer_weight(fn, bias, x, "bias")
    if b is not None and b.dtype != x.dtype:
        raise TypeError(f"{fn}: bias has dtype {b.dtype} but input has dtype {x.dtype}; "
                        "expected the same dtype")
    out = w.shape[0] if w.ndim == 2 else None
    if w.ndim == 1 or (b is not None and tuple(b.shape) != (out,)):
        y = x @ w.T if w.ndim == 2 else x @ w  # torch's broadcasting of an odd bias
        if b is not None:
            shape = tuple(y.shape)
            try:
                if np.broadcast_shapes(tuple(b.shape), shape) != shape:
                    raise ValueError
            except ValueError:
                raise ValueError(f"{fn}: bias of shape {tuple(b.shape)} does not broadcast "
                                 f"to the output's shape {shape}") from None
            y = y + b
        return y
    return Linear.apply(x, w, b)
