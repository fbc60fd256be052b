"""Dense convolution by im2col + BLAS matmul, in chunks of bounded workspace.

Layout (all ndarray views, any strides):
    x   (B, G, C, *L)   input, grouped
    w   (G, O, C, *K)   kernel, grouped
    out (B, G, O, *P)   written (or accumulated into) by ``im2col_conv``
``out[b, g, o, p] = sum_{c, k} x[b, g, c, p*s + k*d - lo] * w[g, o, c, k]``, with
x read as zero outside ``[0, L)``.  There is no input dilation here (see polyphase).

The work is split into chunks over (B, P_1..P_n, K_1..K_n), outermost first, so that
the zero-padded slab, the patch matrix and the result of one chunk fit in the
workspace.  Chunking over K (only for extreme dilations) accumulates partial sums.
"""

from __future__ import annotations

import itertools
from functools import partial
from math import prod

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .parallel import num_threads, run_chunks
from .slab import padded_slab, slab_extent

# Below this many output positions per image, fold the batch into one GEMM.
FOLD_BATCH_BELOW = 512


def plan_chunks(B: int, G: int, C: int, O: int, P: tuple, K: tuple, stride: tuple,
                dil: tuple, itemsize: int, budget: int) -> list[int]:
    """Chunk extents for (B, *P, *K): greedy, outermost first, within ``budget`` bytes."""
    full = [B, *P, *K]
    nd = len(P)

    def cost(c: list[int]) -> int:
        nb, pc, kc = c[0], c[1:1 + nd], c[1 + nd:]
        slab = prod(slab_extent(pc[i], kc[i], stride[i], dil[i]) for i in range(nd))
        elems = nb * G * (C * slab + C * prod(kc) * prod(pc) + O * prod(pc))
        return elems * itemsize

    chunk = list(full)
    for i in range(len(full)):
        if cost(chunk) <= budget:
            break
        lo, hi = 1, full[i]
        while lo < hi:  # largest extent along dim i that fits
            mid = (lo + hi + 1) // 2
            chunk[i] = mid
            if cost(chunk) <= budget:
                lo = mid
            else:
                hi = mid - 1
        chunk[i] = lo
    return chunk


