"""torch.nn.modules.loss's names, for scripts that import them from there."""

from __future__ import annotations

from ..loss import *  # noqa: F403 (every loss layer, under torch's path)
from ..loss import __all__ as _losses
from ..loss import _Loss, _WeightedLoss
from ..margin_loss import *  # noqa: F403
from ..margin_loss import __all__ as _margin_losses
from ..triplet_distance_loss import TripletMarginWithDistanceLoss

__all__ = ["_Loss", "_WeightedLoss", *_losses, *_margin_losses, "TripletMarginWithDistanceLoss"]
