"""``Variable``: torch's deprecated wrapper, kept so that old scripts run.  Since torch
0.4 a Variable is a Tensor; ``Variable(data, requires_grad=False)`` is the Tensor of
``data`` (the same Tensor when it is one), requiring grad on request."""

from __future__ import annotations

from typing import Any

from .function import tensor_type

__all__ = ["Variable"]


def Variable(data: Any, requires_grad: bool = False, volatile: bool = False) -> Any:  # noqa: N802
    """The Tensor of ``data``; ``requires_grad`` sets it (a leaf); ``volatile`` is ignored
    (torch ignores it too, with a warning: use ``no_grad``)."""
    T = tensor_type()
    t = data if isinstance(data, T) else T(data)
    if requires_grad:
        t.requires_grad_(True)
    return t
