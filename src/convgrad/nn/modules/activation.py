"""torch.nn.modules.activation's names, for scripts that import them from there."""

from __future__ import annotations

from ..activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU6,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from ..layers import LeakyReLU, ReLU, Sigmoid, Tanh

__all__ = ["ReLU", "LeakyReLU", "Sigmoid", "Tanh", "GELU", "SiLU", "ELU", "Softplus", "Softmax",
           "Hardtanh", "ReLU6", "Hardswish", "Mish", "PReLU", "SELU", "CELU", "Softsign",
           "Tanhshrink", "LogSigmoid", "GLU", "Hardsigmoid", "Threshold", "Hardshrink",
           "Softshrink", "Softmin", "LogSoftmax", "Softmax2d"]
