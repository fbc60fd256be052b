"""Where a rule may leave a weight's gradient for when it is read
(:mod:`convgrad.autograd.deferred`): the engine allows it (``ctx.defers``), and what the
gradient reads is safe to keep: the forward's input was computed by the graph, so the
caller holds no array it may refill in place (a batch) and it is no view of a parameter
that an optimiser updates; gradients are the engine's own arrays.  Used by the
convolution's and the linear layer's weight gradients."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context
from .version import leaf_owner

__all__ = ["allowed"]


def allowed(ctx: Context, i: int, activation: Any, *arrays: Any) -> bool:
    """Whether input ``i``'s gradient, reading the forward's input ``activation`` (a
    Tensor) and ``arrays`` (the gradient's), may be deferred."""
    return (ctx.defers(i) and activation.grad_fn is not None
            and type(activation.data) is np.ndarray
            and all(type(a) is np.ndarray for a in arrays)
            and leaf_owner(activation.data) is None)
