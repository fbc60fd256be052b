"""``TripletMarginWithDistanceLoss``: the layer form of
:func:`convgrad.functional.triplet_margin_with_distance_loss`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..functional.triplet_distance_loss import triplet_margin_with_distance_loss
from ..tensor import Tensor
from ..tensor.args import number as _real
from .embedding import PairwiseDistance
from .loss import _Loss

__all__ = ["TripletMarginWithDistanceLoss"]


class TripletMarginWithDistanceLoss(_Loss):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))``, reduced; ``d`` is
    ``distance_function`` (a ``PairwiseDistance()`` child module when None, as torch)."""

    def __init__(self, *, distance_function: Callable | None = None, margin: float = 1.0,
                 swap: bool = False, reduction: str = "mean") -> None:
        fn = "TripletMarginWithDistanceLoss"
        super().__init__(reduction=reduction)
        if distance_function is not None and not callable(distance_function):
            raise TypeError(f"{fn}: distance_function={distance_function!r} must be "
                            "callable or None")
        if _real(fn, "margin", margin) <= 0:
            raise ValueError(f"{fn}: margin={margin!r} must be > 0")
        if not isinstance(swap, bool):
            raise TypeError(f"{fn}: swap={swap!r} must be a bool")
        self.distance_function = (distance_function if distance_function is not None
                                  else PairwiseDistance())
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Any, positive: Any, negative: Any) -> Tensor:
        return triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)
