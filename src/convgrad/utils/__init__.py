"""``convgrad.utils``: helpers around training; ``data`` loads batches (``DataLoader``)."""

from __future__ import annotations

from . import data

__all__ = ["data"]
