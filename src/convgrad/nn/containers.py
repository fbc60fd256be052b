"""``ModuleList`` and ``ModuleDict``: modules held in a list or a dict, registered as children.

Neither has a ``forward``: they hold layers that the owning module calls in its own
order.  Their children are named as torch names them (``"0"``, ``"1"``, ... for a list,
the keys for a dict), so state dict keys read ``"blocks.2.weight"`` or
``"heads.cls.bias"``.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .module import Module

__all__ = ["ModuleDict", "ModuleList", "key_value_pairs"]


class ModuleList(Module):
    """A list of modules: indexing, ``append``, ``extend``, ``insert``, ``pop``, slicing."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, idx: Any) -> str:
        try:
            i = operator.index(idx)
        except TypeError:
            raise TypeError(f"ModuleList indices must be ints or slices, got "
                            f"{type(idx).__name__}") from None
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"ModuleList index {i} is out of range for {n} modules")
        return str(i % n)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[self._index(idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = self._index(idx)
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList: cannot assign a {type(module).__name__} at index "
                            f"{idx}; expected a Module")
        self._modules[key] = module

    def __delitem__(self, idx: int | slice) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules)[idx]:
                del self._modules[key]
        else:
            del self._modules[self._index(idx)]
        self._renumber(list(self._modules.values()))

    def _renumber(self, modules: list[Module]) -> None:
        self._modules.clear()
        for i, m in enumerate(modules):
            self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end; returns ``self``."""
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList.append: got a {type(module).__name__}, expected a "
                            "Module")
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append each module of ``modules``; returns ``self``."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend: expected an iterable of Modules, got a "
                            f"{type(modules).__name__}")
        for i, m in enumerate(list(modules)):
            if not isinstance(m, Module):
                raise TypeError(f"ModuleList: entry {i} is a {type(m).__name__}, expected a "
                                "Module")
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index`` (clamped, as ``list.insert``)."""
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList.insert: got a {type(module).__name__}, expected a "
                            "Module")
        items = list(self._modules.values())
        items.insert(operator.index(index), module)
        self._renumber(items)

    def pop(self, idx: int = -1) -> Module:
        """Remove and return the module at ``idx`` (the last by default)."""
        module = self[idx]
        del self[idx]
        return module


class ModuleDict(Module):
    """A dict of modules (insertion order): ``md[key]``, ``keys``, ``items``, ``update``..."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None
                 = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        if key not in self._modules:
            raise KeyError(f"ModuleDict has no key {key!r}")
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict: value for key {key!r} is a {type(module).__name__}, "
                            "expected a Module")
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._modules))

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def keys(self) -> list[str]:
        return list(self._modules.keys())

    def items(self) -> list[tuple[str, Module]]:
        return list(self._modules.items())

    def values(self) -> list[Module]:
        return list(self._modules.values())

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace entries from a mapping or from ``(key, module)`` pairs, in order."""
        for key, module in key_value_pairs("ModuleDict.update", "module", modules):
            self[key] = module


def key_value_pairs(fn: str, what: str, items: Any) -> list[tuple[Any, Any]]:
    """``items`` (a mapping, a keyed container, or ``(key, value)`` pairs) as a list of
    pairs in order; a TypeError names ``fn`` and the element that is not a pair."""
    if isinstance(items, Mapping) or (isinstance(items, Module) and hasattr(items, "items")):
        return list(items.items())
    if not isinstance(items, Iterable) or isinstance(items, str | Module):
        raise TypeError(f"{fn}: expected a mapping or an iterable of (key, {what}) pairs, "
                        f"got a {type(items).__name__}")
    pairs = []
    for i, pair in enumerate(items):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(f"{fn}: element {i} should be a (key, {what}) pair, got {pair!r}")
        pairs.append(tuple(pair))
    return pairs
