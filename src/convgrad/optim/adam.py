"""Adam and AdamW (with AMSGrad), in torch's order of operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import update
from ..tensor.args import flag as _flag
from .optimizer import Optimizer, _betas, _number

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (Kingma & Ba) with torch's bias correction, epsilon placement and L2 decay.

    ``g = grad + weight_decay * p`` (or, decoupled as in AdamW, ``p *= 1 - lr *
    weight_decay``); ``m = lerp(m, g, 1 - beta1)``; ``v = beta2 * v + (1 - beta2) * g * g``;
    with ``amsgrad`` ``v_max = max(v_max, v)`` replaces ``v`` below;
    ``p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.
    State per parameter: ``step``, ``exp_avg``, ``exp_avg_sq`` (and ``max_exp_avg_sq``).
    """

    _kernels = ("update.adam",)

    _decoupled = False

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas) if isinstance(
            betas, list) else betas, "eps": eps, "weight_decay": weight_decay,
            "amsgrad": amsgrad, "maximize": maximize})

    def _check_hyper(self, group: dict[str, Any]) -> None:
        fn = type(self).__name__
        for name in ("lr", "eps", "weight_decay"):
            _number(fn, name, group[name])
        _betas(fn, group["betas"])
        _flag(fn, "amsgrad", group["amsgrad"])
        _flag(fn, "maximize", group["maximize"])

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
            v_max = None
            if group["amsgrad"]:  # also when amsgrad is switched on after the first steps
                v_max = state.get("max_exp_avg_sq")
                if v_max is None:
                    v_max = state["max_exp_avg_sq"] = np.zeros_like(p)
            arrays.append((p, grad, state["exp_avg"], state["exp_avg_sq"], v_max))
            hypers.append((group["lr"], beta1, beta2, group["eps"], group["weight_decay"],
                           self._decoupled, state["step"]))
        update.step(type(self).__name__.lower(), update.adam, arrays, hypers)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay``
    before the Adam step, instead of adding ``weight_decay * p`` to the gradient."""

    _decoupled = True

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
