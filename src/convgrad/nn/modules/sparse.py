"""torch.nn.modules.sparse's names, for scripts that import them from there."""

from __future__ import annotations

from ..embedding import Embedding, EmbeddingBag

__all__ = ["Embedding", "EmbeddingBag"]
