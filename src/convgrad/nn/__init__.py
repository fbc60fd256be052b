"""``convgrad.nn``: modules, parameters and layers with PyTorch's names and defaults."""

from __future__ import annotations

from . import init, utils
from .containers import ModuleDict, ModuleList
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
from .module import Module, Parameter, Sequential
from .state import IncompatibleKeys

__all__ = [
    "init", "Module", "Parameter", "Sequential", "IncompatibleKeys",
    "utils", "ModuleList", "ModuleDict",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "Linear", "Identity", "ReLU", "LeakyReLU", "Sigmoid", "Tanh", "Flatten", "MaxPool2d",
    "AvgPool2d", "Upsample",
]
