"""Ready-made parametrizations (torch's ``torch.nn.utils.parametrizations``):
``weight_norm`` (``w = g * v / ||v||``), ``spectral_norm`` (``w = W / sigma(W)``, sigma
by power iteration) and ``orthogonal`` (:mod:`.orthogonal`), each registered through
:mod:`.parametrize`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd import no_grad
from ...random import default_generator
from ...tensor import Tensor
from ..conv import _ConvTranspose
from ..module import Module
from . import parametrize
from .norm_helpers import check_power_args, norm_except_dim, normalized, reshape_to_matrix
from .orthogonal import orthogonal

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    """``original0`` is g (the norms), ``original1`` is v (the direction)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, self.dim), weight


def _tensor_named(fn: str, module: Any, name: Any) -> Tensor:
    if not isinstance(module, Module):
        raise TypeError(f"{fn}: module must be a Module, got {type(module).__name__}")
    if not isinstance(name, str):
        raise TypeError(f"{fn}: name must be a str, got {type(name).__name__}")
    value = getattr(module, name, None)
    if isinstance(value, np.ndarray):
        value = Tensor._wrap(value)
    if not isinstance(value, Tensor):
        raise ValueError(f"{fn}: module {type(module).__name__} has no parameter or buffer "
                         f"named {name!r}")
    return value


def _check_dim(fn: str, dim: Any, ndim: int, allow_none: bool) -> None:
    if dim is None and allow_none:
        return
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{fn}: dim={dim!r} must be an int{' or None' if allow_none else ''}")
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise ValueError(f"{fn}: dim={dim} is out of range for a {ndim}-d weight (expected "
                         f"in [{-max(ndim, 1)}, {max(ndim, 1) - 1}])")


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` with the norm over every dim but
    ``dim`` (over all of it when ``dim`` is None): ``original0`` is g, ``original1`` is v.
    Returns ``module``."""
    fn = "weight_norm"
    weight = _tensor_named(fn, module, name)
    _check_dim(fn, dim, weight.ndim, allow_none=True)
    parametrize.register_parametrization(module, name, _WeightNorm(-1 if dim is None else dim),
                                         unsafe=True)
    return module


class _SpectralNorm(Module):
    """``W / sigma``: sigma is W's largest singular value estimated by power iteration on
    the buffers ``_u`` and ``_v`` (updated in training mode only)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = reshape_to_matrix(weight.data, self.dim)
            h, w = mat.shape
            rng = default_generator()
            u = rng.standard_normal(h).astype(mat.dtype)
            v = rng.standard_normal(w).astype(mat.dtype)
            self.register_buffer("_u", normalized(u, eps))
            self.register_buffer("_v", normalized(v, eps))
            self._power_method(mat, 15)

    def _power_method(self, mat: np.ndarray, n_power_iterations: int) -> None:
        for _ in range(n_power_iterations):
            self._u[...] = normalized(mat @ self._v, self.eps)
            self._v[...] = normalized(mat.conj().T @ self._u, self.eps)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            from ...functional import normalize

            return normalize(weight, dim=0, eps=self.eps)
        mat = weight
        if self.dim != 0:
            mat = mat.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        mat = mat.reshape(mat.shape[0], -1)
        if self.training:
            with no_grad():
                self._power_method(reshape_to_matrix(weight.data, self.dim),
                                   self.n_power_iterations)
        u = Tensor._wrap(self._u.copy())
        v = Tensor._wrap(self._v.copy())
        sigma = u.vdot(mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Reparametrize ``module.<name>`` as ``W / sigma(W)`` (torch's parametrization: buffers
    ``parametrizations.<name>.0._u`` and ``._v``; ``dim`` defaults to 1 for transposed
    convolutions, else 0).  Returns ``module``."""
    fn = "spectral_norm"
    weight = _tensor_named(fn, module, name)
    check_power_args(fn, n_power_iterations, eps)
    _check_dim(fn, dim, weight.ndim, allow_none=True)
    if dim is None:
        dim = 1 if isinstance(module, _ConvTranspose) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
