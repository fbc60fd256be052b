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
None and arrays/Tensors, so ``torch.load(path, weights_only=True)`` reads the file; any
other object (a whole module) is pickled whole, and only ``weights_only=False`` reads it.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import struct
import zipfile
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ..tensor import Tensor

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "is_torch_archive",
           "load_torch", "safe_globals", "save_torch"]

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


def is_torch_archive(path: Any) -> bool:
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


#: classes a whole pickled object may hold without leaving the state-only loader: plain
#: data whose unpickling runs no code of the file's choosing
_PLAIN_CLASSES = {("builtins", "set"), ("builtins", "frozenset"),
                  ("convgrad.tensor.tensor", "Tensor"), ("convgrad.nn.module", "Parameter")}
#: the user's allowed globals (:func:`add_safe_globals`), by (module, qualified name)
_SAFE: dict[tuple[str, str], Any] = {}


def _plain_class(module: str, name: str) -> Any:
    import importlib

    return getattr(importlib.import_module(module), name)


def _global_key(obj: Any) -> tuple[str, str]:
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], str):
        obj, full = obj  # torch's (object, "module.name") form
        module, _, name = full.rpartition(".")
        return module, name
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str):
        raise TypeError(f"add_safe_globals: {obj!r} is not a class or function (expected "
                        "objects with a module and a name, or (object, 'module.name'))")
    return module, name


def add_safe_globals(safe_globals: list) -> None:
    """Allow these classes and functions in a state-only ``load`` (torch's
    ``torch.serialization.add_safe_globals``): a pickled model of these classes loads
    without ``weights_only=False``."""
    if not isinstance(safe_globals, list | tuple):
        raise TypeError(f"add_safe_globals: safe_globals={safe_globals!r} must be a list")
    for obj in safe_globals:
        key = _global_key(obj)
        _SAFE[key] = obj[0] if isinstance(obj, tuple) else obj


def get_safe_globals() -> list:
    """The globals :func:`add_safe_globals` allowed."""
    return list(_SAFE.values())


def clear_safe_globals() -> None:
    """Forget every global :func:`add_safe_globals` allowed."""
    _SAFE.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list) -> Iterator[None]:
    """Inside: these globals are allowed too (:func:`add_safe_globals`), as torch's
    ``torch.serialization.safe_globals``."""
    saved = dict(_SAFE)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _SAFE.clear()
        _SAFE.update(saved)


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
        if (module, name) in _PLAIN_CLASSES:
            return _plain_class(module, name)
        if (module, name) in _SAFE:
            return _SAFE[(module, name)]
        raise pickle.UnpicklingError(f"the file names {module}.{name}, which is neither a "
                                     "tensor record nor a plain container; by default "
                                     "convgrad loads state only (never pickled code): pass "
                                     "weights_only=False, only for a file you trust, to "
                                     "run its pickle (as torch.load)")

    def persistent_load(self, pid: Any) -> Any:
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "convgrad.array" \
                and isinstance(pid[1], str):
            return self.read_storage("array", pid[1], None)
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _Storage) and isinstance(pid[2], str)):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r:.80}")
        return self.read_storage(pid[1].name, pid[2], pid[4])


class _TrustedUnpickler(_Unpickler):
    """``weights_only=False``: any class the pickle names is imported and run (a whole
    module saved with ``save(model, path)``); tensor records still become ndarrays."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            return super().find_class(module, name)
        except pickle.UnpicklingError:
            return pickle.Unpickler.find_class(self, module, name)


def load_torch(path: Any, trusted: bool = False) -> Any:
    """The object in a ``torch.save`` archive (ndarrays for tensors); ``trusted``: any
    pickled object (:class:`_TrustedUnpickler`), else state only."""
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
        cache: dict[Any, np.ndarray] = {}

        def read_storage(kind: str, key: str, numel: Any) -> np.ndarray:
            if kind == "array":  # an .npy member of a whole pickled object
                if ("array", key) not in cache:
                    member = f"{prefix}arrays/{key}.npy"
                    if member not in names:
                        raise pickle.UnpicklingError(f"array {key!r} is missing")
                    with z.open(member) as f:
                        arr = np.lib.format.read_array(f, allow_pickle=False)
                    cache[("array", key)] = arr
                return cache[("array", key)]
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

        return (_TrustedUnpickler if trusted else _Unpickler)(z.read(pkl), read_storage).load()


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
            raise _NotPlain(f"save: {where} is a {type(v).__name__}")

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


class _NotPlain(TypeError):
    """An object the plain writer does not hold (a module, any other class)."""


class _ObjectPickler(pickle.Pickler):
    """An object pickled whole (its classes by name), each numeric ndarray in it (a
    Tensor's data) kept out of the pickle as an ``arrays/<key>.npy`` member: the loader
    reads those as ``.npy`` files, never unpickled; an array met twice is one member."""

    def __init__(self, file: Any, arrays: list[np.ndarray]) -> None:
        super().__init__(file, protocol=4)
        self.arrays = arrays
        self.keys: dict[int, str] = {}

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is not np.ndarray or np.dtype(obj.dtype.newbyteorder("=")) not in _NAMES:
            return None
        if id(obj) not in self.keys:
            self.keys[id(obj)] = str(len(self.arrays))
            self.arrays.append(obj)
        return ("convgrad.array", self.keys[id(obj)])


def save_torch(obj: Any, path: Any) -> None:
    """Write ``obj`` as ``torch.save`` does (a zip archive named after the file).

    Plain state (dicts, lists, tuples, strings, numbers, None, arrays and Tensors) is
    written as torch writes it.  Any other object (``torch.save(model, path)``: a whole
    module) is pickled whole, its classes by name: only ``load(path,
    weights_only=False)`` reads it back, running that pickle, as ``torch.load`` does."""
    w = _Writer()
    w.op(b"\x80\x02")
    arrays: list[np.ndarray] = []
    try:
        w.obj(obj, "the object")
    except _NotPlain:
        w = _Writer()
        try:
            _ObjectPickler(w.out, arrays).dump(obj)
        except Exception as e:  # noqa: BLE001 (an attribute pickle cannot hold: a lambda)
            raise TypeError(f"save: the object (a {type(obj).__name__}) is neither plain "
                            f"state nor picklable: {type(e).__name__}: {e}") from None
    else:
        w.op(b".")
    file = None if isinstance(path, str) else path  # an open binary file
    stem = "archive" if file is not None else \
        path.replace("\\", "/").rsplit("/", 1)[-1].split(".", 1)[0] or "archive"
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in stem)
    with contextlib.ExitStack() as stack:
        f = file if file is not None else stack.enter_context(open(path, "wb"))
        z = stack.enter_context(zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True))
        z.writestr(f"{name}/data.pkl", w.out.getvalue())
        z.writestr(f"{name}/byteorder", "little")
        for i, arr in enumerate(w.storages):
            z.writestr(f"{name}/data/{i}", arr.astype(arr.dtype.newbyteorder("<")).tobytes())
        for i, arr in enumerate(arrays):
            with z.open(f"{name}/arrays/{i}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, arr, allow_pickle=False)
        z.writestr(f"{name}/version", "3\n")
