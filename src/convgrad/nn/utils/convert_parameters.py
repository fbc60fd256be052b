"""All parameters as one flat vector, and back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ...tensor import Tensor, cat

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _params(fn: str, parameters: Any) -> list[Tensor]:
    if isinstance(parameters, Tensor) or not isinstance(parameters, Iterable):
        raise TypeError(f"{fn}: parameters must be an iterable of Tensors, got "
                        f"{type(parameters).__name__}")
    out = list(parameters)
    for i, p in enumerate(out):
        if not isinstance(p, Tensor):
            raise TypeError(f"{fn}: parameters[{i}] is a {type(p).__name__}, expected a Tensor")
    return out


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and joined, in order (differentiable w.r.t. each)."""
    params = _params("parameters_to_vector", parameters)
    if not params:
        raise ValueError("parameters_to_vector: parameters is empty")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Any, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters, in place (cast to each one's
    dtype); ``vec`` must hold exactly as many numbers as the parameters."""
    fn = "vector_to_parameters"
    if not isinstance(vec, Tensor):
        raise TypeError(f"{fn}: vec must be a Tensor, got {type(vec).__name__}")
    if vec.ndim != 1:
        raise ValueError(f"{fn}: vec must be 1-D, got shape {vec.shape}")
    params = _params(fn, parameters)
    total = sum(p.data.size for p in params)
    if total != vec.shape[0]:
        raise ValueError(f"{fn}: vec has {vec.shape[0]} entries, the parameters {total}")
    start = 0
    for p in params:
        n = p.data.size
        p.data[...] = np.reshape(vec.data[start:start + n], p.shape)
        start += n
