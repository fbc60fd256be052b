"""The named tuples that reductions along one dim return, as ``torch.return_types``."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["max", "median", "min"]


class max(NamedTuple):
    """``t.max(dim)``: the largest values along ``dim`` and their (first) indices."""

    values: Any
    indices: Any


class min(NamedTuple):
    """``t.min(dim)``: the smallest values along ``dim`` and their (first) indices."""

    values: Any
    indices: Any


class median(NamedTuple):  # noqa: N801 (torch.return_types' names)
    """``t.median(dim)``: the lower middle values along ``dim`` and their indices."""

    values: Any
    indices: Any
