"""The activations oneDNN has no exact kernel for, as compiled loops (Numba, :mod:`.jit`).

* ReLU's forward: oneDNN's turns a NaN into 0 and NumPy's ``maximum`` runs on one core
  (0.65 ms on (16, 32, 64, 64), this loop 0.08 ms on two).  ``x if x > 0 or x != x
  else 0`` is ``np.maximum(x, 0)`` bit for bit (NaN kept, -0 to +0).
* LeakyReLU's backward: oneDNN's passes a NaN input's gradient through unscaled, torch
  scales it by the slope.  ``g if x > 0 else g * slope`` is the NumPy rule bit for bit.
* ReLU's backward from the output ``y``: ``g if y > 0 or y != y else 0`` (NaN passes its
  gradient, as torch), the NumPy rule bit for bit; oneDNN's took 0.56 ms on 2M elements,
  this loop 0.21 (torch 0.17-0.29), measured interleaved on 2 threads.
* ReLU's backward fused with the sum of its result over all but the channels
  (``relu_grad_sums``: a convolution's bias gradient, when the ReLU follows it): the
  result as ``relu_grad``'s, its column sums into the partial sums of
  :func:`.reduction.part_sums` in the compiled column sums' order (blocks of rows in
  float32 within a part, in float64 across), so the sum has :func:`.reduction.total`'s
  bits without a second pass over memory.
* A binary operation (``+ - * /``) of two matrices of rows at their own pitches into a
  dense one (``binary_rows``): a channel slice of a channels-last array (a concatenation's
  gradient) met by a dense array, as a U-Net's skip gradients are summed.  One IEEE
  float32 operation an element, NumPy's bits; one pass over memory where NumPy's strided
  pass ran on one core (1.0 ms on (8, 16, 64, 64)) and oneDNN needs the slice copied
  first.

Flat dense arrays of one layout, in blocks of :data:`BLOCK` elements (rows: blocks of
:data:`ROW_BLOCK` rows) in a ``prange`` (serial where Numba's threading layer is its work
queue).
"""

from __future__ import annotations

import numpy as np

from . import jit
from .reduction_loops import PART_ROWS

__all__ = ["BINARY_OPS", "BLOCK", "ROW_BLOCK", "loops"]

#: elements per block of the parallel loop
BLOCK = 1 << 14
#: rows per block of ``binary_rows``'s parallel loop
ROW_BLOCK = 64
#: ``binary_rows``'s operation codes
BINARY_OPS = {"add": 0, "sub": 1, "mul": 2, "div": 3}


