"""Matrix products: a float32 matrix product on oneDNN's ``dnnl_sgemm``
(:mod:`.onednn.gemm`) where oneDNN is loaded; else NumPy's ``matmul`` with BLAS held at
one thread, a large 2-d product cut into blocks (of rows, or of columns when the output
is wider than tall), and a large stack of products (attention's batched ones) into runs
of the stack, on the thread pool (:func:`.parallel.run_chunks`).

oneDNN's sgemm runs on the OpenMP threads the convolutions use, so it leaves no other
library's threads spinning, and its float32 error measured at or below NumPy's
(OpenBLAS) on every shape tried, within 1.8x torch's (2 threads of an AMD EPYC, us, ours
before / sgemm / torch: (1024, 48) x (48, 192), a small transformer's, 209 / 98 / 124;
(16, 9216) x (9216, 128), MNIST's Linear, 553 / 198 / 333; (512, 512) x (512, 512) 1506
/ 1229 / 1370; (8, 512) x (512, 10) 11.1 / 8.6 / 7.0).

A multi-threaded OpenBLAS call leaves its threads spinning, waiting for more work, long
after it returns, and every kernel after it whose OpenMP threads need those cores waits
for them: the MNIST example's training step (a 9216 -> 128 Linear after two
convolutions) took 89-113 ms so, 43.5 ms with OpenBLAS on one thread (torch 39-48 ms),
on 2 cores of an Intel Xeon.  The pool's threads wait on a lock instead.  A block of
rows is computed as the whole product computes those rows: measured, the row blocks of
MNIST's products and of (16, 512) x (512, 512), (1000, 300) x (300, 200) equal the whole
product bit for bit (and column blocks alike), so the cut changes no result.  oneDNN's
matmul (its ``brg:avx512_core`` kernels, on the OpenMP threads) was measured and not
taken: 0-48% faster on a transformer's and a classifier's products, but its float32
error against float64 reached 2.46x torch's on positive operands ((2048, 2048) x
(2048, 64) uniform in [0, 1): 3.0e-7 against 1.2e-7; these blocks 1.4e-7).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import cpu, onednn
from .onednn import gemm
from .parallel import num_threads, run_chunks, single_threaded_blas
from .registry import family

__all__ = ["MATMUL", "MAX_ONEDNN_INNER", "MIN_BLOCK_ROWS", "MIN_ONEDNN_THREADED_MACS",
           "MIN_THREADED_MACS", "ONEDNN_ANY_INNER_VENDORS", "matmul"]

MATMUL = family("matmul", ("onednn", "threads", "numpy"))

#: multiply-adds from which oneDNN's sgemm runs on every thread (below, one: waking the
#: second costs more than it saves; us, one / two threads: (128, 64) x (64, 64) 17.0 /
#: 23.5, (256, 64) x (64, 64) 27.2 / 21.1, (256, 128) x (128, 128) 81 / 64)
MIN_ONEDNN_THREADED_MACS = 1 << 20
#: the longest sum (inner dim) oneDNN's sgemm takes on processors where its error was not
#: measured: up to it each output is one chain of multiply-adds, whatever the library
#: (errors equal to torch's to two digits at 48 and 192); a longer sum is cut into blocks
#: a library's own way, and oneDNN's matmul primitive, measured on an Intel Xeon, reached
#: 2.46x torch's error at 2048
MAX_ONEDNN_INNER = 256
#: the vendors whose processors ran the sgemm on sums of any length within 2x torch's
#: float32 error (an AMD EPYC: 1.0-1.8x at 48-9216, normal and uniform operands)
ONEDNN_ANY_INNER_VENDORS = ("AuthenticAMD",)

#: multiply-adds from which a product is cut into blocks: each block packs all of the
#: other operand again, and waking the pool costs ~40 us, so below this one call on one
#: thread is faster (measured, 2 threads, us, blocks / one call: 75M multiply-adds
#: (MNIST's Linear) 996-1030 / 1363-1426, 268M 2191 / 3868, but 17M 407 / 288, 4M
#: 197 / 117; OpenBLAS's own two threads: 715-894, 1944, 166, 83, and then they spin)
MIN_THREADED_MACS = 1 << 26
#: the fewest rows of a block (a product of fewer rows runs at a fraction of the rate)
MIN_BLOCK_ROWS = 8
_F32 = np.dtype(np.float32)
_FLOAT = (_F32, np.dtype(np.float64))


def matmul(a: Any, b: Any) -> Any:
    """``np.matmul(a, b)``, one ``matmul`` event: ``onednn`` for a float32 matrix
    product; ``threads`` for another large float 2-d product (blocks of rows or columns
    on the pool, BLAS on one thread each) or a large 3-d stack of them (runs of the
    stack), else ``numpy`` (one call, BLAS on one thread; NumPy's semantics for every
    other operand)."""
    shapes = (tuple(getattr(a, "shape", ())), tuple(getattr(b, "shape", ())))
    with MATMUL.record("matmul", *shapes) as rec:
        rows = _as_rows(a, b)
        if _onednn_product(rows, b):
            (m, k), n = rows.shape, b.shape[1]
            threads = num_threads() if m * k * n >= MIN_ONEDNN_THREADED_MACS else 1
            out = gemm.sgemm(rows, b, threads)
            if out is not None:
                rec.algorithm = "onednn"
                rec.flops = 2 * m * k * n
                return out.reshape(*a.shape[:-1], n)
        batches = _batches(a, b)
        if batches is not None:  # a stack of products: runs of the stack on the pool
            out = np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
                           + (a.shape[-2], b.shape[-1]), np.result_type(a, b))
            a3, b3 = (np.broadcast_to(v, out.shape[:-2] + v.shape[-2:]) for v in (a, b))
            macs = a.shape[-2] * a.shape[-1] * b.shape[-1]

            def run(c0: int, c1: int) -> int:
                np.matmul(a3[c0:c1], b3[c0:c1], out=out[c0:c1])
                return 2 * (c1 - c0) * macs

            rec.algorithm = "threads"
            rec.flops = run_chunks([lambda c0=c0, c1=c1: run(c0, c1)
                                    for c0, c1 in zip(batches, batches[1:])])
            return out
        blocks = _blocks(a, b)
        if blocks is None:
            rec.algorithm = "numpy"
            with single_threaded_blas():
                return np.matmul(a, b)
        out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
        (m, k), n = a.shape, b.shape[1]
        by_rows = m >= n

        def block(c0: int, c1: int) -> int:
            if by_rows:  # rows of a: each block packs all of b
                np.matmul(a[c0:c1], b, out=out[c0:c1])
            else:  # columns of b: each block packs all of a
                np.matmul(a, b[:, c0:c1], out=out[:, c0:c1])
            return 2 * (c1 - c0) * k * (n if by_rows else m)

        rec.algorithm = "threads"
        rec.flops = run_chunks([lambda c0=c0, c1=c1: block(c0, c1)
                                for c0, c1 in zip(blocks, blocks[1:])])
        return out


def _as_rows(a: Any, b: Any) -> Any:
    """``a``, or, for a C-contiguous stack of matrices times one matrix (``x @ w`` with x
    (B, T, C)), its rows as one matrix: the same products, one call."""
    if (type(a) is np.ndarray and type(b) is np.ndarray and a.ndim > 2 and b.ndim == 2
            and a.flags.c_contiguous):
        return a.reshape(-1, a.shape[-1])
    return a


def _onednn_product(a: Any, b: Any) -> bool:
    """A float32 matrix product (2-d ndarrays, no dim empty) that oneDNN's sgemm runs:
    its inner dim at most :data:`MAX_ONEDNN_INNER` except on the processors of
    :data:`ONEDNN_ANY_INNER_VENDORS`; unless :func:`.prefer` pins another algorithm or
    oneDNN is not loaded."""
    return (MATMUL.pinned() in (None, "onednn") and type(a) is np.ndarray
            and type(b) is np.ndarray and a.dtype == _F32 and b.dtype == _F32
            and a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0] and a.size > 0
            and b.size > 0 and (a.shape[1] <= MAX_ONEDNN_INNER
                                or cpu.vendor() in ONEDNN_ANY_INNER_VENDORS)
            and onednn.available())


def _batches(a: Any, b: Any) -> list[int] | None:
    """The cuts of the first dim of a stack of float products worth cutting (3-d
    operands, or one 2-d operand broadcast against a 3-d one), else None: each run of the
    stack is NumPy's loop of BLAS calls on one thread, so every product is computed as
    in one call, bit for bit."""
    if (MATMUL.pinned() == "numpy" or type(a) is not np.ndarray or type(b) is not np.ndarray
            or a.dtype not in _FLOAT or b.dtype != a.dtype or max(a.ndim, b.ndim) != 3
            or min(a.ndim, b.ndim) < 2 or a.shape[-1] != b.shape[-2]):
        return None
    try:
        lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    count = lead[0]
    parts = min(num_threads(), count)
    if parts < 2 or count * a.shape[-2] * a.shape[-1] * b.shape[-1] < MIN_THREADED_MACS:
        return None
    return [count * i // parts for i in range(parts + 1)]


def _blocks(a: Any, b: Any) -> list[int] | None:
    """The cuts (of the output's rows, or of its columns when it has more) of a product
    worth cutting, else None."""
    if (MATMUL.pinned() == "numpy" or type(a) is not np.ndarray or type(b) is not np.ndarray
            or a.ndim != 2 or b.ndim != 2 or a.dtype not in _FLOAT or b.dtype != a.dtype):
        return None
    m, k = a.shape
    n = b.shape[1]
    cut = max(m, n)  # the larger of the output's dims: the other operand is re-packed
    parts = min(num_threads(), cut // MIN_BLOCK_ROWS)
    if parts < 2 or k != b.shape[0] or m * k * n < MIN_THREADED_MACS:
        return None
    return [cut * i // parts for i in range(parts + 1)]
