"""Gradient hooks: the handle ``register_hook`` returns, ``retain_grad``'s hook, and the
identity Functions through which a Module's full backward hooks see its gradients."""

from __future__ import annotations

import itertools
import weakref
from typing import Any

import numpy as np

from ..autograd import Context, Function

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["RETAINS", "BackwardHookIn", "BackwardHookOut", "RemovableHandle", "Retainer"]

_ids = itertools.count()
RETAINS: Any = {}  # a non-leaf's ``_hooks`` after ``retain_grad()`` (never holds hooks)


class RemovableHandle:
    """Returned by every ``register_*hook``: ``remove()`` unregisters the hook."""

    def __init__(self, hooks: dict, hook: Any) -> None:
        self.id = next(_ids)
        self.hooks = hooks
        hooks[self.id] = hook

    def remove(self) -> None:
        self.hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


class Retainer:
    """The hook of ``retain_grad``: accumulate the gradient into the tensor's ``.grad``."""

    def __init__(self, t: Tensor) -> None:
        self.ref = weakref.ref(t)

    def __call__(self, g: Tensor) -> None:
        t = self.ref()
        if t is not None:
            t.grad = g.detach() if t.grad is None else t.grad + g.detach()


class BackwardHookOut(Function):
    """Identity on a module's output; backward records the output's gradient."""

    reads = ()
    view = True  # the output is the input's own array

    @staticmethod
    def forward(ctx: Context, y: np.ndarray, state: Any, index: int) -> np.ndarray:
        ctx.state, ctx.index = state, index
        return y

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # the identity passes the gradient; the module's hooks see it as grad_output
        ctx.state.output_grad(ctx.index, grad)
        return grad


class BackwardHookIn(Function):
    """Identity on a module's input; backward hands the input's gradient to the hooks,
    which may replace it."""

    reads = ()
    view = True  # the output is the input's own array

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, state: Any, index: int) -> np.ndarray:
        ctx.state, ctx.index = state, index
        return x

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        # the identity passes the gradient, or what the module's hooks return for it
        return ctx.state.input_grad(ctx.index, grad)
