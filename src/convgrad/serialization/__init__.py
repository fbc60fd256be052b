"""Saving and loading state: ``save`` and ``load`` (``.npz`` checkpoints, ``.safetensors``,
PyTorch's format), and torch's allow-list of globals for a state-only load."""

from __future__ import annotations

from .checkpoint import load, save
from .torch_format import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load",
           "safe_globals", "save"]
