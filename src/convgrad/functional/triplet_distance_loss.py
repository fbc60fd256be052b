"""``triplet_margin_with_distance_loss``: the triplet margin loss with any distance
function (``pairwise_distance`` by default), as torch's, made of differentiable Tensor
operations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tensor import Tensor, as_tensor
from ..tensor.args import number as _real
from .distance import pairwise_distance
from .loss import reduce_loss, reduction_arg

__all__ = ["triplet_margin_with_distance_loss"]


def triplet_margin_with_distance_loss(anchor: Any, positive: Any, negative: Any, *,
                                      distance_function: Callable | None = None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with ``d`` the
    ``distance_function`` (``pairwise_distance`` when None), which maps two Tensors to
    their distances; ``swap``: the smaller of d(anchor, negative) and d(positive,
    negative) (torch's ``minimum``: a tie shares the gradient)."""
    fn = "triplet_margin_with_distance_loss"
    red = reduction_arg(fn, None, None, reduction)
    margin = _real(fn, "margin", margin)
    if margin <= 0:
        raise ValueError(f"{fn}: margin={margin!r} must be > 0")
    if not isinstance(swap, bool):
        raise TypeError(f"{fn}: swap={swap!r} must be a bool")
    if distance_function is not None and not callable(distance_function):
        raise TypeError(f"{fn}: distance_function={distance_function!r} must be callable "
                        "or None")
    a, pos, neg = (as_tensor(t) for t in (anchor, positive, negative))
    if not a.ndim == pos.ndim == neg.ndim:
        raise ValueError(f"{fn}: anchor, positive and negative must have the same number "
                         f"of dimensions, got {a.ndim}, {pos.ndim} and {neg.ndim}")
    d = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = as_tensor(d(a, pos)), as_tensor(d(a, neg))
    if swap:
        d_neg = d_neg.minimum(as_tensor(d(pos, neg)))
    return reduce_loss((margin + d_pos - d_neg).clamp(min=0.0), red)
