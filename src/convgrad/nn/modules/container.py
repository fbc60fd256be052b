"""torch.nn.modules.container's names, for scripts that import them from there."""

from __future__ import annotations

from ..containers import ModuleDict, ModuleList
from ..module import Sequential
from ..parameter_containers import ParameterDict, ParameterList

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]
