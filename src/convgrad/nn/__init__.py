"""``convgrad.nn``: modules, parameters and layers with PyTorch's names and defaults."""

from __future__ import annotations

from . import init
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .layers import (
    AvgPool2d,
    Flatten,
    Identity,
    LeakyReLU,
    Linear,
    MaxPool2d,
    ReLU,
    Sigmoid,
    Tanh,
    Upsample,
)
from .module import IncompatibleKeys, Module, Parameter, Sequential

__all__ = [
    "init", "Module", "Parameter", "Sequential", "IncompatibleKeys",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "Linear", "Identity", "ReLU", "LeakyReLU", "Sigmoid", "Tanh", "Flatten", "MaxPool2d",
    "AvgPool2d", "Upsample",
]
