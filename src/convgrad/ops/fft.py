"""FFT convolution of a lowered pass (:class:`.lowering.Lowered`), tiled within the workspace.

The lowered problem ``out[b,g,o,p] = sum_{c,k} xd[b,g,c, p*s + k*dk - lo] * w[g,o,c,k]``
is, per spatial dim, a unit-stride correlation ``z[q] = sum_t xd[q + t - lo] * wd[t]``
of the input dilated by ``idil`` with the kernel dilated by ``dk`` (``Kd = (K-1)*dk + 1``
taps), read at ``q = p*s``.  It is computed by real FFTs (:mod:`scipy.fft`, its
``workers`` threads, ``next_fast_len`` sizes) in tiles (overlap-save):

* the outputs in tiles of ``Pt`` (``Qt = (Pt-1)*s + 1`` unit-stride positions) and the
  dilated kernel in tiles of ``Kt`` taps, with one FFT length ``N >= Qt + Kt - 1`` per
  dim: the circular correlation of an ``N``-sample window with a kernel tile is exact at
  its first ``Qt`` positions;
* the kernel tile's spectrum is computed once and reused for every output tile and
  every batch chunk (the kernel tiles are the outer loop); each (output tile, kernel
  tile) pair adds its part to the output;
* channels are mixed per frequency: a broadcast multiply-add over the few input
  channels, or one batched complex matmul ``(F, G, b, C) @ (F, G, C, O)``;
* :func:`tiling` picks ``Pt``, ``Kt`` and the batch chunk by an operation count
  (:func:`cost`) among the tilings whose buffers fit the workspace bound.

Stride is taken by reading every ``s``-th position of the unit-stride result; input
and kernel dilation by zero-inserting into the transformed buffers.
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["preload", "Tiling", "fft_conv", "tiling"]

# Broadcast multiply-adds over channels while C*O is at most this; above it one
# batched matmul per frequency (its transposed copies pay off with more channels).
MIX_LOOP_MAX_CHANNEL_PRODUCT = 16
# Relative costs in the operation count (units: one real multiply-add): a real FFT of
# F samples ~ 2.5 F log2 F flops, a complex multiply-add 4 real ones, a copy of one
# sample into a transform buffer ~1.
FFT_FLOPS_PER_SAMPLE_LOG = 1.25
MIX_FLOPS = 4.0
COPY_FLOPS = 1.0
# Python's work per (output tile, kernel tile, batch chunk): ~40 us of calls and slicing,
# counted at the transforms' measured ~2.5 Gflop/s so that tiny tiles do not look free.
TILE_OVERHEAD_FLOPS = 1e5
# FFT lengths tried per dim: next_fast_len of these powers of two, of the outputs split
# into this many equal tiles (a 3-D volume that does not fit whole: 2 tiles of 112
# rather than 5 of 64), and of the whole extent.
TILE_LENGTHS = tuple(2**i for i in range(4, 16))
TILE_SPLITS = (2, 3, 4, 6)
# The kernel is split only into tiles of at least this many taps (a weight gradient's
# "kernel" is an image): smaller tiles redo the input transforms for little memory, and
# the options they add made the search of a 3-D tiling take 0.2 s.
KERNEL_TILE_MIN = 32


@dataclass(frozen=True)
class Tiling:
    """The tiles of one FFT pass: per dim the FFT length ``n``, outputs per tile ``pt``
    (stride-``s`` outputs) and dilated-kernel taps per tile ``kt``; samples per batch
    chunk ``batch``; estimated multiply-adds ``flops`` and workspace ``nbytes``."""

    n: tuple[int, ...]
    pt: tuple[int, ...]
    kt: tuple[int, ...]
    batch: int
    flops: float
    nbytes: int


@lru_cache(maxsize=1)
def _sfft():
    """``scipy.fft``, imported on first use: it costs ~0.35 s, a third of ``import
    convgrad``, and only large kernels reach it."""
    import scipy.fft

    return scipy.fft


_preloading: list = []


def preload() -> None:
    """Import ``scipy.fft`` on a background thread, once: a layer with a large kernel is
    being built, and the cost model of its first pass reads FFT lengths (a ResNet-18's
    7x7 stem made its first training step wait ~0.1 s for the import)."""
    if _preloading or _sfft.cache_info().currsize:
        return
    _preloading.append(threading.Thread(target=_sfft, name="convgrad-scipy-fft", daemon=True))
    _preloading[0].start()


def _spectrum_len(n: tuple[int, ...]) -> int:
    return math.prod(n[:-1]) * (n[-1] // 2 + 1)


def _dim_options(P: int, Kd: int, s: int) -> list[tuple[int, int, int]]:
    """(n, pt, kt) candidates of one dim: kernel whole or in 2, 4, 8 tiles of at least
    KERNEL_TILE_MIN taps; outputs in
    tiles whose FFT length is one of TILE_LENGTHS, splits them in TILE_SPLITS equal
    parts, or covers everything."""
    sfft = _sfft()
    out = set()
    Q = (P - 1) * s + 1
    for parts in (1, 2, 4, 8):
        kt = -(-Kd // parts)
        if parts > 1 and kt < KERNEL_TILE_MIN:
            break
        whole = sfft.next_fast_len(Q + kt - 1, real=True)
        splits = (sfft.next_fast_len(-(-Q // k) + kt - 1, real=True) for k in TILE_SPLITS)
        for n in {*(sfft.next_fast_len(m, real=True) for m in TILE_LENGTHS if m < whole),
                  *splits, whole}:
            qt = n - kt + 1
            if qt < 1:
                continue
            pt = min(P, (qt - 1) // s + 1)
            n = sfft.next_fast_len((pt - 1) * s + kt, real=True)
            out.add((n, pt, kt))
    return sorted(out)


def cost(n: tuple, pt: tuple, kt: tuple, P: tuple, Kd: tuple, B: int, G: int, C: int,
         O: int, batch: int) -> float:
    """Multiply-adds of a tiling: per (output tile, kernel tile) the input transforms,
    the channel mixing and the inverse transforms; one transform per kernel tile; the
    Python overhead of each (output tile, kernel tile, batch chunk)."""
    F = math.prod(n)
    fft = FFT_FLOPS_PER_SAMPLE_LOG * F * math.log2(max(F, 2))
    tiles_out = math.prod(-(-p // t) for p, t in zip(P, pt))
    tiles_k = math.prod(-(-k // t) for k, t in zip(Kd, kt))
    per_pair = (B * G * C * (fft + COPY_FLOPS * F) + B * G * O * (fft + COPY_FLOPS * F)
                + MIX_FLOPS * B * G * O * C * _spectrum_len(n))
    calls = tiles_out * tiles_k * -(-B // batch)
    return (tiles_out * tiles_k * per_pair + tiles_k * G * O * C * (fft + COPY_FLOPS * F)
            + TILE_OVERHEAD_FLOPS * calls)


def _workspace(n: tuple, G: int, C: int, O: int, itemsize: int) -> tuple[int, int, int]:
    """Bytes of (the kernel tile's spectrum, kept; one batch sample's buffers: its input
    window, its spectrum, the mixed spectrum (none for one channel in and out: mixed in
    place; transposed copies for a matmul) and the inverse transform; the kernel tile
    being transformed, before any sample's buffers exist)."""
    F, Ff = math.prod(n), _spectrum_len(n)
    cplx = 2 * itemsize
    spectra = 2 if C * O > MIX_LOOP_MAX_CHANNEL_PRODUCT else 1
    mixed = 0 if C == O == 1 else O * Ff * cplx * spectra
    per_sample = G * (C * F * itemsize + C * Ff * cplx * spectra + mixed + O * F * itemsize)
    return G * O * C * Ff * cplx * spectra, per_sample, G * O * C * F * itemsize


@lru_cache(maxsize=512)
def tiling(B: int, G: int, C: int, O: int, P: tuple, Kd: tuple, stride: tuple,
           itemsize: int, limit: int) -> Tiling | None:
    """The cheapest tiling whose workspace fits ``limit`` bytes (None if none does):
    ``P`` outputs and ``Kd`` dilated taps per dim, ``itemsize`` of the real transforms."""
    per_dim = [_dim_options(p, k, s) for p, k, s in zip(P, Kd, stride)]
    best = None
    for combo in itertools.product(*per_dim):
        n = tuple(c[0] for c in combo)
        kept, per_sample, transform = _workspace(n, G, C, O, itemsize)
        batch = min(B, (limit - kept) // per_sample) if limit > kept + transform else 0
        if batch < 1:
            continue
        pt, kt = tuple(c[1] for c in combo), tuple(c[2] for c in combo)
        flops = cost(n, pt, kt, P, Kd, B, G, C, O, int(batch))
        if best is None or flops < best.flops:
            best = Tiling(n, pt, kt, int(batch), flops,
                          kept + max(int(batch) * per_sample, transform))
    return best


def _gather(a: np.ndarray, starts: tuple, lengths: tuple, dil: tuple) -> np.ndarray:
    """``a`` (..., *L) dilated by ``dil`` (zeros between samples, zeros outside), read over
    positions ``[start, start + length)`` per spatial dim: a view when no zeros are
    needed, else a zero-filled copy."""
    nd = len(starts)
    L = a.shape[-nd:]
    src, dst, inside = [], [], True
    for t0, m, d, n in zip(starts, lengths, dil, L):
        i0 = max(0, -(-t0 // d))
        i1 = min(n, -(-(t0 + m) // d))
        if i1 <= i0:
            return np.zeros(a.shape[:-nd] + tuple(lengths), a.dtype)
        src.append(slice(i0, i1))
        dst.append(slice(i0 * d - t0, (i1 - 1) * d - t0 + 1, d))
        inside = inside and d == 1 and t0 >= 0
    if inside:  # rfftn pads the end with zeros
        return a[(Ellipsis, *src)]
    buf = np.zeros(a.shape[:-nd] + tuple(lengths), a.dtype)
    buf[(Ellipsis, *dst)] = a[(Ellipsis, *src)]
    return buf


def _mix(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``Y[b,g,o,f] = sum_c X[b,g,c,f] * W[g,o,c,f]`` (spectra flattened over f)."""
    C, O = X.shape[2], W.shape[1]
    if C == O == 1:
        X *= W[:, 0]  # in place: one spectrum less in the workspace
        return X
    if C * O <= MIX_LOOP_MAX_CHANNEL_PRODUCT:
        Y = X[:, :, 0:1] * W[None, :, :, 0]
        if C > 1:
            tmp = np.empty_like(Y)
            for c in range(1, C):
                np.multiply(X[:, :, c:c + 1], W[None, :, :, c], out=tmp)
                Y += tmp
        return Y
    # (F, G, b, C) @ (F, G, C, O) -> (F, G, b, O): one small matmul per frequency
    Yt = np.matmul(X.transpose(3, 1, 0, 2), W.transpose(3, 0, 2, 1))
    return Yt.transpose(2, 1, 3, 0)


def fft_conv(x: np.ndarray, w: np.ndarray, out: np.ndarray, stride: tuple, lo: tuple,
             kdil: tuple, idil: tuple, tiles: Tiling, workers: int,
             compute: np.dtype) -> int:
    """Fill ``out`` (B, G, O, *P) with the lowered convolution of ``x`` (B, G, C, *L) and
    ``w`` (G, O, C, *K) by FFTs in ``compute`` precision (float32 or float64), tiled as
    ``tiles``; returns the estimated flops."""
    sfft = _sfft()
    nd = len(stride)
    B, G, C = x.shape[:3]
    O, K, P = w.shape[1], w.shape[3:], out.shape[3:]
    Kd = tuple((k - 1) * d + 1 for k, d in zip(K, kdil))
    axes = tuple(range(3, 3 + nd))
    n = tiles.n
    out[...] = 0
    k_starts = [range(0, k, t) for k, t in zip(Kd, tiles.kt)]
    p_starts = [range(0, p, t) for p, t in zip(P, tiles.pt)]
    Ff = _spectrum_len(n)
    for k0 in itertools.product(*k_starts):
        kt = tuple(min(t, k - a) for a, t, k in zip(k0, tiles.kt, Kd))
        wt = _gather(w, k0, kt, kdil).astype(compute, copy=False)
        W = sfft.rfftn(wt, s=n, axes=axes, workers=workers).reshape(G, O, C, Ff)
        np.conjugate(W, out=W)  # correlation; in place, one spectrum in the workspace
        del wt
        for p0 in itertools.product(*p_starts):
            pt = tuple(min(t, p - a) for a, t, p in zip(p0, tiles.pt, P))
            qt = tuple((m - 1) * s + 1 for m, s in zip(pt, stride))
            starts = tuple(a * s + b - low for a, s, b, low in zip(p0, stride, k0, lo))
            lengths = tuple(q + t - 1 for q, t in zip(qt, kt))
            keep = (Ellipsis, *(slice(0, q, s) for q, s in zip(qt, stride)))
            dst = (Ellipsis, *(slice(a, a + m) for a, m in zip(p0, pt)))
            for b0 in range(0, B, tiles.batch):
                xb = x[b0:b0 + tiles.batch]
                win = _gather(xb, starts, lengths, idil).astype(compute, copy=False)
                X = sfft.rfftn(win, s=n, axes=axes, workers=workers)
                Y = _mix(X.reshape(*X.shape[:3], Ff), W)
                del X  # (Y may be X, mixed in place)
                z = sfft.irfftn(Y.reshape(*Y.shape[:3], *_spectrum_shape(n)), s=n, axes=axes,
                                workers=workers, overwrite_x=True)
                out[b0:b0 + tiles.batch][dst] += z[keep]
    return int(tiles.flops)


def _spectrum_shape(n: tuple) -> tuple:
    """The shape of a real FFT's spectrum over lengths ``n``."""
    return (*n[:-1], n[-1] // 2 + 1)
