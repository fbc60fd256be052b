"""The Tensor and its differentiable operations.

``tensor.py`` holds the class, its constructors and joining functions; the gradient rules
sit next to their operations, by family: ``elementwise``, ``reduce``, ``shape`` (movement,
indexing, matrix products) and ``conv`` (the convolution primitives).  ``functions`` has
the function forms of the methods (``cg.exp(x)``).
"""

from __future__ import annotations

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

__all__ = ["Tensor", "as_tensor", "cat", "concatenate", "from_numpy", "ones", "randn", "stack",
           "tensor", "where", "zeros"]
