"""The Tensor and its differentiable operations.

``tensor.py`` holds the class, its constructors and joining functions; the gradient rules
sit next to their operations, by family: ``elementwise``, ``reduce``, ``shape`` (movement,
indexing, matrix products) and ``conv`` (the convolution primitives).  ``functions`` has
the function forms of the methods (``cg.exp(x)``).
"""

from __future__ import annotations

from .creation import (
    arange,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    linspace,
    ones_like,
    rand,
    rand_like,
    randint,
    randn_like,
    randperm,
    zeros_like,
)
from .interop import from_dlpack
from .tensor import (
    Tensor,
    as_tensor,
    cat,
    concatenate,
    from_numpy,
    ones,
    randn,
    stack,
    tensor,
    where,
    zeros,
)

__all__ = ["arange", "empty", "empty_like", "eye", "full", "full_like", "linspace",
           "ones_like", "rand", "rand_like", "randint", "randn_like", "randperm", "zeros_like",
           "from_dlpack", "Tensor", "as_tensor", "cat", "concatenate", "from_numpy", "ones",
           "randn", "stack", "tensor", "where", "zeros"]
