"""PyTorch's module paths (``torch.nn.modules.conv.Conv2d``,
``torch.nn.modules.batchnorm._BatchNorm``, ...), each a re-export of ``convgrad.nn``'s
own classes: scripts that name a layer by its torch path (an ``isinstance`` check in an
initialiser, a ``safe_globals`` list) run with only their imports changed."""

from __future__ import annotations

from . import (  # noqa: F401
    activation,
    adaptive,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    lazy,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)
from .module import Module

__all__ = ["Module", "activation", "adaptive", "batchnorm", "channelshuffle", "container", "conv",
           "distance",
           "dropout", "flatten", "fold", "instancenorm", "linear", "loss", "module",
           "normalization", "padding", "pixelshuffle", "pooling", "rnn", "sparse", "transformer",
           "upsampling"]
