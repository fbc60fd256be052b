"""torch.nn.modules.padding's names, for scripts that import them from there."""

from __future__ import annotations

from ..padding import _PadNd

__all__ = ["_PadNd"]
