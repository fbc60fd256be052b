"""RMSprop (centred or not, with momentum), in torch's order of operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor.args import flag as _flag
from .optimizer import Optimizer, _fma, _lerp_, _number

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

    def _update(self, p: np.ndarray, grad: np.ndarray, state: dict, group: dict) -> None:
        dt = p.dtype.type
        alpha, momentum = group["alpha"], group["momentum"]
        if not state:
            state["step"] = 0
            state["square_avg"] = np.zeros_like(p)
            if momentum > 0:
                state["momentum_buffer"] = np.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = np.zeros_like(p)
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = _fma(p, dt(group["weight_decay"]), grad)  # grad.add(p, alpha=wd)
        s = state["square_avg"]
        s *= dt(alpha)
        s[...] = _fma(dt(1 - alpha) * grad, grad, s)  # s.addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            a = state.setdefault("grad_avg", np.zeros_like(p))
            _lerp_(a, grad, 1 - alpha)
            avg = np.sqrt(_fma(-a, a, s))  # s.addcmul(a, a, value=-1).sqrt_()
        else:
            avg = np.sqrt(s)
        avg += dt(group["eps"])
        if momentum > 0:
            buf = state.setdefault("momentum_buffer", np.zeros_like(p))
            buf *= dt(momentum)
            buf += grad / avg  # buf.addcdiv_(grad, avg)
            p[...] = _fma(buf, dt(-group["lr"]), p)  # p.add_(buf, alpha=-lr)
        else:
            p += dt(-group["lr"]) * grad / avg  # p.addcdiv_(grad, avg, value=-lr)
