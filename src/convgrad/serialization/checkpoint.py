"""``save(obj, path)`` and ``load(path)``: checkpoints in NumPy ``.npz``, weights in
``.safetensors``.

An ``.npz`` checkpoint holds either a flat mapping of names to arrays (a state dict,
stored as a plain archive that ``np.load`` reads too) or any nested state: dicts,
lists and tuples of arrays, Tensors, numbers, strings, bools and ``None`` (model and
optimiser state, the scheduler, the epoch).  Nested state is stored as its arrays
(``arr_0.npy``, ...) plus one JSON member, ``structure.json``, describing how they fit
together (``structure.py``).  A path ending in ``.safetensors`` reads and writes that
format instead (``safetensors_format.py``).

The file is written exactly at ``path`` (no suffix is added).  Loading never unpickles
and never runs code: every member is checked (a numeric ``.npy`` array whose header
agrees with its size, or the structure) before anything is allocated, and a file that
fails a check raises a ValueError naming the path.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import zipfile
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..devices import check_device, device
from ..tensor import Tensor
from .safetensors_format import load_safetensors, save_safetensors
from .structure import Malformed as _Malformed
from .structure import flatten, unflatten
from .torch_format import is_torch_archive, load_torch, save_torch

__all__ = ["load", "save"]

STRUCTURE = "structure.json"


def _path(path: Any, fn: str) -> str:
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"{fn}: path={path!r} must be a str or os.PathLike")
    return os.fspath(path)


def _is_safetensors(path: str) -> bool:
    return path.lower().endswith(".safetensors")


def _flat_arrays(obj: Any) -> bool:
    """A mapping of non-empty str keys to arrays and Tensors: stored as a plain archive."""
    return isinstance(obj, Mapping) and all(
        isinstance(k, str) and k and isinstance(v, np.ndarray | Tensor) for k, v in obj.items())


def save(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` to ``path``: nested checkpoint state (or a state dict) as ``.npz``, or a
    flat mapping of names to arrays as ``.safetensors`` when the path ends so."""
    fn = "save"
    if hasattr(path, "write"):  # an open binary file (torch.save(obj, f)): torch's format
        save_torch(obj, path)
        return
    path = _path(path, fn)
    if _is_safetensors(path):
        save_safetensors(obj, path, fn)
        return
    if path.lower().endswith((".pt", ".pth")):
        save_torch(obj, path)
        return
    if _flat_arrays(obj):
        arrays = [(key, np.asarray(v.data if isinstance(v, Tensor) else v))
                  for key, v in obj.items()]
        for key, arr in arrays:
            if arr.dtype.kind not in "biuf" or arr.dtype.fields is not None:
                raise TypeError(f"{fn}: {key!r} has dtype {arr.dtype}; expected a numeric array")
        _write_archive(path, arrays, None)
        return
    tree, arrays = flatten(obj, fn)
    text = json.dumps(tree, allow_nan=False, separators=(",", ":")).encode()
    _write_archive(path, [(f"arr_{i}", a) for i, a in enumerate(arrays)], text)


def _write_archive(path: str, arrays: list[tuple[str, np.ndarray]],
                   structure: bytes | None) -> None:
    """Arrays as ``<name>.npy`` members (uncompressed, as ``np.savez``), structure first."""
    with open(path, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED,
                                                 allowZip64=True) as archive:
        if structure is not None:
            archive.writestr(STRUCTURE, structure)
        for name, arr in arrays:
            with archive.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(arr), allow_pickle=False)


def _check_map_location(fn: str, value: Any) -> None:
    """torch's ``map_location``: everything convgrad loads is in CPU memory, so a device
    must be the CPU (a dict's targets too); a function is accepted and not called."""
    if value is None or callable(value) and not isinstance(value, str | device):
        return
    if isinstance(value, Mapping):
        for target in value.values():
            check_device(f"{fn}: map_location", target)
        return
    check_device(f"{fn}: map_location", value)


