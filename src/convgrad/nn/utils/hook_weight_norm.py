"""The older, hook-style weight normalisation (torch's ``torch.nn.utils.weight_norm``):
parameters ``<name>_g`` and ``<name>_v``, and a forward pre-hook that recomputes
``module.<name> = g * v / ||v||`` before each call."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..module import Module, Parameter
from .norm_helpers import norm_except_dim

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]


class WeightNorm:
    """The forward pre-hook of :func:`weight_norm` for one tensor name."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = dim

    def compute_weight(self, module: Module) -> Any:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, self.dim))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def _hooks_of(module: Module) -> dict:
    return module.__dict__.get("_forward_pre_hooks") or {}


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split ``module.<name>`` into a magnitude ``<name>_g`` (the norm over every dim but
    ``dim``; over all of it when ``dim`` is None) and a direction ``<name>_v``, recombined
    by a forward pre-hook.  Returns ``module``."""
    fn = "weight_norm"
    if not isinstance(module, Module):
        raise TypeError(f"{fn}: module must be a Module, got {type(module).__name__}")
    for hook in _hooks_of(module).values():
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise RuntimeError(f"{fn}: cannot register two weight_norm hooks on the same "
                               f"parameter {name!r}")
    weight = module._parameters.get(name) if isinstance(name, str) else None
    if weight is None:
        raise ValueError(f"{fn}: module {type(module).__name__} has no parameter named "
                         f"{name!r}")
    if dim is None:
        dim = -1
    elif isinstance(dim, bool) or not isinstance(dim, int) or not -weight.ndim <= dim < max(
            weight.ndim, 1):
        raise ValueError(f"{fn}: dim={dim!r} must be None or an int in "
                         f"[{-weight.ndim}, {weight.ndim - 1}]")
    hook = WeightNorm(name, dim)
    del module._parameters[name]
    g = norm_except_dim(weight.detach(), dim)
    module.register_parameter(name + "_g", Parameter(np.array(g.data, copy=True)))
    module.register_parameter(name + "_v", Parameter(np.array(weight.data, copy=True)))
    setattr(module, name, hook.compute_weight(module))
    module.register_forward_pre_hook(hook)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``module.<name>`` becomes a Parameter holding the current
    ``g * v / ||v||``.  Returns ``module``."""
    hooks = _hooks_of(module) if isinstance(module, Module) else {}
    for key, hook in list(hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            weight = hook.compute_weight(module)
            module.__dict__.pop(name, None)
            del module._parameters[name + "_g"]
            del module._parameters[name + "_v"]
            module.register_parameter(name, Parameter(np.array(weight.data, copy=True)))
            del hooks[key]
            return module
    raise ValueError(f"remove_weight_norm: weight_norm of {name!r} not found in "
                     f"{type(module).__name__}")
