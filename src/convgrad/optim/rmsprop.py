"""RMSprop (centred or not, with momentum), in torch's order of operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import update
from ..tensor.args import flag as _flag
from .optimizer import Optimizer, _number

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture notes; torch's variant, arguments and defaults).

    ``g = grad + weight_decay * p``; ``s = alpha * s + (1 - alpha) * g * g``;
    ``centered``: ``a = lerp(a, g, 1 - alpha)`` and ``d = sqrt(s - a * a) + eps``, else
    ``d = sqrt(s) + eps``; with momentum ``buf = momentum * buf + g / d`` and
    ``p = p - lr * buf``, else ``p = p - lr * g / d``.
    State per parameter: ``step``, ``square_avg`` (and ``momentum_buffer``, ``grad_avg``).
    """

    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 *, maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps,
                                  "weight_decay": weight_decay, "momentum": momentum,
                                  "centered": centered, "maximize": maximize})

    def _check_hyper(self, group: dict[str, Any]) -> None:
        for name in ("lr", "alpha", "eps", "weight_decay", "momentum"):
            _number("RMSprop", name, group[name])
        _flag("RMSprop", "centered", group["centered"])
        _flag("RMSprop", "maximize", group["maximize"])

    def _update(self, params: list[np.ndarray], grads: list[np.ndarray], states: list[dict],
                group: dict) -> None:
        momentum = group["momentum"]
        arrays, hypers = [], []
        for p, grad, state in zip(params, grads, states):
            if not state:
                state["step"] = 0
                state["square_avg"] = np.zeros_like(p)
            state["step"] += 1
            a = state.setdefault("grad_avg", np.zeros_like(p)) if group["centered"] else None
            buf = (state.setdefault("momentum_buffer", np.zeros_like(p)) if momentum > 0
                   else None)
            arrays.append((p, grad, state["square_avg"], a, buf))
            hypers.append((group["lr"], group["alpha"], group["eps"], group["weight_decay"],
                           momentum))
        update.step("rmsprop", update.rmsprop, arrays, hypers)
