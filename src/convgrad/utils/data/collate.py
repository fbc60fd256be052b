"""Joining samples into a batch (``default_collate``) and converting unbatched samples
(``default_convert``), following the structure of the samples as torch does.

Samples that are Tensors (of their dtype, integer labels included) or float arrays
stack into a Tensor with a new leading batch dim; Python floats become a float64 Tensor
and Python ints an int64 Tensor (torch's choices).  Integer and bool ndarrays (class
labels, masks) stack into an int64 (int32 stays int32) or bool Tensor.  Tuples,
lists, dicts and named tuples are collated entry by entry and keep their type; strings
stay lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...tensor import Tensor, stack

__all__ = ["default_collate", "default_convert"]

_WHAT = "Tensors, numpy arrays, numbers, strings, dicts, tuples or lists"


def _stack_arrays(arrays: list[np.ndarray], where: str) -> Any:
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"default_collate: {where} samples have shapes "
                         f"{sorted(shapes)}; all samples of a batch must have the same shape")
    out = np.stack(arrays)
    if out.dtype.kind == "f":
        return Tensor(out)
    if out.dtype.kind == "b" or out.dtype in (np.int32, np.int64):
        return Tensor(out, dtype=out.dtype)
    if out.dtype.kind in "iu":
        return Tensor(out, dtype=np.int64)
    raise TypeError(f"default_collate: {where} has dtype {out.dtype}; a batch must contain "
                    f"{_WHAT}")


def _collate(batch: list[Any], where: str) -> Any:
    elem = batch[0]
    kind = type(elem)
    if isinstance(elem, Tensor):
        if not all(isinstance(x, Tensor) for x in batch):
            raise TypeError(f"default_collate: {where} mixes Tensors with other types")
        if len({x.shape for x in batch}) != 1:
            raise ValueError(f"default_collate: {where} samples have shapes "
                             f"{sorted({x.shape for x in batch})}; all samples of a batch must "
                             "have the same shape")
        if any(x.requires_grad for x in batch):
            return stack(batch)  # recorded, as torch.stack would be
        return Tensor(np.stack([x.data for x in batch]), dtype=elem.dtype)  # int labels stay int
    if isinstance(elem, np.ndarray | np.generic):
        return _stack_arrays([np.asarray(x) for x in batch], where)
    if isinstance(elem, bool):
        return Tensor(np.array(batch, dtype=bool), dtype=bool)
    if isinstance(elem, int):
        return Tensor(np.array(batch, dtype=np.int64), dtype=np.int64)
    if isinstance(elem, float):
        return Tensor(np.array(batch, dtype=np.float64))
    if isinstance(elem, str | bytes):
        return list(batch)
    if isinstance(elem, Mapping):
        out = {key: _collate([d[key] for d in batch], f"{where}[{key!r}]") for key in elem}
        try:
            return kind(out)
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a named tuple
        return kind(*(_collate(list(s), f"{where}.{f}")
                      for f, s in zip(elem._fields, zip(*batch))))
    if isinstance(elem, Sequence):
        sizes = {len(x) for x in batch}
        if len(sizes) != 1:
            raise ValueError(f"default_collate: {where} samples have lengths {sorted(sizes)}; "
                             "each element of a batch must have the same length")
        parts = [_collate(list(s), f"{where}[{i}]") for i, s in enumerate(zip(*batch))]
        return tuple(parts) if isinstance(elem, tuple) else parts
    raise TypeError(f"default_collate: {where} is a {kind.__name__}; a batch must contain "
                    f"{_WHAT}")


def default_collate(batch: Sequence[Any]) -> Any:
    """Join a list of samples into one batch, recursing into their structure."""
    if not isinstance(batch, Sequence) or isinstance(batch, str | bytes) or not batch:
        raise ValueError(f"default_collate: batch must be a non-empty list of samples, got "
                         f"{batch!r:.60}")
    return _collate(list(batch), "the batch")


def default_convert(data: Any) -> Any:
    """One unbatched sample with its float arrays as Tensors (``batch_size=None``)."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray | np.generic) and np.asarray(data).dtype.kind == "f":
        return Tensor(np.asarray(data))
    if isinstance(data, Mapping):
        out = {k: default_convert(v) for k, v in data.items()}
        try:
            return type(data)(out)
        except TypeError:
            return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(v) for v in data))
    if isinstance(data, tuple):
        return tuple(default_convert(v) for v in data)
    if isinstance(data, list):
        return [default_convert(v) for v in data]
    return data
