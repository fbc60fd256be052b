"""torch.nn.modules.dropout's names, for scripts that import them from there."""

from __future__ import annotations

from ..dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, _DropoutNd

__all__ = ["_DropoutNd", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d"]
