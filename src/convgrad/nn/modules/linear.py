"""torch.nn.modules.linear's names, for scripts that import them from there."""

from __future__ import annotations

from ..layers import Identity, Linear

__all__ = ["Identity", "Linear"]
