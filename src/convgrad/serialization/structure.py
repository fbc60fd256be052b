"""Nested checkpoint state as a JSON tree whose leaves point at arrays stored beside it.

:func:`flatten` turns an object built of dicts, lists, tuples, strings, numbers, bools,
``None``, ndarrays, NumPy scalars and Tensors into a JSON-able tree plus the list of
arrays it refers to by index; :func:`unflatten` rebuilds the object from the two and
checks every node, so a malformed tree is a :class:`Malformed` error, never a crash or
a foreign object.  The encoding:

- ``null``, ``true``/``false``, JSON numbers, JSON strings: themselves (floats written
  with ``repr``, so they read back bit for bit); ``{"float": "nan" | "inf" | "-inf"}``.
- a JSON list: a Python list; ``{"tuple": [...]}``: a tuple.
- ``{"dict": [[key, value], ...]}`` (or ``"odict"`` for an OrderedDict): keys are any
  encodable scalar (str, int, float, bool, None), so optimiser state keyed by parameter
  index keeps its int keys.
- ``{"array": i}``, ``{"scalar": i}`` (a NumPy scalar), ``{"tensor": i, "requires_grad": b}``:
  the ``i``-th stored array.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..tensor import Tensor

__all__ = ["Malformed", "flatten", "unflatten"]

FORMAT = "convgrad.checkpoint"
VERSION = 1


class Malformed(Exception):
    """A structural problem found while checking a stored file."""


_TENSOR_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64,
                                              np.bool_))


def _numeric(arr: np.ndarray) -> bool:
    return arr.dtype.kind in "biuf" and arr.dtype.fields is None and arr.dtype.subdtype is None


def flatten(obj: Any, fn: str) -> tuple[dict[str, Any], list[np.ndarray]]:
    """``(tree, arrays)`` for ``obj``; a TypeError names the first part that cannot be stored."""
    arrays: list[np.ndarray] = []

    def array_ref(arr: np.ndarray, where: str) -> int:
        if not _numeric(arr):
            raise TypeError(f"{fn}: {where} has dtype {arr.dtype}; expected a numeric array")
        arrays.append(arr)
        return len(arrays) - 1

    def key(k: Any, where: str) -> Any:
        if k is None or isinstance(k, bool | int | str):
            return k
        if isinstance(k, float):
            return encode(k, where)
        raise TypeError(f"{fn}: {where} has a key {k!r} of type {type(k).__name__}; expected "
                        "str, int, float, bool or None keys")

    def encode(x: Any, where: str) -> Any:
        if x is None or isinstance(x, bool | int | str):
            return x
        if isinstance(x, float):
            return x if math.isfinite(x) else {"float": repr(x)}
        if isinstance(x, Tensor):
            return {"tensor": array_ref(x.data, where), "requires_grad": x.requires_grad}
        if isinstance(x, np.ndarray):
            return {"array": array_ref(x, where)}
        if isinstance(x, np.generic):
            return {"scalar": array_ref(np.asarray(x), where)}
        if isinstance(x, list):
            return [encode(v, f"{where}[{i}]") for i, v in enumerate(x)]
        if isinstance(x, tuple):
            return {"tuple": [encode(v, f"{where}[{i}]") for i, v in enumerate(x)]}
        if isinstance(x, Mapping):
            tag = "odict" if isinstance(x, OrderedDict) else "dict"
            return {tag: [[key(k, where), encode(v, f"{where}[{k!r}]")] for k, v in x.items()]}
        raise TypeError(f"{fn}: {where} is a {type(x).__name__}; a checkpoint holds dicts, "
                        "lists, tuples, strings, numbers, bools, None, arrays and Tensors")

    root = encode(obj, "obj")
    return {"format": FORMAT, "version": VERSION, "root": root}, arrays


_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def unflatten(tree: Any, arrays: Mapping[int, np.ndarray]) -> Any:
    """The object :func:`flatten` encoded; every node is checked (:class:`Malformed`)."""
    if not isinstance(tree, dict) or tree.get("format") != FORMAT:
        raise Malformed("the structure member is not a convgrad checkpoint tree")
    if tree.get("version") != VERSION:
        raise Malformed(f"unknown checkpoint version {tree.get('version')!r} (this convgrad "
                        f"reads version {VERSION})")
    if "root" not in tree:
        raise Malformed("the checkpoint tree has no root")
    used: set[int] = set()

    def array(i: Any) -> np.ndarray:
        if isinstance(i, bool) or not isinstance(i, int) or i not in arrays:
            raise Malformed(f"the tree refers to array {i!r}, which the file does not hold")
        if i in used:
            raise Malformed(f"array {i} is referred to twice")
        used.add(i)
        return arrays[i]

    def decode(x: Any) -> Any:
        if x is None or isinstance(x, bool | int | float | str):
            return x
        if isinstance(x, list):
            return [decode(v) for v in x]
        if not isinstance(x, dict) or len(x) not in (1, 2):
            raise Malformed(f"unexpected node {_short(x)}")
        (tag, value), *rest = x.items()
        if tag == "tensor":
            if len(x) != 2 or not isinstance(x.get("requires_grad"), bool):
                raise Malformed(f"a tensor node needs 'requires_grad': {_short(x)}")
            arr = array(value)
            if arr.dtype not in _TENSOR_DTYPES:
                raise Malformed(f"a tensor of dtype {arr.dtype} (expected float32, float64, "
                                "int32, int64 or bool)")
            if x["requires_grad"] and arr.dtype.kind != "f":
                raise Malformed(f"a tensor of dtype {arr.dtype} cannot require grad")
            return Tensor(arr, requires_grad=x["requires_grad"], dtype=arr.dtype)
        if rest:
            raise Malformed(f"unexpected node {_short(x)}")
        if tag == "float" and value in _FLOATS:
            return _FLOATS[value]
        if tag == "array":
            return array(value)
        if tag == "scalar":
            arr = array(value)
            if arr.shape != ():
                raise Malformed(f"a scalar node refers to an array of shape {arr.shape}")
            return arr[()]
        if tag == "tuple" and isinstance(value, list):
            return tuple(decode(v) for v in value)
        if tag in ("dict", "odict") and isinstance(value, list):
            out = OrderedDict() if tag == "odict" else {}
            for pair in value:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise Malformed(f"a dict entry must be a [key, value] pair: {_short(pair)}")
                k = decode(pair[0])
                if not (k is None or isinstance(k, bool | int | float | str)):
                    raise Malformed(f"a dict key must be a scalar: {_short(pair[0])}")
                out[k] = decode(pair[1])
            return out
        raise Malformed(f"unexpected node {_short(x)}")

    obj = decode(tree["root"])
    unused = sorted(set(arrays) - used)
    if unused:
        raise Malformed(f"array(s) {unused[:5]} are stored but not referred to")
    return obj


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."
