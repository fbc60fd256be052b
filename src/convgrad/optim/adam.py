"""Adam, in torch's order of operations."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .optimizer import Optimizer, _fma, _number

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam (Kingma & Ba) with torch's bias correction, epsilon placement and L2 decay.

    ``g = grad + weight_decay * p``; ``m = lerp(m, g, 1 - beta1)``;
    ``v = beta2 * v + (1 - beta2) * g * g``;
    ``p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.
    """

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay})

    def _check_hyper(self, group: dict[str, Any]) -> None:
        for name in ("lr", "eps", "weight_decay"):
            _number("Adam", name, group[name])
        betas = group["betas"]
        if not isinstance(betas, tuple | list) or len(betas) != 2:
            raise TypeError(f"Adam: betas={betas!r} must be a pair of numbers")
        for i, b in enumerate(betas):
            _number("Adam", f"betas[{i}]", b)
            if not b < 1.0:
                raise ValueError(f"Adam: betas[{i}]={b!r} must be in [0, 1)")

    def _update(self, p: np.ndarray, grad: np.ndarray, state: dict, group: dict) -> None:
        dt = p.dtype.type
        beta1, beta2 = group["betas"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p)
            state["exp_avg_sq"] = np.zeros_like(p)
        state["step"] += 1
        step, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
        if group["weight_decay"] != 0:
            grad = _fma(p, dt(group["weight_decay"]), grad)  # grad.add(p, alpha=wd)
        # m.lerp_(grad, w): m + w * (grad - m) for |w| < 0.5, else grad + (w - 1) * (grad - m)
        w = dt(1 - beta1)
        if abs(w) < 0.5:
            m[...] = _fma(grad - m, w, m)
        else:
            m[...] = _fma(grad - m, w - dt(1), grad)
        v *= dt(beta2)
        v[...] = _fma(dt(1 - beta2) * grad, grad, v)  # v.addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = group["lr"] / bias_correction1
        denom = np.sqrt(v) / dt(math.sqrt(bias_correction2))
        denom += dt(group["eps"])
        p += dt(-step_size) * m / denom
