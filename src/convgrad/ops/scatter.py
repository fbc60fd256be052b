"""Scatter ("col2im") convolution for unit stride: multiply first, then scatter-add.

With stride 1, ``out[p] = sum_{i,k: i*di - k*dk + lo = p} x[i] w[k]`` (input dilation
``di``, kernel dilation ``dk``, padding before ``lo``).  So one GEMM per (sample,
group) reads the input in place,

    cols[(o, k), i] = sum_c w[o, c, k] x[c, i]        (O*K x C) @ (C x prod(L)),

and each tap's slice of ``cols`` is added onto the output lattice
``i*di - k*dk + lo`` (a strided view).  The patch matrix has O*K rows instead of
the C*K of im2col, so this wins when a convolution has fewer output than input
channels, e.g. the input gradient of a convolution with few input channels or a
transposed convolution; input dilation costs nothing since only real samples are
multiplied.  Chunks over (batch, first input dim) keep ``cols`` inside the workspace.
"""

from __future__ import annotations

import itertools
from functools import partial
from math import prod

import numpy as np

from .parallel import num_threads, run_chunks


def _tap_range(k: int, dk: int, lo: int, di: int, i0: int, i1: int, n_out: int):
    """Inputs i in [i0, i1) whose target i*di - k*dk + lo lies in [0, n_out): (first, count)."""
    off = lo - k * dk
    first = max(i0, -(off // di) if off < 0 else 0)  # smallest i with i*di + off >= 0
    last = min(i1 - 1, (n_out - 1 - off) // di)      # largest i with i*di + off <= n_out-1
    return first, max(0, last - first + 1)


def scatter_conv(x: np.ndarray, w: np.ndarray, out: np.ndarray, lo: tuple, kdil: tuple,
                 idil: tuple, budget: int) -> int:
    """``out`` (B, G, O, *P) = unit-stride conv of x (B, G, C, *L) with w (G, O, C, *K)."""
    B, G, C, *L = x.shape
    O, K, P = w.shape[1], w.shape[3:], out.shape[3:]
    nd = len(P)
    dtype = out.dtype
    out[...] = 0
    if B == 0 or C == 0 or 0 in L:
        return 0
    nk = prod(K)
    wt = np.ascontiguousarray(
        np.moveaxis(w.reshape(G, O, C, nk), 3, 2).reshape(G, O * nk, C), dtype=dtype)
    row = O * nk * prod(L[1:]) * dtype.itemsize  # cols bytes per sample and first-dim row
    rows = max(1, budget // num_threads() // max(row, 1))  # rows of cols per worker
    nb = max(1, min(B, rows // L[0])) if rows >= L[0] else 1
    step0 = L[0] if rows >= L[0] else rows
    nb = min(nb, -(-B // num_threads()))  # one batch chunk per worker at least
    taps = list(itertools.product(*(range(k) for k in K)))

    def task(b0: int) -> int:  # batch chunks write disjoint outputs
        b1 = min(B, b0 + nb)
        for i0 in range(0, L[0], step0):
            i1 = min(L[0], i0 + step0)
            xs = x[b0:b1, :, :, i0:i1]
            npix = prod(xs.shape[3:])
            cols = np.empty((b1 - b0, G, O * nk, npix), dtype=dtype)
            for b in range(b1 - b0):
                for g in range(G):
                    np.matmul(wt[g], xs[b, g].reshape(C, npix), out=cols[b, g])
            cols = cols.reshape(b1 - b0, G, O, nk, i1 - i0, *L[1:])
            for t, k in enumerate(taps):
                src, dst = [], []
                for d in range(nd):
                    a, b_ = (i0, i1) if d == 0 else (0, L[d])
                    first, n = _tap_range(k[d], kdil[d], lo[d], idil[d], a, b_, P[d])
                    if n == 0:
                        break
                    start = first * idil[d] - k[d] * kdil[d] + lo[d]
                    src.append(slice(first - a, first - a + n))
                    dst.append(slice(start, start + (n - 1) * idil[d] + 1, idil[d]))
                else:
                    out[(slice(b0, b1), slice(None), slice(None), *dst)] += \
                        cols[(slice(None), slice(None), slice(None), t, *src)]
        return 2 * (b1 - b0) * G * O * C * nk * prod(L)

    return run_chunks([partial(task, b0) for b0 in range(0, B, nb)])
