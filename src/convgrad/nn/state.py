"""A module's state dict: writing it (``state_dict``) and reading it back (``load_state_dict``).

The keys and their order are torch's: a module contributes its parameters, then its
persistent buffers, then each child's entries under ``"<child name>."``; a module
registered under two names appears under both.  Loading walks the same tree, so
``missing_keys`` and ``unexpected_keys`` come out in the order torch reports them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from ..tensor import Tensor

__all__ = ["IncompatibleKeys", "load_state_dict", "state_dict"]


class IncompatibleKeys(NamedTuple):
    """What :meth:`Module.load_state_dict` did not match (empty lists when all matched)."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _entries(module: Any) -> Iterator[tuple[str, str, Any]]:
    """``(name, kind, value)`` of what ``module`` itself saves: parameters, then buffers."""
    for name, p in module._parameters.items():
        if p is not None:
            yield name, "parameter", p
    for name, b in module._buffers.items():
        if b is not None and name not in module._non_persistent_buffers_set:
            yield name, "buffer", b


def state_dict(module: Any, destination: Any, prefix: str, keep_vars: bool
               ) -> OrderedDict[str, Any]:
    if not isinstance(prefix, str):
        raise TypeError(f"state_dict: prefix={prefix!r} must be a str")
    if not isinstance(keep_vars, bool):
        raise TypeError(f"state_dict: keep_vars={keep_vars!r} must be a bool")
    if destination is None:
        destination = OrderedDict()
    elif not hasattr(destination, "__setitem__"):
        raise TypeError(f"state_dict: destination must be a mapping, got "
                        f"{type(destination).__name__}")
    _save(module, destination, prefix, keep_vars)
    return destination


def _save(module: Any, out: Any, prefix: str, keep_vars: bool) -> None:
    for name, kind, value in _entries(module):
        if keep_vars:
            out[prefix + name] = value
        else:
            out[prefix + name] = np.array(value.data if kind == "parameter" else value,
                                          copy=True)
    for name, child in module._modules.items():
        if child is not None:
            _save(child, out, f"{prefix}{name}.", keep_vars)


def load_state_dict(module: Any, state_dict: Any, strict: bool) -> IncompatibleKeys:
    fn = "load_state_dict"
    if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
        raise TypeError(f"{fn}: state_dict must be a mapping of names to arrays, got "
                        f"{type(state_dict).__name__}")
    if not isinstance(strict, bool):
        raise TypeError(f"{fn}: strict={strict!r} must be a bool")
    keys = list(state_dict.keys())
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(f"{fn}: key {key!r} is a {type(key).__name__}; expected str keys")
    _build_lazy(module, state_dict)
    missing: list[str] = []
    unexpected: list[str] = []
    matched: list[tuple[str, Any, str, str, Any]] = []
    _match(module, "", state_dict, keys, missing, unexpected, matched)
    if strict and (missing or unexpected):
        parts = []
        if missing:
            parts.append(f"missing key(s): {', '.join(map(repr, missing))}")
        if unexpected:
            parts.append(f"unexpected key(s): {', '.join(map(repr, unexpected))}")
        raise ValueError(f"{fn} for {type(module).__name__}: {'; '.join(parts)}")
    updates = [(owner, name, kind, _checked(key, kind, state_dict[key], target))
               for key, owner, name, kind, target in matched]
    for owner, name, kind, arr in updates:  # all checked first: a failed load changes nothing
        if kind == "parameter":
            owner._parameters[name].data[...] = arr
        else:
            buf = owner._buffers[name]
            if buf.flags.writeable:
                buf[...] = arr
            else:
                owner._buffers[name] = np.array(arr, dtype=buf.dtype)
    return IncompatibleKeys(missing, unexpected)


def _build_lazy(module: Any, state: Any) -> None:
    """Every lazy layer under ``module`` that has not run (:mod:`.lazy`) built from the
    shapes of its entries in ``state``, so that they can be copied in."""
    for name, m in list(module.named_modules()):
        waits = getattr(m, "has_uninitialized_params", None)
        if waits is None or not waits():
            continue
        head = name + "." if name else ""
        m.materialize_from_state({k[len(head):]: state[k] for k in state.keys()
                                  if k.startswith(head) and "." not in k[len(head):]})


def _match(module: Any, prefix: str, state: Any, keys: list[str], missing: list[str],
           unexpected: list[str], matched: list) -> None:
    """torch's per-module matching: own entries found or missing, then the keys under
    ``prefix`` that name neither an own entry nor a child."""
    own = list(_entries(module))
    for name, kind, target in own:
        key = prefix + name
        if key in state:
            matched.append((key, module, name, kind, target))
        else:
            missing.append(key)
    own_names = {name for name, _, _ in own}
    for key in keys:
        if key.startswith(prefix):
            rest = key[len(prefix):]
            if rest not in own_names and rest.split(".", 1)[0] not in module._modules:
                unexpected.append(key)
    for name, child in module._modules.items():
        if child is not None:
            _match(child, f"{prefix}{name}.", state, keys, missing, unexpected, matched)


def _checked(key: str, kind: str, value: Any, target: Any) -> np.ndarray:
    """``value`` as an array shaped like ``target`` (not yet cast), or the error naming it."""
    fn = "load_state_dict"
    try:
        arr = np.asarray(value.data if isinstance(value, Tensor) else value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{fn}: {key!r} is not an array of numbers: {e}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{fn}: {key!r} has dtype {arr.dtype}; expected numbers")
    shape = target.shape
    if shape == () and arr.shape == (1,):  # torch accepts a one-element vector for a scalar
        arr = arr.reshape(())
    if arr.shape != shape:
        raise ValueError(f"{fn}: size mismatch for {key!r}: the checkpoint has shape "
                         f"{arr.shape}, the {kind} has shape {tuple(shape)}")
    return arr
