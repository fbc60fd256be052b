"""torch.nn.modules.normalization's names, for scripts that import them from there."""

from __future__ import annotations

from ..normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm

__all__ = ["GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm"]
