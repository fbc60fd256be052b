"""What weight normalisation and spectral normalisation share (the parametrizations and
the hook-style forms): the norm over all dims but one, a weight as a matrix, a vector
normalised on ndarrays, and the argument checks."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...tensor import Tensor

__all__ = ["check_power_args", "norm_except_dim", "normalized", "reshape_to_matrix"]


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim``, shaped to broadcast against ``v``
    (torch's ``norm_except_dim``); ``dim == -1`` is the norm of all of ``v`` (a scalar)."""
    if dim == -1:
        return v.norm()
    d = dim % v.ndim
    others = tuple(i for i in range(v.ndim) if i != d)
    if not others:
        return v.abs()
    return v.norm(dim=others, keepdim=True)


def reshape_to_matrix(w: np.ndarray, dim: int) -> np.ndarray:
    """``w`` with ``dim`` moved first, flattened to ``(w.shape[dim], -1)``."""
    if dim != 0:
        w = np.moveaxis(w, dim, 0)
    return w.reshape(w.shape[0], -1)


def normalized(x: np.ndarray, eps: float) -> np.ndarray:
    """``x / max(||x||, eps)`` (``F.normalize`` of a vector), in ``x``'s dtype."""
    return (x / max(np.linalg.norm(x), eps)).astype(x.dtype, copy=False)


def check_power_args(fn: str, n_power_iterations: Any, eps: Any) -> None:
    if isinstance(n_power_iterations, bool) or not isinstance(n_power_iterations, int):
        raise TypeError(f"{fn}: n_power_iterations={n_power_iterations!r} must be an int")
    if n_power_iterations <= 0:
        raise ValueError(f"{fn}: n_power_iterations={n_power_iterations} must be positive")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or eps <= 0:
        raise ValueError(f"{fn}: eps={eps!r} must be a positive number")
