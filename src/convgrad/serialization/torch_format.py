"""PyTorch's checkpoint format (``torch.save``'s zip archive), read and written without
torch and without running pickled code.

The archive holds ``<name>/data.pkl`` (a pickle of the object whose tensors are
``torch._utils._rebuild_tensor_v2`` calls on persistent storage ids) and one member
``<name>/data/<key>`` of raw little-endian bytes per storage.  Reading uses a restricted
``pickle.Unpickler``, as torch's ``weights_only`` loader: ``find_class`` admits only the
tensor rebuild functions, the storage type names and ``OrderedDict``, each mapped to a
function of this module, so a pickle that names anything else (a module, a class with
code, ``os.system``) is refused before it runs.  Tensors come back as ndarrays (a state
dict's values, as ``convgrad.save`` gives them); bfloat16 storages as float32 (exact).
Writing emits the same opcodes torch writes, for dicts, lists, tuples, strings, numbers,
None and arrays/Tensors, so ``torch.load(path, weights_only=True)`` reads the file.
"""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..tensor import Tensor

__all__ = ["is_torch_archive", "load_torch", "save_torch"]

# storage type name <-> NumPy dtype (bfloat16 is read through uint16)
_STORAGES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
             "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
             "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
             "BFloat16Storage": np.uint16}
_NAMES = {np.dtype(v): k for k, v in _STORAGES.items() if k != "BFloat16Storage"}


class _Storage:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def is_torch_archive(path: str) -> bool:
    """Whether ``path`` is a zip archive with a ``data.pkl`` (torch's format)."""
    try:
        with zipfile.ZipFile(path) as z:
            return any(n.endswith("/data.pkl") or n == "data.pkl" for n in z.namelist())
    except Exception:  # noqa: BLE001 (a corrupt archive is not torch's: the .npz reader reports it)
        return False


def _rebuild_tensor(storage: np.ndarray, offset: int, size: tuple, stride: tuple,
                    requires_grad: bool = False, hooks: Any = None, *metadata: Any
                    ) -> np.ndarray:
    """An ndarray copy of ``storage[offset:]`` viewed with ``size`` and ``stride``."""
    if not isinstance(storage, np.ndarray):
        raise pickle.UnpicklingError("a tensor record without a storage")
    for name, v in (("size", size), ("stride", stride)):
        if not isinstance(v, tuple) or any(not isinstance(n, int) or n < 0 for n in v):
            raise pickle.UnpicklingError(f"a tensor record with an invalid {name} {v!r}")
    if len(size) != len(stride) or not isinstance(offset, int) or offset < 0:
        raise pickle.UnpicklingError("a tensor record with inconsistent size and stride")
    if 0 not in size:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= storage.size:
            raise pickle.UnpicklingError(f"a tensor record reaching element {last} of a "
                                         f"storage of {storage.size}")
    else:
        return np.empty(size, storage.dtype)
    item = storage.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape=size,
                                           strides=tuple(s * item for s in stride))
    return np.array(view, copy=True)


def _rebuild_parameter(data: Any, requires_grad: bool = True, hooks: Any = None, *_: Any
                       ) -> Any:
    return data


def _ordered_dict(*args: Any) -> OrderedDict:
    return OrderedDict(*args)


_ADMITTED = {("collections", "OrderedDict"): _ordered_dict,
             ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
             ("torch._utils", "_rebuild_parameter"): _rebuild_parameter}


class _Unpickler(pickle.Unpickler):
    """Admits only tensor records and plain containers (torch's ``weights_only`` set)."""

    def __init__(self, data: bytes, read_storage: Any) -> None:
        super().__init__(io.BytesIO(data))
        self.read_storage = read_storage

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ADMITTED:
            return _ADMITTED[(module, name)]
        if module == "torch" and name in _STORAGES:
            return _Storage(name)
        raise pickle.UnpicklingError(f"the file names {module}.{name}, which is neither a "
                                     "tensor record nor a plain container; convgrad loads "
                                     "state dicts only (never pickled code)")

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _Storage) and isinstance(pid[2], str)):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r:.80}")
        return self.read_storage(pid[1].name, pid[2], pid[4])


def load_torch(path: str) -> Any:
    """The object in a ``torch.save`` archive (ndarrays for tensors)."""
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        pkl = next(n for n in names if n.endswith("/data.pkl") or n == "data.pkl")
        prefix = pkl[: -len("data.pkl")]
        if z.getinfo(pkl).file_size > 1 << 30:
            raise pickle.UnpicklingError("data.pkl is larger than 1 GiB")
        order = z.read(prefix + "byteorder").decode() if prefix + "byteorder" in names \
            else "little"
        if order not in ("little", "big"):
            raise pickle.UnpicklingError(f"unknown byteorder {order!r}")
        cache: dict[str, np.ndarray] = {}

        def read_storage(kind: str, key: str, numel: Any) -> np.ndarray:
            if key not in cache:
                dt = np.dtype(_STORAGES[kind]).newbyteorder("<" if order == "little" else ">")
                member = f"{prefix}data/{key}"
                if member not in names:
                    raise pickle.UnpicklingError(f"storage {key!r} is missing")
                info = z.getinfo(member)
                if info.file_size % dt.itemsize or (isinstance(numel, int) and
                                                    numel * dt.itemsize > info.file_size):
                    raise pickle.UnpicklingError(f"storage {key!r} holds {info.file_size} "
                                                 f"bytes, not {numel} of {kind}")
                arr = np.frombuffer(z.read(member), dt).astype(dt.newbyteorder("="))
                if kind == "BFloat16Storage":  # the high half of a float32
                    arr = (arr.astype(np.uint32) << 16).view(np.float32)
                cache[key] = arr
            return cache[key]

        return _Unpickler(z.read(pkl), read_storage).load()


