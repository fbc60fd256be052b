"""The named tuples that reductions along one dim return, as ``torch.return_types``."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["aminmax", "cummax", "cummin", "histogram", "kthvalue", "max", "median", "min",
           "mode", "nanmedian"]


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


def _pair(name: str, first: str, second: str, doc: str) -> type:
    """A two-field named tuple called ``name`` (torch.return_types' names)."""
    kind = NamedTuple(name, [(first, Any), (second, Any)])
    kind.__doc__ = doc
    kind.__module__ = __name__
    return kind


cummax = _pair("cummax", "values", "indices", "``t.cummax(dim)``: running maxima, indices.")
cummin = _pair("cummin", "values", "indices", "``t.cummin(dim)``: running minima, indices.")
kthvalue = _pair("kthvalue", "values", "indices", "``t.kthvalue(k, dim)``: values, indices.")
mode = _pair("mode", "values", "indices", "``t.mode(dim)``: the modes and their indices.")
nanmedian = _pair("nanmedian", "values", "indices", "``t.nanmedian(dim)``: values, indices.")
aminmax = _pair("aminmax", "min", "max", "``t.aminmax()``: the smallest and largest values.")
histogram = _pair("histogram", "hist", "bin_edges", "``t.histogram(bins)``: counts, edges.")
