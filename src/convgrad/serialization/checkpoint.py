"""``save(state_dict, path)`` and ``load(path)``: a flat name -> array mapping in NumPy ``.npz``.

The file is written exactly at ``path`` (no suffix is added) and read back with
``allow_pickle=False``, so loading a file runs no code.  A file that is not a valid
archive of numeric arrays raises a ValueError naming the path.
"""

from __future__ import annotations

import os
import zipfile
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..tensor import Tensor

__all__ = ["load", "save"]


def _path(path: Any, fn: str) -> str:
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"{fn}: path={path!r} must be a str or os.PathLike")
    return os.fspath(path)


def save(state_dict: Mapping[str, Any], path: str | os.PathLike) -> None:
    """Write ``state_dict`` (names -> ndarrays or Tensors) to ``path`` as an ``.npz`` archive."""
    fn = "save"
    path = _path(path, fn)
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"{fn}: state_dict must be a mapping of names to arrays, got "
                        f"{type(state_dict).__name__}")
    arrays: dict[str, np.ndarray] = {}
    for key, value in state_dict.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"{fn}: key {key!r} must be a non-empty str")
        arr = np.asarray(value.data if isinstance(value, Tensor) else value)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{fn}: {key!r} has dtype {arr.dtype}; expected a numeric array")
        arrays[key] = arr
    with open(path, "wb") as f:  # a file object: np.savez adds no ".npz" suffix
        np.savez(f, **arrays)


def load(path: str | os.PathLike) -> OrderedDict[str, np.ndarray]:
    """Read a file written by :func:`save`: names -> ndarrays, in the saved order.

    The archive is parsed here rather than by ``np.load``, so that every member is checked
    before anything is allocated: it must be a ``.npy`` array of numbers (bool, int,
    float) whose header agrees with the member's size.  Anything else is a ValueError
    naming the path; nothing is ever unpickled.
    """
    fn = "load"
    path = _path(path, fn)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{fn}: no such file: {path!r}")
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic not in (b"PK\x03\x04", b"PK\x05\x06"):  # a zip archive (or an empty one)
        raise ValueError(f"{fn}: {path!r} is not an .npz archive (no zip signature; "
                         "expected a file written by convgrad.save)")
    try:
        return _read_archive(path)
    except _Malformed as e:
        raise ValueError(f"{fn}: {path!r} is not a valid .npz state file: {e}") from None
    except Exception as e:  # any other failure to parse an untrusted file is a bad file
        raise ValueError(f"{fn}: {path!r} is not a valid .npz state file (truncated or "
                         f"corrupt?): {type(e).__name__}: {e}") from None


class _Malformed(Exception):
    """A structural problem found while checking the archive."""


# deflate expands at most 1032:1; a member claiming more than that is impossible
_MAX_EXPANSION = 1032


def _read_archive(path: str) -> OrderedDict[str, np.ndarray]:
    out: OrderedDict[str, np.ndarray] = OrderedDict()
    budget = max(os.path.getsize(path), 1) * _MAX_EXPANSION
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename
            if not name.endswith(".npy"):
                raise _Malformed(f"member {name!r} is not a .npy array")
            key = name[: -len(".npy")]
            if key in out:
                raise _Malformed(f"entry {key!r} appears twice")
            if info.file_size > budget:
                raise _Malformed(f"member {name!r} claims {info.file_size} bytes, more than "
                                 "the file could hold")
            with archive.open(info) as member:
                out[key] = _read_npy(member, info.file_size, key)
    return out


def _read_npy(member: Any, size: int, key: str) -> np.ndarray:
    """One ``.npy`` member: header checked (numeric dtype, size agreeing) before reading."""
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
    else:
        raise _Malformed(f"entry {key!r} has an unknown .npy version {version}")
    if dtype.kind not in "biuf" or dtype.fields is not None or dtype.subdtype is not None:
        raise _Malformed(f"entry {key!r} has dtype {dtype}; expected a numeric array")
    count = 1
    for n in shape:
        count *= n
    nbytes = count * dtype.itemsize
    header_bytes = member.tell()
    if nbytes != size - header_bytes:
        raise _Malformed(f"entry {key!r} claims shape {shape} ({nbytes} bytes) but holds "
                         f"{size - header_bytes} bytes")
    data = member.read(nbytes)
    if len(data) != nbytes:
        raise _Malformed(f"entry {key!r} is truncated")
    flat = np.frombuffer(data, dtype=dtype)
    arr = flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)
    return np.array(arr, copy=True)  # writeable, owning its memory, C order
