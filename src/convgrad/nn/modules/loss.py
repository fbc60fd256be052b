"""torch.nn.modules.loss's names, for scripts that import them from there."""

from __future__ import annotations

from ..loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
    _Loss,
    _WeightedLoss,
)
from ..margin_loss import (
    CosineEmbeddingLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    MarginRankingLoss,
    MultiLabelSoftMarginLoss,
    PoissonNLLLoss,
    SoftMarginLoss,
    TripletMarginLoss,
)

__all__ = ["_Loss", "_WeightedLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss",
           "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "MarginRankingLoss",
           "HingeEmbeddingLoss", "SoftMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
           "MultiLabelSoftMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss"]
