"""Direct convolution loops compiled with Numba, for groups with few channels.

im2col + GEMM degenerates when a group has few input and output channels (depthwise
convolutions, the Gaussian window of SSIM): the patch copy costs more than the
matrix product.  These loops read a zero-padded slab in place instead.  Layout:
    slab (B, G, C, S)   padded input, spatial dims flattened (C-order)
    w    (G, O, C, T)   kernel taps, flattened
    out  (B, G, O, R, J) output rows R = prod(P[:-1]) of length J = P[-1]
with ``out[b,g,o,r,j] = sum_{c,t} w[g,o,c,t] * slab[b,g,c, row[r] + tap[t] + j*step]``.
Two loop orders: vectorised over ``j`` (long output rows) or over the taps of one
kernel row (long kernels, e.g. a weight gradient whose "kernel" is a whole image).
Numba is optional: without it the dispatcher never selects these kernels.  Which loop
order, whether to run Numba's threads and whether to allow reassociation are decided by
the dispatch point (:func:`convgrad.ops.dispatch.choose`).
"""

from __future__ import annotations

from math import prod

import numpy as np

from . import jit
from .slab import padded_slab, slab_extent

_kernels: dict = {}


def __getattr__(name: str):
    # ``HAVE_NUMBA`` is computed on first read: the dispatcher reads it only for groups
    # small enough for these loops, so other convolutions never import numba
    if name == "HAVE_NUMBA":
        return jit.numba() is not None
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _compile(loop: str, parallel: bool, fastmath: bool):
    key = (loop, parallel, fastmath)
    if key in _kernels:
        return _kernels[key]
    numba = jit.numba()
    njit = numba.njit
    prange = numba.prange if parallel else range

    def rows(slab, w, out, row, tap, step):
        B, G, C, _ = slab.shape
        O, T = w.shape[1], w.shape[3]
        R, J = out.shape[3], out.shape[4]
        for bgo in prange(B * G * O):
            b = bgo // (G * O)
            g = (bgo // O) % G
            o = bgo % O
            acc = np.zeros(J, dtype=out.dtype)
            for r in range(R):
                acc[:] = 0
                for c in range(C):
                    src = slab[b, g, c]
                    for t in range(T):
                        wv = w[g, o, c, t]
                        base = row[r] + tap[t]
                        if step == 1:  # contiguous: vectorised
                            seg = src[base:base + J]
                            for j in range(J):
                                acc[j] += wv * seg[j]
                        else:
                            for j in range(J):
                                acc[j] += wv * src[base + j * step]
                out[b, g, o, r, :] = acc
        return out

    def taps(slab, w, out, row, tap_rows, kl, kstep, step):
        # tap t = tr * kl + i; taps of one kernel row are kstep apart in the slab
        B, G, C, _ = slab.shape
        O = w.shape[1]
        R, J = out.shape[3], out.shape[4]
        TR = tap_rows.shape[0]
        for bgo in prange(B * G * O):
            b = bgo // (G * O)
            g = (bgo // O) % G
            o = bgo % O
            for r in range(R):
                for j in range(J):
                    acc = 0.0
                    for c in range(C):
                        for tr in range(TR):
                            base = row[r] + tap_rows[tr] + j * step
                            for i in range(kl):
                                acc += w[g, o, c, tr * kl + i] * slab[b, g, c, base + i * kstep]
                    out[b, g, o, r, j] = acc
        return out

    kernel = njit(parallel=parallel, cache=True, fastmath=fastmath)(
        rows if loop == "rows" else taps)
    _kernels[key] = kernel
    return kernel


def _offsets(shape: tuple, steps: tuple, extents: tuple) -> np.ndarray:
    """Flattened offsets of the grid ``prod(range(extents[d]) * steps[d])`` in ``shape``."""
    strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    off = np.zeros(1, dtype=np.int64)
    for d in range(len(shape)):
        axis = np.arange(extents[d], dtype=np.int64) * steps[d] * strides[d]
        off = (off[:, None] + axis[None, :]).ravel()
    return off


def direct_conv(x: np.ndarray, w: np.ndarray, out: np.ndarray, stride: tuple, lo: tuple,
                dil: tuple, budget: int, loop: str, parallel: bool, fastmath: bool) -> int:
    """``out`` (B, G, O, *P) from x (B, G, C, *L) and w (G, O, C, *K), reading x as zero
    outside; the padded slab of a batch chunk stays within ``budget`` bytes.  Returns
    the multiply-add FLOPs."""
    B, G, C, *L = x.shape
    O, K, P = w.shape[1], w.shape[3:], out.shape[3:]
    nd = len(P)
    ext = [slab_extent(P[i], K[i], stride[i], dil[i]) for i in range(nd)]
    start = [-lo[i] for i in range(nd)]
    per_sample = G * C * prod(ext) * out.dtype.itemsize
    nb = max(1, min(B, budget // max(per_sample, 1)))
    kernel = _compile(loop, parallel, fastmath)
    for b0 in range(0, B, nb):
        slab = padded_slab(x[b0:b0 + nb], start, ext, out.dtype, contiguous=True)
        if slab is None:
            out[b0:b0 + nb] = 0
            continue
        _run(kernel, loop, slab, w, out[b0:b0 + nb], stride, dil)
    return 2 * B * G * O * C * prod(K) * prod(P)


def _run(kernel, loop: str, slab: np.ndarray, w: np.ndarray, out: np.ndarray, stride: tuple,
         dil: tuple) -> None:
    B, G, C, *S = slab.shape
    O, K, P = w.shape[1], w.shape[3:], out.shape[3:]
    dtype = out.dtype
    slab_f = slab.reshape(B, G, C, -1)
    wf = np.ascontiguousarray(w, dtype=dtype).reshape(G, O, C, -1)
    row = _offsets(tuple(S), stride[:-1] + (0,), tuple(P[:-1]) + (1,))
    res = np.empty((B, G, O, int(np.prod(P[:-1], dtype=np.int64)), P[-1]), dtype=dtype)
    if loop == "rows":
        kernel(slab_f, wf, res, row, _offsets(tuple(S), dil, tuple(K)), stride[-1])
    else:
        tap_rows = _offsets(tuple(S), dil[:-1] + (0,), tuple(K[:-1]) + (1,))
        kernel(slab_f, wf, res, row, tap_rows, K[-1], dil[-1], stride[-1])
    out[...] = res.reshape(B, G, O, *P)


@jit.exercise
def _exercise() -> None:
    """The float32 loops along output rows, serial and parallel, once on tiny arrays
    (:func:`.jit.warm_up`): their first call in a training step loaded them from Numba's
    cache, 6-8 ms each (MS-SSIM's windows in the demo's first step)."""
    x = np.ones((1, 1, 1, 6, 6), np.float32)
    w = np.ones((1, 1, 1, 3, 1), np.float32)
    out = np.empty((1, 1, 1, 4, 6), np.float32)
    for parallel in (False, True):
        direct_conv(x, w, out, (1, 1), (0, 0), (1, 1), 1 << 20, "rows", parallel, False)
