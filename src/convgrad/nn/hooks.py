"""A Module's hooks, with torch's signatures: ``forward_pre_hook(module, args)``,
``forward_hook(module, args, output)`` (a non-None result replaces the args or the
output) and ``full_backward_hook(module, grad_input, grad_output)`` (a non-None result
replaces grad_input).  Backward hooks see the gradients through identity Functions on the
module's Tensor inputs and outputs (``convgrad.tensor.hooks``)."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ..tensor.hooks import BackwardHookIn, BackwardHookOut

__all__ = ["call_with_hooks"]


class _BackwardState:
    """The gradients of one call's outputs and inputs, and the hooks that see them."""

    def __init__(self, module: Any, n_in: int, waiting: set) -> None:
        self.module, self.n_in, self.waiting = module, n_in, set(waiting)
        self.inputs_need = bool(waiting)
        self.grad_output: list = []
        self.grad_input: list = [None] * n_in
        self.outputs_left = 0

    def _call(self) -> tuple:
        grads = tuple(self.grad_input)
        for hook in list(self.module.__dict__["_backward_hooks"].values()):
            out = hook(self.module, grads, tuple(self.grad_output))
            if out is not None:
                grads = tuple(out) if isinstance(out, tuple | list) else (out,)
                if len(grads) != self.n_in:
                    raise RuntimeError(f"backward hook {hook!r} returned {len(grads)} "
                                       f"gradients, expected {self.n_in} (one per input)")
        return grads

    def output_grad(self, i: int, g: Tensor) -> None:
        self.grad_output[i] = g
        self.outputs_left -= 1
        if self.outputs_left == 0 and not self.inputs_need:  # no input gradient will come
            self._call()

    def input_grad(self, i: int, g: Tensor) -> Tensor:
        self.grad_input[i] = g
        self.waiting.discard(i)
        if not self.waiting:  # (one Tensor input: at once)
            new = self._call()
            return new[i] if new[i] is not None else g
        return g


def call_with_hooks(module: Any, args: tuple, kwargs: dict) -> Any:
    d = module.__dict__
    for hook in list(d.get("_forward_pre_hooks", {}).values()):
        out = hook(module, args)
        if out is not None:
            args = out if isinstance(out, tuple) else (out,)
    backward = bool(d.get("_backward_hooks"))
    state = None
    if backward:
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        waiting = {k for k, i in enumerate(positions) if args[i].requires_grad}
        state = _BackwardState(module, len(positions), waiting)
        args = list(args)
        for k, i in enumerate(positions):
            if k in waiting:
                args[i] = BackwardHookIn.apply(args[i], state=state, index=k)
        args = tuple(args)
    result = module.forward(*args, **kwargs)
    for hook in list(d.get("_forward_hooks", {}).values()):
        out = hook(module, args, result)
        if out is not None:
            result = out
    if state is not None:
        outs = result if isinstance(result, tuple) else (result,)
        wrapped, k = [], 0
        for o in outs:
            if isinstance(o, Tensor) and o.requires_grad:
                o = BackwardHookOut.apply(o, state=state, index=k)
                k += 1
            wrapped.append(o)
        state.grad_output = [None] * k
        state.outputs_left = k
        result = tuple(wrapped) if isinstance(result, tuple) else wrapped[0]
    return result
