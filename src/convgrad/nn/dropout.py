"""Dropout layers: ``Dropout`` and ``Dropout1d/2d/3d`` (scaled in training, identity in
evaluation; masks from the library's generator, which ``manual_seed`` seeds), and SELU's
``AlphaDropout`` and ``FeatureAlphaDropout``."""

from __future__ import annotations

from typing import Any

from ..functional.dropout import (
    _probability,
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from ..tensor import Tensor
from .module import Module

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        _probability(type(self).__name__, p)
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training, scaling the rest by 1/(1-p)."""

    def forward(self, input: Any) -> Tensor:
        return dropout(input, self.p, self.training)


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` input in training."""

    def forward(self, input: Any) -> Tensor:
        return dropout1d(input, self.p, self.training)


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)`` input in training."""

    def forward(self, input: Any) -> Tensor:
        return dropout2d(input, self.p, self.training)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input in training."""

    def forward(self, input: Any) -> Tensor:
        return dropout3d(input, self.p, self.training)


class AlphaDropout(_DropoutNd):
    """SELU's dropout in training (:func:`..functional.dropout.alpha_dropout`)."""

    def forward(self, input: Any) -> Tensor:
        return alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """SELU's dropout of whole channels in training."""

    def forward(self, input: Any) -> Tensor:
        return feature_alpha_dropout(input, self.p, self.training)
