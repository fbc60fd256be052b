"""torch.nn.modules.flatten's names, for scripts that import them from there."""

from __future__ import annotations

from ..layers import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]
