"""torch.nn.modules.activation's names, for scripts that import them from there."""

from __future__ import annotations

from ..activation import ELU, GELU, Hardswish, Hardtanh, Mish, PReLU, ReLU6, SiLU, Softmax, Softplus
from ..layers import LeakyReLU, ReLU, Sigmoid, Tanh

__all__ = ["ReLU", "LeakyReLU", "Sigmoid", "Tanh", "GELU", "SiLU", "ELU", "Softplus", "Softmax",
           "Hardtanh", "ReLU6", "Hardswish", "Mish", "PReLU"]
