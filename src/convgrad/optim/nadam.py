"""NAdam (Adam with Nesterov momentum), in torch's order of operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..ops import update, update_more
from ..tensor.args import flag as _flag
from .optimizer import _betas, _number
from .scalar_state import ScalarStateOptimizer

__all__ = ["NAdam"]


class NAdam(ScalarStateOptimizer):
    """NAdam (Dozat 2016; torch's variant, arguments and defaults).

    ``g = grad + weight_decay * p`` (or, ``decoupled_weight_decay``, ``p *= 1 - lr *
    weight_decay``); the momentum schedule ``mu_t = beta1 (1 - 0.96^(t momentum_decay) /
    2)``, ``mu_product *= mu_t`` (kept in the default dtype, as torch's state); ``m = lerp(m, g,
    1 - beta1)``; ``v = beta2 * v + (1 - beta2) * g * g``; ``d = sqrt(v / (1 - beta2^t))
    + eps``; ``p -= lr (1 - mu_t) / (1 - mu_product) * g / d + lr mu_{t+1} / (1 -
    mu_product mu_{t+1}) * m / d``.  State per parameter: ``step``, ``mu_product``,
    ``exp_avg``, ``exp_avg_sq``.
    """

    _scalar_state = ("mu_product",)

    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas) if isinstance(
            betas, list) else betas, "eps": eps, "weight_decay": weight_decay,
            "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize})

    def _check_hyper(self, group: dict[str, Any]) -> None:
        for name in ("lr", "eps", "weight_decay", "momentum_decay"):
            _number("NAdam", name, group[name])
        _betas("NAdam", group["betas"])
        _flag("NAdam", "decoupled_weight_decay", group["decoupled_weight_decay"])
        _flag("NAdam", "maximize", group["maximize"])

    def _update(self, params: list[np.ndarray], grads: list[np.ndarray], states: list[dict],
                group: dict) -> None:
        beta1, beta2 = group["betas"]
        lr, decay = group["lr"], group["momentum_decay"]
        arrays, hypers = [], []
        for p, grad, state in zip(params, grads, states):
            if not state:
                state["step"] = 0
                state["mu_product"] = get_default_dtype().type(1.0)
                state["exp_avg"] = np.zeros_like(p)
                state["exp_avg_sq"] = np.zeros_like(p)
            state["step"] += 1
            step = state["step"]
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
            product = state["mu_product"]
            product = state["mu_product"] = product * type(product)(mu)  # in its own dtype
            c_grad = -lr * (1.0 - mu) / (1.0 - float(product))
            c_avg = (-lr * mu_next) / (1.0 - float(product) * mu_next)
            arrays.append((p, grad, state["exp_avg"], state["exp_avg_sq"]))
            hypers.append((lr, beta1, beta2, group["eps"], group["weight_decay"],
                           group["decoupled_weight_decay"], step, c_grad, c_avg))
        update.step("nadam", update_more.nadam, arrays, hypers)
