"""Adamax (Adam with the infinity norm), in torch's order of operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import update, update_more
from ..tensor.args import flag as _flag
from .optimizer import Optimizer, _betas, _number

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, section 7; torch's variant, arguments and defaults).

    ``g = grad + weight_decay * p``; ``m = lerp(m, g, 1 - beta1)``;
    ``u = max(beta2 * u, |g| + eps)``; ``p = p - lr / (1 - beta1^t) * m / u``.
    State per parameter: ``step``, ``exp_avg``, ``exp_inf``.
    """

    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, *,
                 maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas) if isinstance(
            betas, list) else betas, "eps": eps, "weight_decay": weight_decay,
            "maximize": maximize})

    def _check_hyper(self, group: dict[str, Any]) -> None:
        for name in ("lr", "eps", "weight_decay"):
            _number("Adamax", name, group[name])
        _betas("Adamax", group["betas"])
        _flag("Adamax", "maximize", group["maximize"])

    def _update(self, params: list[np.ndarray], grads: list[np.ndarray], states: list[dict],
                group: dict) -> None:
        beta1, beta2 = group["betas"]
        arrays, hypers = [], []
        for p, grad, state in zip(params, grads, states):
            if not state:
                state["step"] = 0
                state["exp_avg"] = np.zeros_like(p)
                state["exp_inf"] = np.zeros_like(p)
            state["step"] += 1
            arrays.append((p, grad, state["exp_avg"], state["exp_inf"]))
            hypers.append((group["lr"], beta1, beta2, group["eps"], group["weight_decay"],
                           state["step"]))
        update.step("adamax", update_more.adamax, arrays, hypers)
