"""The older, hook-style spectral normalisation (torch's ``torch.nn.utils.spectral_norm``):
the parameter ``<name>_orig``, buffers ``<name>_u`` and ``<name>_v``, and a forward
pre-hook that sets ``module.<name> = W / sigma(W)`` before each call (one power-iteration
step per call in training mode)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...random import default_generator
from ...tensor import Tensor
from ..conv import _ConvTranspose
from ..module import Module, Parameter
from .norm_helpers import check_power_args, normalized, reshape_to_matrix

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]


class SpectralNorm:
    """The forward pre-hook of :func:`spectral_norm` for one tensor name."""

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        self.name = name
        self.n_power_iterations = n_power_iterations
        self.dim = dim
        self.eps = eps

    def _matrix(self, w: Tensor) -> Tensor:
        if self.dim != 0:
            w = w.permute(self.dim, *[d for d in range(w.ndim) if d != self.dim])
        return w.reshape(w.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = module._buffers[self.name + "_u"]
        v = module._buffers[self.name + "_v"]
        if do_power_iteration:
            mat = reshape_to_matrix(weight.data, self.dim)
            for _ in range(self.n_power_iterations):
                v[...] = normalized(mat.conj().T @ u, self.eps)
                u[...] = normalized(mat @ v, self.eps)
        sigma = Tensor._wrap(u.copy()).dot(self._matrix(weight).mv(Tensor._wrap(v.copy())))
        return weight / sigma

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))


def _hooks_of(module: Module) -> dict:
    return module.__dict__.get("_forward_pre_hooks") or {}


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Normalise ``module.<name>`` by its largest singular value before every call (buffers
    ``<name>_u``, ``<name>_v`` drawn at random and normalised; ``dim`` defaults to 1 for
    transposed convolutions, else 0).  Returns ``module``."""
    fn = "spectral_norm"
    if not isinstance(module, Module):
        raise TypeError(f"{fn}: module must be a Module, got {type(module).__name__}")
    for hook in _hooks_of(module).values():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            raise RuntimeError(f"{fn}: cannot register two spectral_norm hooks on the same "
                               f"parameter {name!r}")
    check_power_args(fn, n_power_iterations, eps)
    weight = module._parameters.get(name) if isinstance(name, str) else None
    if weight is None:
        raise ValueError(f"{fn}: module {type(module).__name__} has no parameter named "
                         f"{name!r}")
    if dim is None:
        dim = 1 if isinstance(module, _ConvTranspose) else 0
    if isinstance(dim, bool) or not isinstance(dim, int) or not -weight.ndim <= dim < max(
            weight.ndim, 1):
        raise ValueError(f"{fn}: dim={dim!r} must be None or an int in "
                         f"[{-weight.ndim}, {weight.ndim - 1}]")
    dim = dim % max(weight.ndim, 1)
    hook = SpectralNorm(name, n_power_iterations, dim, eps)
    mat = reshape_to_matrix(weight.data, dim)
    h, w = mat.shape
    rng = default_generator()
    u = normalized(rng.standard_normal(h).astype(mat.dtype), eps)
    v = normalized(rng.standard_normal(w).astype(mat.dtype), eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, Tensor._wrap(weight.data.copy()))
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(hook)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`spectral_norm`: ``module.<name>`` becomes a Parameter holding the
    current ``W / sigma`` (no power iteration).  Returns ``module``."""
    hooks = _hooks_of(module) if isinstance(module, Module) else {}
    for key, hook in list(hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            weight = hook.compute_weight(module, do_power_iteration=False)
            module.__dict__.pop(name, None)
            del module._parameters[name + "_orig"]
            del module._buffers[name + "_u"]
            del module._buffers[name + "_v"]
            module.register_parameter(name, Parameter(np.array(weight.data, copy=True)))
            del hooks[key]
            return module
    raise ValueError(f"remove_spectral_norm: spectral_norm of {name!r} not found in "
                     f"{type(module).__name__}")
