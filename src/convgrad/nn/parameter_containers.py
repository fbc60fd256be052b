"""``ParameterList`` and ``ParameterDict``: parameters held in a list or a dict, registered
as the module's own (named ``"0"``, ``"1"``, ... or by their keys, as torch names them,
so state dict keys read ``"scales.2"`` or ``"gains.red"``).  A Tensor or array stored in
one becomes a :class:`Parameter` sharing its memory, as in torch."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from ..tensor import Tensor
from .containers import key_value_pairs
from .module import Module, Parameter

__all__ = ["ParameterDict", "ParameterList"]


def _as_parameter(fn: str, where: str, value: Any) -> Parameter:
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor | np.ndarray):
        return Parameter(value)
    raise TypeError(f"{fn}: {where} is a {type(value).__name__}; expected a Parameter, a "
                    "Tensor or an ndarray")


def _describe(p: Parameter) -> str:
    size = "x".join(str(n) for n in p.shape)
    return f"Parameter containing: [{p.dtype} of size {size}]"


class ParameterList(Module):
    """A list of parameters: indexing, slicing, ``append``, ``extend``, iteration."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def _key(self, idx: Any) -> str:
        try:
            i = operator.index(idx)
        except TypeError:
            raise TypeError(f"ParameterList indices must be ints or slices, got "
                            f"{type(idx).__name__}") from None
        n = len(self._parameters)
        if not -n <= i < n:
            raise IndexError(f"ParameterList index {i} is out of range for {n} parameters")
        return str(i % n)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._parameters.values())[idx])
        return self._parameters[self._key(idx)]

    def __setitem__(self, idx: int, value: Any) -> None:
        key = self._key(idx)
        self._parameters[key] = _as_parameter("ParameterList", f"the value at index {idx}",
                                              value)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(list(self._parameters.values()))

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` (a Parameter, or a Tensor or array made one) at the end."""
        n = len(self._parameters)
        self.register_parameter(str(n), _as_parameter("ParameterList.append", "the value",
                                                      value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Append each of ``values``; returns ``self``."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor | np.ndarray):
            raise TypeError("ParameterList.extend: expected an iterable of parameters, got a "
                            f"{type(values).__name__}")
        for i, v in enumerate(list(values)):
            self.register_parameter(str(len(self._parameters)),
                                    _as_parameter("ParameterList", f"entry {i}", v))
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): {_describe(p)}" for k, p in self._parameters.items())


class ParameterDict(Module):
    """A dict of parameters (insertion order): ``pd[key]``, ``keys``, ``items``, ``update``,
    ``get``, ``pop``..."""

    def __init__(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]] | None
                 = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Parameter:
        if key not in self._parameters:
            raise KeyError(f"ParameterDict has no key {key!r}")
        return self._parameters[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.register_parameter(key, _as_parameter("ParameterDict", f"the value for key "
                                                                    f"{key!r}", value))

    def __delitem__(self, key: str) -> None:
        if key not in self._parameters:
            raise KeyError(f"ParameterDict has no key {key!r}")
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._parameters))

    def __contains__(self, key: object) -> bool:
        return key in self._parameters

    def get(self, key: str, default: Any = None) -> Any:
        return self._parameters.get(key, default)

    def clear(self) -> None:
        self._parameters.clear()

    def pop(self, key: str) -> Parameter:
        value = self[key]
        del self[key]
        return value

    def keys(self) -> list[str]:
        return list(self._parameters.keys())

    def items(self) -> list[tuple[str, Parameter]]:
        return list(self._parameters.items())

    def values(self) -> list[Parameter]:
        return list(self._parameters.values())

    def update(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        """Add or replace entries from a mapping or from ``(key, value)`` pairs, in order."""
        for key, value in key_value_pairs("ParameterDict.update", "value", parameters):
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): {_describe(p)}" for k, p in self._parameters.items())
