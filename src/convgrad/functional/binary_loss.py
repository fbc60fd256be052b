"""Binary cross-entropy on probabilities and on logits, with torch's semantics.

``binary_cross_entropy`` clamps each log at -100 (so a certain wrong answer costs 100,
not infinity) and its gradient is torch's ``(x - t) / max(x (1 - x), 1e-12)``; both are
one :class:`Function` with the rule in Tensor operations.  The logits form is one
Function too (``max(x, 0) - x t + log1p(exp(-|x|))``, stable for any logit); with a
``pos_weight`` it is composed of ``logsigmoid`` and differentiable ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor
from ..tensor.loss import BinaryCrossEntropy, BinaryCrossEntropyWithLogits
from .loss import reduce_loss, reduction_arg
from .smooth_activation import logsigmoid

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits"]


def _same_shape(fn: str, input: Tensor, target: Tensor) -> None:
    if input.shape != target.shape:
        raise ValueError(f"{fn}: target shape {target.shape} must equal the input shape "
                         f"{input.shape}")


def _broadcast_weight(fn: str, name: str, weight: Any, shape: tuple) -> Any:
    if weight is None:
        return None
    w = as_tensor(weight)
    try:
        np.broadcast_shapes(w.shape, shape)
    except ValueError:
        raise ValueError(f"{fn}: {name} of shape {w.shape} does not broadcast to the input "
                         f"shape {shape}") from None
    return w


def binary_cross_entropy(input: Any, target: Any, weight: Any = None, size_average: Any = None,
                         reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``-weight (t log x + (1 - t) log(1 - x))`` for probabilities ``x`` in [0, 1]."""
    fn = "binary_cross_entropy"
    reduction = reduction_arg(fn, size_average, reduce, reduction)
    x, t = as_tensor(input), as_tensor(target)
    _same_shape(fn, x, t)
    if x.data.size and not (np.all(x.data >= 0) and np.all(x.data <= 1)):
        raise ValueError(f"{fn}: every element of the input must lie in [0, 1] (they are "
                         f"probabilities), got values in [{x.data.min()}, {x.data.max()}]")
    w = _broadcast_weight(fn, "weight", weight, x.shape)
    loss = BinaryCrossEntropy.apply(x, t)
    return reduce_loss(loss if w is None else loss * w, reduction)


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None,
                                     size_average: Any = None, reduce: Any = None,
                                     reduction: str = "mean", pos_weight: Any = None) -> Tensor:
    """Binary cross-entropy of ``sigmoid(input)``, computed stably from the logits:
    ``(1 - t) x - (1 + (pos_weight - 1) t) log(sigmoid(x))``, times ``weight``.

    ``pos_weight`` (broadcast along the last dim, e.g. one per class) weighs the positive
    term.
    """
    fn = "binary_cross_entropy_with_logits"
    reduction = reduction_arg(fn, size_average, reduce, reduction)
    x, t = as_tensor(input), as_tensor(target)
    _same_shape(fn, x, t)
    w = _broadcast_weight(fn, "weight", weight, x.shape)
    pw = _broadcast_weight(fn, "pos_weight", pos_weight, x.shape)
    if pw is None:
        loss = BinaryCrossEntropyWithLogits.apply(x, t)
    else:
        loss = (1.0 - t) * x - ((pw - 1.0) * t + 1.0) * logsigmoid(x)
    return reduce_loss(loss if w is None else loss * w, reduction)
