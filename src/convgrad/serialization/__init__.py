"""Saving and loading state: ``save`` and ``load``."""

from __future__ import annotations

from .checkpoint import load, save

__all__ = ["load", "save"]