def _compile(numba) -> dict:
    """``{"relu": ..., "leaky_relu_grad": ..., "relu_grad": ...}`` compiled: what
    ``loops()`` returns (None without Numba)."""
    prange = numba.prange if jit.thread_safe() else range

    @numba.njit(nogil=True, cache=True, parallel=jit.thread_safe())
    def relu(x, y):
        n = x.size
        for b in prange((n + BLOCK - 1) // BLOCK):
            lo, hi = b * BLOCK, min(n, b * BLOCK + BLOCK)
            xs, ys = x[lo:hi], y[lo:hi]
            for i in range(hi - lo):
                v = xs[i]
                ys[i] = v if (v > 0 or v != v) else np.float32(0)

    @numba.njit(nogil=True, cache=True, parallel=jit.thread_safe())
    def relu_in_place(y):
        """``relu`` with the output its input (one array: the loop vectorises, where
        ``relu(y, y)`` ran scalar behind its aliasing check)."""
        n = y.size
        for b in prange((n + BLOCK - 1) // BLOCK):
            ys = y[b * BLOCK:min(n, b * BLOCK + BLOCK)]
            for i in range(ys.shape[0]):
                v = ys[i]
                ys[i] = v if (v > 0 or v != v) else np.float32(0)

    @numba.njit(nogil=True, cache=True, parallel=jit.thread_safe())
    def leaky_relu_grad(g, x, slope, gx):
        n = x.size
        for b in prange((n + BLOCK - 1) // BLOCK):
            lo, hi = b * BLOCK, min(n, b * BLOCK + BLOCK)
            gs, xs, os_ = g[lo:hi], x[lo:hi], gx[lo:hi]
            for i in range(hi - lo):
                os_[i] = gs[i] if xs[i] > 0 else gs[i] * slope

    @numba.njit(nogil=True, cache=True, parallel=jit.thread_safe())
    def relu_grad(g, y, gx):
        n = y.size
        for b in prange((n + BLOCK - 1) // BLOCK):
            lo, hi = b * BLOCK, min(n, b * BLOCK + BLOCK)
            gs, ys, os_ = g[lo:hi], y[lo:hi], gx[lo:hi]
            for i in range(hi - lo):
                v = ys[i]
                os_[i] = gs[i] if (v > 0 or v != v) else np.float32(0)

    @numba.njit(nogil=True, cache=True, parallel=jit.thread_safe())
    def relu_grad_sums(g, y, gx, width, block, parts):
        """gx = relu_grad(g, y) of flat dense (rows, width) matrices, and parts[0, p, c]
        the float64 sum of gx's column c over part p's rows (blocks of ``block`` rows
        summed in float32 first), as :mod:`.reduction_loops`' column sums."""
        rows = y.size // width
        for p in prange(parts.shape[1]):
            acc = parts[0, p]
            acc[:] = 0.0
            part = np.zeros(width, np.float32)
            end = min(rows, p * PART_ROWS + PART_ROWS)
            for r0 in range(p * PART_ROWS, end, block):
                # the block's gradient as one flat run, then its rows summed from cache
                # (row by row in one loop: (65536, 32) 0.49 -> 0.47 ms, (4096, 128) 0.14
                # -> 0.12; the sums' order is the same)
                r1 = min(end, r0 + block)
                gs, ys = g[r0 * width:r1 * width], y[r0 * width:r1 * width]
                os_ = gx[r0 * width:r1 * width]
                for i in range(os_.shape[0]):
                    v = ys[i]
                    os_[i] = gs[i] if (v > 0 or v != v) else np.float32(0)
                part[:] = 0
                for r in range(r1 - r0):
                    row = os_[r * width:(r + 1) * width]
                    for c in range(width):
                        part[c] += row[c]
                for c in range(width):
                    acc[c] += part[c]

    @numba.njit(nogil=True, cache=True, parallel=jit.thread_safe())
    def binary_rows(op, a, a_pitch, b, b_pitch, out, out_pitch, rows, run):
        """``out[r, j] = a[r, j] op b[r, j]`` for r < rows, j < run, each matrix flat
        from its first element with its row pitch; ``op`` a :data:`BINARY_OPS` code (one
        loop per operation, the branch outside it: inside, per row, it ran 1.6x slower)."""
        blocks = (rows + ROW_BLOCK - 1) // ROW_BLOCK
        if op == 0:
            for blk in prange(blocks):
                for r in range(blk * ROW_BLOCK, min(rows, blk * ROW_BLOCK + ROW_BLOCK)):
                    ar, br = a[r * a_pitch:r * a_pitch + run], b[r * b_pitch:r * b_pitch + run]
                    orow = out[r * out_pitch:r * out_pitch + run]
                    for j in range(run):
                        orow[j] = ar[j] + br[j]
        elif op == 1:
            for blk in prange(blocks):
                for r in range(blk * ROW_BLOCK, min(rows, blk * ROW_BLOCK + ROW_BLOCK)):
                    ar, br = a[r * a_pitch:r * a_pitch + run], b[r * b_pitch:r * b_pitch + run]
                    orow = out[r * out_pitch:r * out_pitch + run]
                    for j in range(run):
                        orow[j] = ar[j] - br[j]
        elif op == 2:
            for blk in prange(blocks):
                for r in range(blk * ROW_BLOCK, min(rows, blk * ROW_BLOCK + ROW_BLOCK)):
                    ar, br = a[r * a_pitch:r * a_pitch + run], b[r * b_pitch:r * b_pitch + run]
                    orow = out[r * out_pitch:r * out_pitch + run]
                    for j in range(run):
                        orow[j] = ar[j] * br[j]
        else:
            for blk in prange(blocks):
                for r in range(blk * ROW_BLOCK, min(rows, blk * ROW_BLOCK + ROW_BLOCK)):
                    ar, br = a[r * a_pitch:r * a_pitch + run], b[r * b_pitch:r * b_pitch + run]
                    orow = out[r * out_pitch:r * out_pitch + run]
                    for j in range(run):
                        orow[j] = ar[j] / br[j]

    return {"relu": relu, "relu_in_place": relu_in_place, "leaky_relu_grad": leaky_relu_grad,
            "relu_grad": relu_grad, "relu_grad_sums": relu_grad_sums, "binary_rows": binary_rows}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)
