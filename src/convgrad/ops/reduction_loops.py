"""Column sums of a batch of float32 (rows, C) matrices as a compiled loop (Numba,
:mod:`.jit`): the sums of :func:`.reduction.column_sums` (blocks of
:data:`.reduction.BLOCK_ROWS` rows summed in float32, the block sums in float64), in one
pass on every core.

The rows of each matrix are cut into parts of :data:`PART_ROWS`, fixed, each part's
float64 sums into its own row of the output, which the caller adds in order: the result
does not depend on the thread count.  Column sums of a (16384, 64) float32 matrix (a bias
gradient of a channels-last (16, 64, 32, 32) gradient) took 0.24 ms through BLAS block
products on the pool, 0.10 ms here (32 columns: 0.22 and 0.10; 128: 0.17 and 0.08).
"""

from __future__ import annotations

import numpy as np

from . import jit

__all__ = ["PART_ROWS", "loops"]

#: rows of one part (a multiple of the block rows)
PART_ROWS = 1 << 10


def _compile(numba) -> dict:
    """``{"column_sums": ...}`` compiled: what ``loops()`` returns (None without Numba)."""
    prange = numba.prange if jit.thread_safe() else range

    @numba.njit(nogil=True, cache=True, parallel=jit.thread_safe())
    def column_sums(m, block, out):  # m (B, R, C) float32 -> out (B, parts, C) float64
        rows, parts = m.shape[1], out.shape[1]
        for q in prange(m.shape[0] * parts):
            b, p = q // parts, q % parts
            acc = out[b, p]
            acc[:] = 0.0
            part = np.zeros(m.shape[2], np.float32)
            end = min(rows, p * PART_ROWS + PART_ROWS)
            for r0 in range(p * PART_ROWS, end, block):
                part[:] = 0
                for r in range(r0, min(end, r0 + block)):
                    row = m[b, r]
                    for c in range(row.shape[0]):
                        part[c] += row[c]
                for c in range(part.shape[0]):
                    acc[c] += part[c]

    return {"column_sums": column_sums}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)