def load(path: str | os.PathLike, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None) -> Any:
    """Read a file written by :func:`save` (or by ``np.savez`` / safetensors / torch.save).

    torch's arguments: ``map_location`` may name the CPU only (``"cpu"``, a device, a dict
    whose targets are the CPU, or a function, which is not called: everything loads into
    CPU memory); ``weights_only`` (default True) reads state only, and ``False`` also
    unpickles any object in a ``torch.save`` archive (a whole module saved with
    ``save(model, path)``), which runs its code: only for files you trust, as torch;
    ``mmap`` is accepted (the file is read either way); ``pickle_module`` must be None or
    ``pickle``.

    A plain archive gives names -> ndarrays in the saved order; a nested checkpoint
    gives back the saved object (Tensors as Tensors, arrays as ndarrays, tuples as
    tuples, int dict keys as ints).  The archive is parsed here rather than by
    ``np.load``, so that every member is checked before anything is allocated: it must
    be a ``.npy`` array of numbers (bool, int, float) whose header agrees with the
    member's size, or the structure.  Anything else is a ValueError naming the path;
    nothing is ever unpickled.
    """
    fn = "load"
    if hasattr(path, "read"):  # an open binary file (torch.load(f)): read whole
        data = path.read()
        if not isinstance(data, bytes):
            raise TypeError(f"{fn}: the file object {path!r} gave {type(data).__name__}; "
                            "expected a file opened in binary mode ('rb')")
        name = getattr(path, "name", "<file object>")
        path = io.BytesIO(data)
    else:
        path = name = _path(path, fn)
    _check_map_location(fn, map_location)
    for arg, flag in (("weights_only", weights_only), ("mmap", mmap)):
        if flag is not None and not isinstance(flag, bool):
            raise TypeError(f"{fn}: {arg}={flag!r} must be a bool or None")
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError(f"{fn}: pickle_module={pickle_module!r} is not supported; expected "
                         "None or the pickle module")
    if isinstance(path, str):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{fn}: no such file: {path!r}")
        if _is_safetensors(path):
            return load_safetensors(path, fn)
        with open(path, "rb") as f:
            magic = f.read(4)
    else:
        magic = path.getvalue()[:4]
    if magic not in (b"PK\x03\x04", b"PK\x05\x06"):  # a zip archive (or an empty one)
        raise ValueError(f"{fn}: {name!r} is not an .npz archive (no zip signature; "
                         "expected a file written by convgrad.save, or by torch.save in its "
                         "zip format)")
    if is_torch_archive(path):
        try:
            return load_torch(path, trusted=weights_only is False)
        except Exception as e:  # any failure to parse an untrusted file is a bad file
            raise ValueError(f"{fn}: {name!r} is not a PyTorch state file convgrad can read: "
                             f"{type(e).__name__}: {e}") from None
    try:
        return _read_archive(path)
    except _Malformed as e:
        raise ValueError(f"{fn}: {name!r} is not a valid .npz state file: {e}") from None
    except Exception as e:  # any other failure to parse an untrusted file is a bad file
        raise ValueError(f"{fn}: {name!r} is not a valid .npz state file (truncated or "
                         f"corrupt?): {type(e).__name__}: {e}") from None


# deflate expands at most 1032:1; a member claiming more than that is impossible
_MAX_EXPANSION = 1032


def _read_archive(path: str | io.BytesIO) -> Any:
    out: OrderedDict[str, np.ndarray] = OrderedDict()
    structure = None
    size = os.path.getsize(path) if isinstance(path, str) else len(path.getvalue())
    budget = max(size, 1) * _MAX_EXPANSION
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename
            if info.file_size > budget:
                raise _Malformed(f"member {name!r} claims {info.file_size} bytes, more than "
                                 "the file could hold")
            if name == STRUCTURE:
                if structure is not None:
                    raise _Malformed(f"{STRUCTURE} appears twice")
                structure = _read_structure(archive, info)
                continue
            if not name.endswith(".npy"):
                raise _Malformed(f"member {name!r} is not a .npy array")
            key = name[: -len(".npy")]
            if key in out:
                raise _Malformed(f"entry {key!r} appears twice")
            with archive.open(info) as member:
                out[key] = _read_npy(member, info.file_size, key)
    if structure is None:
        return out
    arrays = {}
    for key, arr in out.items():
        if not (key.startswith("arr_") and key[4:].isdigit() and str(int(key[4:])) == key[4:]):
            raise _Malformed(f"entry {key!r} is not an array of the checkpoint structure")
        arrays[int(key[4:])] = arr
    return unflatten(structure, arrays)


def _read_structure(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    with archive.open(info) as member:
        raw = member.read(info.file_size + 1)
    if len(raw) != info.file_size:
        raise _Malformed(f"{STRUCTURE} is truncated")
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _Malformed(f"{STRUCTURE} is not valid JSON: {e}") from None


def _reject_constant(name: str) -> Any:
    raise _Malformed(f"{STRUCTURE} holds the non-standard constant {name}")


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
