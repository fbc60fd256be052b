"""Adagrad, in torch's order of operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import update, update_more
from ..tensor.args import flag as _flag
from .optimizer import Optimizer, _number

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al. 2011; torch's variant, arguments and defaults).

    ``g = grad + weight_decay * p``; ``clr = lr / (1 + (step - 1) * lr_decay)``;
    ``s = s + g * g``; ``p = p - clr * g / (sqrt(s) + eps)``.  State per parameter:
    ``step`` and ``sum`` (started at ``initial_accumulator_value``), created for every
    parameter when the optimiser is built, as torch does (a group added later gets its
    state at its first step, from the constructor's ``initial_accumulator_value``).
    """

    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, *, maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "lr_decay": lr_decay, "eps": eps,
                                  "weight_decay": weight_decay,
                                  "initial_accumulator_value": initial_accumulator_value,
                                  "maximize": maximize})
        for g in self.param_groups:
            for p in g["params"]:
                self._init_state(self.state.setdefault(p, {}), p.data)

    def _init_state(self, state: dict, p: np.ndarray) -> None:
        state["step"] = 0
        state["sum"] = np.full_like(p, self.defaults["initial_accumulator_value"])

    def _check_hyper(self, group: dict[str, Any]) -> None:
        for name in ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            _number("Adagrad", name, group[name])
        _flag("Adagrad", "maximize", group["maximize"])

    def _update(self, params: list[np.ndarray], grads: list[np.ndarray], states: list[dict],
                group: dict) -> None:
        arrays, hypers = [], []
        for p, grad, state in zip(params, grads, states):
            if not state:
                self._init_state(state, p)
            state["step"] += 1
            arrays.append((p, grad, state["sum"]))
            hypers.append((group["lr"], group["lr_decay"], group["weight_decay"], group["eps"],
                           state["step"]))
        update.step("adagrad", update_more.adagrad, arrays, hypers)
