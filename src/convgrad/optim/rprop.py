"""Rprop (resilient backpropagation), in torch's order of operations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import update, update_more
from ..tensor.args import flag as _flag
from .optimizer import Optimizer, _number

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop (Riedmiller & Braun 1993; torch's variant, arguments and defaults).

    Each entry keeps its own step size (starting at ``lr``): where the gradient kept its
    sign since the previous step it grows by ``etas[1]``, where it flipped it shrinks by
    ``etas[0]`` and that gradient counts as 0, else it stays; clamped to ``step_sizes =
    (min, max)``; ``p -= sign(g) * step_size``.  Full-batch use: the gradient's sign
    is all that matters.  State per parameter: ``step``, ``prev``, ``step_size``.
    """

    def __init__(self, params: Any, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *,
                 maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "etas": etas, "step_sizes": step_sizes,
                                  "maximize": maximize})

    def _check_hyper(self, group: dict[str, Any]) -> None:
        _number("Rprop", "lr", group["lr"])
        for name in ("etas", "step_sizes"):
            pair = group[name]
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise TypeError(f"Rprop: {name}={pair!r} must be a pair of numbers")
            for i, v in enumerate(pair):
                _number("Rprop", f"{name}[{i}]", v)
            group[name] = tuple(pair)
        etas, sizes = group["etas"], group["step_sizes"]
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Rprop: etas={etas!r} must satisfy 0 < etas[0] < 1 < etas[1] "
                             "(the factors that shrink and grow a step)")
        if not sizes[0] <= sizes[1]:
            raise ValueError(f"Rprop: step_sizes={sizes!r} must be (min, max) with min <= max")
        _flag("Rprop", "maximize", group["maximize"])

    def _update(self, params: list[np.ndarray], grads: list[np.ndarray], states: list[dict],
                group: dict) -> None:
        etaminus, etaplus = group["etas"]
        lo, hi = group["step_sizes"]
        arrays, hypers = [], []
        for p, grad, state in zip(params, grads, states):
            if not state:
                state["step"] = 0
                state["prev"] = np.zeros_like(p)
                state["step_size"] = np.full_like(p, group["lr"])
            state["step"] += 1
            arrays.append((p, grad, state["prev"], state["step_size"]))
            hypers.append((etaminus, etaplus, lo, hi))
        update.step("rprop", update_more.rprop, arrays, hypers)
