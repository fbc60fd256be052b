"""Margin, embedding and count loss layers with ``torch.nn``'s constructor arguments:
``MarginRankingLoss``, ``HingeEmbeddingLoss``, ``SoftMarginLoss``, ``CosineEmbeddingLoss``,
``TripletMarginLoss``, ``MultiLabelSoftMarginLoss``, ``PoissonNLLLoss``,
``GaussianNLLLoss`` (see
:mod:`convgrad.functional.margin_loss`), and ``CTCLoss`` (:mod:`convgrad.functional.ctc_loss`)."""

from __future__ import annotations

from typing import Any

from ..functional import margin_loss as Fm
from ..functional.ctc_loss import ctc_loss
from ..tensor import Tensor
from .loss import _Loss, _WeightedLoss

__all__ = ["CTCLoss", "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss",
           "MarginRankingLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
           "MultiMarginLoss", "PoissonNLLLoss",
           "SoftMarginLoss", "TripletMarginLoss"]


class _MarginLoss(_Loss):
    def __init__(self, margin: float, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class MarginRankingLoss(_MarginLoss):
    def __init__(self, margin: float = 0.0, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input1: Any, input2: Any, target: Any) -> Tensor:
        return Fm.margin_ranking_loss(input1, input2, target, self.margin,
                                      reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    def __init__(self, margin: float = 1.0, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input: Any, target: Any) -> Tensor:  # noqa: A002
        return Fm.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    def forward(self, input: Any, target: Any) -> Tensor:  # noqa: A002
        return Fm.soft_margin_loss(input, target, reduction=self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    def __init__(self, margin: float = 0.0, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input1: Any, input2: Any, target: Any) -> Tensor:
        return Fm.cosine_embedding_loss(input1, input2, target, self.margin,
                                        reduction=self.reduction)


class TripletMarginLoss(_MarginLoss):
    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)
        self.p, self.eps, self.swap = p, eps, swap

    def forward(self, anchor: Any, positive: Any, negative: Any) -> Tensor:
        return Fm.triplet_margin_loss(anchor, positive, negative, self.margin, self.p,
                                      self.eps, self.swap, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    def forward(self, input: Any, target: Any) -> Tensor:  # noqa: A002
        return Fm.multilabel_soft_margin_loss(input, target, self.weight,
                                              reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    def forward(self, input: Any, target: Any) -> Tensor:  # noqa: A002
        return Fm.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    def __init__(self, p: int = 1, margin: float = 1.0, weight: Any = None,
                 size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2) or isinstance(p, bool):
            raise ValueError(f"MultiMarginLoss: p={p!r} must be 1 or 2")
        self.p, self.margin = p, margin

    def forward(self, input: Any, target: Any) -> Tensor:  # noqa: A002
        return Fm.multi_margin_loss(input, target, self.p, self.margin, self.weight,
                                    reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    def __init__(self, log_input: bool = True, full: bool = False, size_average: Any = None,
                 eps: float = 1e-8, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Any, target: Any) -> Tensor:
        return Fm.poisson_nll_loss(log_input, target, self.log_input, self.full,
                                   eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full: bool = False, eps: float = 1e-6,
                 reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Any, target: Any, var: Any) -> Tensor:  # noqa: A002
        return Fm.gaussian_nll_loss(input, target, var, self.full, self.eps,
                                    reduction=self.reduction)


class CTCLoss(_Loss):
    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(None, None, reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Any, targets: Any, input_lengths: Any,
                target_lengths: Any) -> Tensor:
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                        self.reduction, self.zero_infinity)
