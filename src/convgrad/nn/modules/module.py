"""torch.nn.modules.module's names, for scripts that import them from there."""

from __future__ import annotations

from ..module import Module

__all__ = ["Module"]
