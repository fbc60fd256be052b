"""Arrays in shared memory for other processes: ``Tensor.share_memory_`` and
``Module.share_memory``, as torch.multiprocessing's hogwild training uses them.

A shared array is a file of the shared-memory filesystem (``/dev/shm``) mapped into
memory.  Sent to another process through ``multiprocessing`` (a ``Process``'s arguments
under the spawn method, a queue), it travels as the file's path, shape and dtype, and
the receiver maps the same file: an in-place update in either process (an optimiser's
step) is seen by both.  Only multiprocessing's pickler does this (reducers registered
with ``ForkingPickler`` on first use); ``pickle`` and ``save`` copy the values.  The
process that made the array deletes the file when the array is freed or at exit (a
process already mapping it keeps its pages).
"""

from __future__ import annotations

import mmap
import os
import tempfile
import weakref
from math import prod
from typing import Any

import numpy as np

__all__ = ["attach", "path_of", "share"]

_DIR = "/dev/shm"
_paths: dict[int, tuple[weakref.ref, str]] = {}  # id(array) -> (the array, its file)
_registered: list = []


def path_of(a: Any) -> str | None:
    """The shared-memory file behind ``a``, or None when ``a`` is not a shared array."""
    entry = _paths.get(id(a))
    return entry[1] if entry is not None and entry[0]() is a else None


def _register(a: np.ndarray, path: str, owner: bool) -> None:
    key = id(a)

    def forget() -> None:
        if _paths.get(key, (None, None))[1] == path:
            del _paths[key]
        if owner:
            try:
                os.unlink(path)
            except OSError:
                pass

    _paths[key] = (weakref.ref(a), path)
    weakref.finalize(a, forget)
    _register_reducers()


def _mapped(path: str, shape: tuple, dtype: np.dtype) -> np.ndarray:
    with open(path, "r+b") as f:
        mm = mmap.mmap(f.fileno(), 0)
    return np.frombuffer(mm, dtype, count=prod(shape)).reshape(shape)


def share(a: np.ndarray) -> np.ndarray:
    """``a`` itself if it is shared already, else a copy of it in a new shared-memory
    file (C order)."""
    if path_of(a) is not None:
        return a
    if type(a) is not np.ndarray:
        raise TypeError(f"share_memory_: a Tensor holding a {type(a).__name__} cannot be "
                        "shared (expected an in-memory ndarray)")
    if not (os.path.isdir(_DIR) and os.access(_DIR, os.W_OK)):
        raise RuntimeError(f"share_memory_: no writable shared-memory filesystem at {_DIR}")
    fd, path = tempfile.mkstemp(prefix="convgrad-shared-", dir=_DIR)
    try:
        os.ftruncate(fd, max(a.nbytes, 1))
    finally:
        os.close(fd)
    out = _mapped(path, a.shape, np.dtype(a.dtype.str))
    np.copyto(out, a)
    _register(out, path, owner=True)
    return out


def attach(path: str, shape: tuple, dtype: str) -> np.ndarray:
    """The shared array in ``path`` (another process made it)."""
    out = _mapped(path, tuple(shape), np.dtype(dtype))
    _register(out, path, owner=False)
    return out


# -- multiprocessing's pickler: shared arrays (and Tensors holding them) by reference
def _reduce_array(a: np.ndarray) -> tuple:
    path = path_of(a)
    if path is None:
        return a.__reduce_ex__(4)
    return attach, (path, a.shape, a.dtype.str)


def _rebuild_tensor(cls: type, path: str, shape: tuple, dtype: str,
                    requires_grad: bool) -> Any:
    t = cls.__new__(cls)
    t.data, t.grad, t.grad_fn, t._requires_grad = attach(path, shape, dtype), None, None, \
        requires_grad
    return t


def _reduce_tensor(t: Any) -> tuple:
    path = path_of(t.data)
    if path is None:
        return t.__reduce_ex__(4)
    # the values by reference; the gradient is not shared (torch's rule too)
    return _rebuild_tensor, (type(t), path, t.data.shape, t.data.dtype.str, t.requires_grad)


def _register_reducers() -> None:
    if _registered:
        return
    from multiprocessing.reduction import ForkingPickler

    from ..autograd import tensor_type

    ForkingPickler.register(np.ndarray, _reduce_array)
    tensor_cls = tensor_type()
    for cls in (tensor_cls, *_subclasses(tensor_cls)):
        ForkingPickler.register(cls, _reduce_tensor)
    _registered.append(True)


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out
