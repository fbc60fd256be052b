"""oneDNN's ``dnnl_sgemm`` for float32 matrix products (the ``matmul`` family,
:mod:`..matmul`).

A row-major ``C = op(A) op(B)`` on oneDNN's OpenMP threads, the ones its convolutions
run on: no thread of another library is left spinning after it (OpenBLAS's are, which
is why NumPy's products run on one thread here).  An operand goes as it lies when it is
a row-major matrix or the transpose of one (``x @ w.T``: ``w``'s own rows), else as a
C-contiguous copy.
"""

from __future__ import annotations

import numpy as np

from . import _library

__all__ = ["sgemm"]

_F32 = np.dtype(np.float32)
_ITEM = _F32.itemsize


def _operand(a: np.ndarray) -> tuple[np.ndarray, bytes, int]:
    """``a`` (2-D float32), how oneDNN reads it ("N": rows as they lie, "T": the transpose
    of a row-major matrix) and its leading dimension, in elements."""
    rows, cols = a.shape
    s0, s1 = a.strides
    if a.flags.aligned:
        if s1 == _ITEM and s0 % _ITEM == 0 and s0 >= _ITEM * max(1, cols):
            return a, b"N", s0 // _ITEM
        if s0 == _ITEM and s1 % _ITEM == 0 and s1 >= _ITEM * max(1, rows):
            return a, b"T", s1 // _ITEM
    a = np.ascontiguousarray(a)
    return a, b"N", max(1, cols)


def sgemm(a: np.ndarray, b: np.ndarray, threads: int) -> np.ndarray | None:
    """``a @ b`` for float32 matrices (m x k and k x n, m, k, n >= 1) as a new C-contiguous
    array, computed on ``threads`` OpenMP threads; None when oneDNN is not loaded."""
    lib = _library.library()
    if lib is None:
        return None
    (m, k), n = a.shape, b.shape[1]
    a, ta, lda = _operand(a)
    b, tb, ldb = _operand(b)
    out = np.empty((m, n), _F32)
    saved = lib.omp_threads()
    if saved != threads:
        lib.set_omp_threads(threads)
    try:
        lib.call("dnnl_sgemm", ta, tb, m, n, k, 1.0, a.ctypes.data, lda, b.ctypes.data, ldb,
                 0.0, out.ctypes.data, n)
    finally:
        if saved != threads:
            lib.set_omp_threads(saved)
    return out
