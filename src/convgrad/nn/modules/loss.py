"""torch.nn.modules.loss's names, for scripts that import them from there."""

from __future__ import annotations

from ..loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
    _Loss,
    _WeightedLoss,
)

__all__ = ["_Loss", "_WeightedLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss",
           "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss"]
