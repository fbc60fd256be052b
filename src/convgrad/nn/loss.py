"""Loss layers with ``torch.nn``'s constructor arguments: ``MSELoss``, ``L1Loss``,
``SmoothL1Loss``, ``HuberLoss``, ``CrossEntropyLoss``, ``NLLLoss``, ``BCELoss``,
``BCEWithLogitsLoss``, ``KLDivLoss``.  Class weights and ``pos_weight`` are buffers, as in torch."""

from __future__ import annotations

from typing import Any

from ..functional import binary_loss as Fb
from ..functional import loss as Fl
from ..ops import jit
from ..tensor import Tensor
from .module import Module

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss",
           "L1Loss", "MSELoss", "NLLLoss", "SmoothL1Loss"]


class _Loss(Module):
    def __init__(self, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = Fl.reduction_arg(type(self).__name__, size_average, reduce, reduction)


class _PointwiseLoss(_Loss):
    """A regression loss whose mean or sum runs as one compiled kernel each way."""

    def __init__(self, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        jit.warm_up("losses")  # a training script is being set up: the kernels load


class _WeightedLoss(_Loss):
    def __init__(self, weight: Any = None, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_PointwiseLoss):
    """Mean squared error (``reduction`` as :func:`convgrad.functional.mse_loss`)."""

    def forward(self, input: Any, target: Any) -> Tensor:
        return Fl.mse_loss(input, target, reduction=self.reduction)


class KLDivLoss(Module):
    """The Kullback-Leibler divergence (see :func:`convgrad.functional.kl_div`);
    ``reduction`` may be ``"batchmean"``."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__()
        if reduction == "batchmean" and size_average is None and reduce is None:
            self.reduction = reduction
        else:
            self.reduction = Fl.reduction_arg("KLDivLoss", size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Any, target: Any) -> Tensor:
        return Fl.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class L1Loss(_PointwiseLoss):
    """Mean absolute error."""

    def forward(self, input: Any, target: Any) -> Tensor:
        return Fl.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_PointwiseLoss):
    """Quadratic below ``beta``, linear above (see :func:`convgrad.functional.smooth_l1_loss`)."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Any, target: Any) -> Tensor:
        return Fl.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_PointwiseLoss):
    """Quadratic below ``delta``, ``delta``-scaled linear above."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Any, target: Any) -> Tensor:
        return Fl.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices given log-probabilities."""

    def __init__(self, weight: Any = None, size_average: Any = None, ignore_index: int = -100,
                 reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        jit.warm_up("softmax", "gather")  # a network is being built: its kernels load
        self.ignore_index = ignore_index

    def forward(self, input: Any, target: Any) -> Tensor:
        return Fl.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                           reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of logits against class indices or class probabilities."""

    def __init__(self, weight: Any = None, size_average: Any = None, ignore_index: int = -100,
                 reduce: Any = None, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        jit.warm_up("softmax", "gather")  # a network is being built: its kernels load
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Any, target: Any) -> Tensor:
        return Fl.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                                reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities."""

    def forward(self, input: Any, target: Any) -> Tensor:
        return Fb.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits, with optional ``weight`` and ``pos_weight``."""

    def __init__(self, weight: Any = None, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean", pos_weight: Any = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Any, target: Any) -> Tensor:
        return Fb.binary_cross_entropy_with_logits(input, target, self.weight,
                                                   reduction=self.reduction,
                                                   pos_weight=self.pos_weight)