# ----------------------------------------------------------------------------- writing
class _Writer:
    """Protocol-2 pickle opcodes for plain containers and tensor records."""

    def __init__(self) -> None:
        self.out = io.BytesIO()
        self.storages: list[np.ndarray] = []

    def op(self, b: bytes) -> None:
        self.out.write(b)

    def str_(self, s: str) -> None:
        raw = s.encode("utf-8")
        self.op(b"X" + struct.pack("<I", len(raw)) + raw)

    def global_(self, module: str, name: str) -> None:
        self.op(b"c" + f"{module}\n{name}\n".encode())

    def obj(self, v: Any, where: str) -> None:
        if v is None:
            self.op(b"N")
        elif isinstance(v, bool | np.bool_):
            self.op(b"\x88" if v else b"\x89")
        elif isinstance(v, int | np.integer):
            raw = int(v).to_bytes((int(v).bit_length() + 8) // 8 or 1, "little", signed=True)
            self.op(b"\x8a" + bytes([len(raw)]) + raw)  # LONG1
        elif isinstance(v, float | np.floating):
            self.op(b"G" + struct.pack(">d", float(v)))
        elif isinstance(v, str):
            self.str_(v)
        elif isinstance(v, Tensor | np.ndarray):
            self.tensor(np.asarray(v.data if isinstance(v, Tensor) else v), where)
        elif isinstance(v, Mapping):
            if isinstance(v, OrderedDict):
                self.global_("collections", "OrderedDict")
                self.op(b")R")
            else:
                self.op(b"}")
            if v:
                self.op(b"(")
                for k, x in v.items():
                    if not isinstance(k, str | int) or isinstance(k, bool):
                        raise TypeError(f"save: key {k!r} in {where} must be a str or int")
                    self.obj(k, where)
                    self.obj(x, f"{where}[{k!r}]")
                self.op(b"u")  # SETITEMS
        elif isinstance(v, list):
            self.op(b"]")
            if v:
                self.op(b"(")
                for i, x in enumerate(v):
                    self.obj(x, f"{where}[{i}]")
                self.op(b"e")  # APPENDS
        elif isinstance(v, tuple):
            self.op(b"(")
            for i, x in enumerate(v):
                self.obj(x, f"{where}[{i}]")
            self.op(b"t")
        else:
            raise TypeError(f"save: {where} is a {type(v).__name__}; a .pt file holds "
                            "dicts, lists, tuples, strings, numbers, None and tensors")

    def tensor(self, arr: np.ndarray, where: str) -> None:
        dt = arr.dtype.newbyteorder("=")
        if dt not in _NAMES:
            raise TypeError(f"save: {where} has dtype {arr.dtype}; expected a numeric array")
        arr = np.ascontiguousarray(arr, dt)
        key = str(len(self.storages))
        self.storages.append(arr)
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.op(b"((")
        self.str_("storage")
        self.global_("torch", _NAMES[dt])
        self.str_(key)
        self.str_("cpu")
        self.obj(arr.size, where)
        self.op(b"tQ")  # TUPLE, BINPERSID
        self.obj(0, where)
        self.obj(tuple(arr.shape), where)
        strides = tuple(s // arr.itemsize for s in arr.strides) if arr.size else \
            tuple(int(np.prod(arr.shape[i + 1:])) for i in range(arr.ndim))
        self.obj(strides, where)
        self.op(b"\x89")  # requires_grad False
        self.global_("collections", "OrderedDict")
        self.op(b")R")  # backward hooks: an empty OrderedDict
        self.op(b"tR")


def save_torch(obj: Any, path: str) -> None:
    """Write ``obj`` as ``torch.save`` does (a zip archive named after the file)."""
    w = _Writer()
    w.op(b"\x80\x02")
    w.obj(obj, "the object")
    w.op(b".")
    stem = path.replace("\\", "/").rsplit("/", 1)[-1].split(".", 1)[0] or "archive"
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in stem)
    with open(path, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED,
                                                 allowZip64=True) as z:
        z.writestr(f"{name}/data.pkl", w.out.getvalue())
        z.writestr(f"{name}/byteorder", "little")
        for i, arr in enumerate(w.storages):
            z.writestr(f"{name}/data/{i}", arr.astype(arr.dtype.newbyteorder("<")).tobytes())
        z.writestr(f"{name}/version", "3\n")
