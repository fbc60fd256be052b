"""Optimisers with PyTorch's update rules, and ``lr_scheduler`` (learning-rate schedules)."""

from __future__ import annotations

from . import lr_scheduler
from .adadelta import Adadelta
from .adam import Adam, AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Adadelta", "Adam", "AdamW", "LBFGS", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