def im2col_conv(x: np.ndarray, w: np.ndarray, out: np.ndarray, stride: tuple, lo: tuple,
                dil: tuple, budget: int) -> int:
    """Compute ``out`` (see module docstring) in chunks of at most ``budget`` bytes each;
    returns the multiply-add FLOPs done."""
    B, G, C, *L = x.shape
    _, O, _, *K = w.shape
    P = out.shape[3:]
    nd = len(P)
    if out.size == 0:
        return 0
    if B == 0 or C == 0 or 0 in L:
        out[...] = 0
        return 0
    dtype = out.dtype
    chunk = plan_chunks(B, G, C, O, tuple(P), tuple(K), stride, dil, dtype.itemsize, budget)
    nb_c, p_c, k_c = chunk[0], chunk[1:1 + nd], chunk[1 + nd:]
    p_starts = list(itertools.product(*(range(0, P[i], p_c[i]) for i in range(nd))))
    workers = num_threads()
    if len(p_starts) * -(-B // nb_c) < workers and B > 1:  # keep every worker busy
        nb_c = -(-B // workers)
    k_starts = list(itertools.product(*(range(0, K[i], k_c[i]) for i in range(nd))))

    def task(b0: int, p0: tuple) -> int:
        b1 = min(B, b0 + nb_c)
        pc = tuple(min(p_c[i], P[i] - p0[i]) for i in range(nd))
        out_view = out[(slice(b0, b1), slice(None), slice(None),
                        *(slice(p0[i], p0[i] + pc[i]) for i in range(nd)))]
        flops = 0
        for j, k0 in enumerate(k_starts):  # partial sums over taps: in order, in one task
            kc = tuple(min(k_c[i], K[i] - k0[i]) for i in range(nd))
            flops += _chunk(x[b0:b1], w, out_view, stride, lo, dil, p0, pc, k0, kc,
                            accumulate=j > 0)
        return flops

    return run_chunks([partial(task, b0, p0) for b0 in range(0, B, nb_c) for p0 in p_starts])


def _chunk(x, w, out_view, stride, lo, dil, p0, pc, k0, kc, accumulate) -> int:
    nb, G, C, *L = x.shape
    O = w.shape[1]
    nd = len(pc)
    start = [p0[i] * stride[i] + k0[i] * dil[i] - lo[i] for i in range(nd)]
    ext = [slab_extent(pc[i], kc[i], stride[i], dil[i]) for i in range(nd)]
    flat = (nd >= 2 and all(v == 1 for v in stride) and prod(pc) >= FOLD_BATCH_BELOW
            and kc[-1] <= pc[-1])
    slab = padded_slab(x, start, ext, out_view.dtype)
    if slab is None:  # the chunk reads only padding
        if not accumulate:
            out_view[...] = 0
        return 0
    if flat and (slab.strides[-1] != slab.itemsize
                 or any(v % slab.itemsize for v in slab.strides[3:])):
        slab = np.ascontiguousarray(slab)
    if flat:
        return _flat_chunk(slab, w, out_view, dil, k0, kc, pc, accumulate)
    st = slab.strides
    patches = as_strided(
        slab,
        shape=(nb, G, C, *kc, *pc),
        strides=(st[0], st[1], st[2], *(st[3 + i] * dil[i] for i in range(nd)),
                 *(st[3 + i] * stride[i] for i in range(nd))),
        writeable=False,
    )
    wk = w[(Ellipsis, *(slice(k0[i], k0[i] + kc[i]) for i in range(nd)))]
    ck, npix, kk = C * prod(kc), prod(pc), prod(kc)
    dtype = out_view.dtype
    w2 = _merged(wk, 2) if wk.dtype == dtype else None  # (G, O, CK) without a copy
    if npix < FOLD_BATCH_BELOW and (kc[-1] > pc[-1] or nb > 1):
        if kc[-1] > pc[-1]:
            # long kernel rows, short outputs (a weight gradient): copy with the kernel's
            # last axis innermost, cols^T (G, nb*P, CK); BLAS reads it transposed
            cols = patches.transpose(1, 0, *range(3 + nd, 3 + 2 * nd), 2, *range(3, 3 + nd))
            cols = cols.reshape(G, nb * npix, ck).transpose(0, 2, 1)
        else:
            # fold the batch into the columns: one (O, CK) x (CK, nb*P) product per group
            cols = patches.transpose(1, 2, *range(3, 3 + nd), 0, *range(3 + nd, 3 + 2 * nd))
            cols = cols.reshape(G, ck, nb * npix)
        res = np.empty((G, O, nb * npix), dtype=dtype)
        for g in range(G):
            if w2 is not None:
                np.matmul(w2[g], cols[g], out=res[g])
            else:  # a strided kernel (the output gradient): one product per channel block
                res[g] = 0
                for c in range(C):
                    wc = wk[g, :, c].reshape(O, kk).astype(dtype, copy=False)
                    res[g] += wc @ cols[g][c * kk:(c + 1) * kk]
        res = np.moveaxis(res.reshape(G, O, nb, *pc), 2, 0)
        _store(out_view, res, accumulate)
    else:
        if w2 is None:
            w2 = wk.reshape(G, O, ck).astype(dtype, copy=False)
        cols = patches.reshape(nb, G, ck, npix)
        direct = None if accumulate else _flat_view(out_view, npix)
        res = direct if direct is not None else np.empty((nb, G, O, npix), dtype=dtype)
        for b in range(nb):
            for g in range(G):
                np.matmul(w2[g], cols[b, g], out=res[b, g])
        if direct is None:
            _store(out_view, res.reshape(nb, G, O, *pc), accumulate)
    return 2 * nb * G * O * ck * npix


def _store(out_view: np.ndarray, res: np.ndarray, accumulate: bool) -> None:
    if accumulate:
        out_view += res
    else:
        out_view[...] = res


def _flat_view(out_view: np.ndarray, npix: int) -> np.ndarray | None:
    """``out_view`` (nb, G, O, *pc) as (nb, G, O, npix) without a copy, if its pixels are
    one contiguous run per (b, g, o); else None."""
    shape, strides = out_view.shape, out_view.strides
    step = out_view.itemsize
    for n, st in zip(reversed(shape[3:]), reversed(strides[3:])):
        if n != 1 and st != step:
            return None
        step *= n
    return as_strided(out_view, shape=(*shape[:3], npix), strides=(*strides[:3], out_view.itemsize))


def _flat_chunk(slab, w, out_view, dil, k0, kc, pc, accumulate) -> int:
    """Unit stride: every tap reads one contiguous run of the flattened slab.

    Outputs are computed on the slab's own grid (its row pitch), so for tap k
    the patch row is ``slab_flat[c, off(k) : off(k) + Q]``: the patch copy moves long
    runs, and the few outputs that fall in the pitch's gap are computed and dropped.
    """
    nb, G, C = slab.shape[:3]
    O = w.shape[1]
    nd = len(pc)
    item = slab.itemsize
    pitch = [v // item for v in slab.strides[3:]]  # the slab's spatial strides, in elements
    Q = sum((pc[d] - 1) * pitch[d] for d in range(nd)) + 1
    st = slab.strides
    patches = as_strided(slab, shape=(nb, G, C, *kc, Q),
                         strides=(st[0], st[1], st[2], *(dil[d] * pitch[d] * item
                                                         for d in range(nd)), item),
                         writeable=False)
    wk = w[(Ellipsis, *(slice(k0[i], k0[i] + kc[i]) for i in range(nd)))]
    ck = C * prod(kc)
    w2 = wk.reshape(G, O, ck).astype(out_view.dtype, copy=False)
    cols = patches.reshape(nb, G, ck, Q)
    res = np.empty((nb, G, O, Q), dtype=out_view.dtype)
    for b in range(nb):
        for g in range(G):
            np.matmul(w2[g], cols[b, g], out=res[b, g])
    rs = res.strides
    grid = as_strided(res, shape=(nb, G, O, *pc),
                      strides=(rs[0], rs[1], rs[2], *(pitch[d] * item for d in range(nd))),
                      writeable=False)
    _store(out_view, grid, accumulate)
    return 2 * nb * G * O * ck * prod(pc)


def _merged(a: np.ndarray, axis: int) -> np.ndarray | None:
    """``a`` with axes ``axis..`` merged into one, as a view; None if that needs a copy."""
    shape, strides = a.shape[axis:], a.strides[axis:]
    step = strides[-1] if shape else a.itemsize
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != step:
            return None
        step = st * n if n != 1 else step * n
    inner = strides[-1] if shape else a.itemsize
    return as_strided(a, shape=(*a.shape[:axis], prod(shape)), strides=(*a.strides[:axis], inner),
                      writeable=False)
