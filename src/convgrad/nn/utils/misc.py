"""Small module utilities of torch's ``torch.nn.utils``: ``skip_init``, the deprecated
``clip_grad_norm``, and ``convert_conv2d_weight_memory_format`` /
``convert_conv3d_weight_memory_format``."""

from __future__ import annotations

import warnings
from typing import Any

from ...tensor import Tensor
from ...tensor import memory_format as _mf
from ..conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from .clip_grad import clip_grad_norm_

__all__ = ["clip_grad_norm", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format", "skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Module:
    """``module_cls(*args, **kwargs)``, its parameters and buffers to be overwritten by
    the caller (torch leaves them uninitialised; here they hold the usual initial values,
    which is one of the allowed contents of uninitialised memory)."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise TypeError(f"skip_init: module_cls must be a Module subclass, got {module_cls!r}")
    device = kwargs.pop("device", None)
    if device not in (None, "cpu"):
        raise ValueError(f"skip_init: device={device!r}; convgrad runs on the CPU only")
    return module_cls(*args, **kwargs)


def clip_grad_norm(parameters: Any, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: Any = None) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_` (warns FutureWarning, as torch;
    ``foreach`` changes nothing here)."""
    warnings.warn("`convgrad.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`convgrad.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)


def _convert(fn: str, module: Module, memory_format: Any, classes: tuple) -> Module:
    if not isinstance(module, Module):
        raise TypeError(f"{fn}: module must be a Module, got {type(module).__name__}")
    fmt = _mf.check_format(fn, memory_format)
    for m in module.modules():
        if isinstance(m, classes):
            p = m._parameters.get("weight")
            if p is not None and p.data.ndim in (4, 5):
                _mf.check_rank(fmt, p.data.ndim)
                p.data = Tensor._wrap(p.data).contiguous(memory_format=fmt).data
    return module


def convert_conv2d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """Relay out the weight of every ``Conv2d``/``ConvTranspose2d`` in ``module`` in
    ``memory_format`` (``cg.channels_last``, ``cg.contiguous_format``); returns
    ``module``."""
    return _convert("convert_conv2d_weight_memory_format", module, memory_format,
                    (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """Relay out the weight of every ``Conv3d``/``ConvTranspose3d`` in ``module`` in
    ``memory_format`` (``cg.channels_last_3d``, ``cg.contiguous_format``); returns
    ``module``."""
    return _convert("convert_conv3d_weight_memory_format", module, memory_format,
                    (Conv3d, ConvTranspose3d))
