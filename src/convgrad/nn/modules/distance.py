"""torch.nn.modules.distance's names, for scripts that import them from there."""

from __future__ import annotations

from ..embedding import CosineSimilarity, PairwiseDistance

__all__ = ["CosineSimilarity", "PairwiseDistance"]
