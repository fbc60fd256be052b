"""SGD with momentum and weight decay, in torch's order of operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from .optimizer import Optimizer, _fma, _number

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent with momentum and L2 weight decay (torch's SGD).

    ``g = grad + weight_decay * p``; with momentum ``buf = g`` at the first step and
    ``buf = momentum * buf + g`` after, ``g = buf``; then ``p = p - lr * g``.
    """

    def __init__(self, params: Any, lr: float, momentum: float = 0.0,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay})

    def _check_hyper(self, group: dict[str, Any]) -> None:
        for name in ("lr", "momentum", "weight_decay"):
            _number("SGD", name, group[name])

    def _update(self, p: np.ndarray, grad: np.ndarray, state: dict, group: dict) -> None:
        dt = p.dtype.type
        wd, momentum = group["weight_decay"], group["momentum"]
        if wd != 0:
            grad = _fma(p, dt(wd), grad)  # grad.add(p, alpha=wd)
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = np.array(grad, copy=True)
            else:
                buf *= dt(momentum)
                buf += grad
            grad = buf
        p[...] = _fma(grad, dt(-group["lr"]), p)  # p.add_(grad, alpha=-lr)
