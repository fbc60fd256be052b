"""``linear``: torch's ``F.linear``, ``input W^T + bias``, one node where W is 2-d
(:class:`..tensor.linear.Linear`); ``bilinear``, ``x1^T W x2 + bias``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from ..tensor.linear import Linear
from ..tensor.operands import widened
from .layer_input import layer_input, layer_weight

__all__ = ["bilinear", "linear"]


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


def bilinear(input1: Any, input2: Any, weight: Any, bias: Any = None) -> Tensor:
    """``y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``
    (torch's ``F.bilinear``): inputs ``(*, in1)`` and ``(*, in2)`` with the same leading
    dims, ``weight`` ``(out, in1, in2)``, ``bias`` ``(out,)`` or None.  One matrix
    product (``t = x1 W`` over in1) and a sum over in2; float32 operands are evaluated in
    float64 and rounded once (in float32 the input1 gradient's products ``g x2``, each
    rounded before a sum over out x in2 terms, gave 2.6x torch's error)."""
    fn = "bilinear"
    w = weight if isinstance(weight, Tensor) else None
    x1 = layer_input(fn, input1, w, "input1")
    x2 = layer_input(fn, input2, w, "input2")
    w = layer_weight(fn, weight, x1)
    if w.ndim != 3:
        raise ValueError(f"{fn}: weight of shape {tuple(w.shape)} must be 3-d (out_features, "
                         "in1_features, in2_features)")
    if x1.ndim == 0 or tuple(x1.shape[:-1]) != tuple(x2.shape[:-1]):
        raise ValueError(f"{fn}: input1 {tuple(x1.shape)} and input2 {tuple(x2.shape)} must "
                         "share their leading dims")
    out, in1, in2 = w.shape
    if x1.shape[-1] != in1 or x2.shape[-1] != in2:
        raise ValueError(f"{fn}: input1 {tuple(x1.shape)} and input2 {tuple(x2.shape)} must "
                         f"end with in1_features={in1} and in2_features={in2}")
    b = None if bias is None else layer_weight(fn, bias, x1, "bias")
    lead = tuple(x1.shape[:-1])
    parts, single = widened(x1, x2, w, *(() if b is None else (b,)))
    a, c, wd = parts[0].reshape(-1, in1), parts[1].reshape(-1, in2), parts[2]
    t = (a @ wd.permute(1, 0, 2).reshape(in1, out * in2)).reshape(-1, out, in2)
    y = (t * c.unsqueeze(1)).sum(-1)
    if b is not None:
        y = y + parts[3]
    y = y.reshape(*lead, out)
    return y.float() if single else y
