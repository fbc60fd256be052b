"""torch.nn.modules.activation's names, for scripts that import them from there."""

from __future__ import annotations

from ..activation import *  # noqa: F403 (every activation layer, under torch's path)
from ..activation import __all__ as _activations
from ..attention import MultiheadAttention
from ..layers import LeakyReLU, ReLU, Sigmoid, Tanh

__all__ = ["ReLU", "LeakyReLU", "Sigmoid", "Tanh", "MultiheadAttention", *_activations]
