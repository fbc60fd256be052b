"""torch.nn.modules.padding's names, for scripts that import them from there."""

from __future__ import annotations

from ..padding import *  # noqa: F403 (every padding layer, under torch's path)
from ..padding import __all__ as _layers
from ..padding import _PadNd

__all__ = ["_PadNd", *_layers]
