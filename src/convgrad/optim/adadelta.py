"""Adadelta, in torch's order of operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import update
from ..tensor.args import flag as _flag
from .optimizer import Optimizer, _number

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler 2012; torch's variant, arguments and defaults).

    ``g = grad + weight_decay * p``; ``s = rho * s + (1 - rho) * g * g``;
    ``delta = sqrt(u + eps) / sqrt(s + eps) * g``; ``u = rho * u + (1 - rho) * delta**2``;
    ``p = p - lr * delta``.  State per parameter: ``step``, ``square_avg``, ``acc_delta``.
    """

    def __init__(self, params: Any, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, *, maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps,
                                  "weight_decay": weight_decay, "maximize": maximize})

    def _check_hyper(self, group: dict[str, Any]) -> None:
        for name in ("lr", "eps", "weight_decay"):
            _number("Adadelta", name, group[name])
        rho = group["rho"]
        _number("Adadelta", "rho", rho)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Adadelta: rho={rho!r} must be in [0, 1]")
        _flag("Adadelta", "maximize", group["maximize"])

    def _update(self, params: list[np.ndarray], grads: list[np.ndarray], states: list[dict],
                group: dict) -> None:
        arrays, hypers = [], []
        for p, grad, state in zip(params, grads, states):
            if not state:
                state["step"] = 0
                state["square_avg"] = np.zeros_like(p)
                state["acc_delta"] = np.zeros_like(p)
            state["step"] += 1
            arrays.append((p, grad, state["square_avg"], state["acc_delta"]))
            hypers.append((group["lr"], group["rho"], group["eps"], group["weight_decay"]))
        update.step("adadelta", update.adadelta, arrays, hypers)
