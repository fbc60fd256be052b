"""How a worker's batch reaches the loader: large arrays through shared memory.

A result put on a ``multiprocessing`` queue is pickled, written through a pipe in
64 KiB pieces and unpickled: about 40 ms for a 12.6 MB batch of images (measured on 2
cores), more than decoding some of its images.  Here a worker writes each array of at
least :data:`MIN_SHARED_BYTES` into a file of a shared-memory directory (tmpfs: one
copy into memory) and sends only its name, shape and dtype; the loader reads it back
(one copy) and deletes the file.  The directory belongs to one worker pool and is
removed with it, so a batch never read (a loader left early, a crash) leaves nothing.
Where no shared-memory filesystem exists, results go through the queue as they are.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...autograd import tensor_type

__all__ = ["MIN_SHARED_BYTES", "SharedDir"]

# Arrays smaller than this go through the queue as they are: a file costs two system
# calls and a name, about as much as pickling 64 KiB.
MIN_SHARED_BYTES = 1 << 16
_SHM = "/dev/shm"


@dataclass(frozen=True)
class _SharedArray:
    path: str
    shape: tuple
    dtype: str
    tensor: bool  # a convgrad Tensor's data (rebuilt as a Tensor)


class SharedDir:
    """A shared-memory directory for one pool's results (``None`` path: not available)."""

    def __init__(self) -> None:
        self.path = tempfile.mkdtemp(prefix="convgrad-loader-", dir=_SHM) \
            if os.path.isdir(_SHM) and os.access(_SHM, os.W_OK) else None
        self._next = 0

    # -- in the worker
    def pack(self, worker_id: int, obj: Any) -> Any:
        """``obj`` with its large arrays (and Tensors' arrays) written to files."""
        if self.path is None:
            return obj
        return self._pack(f"{worker_id}-{os.getpid()}", obj)

    def _pack(self, tag: str, obj: Any) -> Any:
        tensor_cls = tensor_type()
        is_tensor = isinstance(obj, tensor_cls)
        arr = obj.data if is_tensor else obj
        if type(arr) is np.ndarray and arr.nbytes >= MIN_SHARED_BYTES and \
                not (is_tensor and obj.requires_grad):
            path = os.path.join(self.path, f"{tag}-{self._next}")
            self._next += 1
            with open(path, "wb") as f:
                np.ascontiguousarray(arr).tofile(f)
            return _SharedArray(path, arr.shape, arr.dtype.str, is_tensor)
        if type(obj) in (list, tuple):
            return type(obj)(self._pack(tag, x) for x in obj)
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a named tuple
            return type(obj)._make(self._pack(tag, x) for x in obj)
        if type(obj) is dict:
            return {k: self._pack(tag, v) for k, v in obj.items()}
        return obj

    # -- in the loader
    @staticmethod
    def unpack(obj: Any) -> Any:
        """``obj`` with every shared array read back (and its file deleted)."""
        if isinstance(obj, _SharedArray):
            arr = np.fromfile(obj.path, dtype=np.dtype(obj.dtype)).reshape(obj.shape)
            os.unlink(obj.path)
            return tensor_type()._wrap(arr) if obj.tensor else arr
        if type(obj) in (list, tuple):
            return type(obj)(SharedDir.unpack(x) for x in obj)
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return type(obj)._make(SharedDir.unpack(x) for x in obj)
        if type(obj) is dict:
            return {k: SharedDir.unpack(v) for k, v in obj.items()}
        return obj

    def remove(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None
