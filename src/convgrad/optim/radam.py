"""RAdam (rectified Adam), in torch's order of operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import update, update_more
from ..tensor.args import flag as _flag
from .optimizer import Optimizer, _betas, _number

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam (Liu et al. 2019; torch's variant, arguments and defaults).

    ``g = grad + weight_decay * p`` (or, ``decoupled_weight_decay``, ``p *= 1 - lr *
    weight_decay``); Adam's moments ``m``, ``v``; ``rho_t = rho_inf - 2 t beta2^t /
    (1 - beta2^t)`` with ``rho_inf = 2 / (1 - beta2) - 1``; while ``rho_t <= 5`` the step
    is SGD with momentum, ``p -= lr m / (1 - beta1^t)``; after, ``p -= lr m / (1 -
    beta1^t) * sqrt(1 - beta2^t) / (sqrt(v) + eps) * r_t`` with the rectification ``r_t =
    sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``.
    State per parameter: ``step``, ``exp_avg``, ``exp_avg_sq``.
    """

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0,
                 decoupled_weight_decay: bool = False, *, maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas) if isinstance(
            betas, list) else betas, "eps": eps, "weight_decay": weight_decay,
            "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize})

    def _check_hyper(self, group: dict[str, Any]) -> None:
        for name in ("lr", "eps", "weight_decay"):
            _number("RAdam", name, group[name])
        _betas("RAdam", group["betas"])
        _flag("RAdam", "decoupled_weight_decay", group["decoupled_weight_decay"])
        _flag("RAdam", "maximize", group["maximize"])

    def _update(self, params: list[np.ndarray], grads: list[np.ndarray], states: list[dict],
                group: dict) -> None:
        beta1, beta2 = group["betas"]
        arrays, hypers = [], []
        for p, grad, state in zip(params, grads, states):
            if not state:
                state["step"] = 0
                state["exp_avg"] = np.zeros_like(p)
                state["exp_avg_sq"] = np.zeros_like(p)
            state["step"] += 1
            arrays.append((p, grad, state["exp_avg"], state["exp_avg_sq"]))
            hypers.append((group["lr"], beta1, beta2, group["eps"], group["weight_decay"],
                           group["decoupled_weight_decay"], state["step"]))
        update.step("radam", update_more.radam, arrays, hypers)
