"""Version counters: how many times a memory buffer was modified in place.

A counter belongs to a buffer, not to a Tensor: every array that views the same memory
(``reshape``, basic indexing, ``detach()``, ``permute``) finds the same counter, through
NumPy's ``base`` chain to the array that owns the memory.  Only buffers that were ever
modified have an entry (the others are at version 0), so the common case costs one dict
look-up; an entry goes away with its buffer.

The graph records the versions of the values a backward rule will read and the engine
compares them at backward time (see :mod:`convgrad.autograd.function`).  Writes through
``t.data`` (optimiser internals, ``nn.init``) bypass the counters, as in torch.

A second table remembers which buffers belong to leaves that require grad, so that an
in-place operation recorded on a view of such a leaf can be refused, as torch refuses it.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..autograd import mark_modified

__all__ = ["bump", "leaf_owner", "own_leaf", "root", "set_version", "version"]

_counts: dict[int, list] = {}  # id(root buffer) -> [weakref to it, count]
_leaves: dict[int, list] = {}  # id(root buffer) -> [weakref to it, weakref to the leaf]


def root(a: Any) -> Any:
    """The object owning ``a``'s memory (``a`` itself for an array that owns its data)."""
    b = getattr(a, "base", None)
    while b is not None and hasattr(b, "base"):  # ndarrays and NumPy's stride-trick wrappers
        a, b = b, b.base
    return a


def version(a: Any) -> int:
    """How many times the buffer under ``a`` has been modified in place."""
    if not _counts:
        return 0
    r = a if type(a) is np.ndarray and a.base is None else root(a)
    entry = _counts.get(id(r))
    return 0 if entry is None or entry[0]() is not r else entry[1]


def _entry(table: dict, a: Any, default: Any) -> list:
    """The entry of ``a``'s root buffer in ``table``, created (and dropped with the buffer)."""
    r = root(a)
    key = id(r)
    entry = table.get(key)
    if entry is None or entry[0]() is not r:
        def drop(_: Any, key: int = key) -> None:
            if table.get(key) is entry:
                del table[key]

        entry = [weakref.ref(r, drop), default]
        table[key] = entry
    return entry


def bump(a: Any) -> int:
    """Count one in-place modification of ``a``'s buffer; returns the new version."""
    mark_modified()
    entry = _entry(_counts, a, 0)
    entry[1] += 1
    return entry[1]


def set_version(a: Any, value: int) -> None:
    """Give a fresh copy the version of the values it copies."""
    if value:
        mark_modified()
        _entry(_counts, a, 0)[1] = value


def own_leaf(leaf: Any) -> None:
    """Record that ``leaf`` (a leaf requiring grad) owns the buffer under its data."""
    _entry(_leaves, leaf.data, None)[1] = weakref.ref(leaf)


def leaf_owner(a: Any) -> Any:
    """The live leaf requiring grad whose data share ``a``'s buffer, or None."""
    if not _leaves:
        return None
    r = root(a)
    entry = _leaves.get(id(r))
    if entry is None or entry[0]() is not r:
        return None
    leaf = entry[1]()
    if leaf is None or not leaf.requires_grad or not leaf.is_leaf or root(leaf.data) is not r:
        return None
    return leaf
