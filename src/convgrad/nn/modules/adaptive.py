"""torch.nn.modules.adaptive's names, for scripts that import them from there."""

from __future__ import annotations

from ..adaptive_softmax import AdaptiveLogSoftmaxWithLoss

__all__ = ["AdaptiveLogSoftmaxWithLoss"]
