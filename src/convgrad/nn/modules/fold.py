"""torch.nn.modules.fold's names, for scripts that import them from there."""

from __future__ import annotations

from ..layers import Fold, Unfold

__all__ = ["Fold", "Unfold"]
