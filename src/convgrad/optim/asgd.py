"""ASGD (averaged stochastic gradient descent), in torch's order of operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..ops import update, update_more
from ..tensor.args import flag as _flag
from .optimizer import _number
from .scalar_state import ScalarStateOptimizer

__all__ = ["ASGD"]


class ASGD(ScalarStateOptimizer):
    """Averaged SGD (Polyak & Juditsky 1992; torch's variant, arguments and defaults).

    ``g = grad + weight_decay * p``; ``p *= 1 - lambd * eta``; ``p -= eta * g``; the
    running average ``ax += mu * (p - ax)`` (``ax = p`` while ``mu`` is 1); then ``eta =
    lr / (1 + lambd lr t)^alpha`` and ``mu = 1 / max(1, t - t0)`` for the next step
    (``eta`` and ``mu`` rounded to the default dtype, as torch's state).  The average is
    ``optimizer.state[p]["ax"]``.  State per parameter: ``step``, ``eta``, ``mu``, ``ax``.
    """

    _scalar_state = ("eta", "mu")

    def __init__(self, params: Any, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0.0, *,
                 maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                                  "weight_decay": weight_decay, "maximize": maximize})

    def _check_hyper(self, group: dict[str, Any]) -> None:
        for name in ("lr", "lambd", "weight_decay"):
            _number("ASGD", name, group[name])
        for name in ("alpha", "t0"):
            _number("ASGD", name, group[name], low=-float("inf"))
        _flag("ASGD", "maximize", group["maximize"])

    def _update(self, params: list[np.ndarray], grads: list[np.ndarray], states: list[dict],
                group: dict) -> None:
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        arrays, hypers = [], []
        scalar = get_default_dtype().type  # torch's scalar state: its default dtype
        for p, grad, state in zip(params, grads, states):
            if not state:
                state["step"] = 0
                state["eta"] = scalar(lr)
                state["mu"] = scalar(1.0)
                state["ax"] = np.zeros_like(p)
            state["step"] += 1
            eta, mu = state["eta"], state["mu"]
            arrays.append((p, grad, state["ax"]))
            hypers.append((float(eta), lambd, group["weight_decay"], mu))
            step = state["step"]
            # torch builds each new value in its default dtype, then copies it into the state
            state["eta"] = type(eta)(scalar(lr / ((1 + lambd * lr * step) ** alpha)))
            state["mu"] = type(mu)(scalar(1 / max(1, step - t0)))
        update.step("asgd", update_more.asgd, arrays, hypers)
