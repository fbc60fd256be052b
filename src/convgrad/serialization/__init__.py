"""Saving and loading state: ``save`` and ``load`` (``.npz`` checkpoints, ``.safetensors``)."""

from __future__ import annotations

from .checkpoint import load, save

__all__ = ["load", "save"]
