"""SGD with momentum, dampening, Nesterov momentum and weight decay, in torch's order of
operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import update
from ..tensor.args import flag as _flag
from .optimizer import Optimizer, _number

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (torch's SGD, the same arguments and defaults).

    ``g = grad + weight_decay * p``; with momentum ``buf = g`` at the first step and
    ``buf = momentum * buf + (1 - dampening) * g`` after, then ``g = g + momentum * buf``
    (``nesterov``) or ``g = buf``; finally ``p = p - lr * g``.  ``maximize`` ascends.
    State per parameter: ``momentum_buffer``.
    """

    _kernels = ("update.sgd",)

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 *, maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov,
                                  "maximize": maximize})

    def _check_hyper(self, group: dict[str, Any]) -> None:
        for name in ("lr", "momentum", "weight_decay"):
            _number("SGD", name, group[name])
        _number("SGD", "dampening", group["dampening"], low=-float("inf"))
        _flag("SGD", "nesterov", group["nesterov"])
        _flag("SGD", "maximize", group["maximize"])
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"SGD: nesterov=True needs momentum > 0 and dampening=0, got "
                             f"momentum={group['momentum']!r}, "
                             f"dampening={group['dampening']!r}")

    def _update(self, params: list[np.ndarray], grads: list[np.ndarray], states: list[dict],
                group: dict) -> None:
        momentum = group["momentum"]
        arrays, hypers = [], []
        for p, grad, state in zip(params, grads, states):
            buf = state.get("momentum_buffer") if momentum != 0 else None
            first = momentum != 0 and buf is None
            if first:
                buf = state["momentum_buffer"] = np.empty_like(p)
            arrays.append((p, grad, buf))
            hypers.append((group["lr"], group["weight_decay"], momentum, group["dampening"],
                           group["nesterov"], first))
        update.step("sgd", update.sgd, arrays, hypers)
