"""Calling a module with other parameters and buffers (torch's
``torch.nn.utils.stateless.functional_call``): the given tensors stand in for the
module's own, by dotted name, for one call, and gradients flow to them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...tensor import Tensor
from ..module import Module

__all__ = ["functional_call", "merge_dicts"]

_MISSING = object()


def merge_dicts(fn: str, dicts: Any) -> dict[str, Any]:
    """One dict of a dict or a sequence of dicts whose keys do not overlap."""
    if isinstance(dicts, Mapping):
        return dict(dicts)
    if not isinstance(dicts, Sequence) or isinstance(dicts, str) or not all(
            isinstance(d, Mapping) for d in dicts):
        raise TypeError(f"{fn}: parameter_and_buffer_dicts must be a dict or a sequence of "
                        f"dicts, got {type(dicts).__name__}")
    out: dict[str, Any] = {}
    repeated = sorted({k for i, d in enumerate(dicts) for k in d
                       if any(k in e for e in dicts[:i])})
    if repeated:
        raise ValueError(f"{fn}: {repeated} appeared in multiple dictionaries; the call "
                         "would be ambiguous")
    for d in dicts:
        out.update(d)
    return out


def _names_by_tensor(module: Module) -> dict[int, list[str]]:
    by_id: dict[int, list[str]] = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + list(
            module.named_buffers(remove_duplicate=False)):
        by_id.setdefault(id(t), []).append(name)
    return by_id


def _with_ties(fn: str, module: Module, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` plus, for each tied tensor given under one of its names, its other names."""
    out = dict(values)
    for names in _names_by_tensor(module).values():
        given = [n for n in names if n in values]
        if len(names) < 2 or not given:
            continue
        first = values[given[0]]
        for n in given[1:]:
            if values[n] is not first:
                raise ValueError(f"{fn}: the tied weights {names} got different values under "
                                 f"{given[0]!r} and {n!r}")
        for n in names:
            out.setdefault(n, first)
    return out


def _check_strict(fn: str, module: Module, values: dict[str, Any]) -> None:
    names = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    names |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    unexpected = sorted(k for k in values if k not in names)
    missing = sorted(n for n in names if n not in values)
    if unexpected or missing:
        parts = []
        if unexpected:
            parts.append(f"unexpected key(s): {', '.join(map(repr, unexpected))}")
        if missing:
            parts.append(f"missing key(s): {', '.join(map(repr, missing))}")
        raise ValueError(f"{fn}: error(s) in reparametrizing for {type(module).__name__}: "
                         f"{'; '.join(parts)}")


def _swap(module: Module, key: str, value: Any) -> tuple[Module, str, str, Any]:
    """Put ``value`` in place of ``key``; returns what restores it."""
    path, _, leaf = key.rpartition(".")
    owner = module.get_submodule(path)
    if leaf in owner._parameters:
        old = owner._parameters[leaf]
        owner._parameters[leaf] = value
        return owner, "_parameters", leaf, old
    if leaf in owner._buffers:
        old = owner._buffers[leaf]
        owner._buffers[leaf] = value.data if isinstance(value, Tensor) else value
        return owner, "_buffers", leaf, old
    old = owner.__dict__.get(leaf, _MISSING)
    object.__setattr__(owner, leaf, value)
    return owner, "__dict__", leaf, old


def _restore(owner: Module, where: str, leaf: str, old: Any) -> None:
    registry = owner.__dict__ if where == "__dict__" else getattr(owner, where)
    if old is _MISSING:
        registry.pop(leaf, None)
    else:
        registry[leaf] = old


def call_with(fn: str, module: Any, values: dict[str, Any], args: Any, kwargs: Any,
              tie_weights: bool, strict: bool) -> Any:
    """``module(*args, **kwargs)`` with ``values`` standing in for its tensors."""
    if not isinstance(module, Module):
        raise TypeError(f"{fn}: module must be a Module, got {type(module).__name__}")
    for flag, v in (("tie_weights", tie_weights), ("strict", strict)):
        if not isinstance(v, bool):
            raise TypeError(f"{fn}: {flag}={v!r} must be a bool")
    for k, v in values.items():
        if not isinstance(k, str):
            raise TypeError(f"{fn}: key {k!r} must be a str")
        if not isinstance(v, (Tensor, np.ndarray)):
            raise TypeError(f"{fn}: the value of {k!r} is a {type(v).__name__}; expected a "
                            "Tensor")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"{fn}: kwargs must be a dict, got {type(kwargs).__name__}")
    if tie_weights:
        values = _with_ties(fn, module, values)
    if strict:
        _check_strict(fn, module, values)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    undo = []
    try:
        for key, value in values.items():
            undo.append(_swap(module, key, value))
        return module(*args, **(kwargs or {}))
    finally:
        for item in reversed(undo):
            _restore(*item)


def functional_call(module: Module, parameters_and_buffers: dict[str, Any], args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the tensors of ``parameters_and_buffers`` (keyed by
    dotted names, as in ``named_parameters``) in place of the module's own for this call;
    a non-tuple ``args`` is the one positional argument.  With ``tie_weights`` a tensor
    shared under two names is replaced under both; ``strict`` requires exactly the
    module's names.  Buffers given as Tensors enter as constants (convgrad's buffers are
    never differentiated)."""
    fn = "functional_call"
    if not isinstance(parameters_and_buffers, Mapping):
        raise TypeError(f"{fn}: parameters_and_buffers must be a dict, got "
                        f"{type(parameters_and_buffers).__name__}")
    return call_with(fn, module, dict(parameters_and_buffers), args, kwargs, tie_weights,
                     strict)
