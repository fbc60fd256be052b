"""``convgrad.functional``: the user-facing vocabulary (PyTorch's names and semantics)."""

from __future__ import annotations

from .activation import leaky_relu, log_softmax, relu, sigmoid, softmax, tanh
from .conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_general,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from .loss import cross_entropy, l1_loss, mse_loss
from .padding import pad
from .pooling import avg_pool2d, max_pool2d

__all__ = [
    "conv_general", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "relu", "leaky_relu", "sigmoid", "tanh", "softmax", "log_softmax",
    "pad", "avg_pool2d", "max_pool2d", "mse_loss", "l1_loss", "cross_entropy",
]
