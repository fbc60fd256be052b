"""The copy of one matrix of rows into another, rows at any pitch, as a compiled loop
(Numba, :mod:`.jit`): a channel slice of a channels-last array (the part of a
concatenation's output that one input fills, the slice of its gradient that input gets)
is such a matrix, ``N * spatial`` rows of its channels, each row one contiguous run.

NumPy copies it run by run on one core, and oneDNN's reorder into or out of such a slice
runs below memory speed: on 2 threads of an Intel Xeon (us, NumPy / oneDNN / this loop),
a 16-channel slice of a (8, 48, 64, 64) array 324 / 215 / 186, a 16-of-32 slice of
(8, 32, 32, 32) 48 / 36 / 27; a U-Net's concatenation of (8, 32, 64, 64) and
(8, 16, 64, 64) channels-last parts took 827 us (torch 339), 248 in this loop.

Both matrices are passed flat, from their first element, with their row pitches (one
signature for every call: Numba compiles by the arrays' layouts).  Each row is one slice
assignment: Numba copies it as a block (an element loop over flat offsets ran at half
the speed, 473 against 243 us on the join above).
"""

from __future__ import annotations

import numpy as np

from . import jit

__all__ = ["BLOCK", "loops"]

#: rows per task of the parallel loop
BLOCK = 64


def _compile(numba) -> dict:
    """``{"copy_rows": ..., "join_rows": ...}`` compiled: what ``loops()`` returns (None
    without Numba)."""
    parallel = jit.thread_safe()
    prange = numba.prange if parallel else range

    @numba.njit(nogil=True, cache=True, parallel=parallel)
    def copy_rows(src, s_pitch, dst, t_pitch, rows, run):
        """``dst[r * t_pitch + j] = src[r * s_pitch + j]`` for r < rows, j < run."""
        for b in prange((rows + BLOCK - 1) // BLOCK):
            for r in range(b * BLOCK, min(rows, b * BLOCK + BLOCK)):
                dst[r * t_pitch:r * t_pitch + run] = src[r * s_pitch:r * s_pitch + run]

    @numba.njit(nogil=True, cache=True, parallel=parallel)
    def join_rows(a, a_pitch, a_run, b, b_pitch, b_run, out, out_pitch, rows):
        """Row r of ``out`` = row r of ``a`` then row r of ``b``: two parts joined in one
        pass over ``out`` (a pass per part writes part of each row's cache lines, which
        are read again for the next part: 639 against 248 us on the U-Net's join)."""
        for blk in prange((rows + BLOCK - 1) // BLOCK):
            for r in range(blk * BLOCK, min(rows, blk * BLOCK + BLOCK)):
                to = r * out_pitch
                out[to:to + a_run] = a[r * a_pitch:r * a_pitch + a_run]
                out[to + a_run:to + a_run + b_run] = b[r * b_pitch:r * b_pitch + b_run]

    return {"copy_rows": copy_rows, "join_rows": join_rows}


#: the compiled loop, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)


@jit.exercise
def _exercise() -> None:
    """The compiled loop once, with the argument types of real calls (:func:`.jit.warm_up`)."""
    lp = loops()
    if lp is not None:
        a, b = np.zeros(4, np.float32), np.zeros(4, np.float32)
        lp["copy_rows"](a, 2, b, 2, 2, 2)
        lp["join_rows"](a, 2, 1, a, 2, 1, b, 2, 2)
