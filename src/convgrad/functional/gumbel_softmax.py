"""``gumbel_softmax``: a differentiable sample of a categorical distribution (the
Gumbel-softmax relaxation), optionally made one-hot with the straight-through estimator,
as torch's; the noise comes from the library-wide generator (``cg.manual_seed``)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..random import default_generator
from ..tensor import Tensor, as_tensor
from ..tensor.args import number as _real
from .activation import softmax

__all__ = ["gumbel_softmax"]


def gumbel_softmax(logits: Any, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """``softmax((logits + g) / tau, dim)`` with ``g`` standard Gumbel noise (``-log E``,
    ``E`` exponential); ``hard=True`` returns the one-hot vector of its largest entry
    along ``dim``, differentiated as the soft sample (``y_hard - y_soft.detach() +
    y_soft``).  ``eps`` is unused (deprecated in torch too)."""
    fn = "gumbel_softmax"
    x = as_tensor(logits)
    if x.data.dtype.kind != "f":
        raise TypeError(f"{fn}: logits must be a float Tensor, got dtype {x.dtype}")
    tau = _real(fn, "tau", tau)
    if tau <= 0:
        raise ValueError(f"{fn}: tau={tau!r} must be > 0")
    if not isinstance(hard, bool):
        raise TypeError(f"{fn}: hard={hard!r} must be a bool")
    if eps != 1e-10:
        warnings.warn(f"{fn}: eps is deprecated and has no effect", UserWarning, stacklevel=2)
    n = max(x.ndim, 1)
    if isinstance(dim, bool) or not isinstance(dim, int) or not -n <= dim < n:
        raise ValueError(f"{fn}: dim={dim!r} must be an int in [{-n}, {n - 1}]")
    gumbels = -np.log(default_generator().standard_exponential(x.shape)).astype(x.data.dtype)
    y_soft = softmax((x + gumbels) / tau, dim)
    if not hard:
        return y_soft
    axis = dim % n if x.ndim else 0
    index = np.expand_dims(np.argmax(y_soft.data, axis=axis), axis) if x.ndim else 0
    y_hard = np.zeros_like(y_soft.data)
    if x.ndim:
        np.put_along_axis(y_hard, index, 1.0, axis=axis)
    else:
        y_hard[...] = 1.0
    return y_soft - y_soft.detach() + y_hard
