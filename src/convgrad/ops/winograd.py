"""Unstrided 3x3 2-D convolutions by Winograd's minimal filtering F(2x2, 3x3).

Each 2x2 block of outputs costs 16 multiplications per channel pair instead of 36: the
input's 4x4 tiles and the kernel are transformed, multiplied pointwise in the tile
domain (over the channels, 16 matmuls) and transformed back, block by block of tiles
in compiled loops (:mod:`.winograd_loops`).  The three passes of a convolution:

* forward: ``y = A^T [U * V(x)] A`` with ``U = G w G^T``, the bias and a (leaky) ReLU
  applied as the tiles are written;
* input gradient: the forward of ``gy`` with the kernel's taps reversed and its channels
  swapped, padded by ``2 - lo`` (the adjoint of a stride-1 correlation is a correlation
  with the reversed kernel);
* weight gradient: ``gw = G^T [sum over tiles of V(x) * (A gy A^T)] G``, the adjoint of
  the forward in the kernel.

Accuracy: the transforms' coefficients are 0, +-1 and +-1/2, so they round only in their
sums; the forward's and input gradient's products are cut into partial sums of at most
:data:`CHANNEL_CHUNK` channels; the weight gradient's products are summed in float32 over
:data:`SUM_TILES` tiles at a time and those sums in float64 (one float32 sum over all
tiles had up to 2.5x torch's float32 error).  All three passes stay within torch's
float32 error.  Activations are channels-last, the weight C-contiguous;
the caller (:func:`.dispatch.choose`) decides where it runs.
"""

from __future__ import annotations

import numpy as np

from . import jit, winograd_loops
from .parallel import num_threads, single_threaded_blas
from .spec import Pass

__all__ = ["CHANNEL_CHUNK", "available", "tiles", "winograd_conv", "workspace_bytes"]

# Channels per partial sum of the forward's and input gradient's products: one sum over
# 256-512 channels had 2.8-3.6x torch's float32 error, 128 1.3-1.5x, 64 0.8-1.2x.
CHANNEL_CHUNK = 64
# Bytes of one block's tile arrays (the input's and the products', 64 (C + O) bytes a
# tile), which stay in its core's cache between the transforms and the products.
# Measured (ms, (8, 64, 32, 32) 64->64 forward, Winograd / oneDNN): 256 KiB 3.21 / 3.21
# (32-tile products, short for BLAS), 512 KiB 2.93 / 3.09, 1 MiB 2.31 / 2.83, 2 MiB
# 3.12 / 2.81 (out of the 1 MiB L2).
BLOCK_BYTES = 1 << 20
# Tiles per float32 sum of the weight gradient's products (the sums of those sums in
# float64): SUM_TILES where a pass has at least MANY_TILES tiles, else SUM_TILES_FEW.
# Against torch float32's error (same values, channels-last, 3-128 channels), sums of
# 128 tiles: 0.2-1.0x from 2048 tiles up (1.4x once at 16 channels), but 1.7-5.8x at 256
# tiles and 2.7-4x at 72, where torch's own sums are short; sums of 16 tiles: 0.2-1.6x
# everywhere, at 1.5x the time ((16, 64, 32, 32): 5.90 against 4.09 ms; BLAS's products
# over 16 rows are short).
SUM_TILES = 128
SUM_TILES_FEW = 16
MANY_TILES = 2048


def available() -> bool:
    """Numba compiles the loops and runs them on its OpenMP threads (its own work queue
    cannot launch parallel loops from two threads at once)."""
    return jit.enabled() and winograd_loops.loops() is not None and jit.thread_safe()


def tiles(rows: int, cols: int) -> tuple[int, int]:
    """2x2 output tiles down and across an output of ``rows`` x ``cols``."""
    return (rows + 1) // 2, (cols + 1) // 2


def _chunks(k: int) -> tuple[int, int]:
    """(parts, width) of a sum over ``k`` channels: parts of equal width, the last padded
    with zeros."""
    parts = -(-k // CHANNEL_CHUNK)
    return parts, -(-k // parts)


def _row_bytes(summed: int, out_shape: tuple) -> int:
    """Bytes of one row of tiles in a block's arrays (input tiles and products)."""
    parts, width = _chunks(summed)
    return 64 * (parts * width + out_shape[1]) * tiles(*out_shape[2:])[1]


def workspace_bytes(lhs_shape: tuple, out_shape: tuple, pass_: Pass = Pass.FORWARD) -> int:
    """Bytes a pass allocates besides its output: the kernel's tiles (the weight
    gradient: each thread's float64 sums of them), and each thread's block (BLOCK_BYTES,
    or one row of tiles where a row is larger).  ``lhs_shape``: x or gy; ``out_shape``:
    y, gx or, for the weight gradient, gy's."""
    parts, width = _chunks(lhs_shape[1])
    block = max(BLOCK_BYTES, _row_bytes(lhs_shape[1], out_shape))
    if pass_ == Pass.WEIGHT_GRAD:
        return num_threads() * (8 * 16 * lhs_shape[1] * out_shape[1] + block)
    return 4 * 16 * parts * width * out_shape[1] + num_threads() * block


def _nhwc(a: np.ndarray) -> np.ndarray:
    """A channels-last (N, C, H, W) array as the (N, H, W, C) array it is in memory."""
    return a.transpose(0, 2, 3, 1)


def winograd_conv(pass_: Pass, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray,
                  lo: tuple, bias: np.ndarray | None = None,
                  slope: float | None = None) -> int:
    """One pass of the 3x3 stride-1 convolution padded by ``lo`` (the low padding of
    each spatial dim; the high padding follows from the shapes) into ``out``:
    ``forward`` (x, w -> y, plus ``bias``, then the (leaky) ReLU of ``slope`` if given),
    ``input_grad`` (gy, w -> gx) or ``weight_grad`` (x, gy -> gw).  Activations
    channels-last, the weight C-contiguous, float32.  Returns the FLOPs of the products."""
    if pass_ == Pass.WEIGHT_GRAD:
        return _weight_grad(lhs, rhs, out, lo)
    if pass_ not in (Pass.FORWARD, Pass.INPUT_GRAD):
        raise ValueError(f"winograd_conv: pass_={pass_!r}; it runs forward, input_grad "
                         "and weight_grad")
    f = winograd_loops.loops()
    O, C = rhs.shape[:2]
    reverse = pass_ == Pass.INPUT_GRAD
    k, n = (O, C) if reverse else (C, O)  # summed channels, output channels
    parts, width = _chunks(k)
    U = np.empty((16, parts, width, n), np.float32)
    if reverse:
        lo, bias, slope = (2 - lo[0], 2 - lo[1]), None, None
    xs, ys = _nhwc(lhs), _nhwc(out)
    N, Ho, Wo, _ = ys.shape
    th, tw = tiles(Ho, Wo)
    rows = max(1, BLOCK_BYTES // _row_bytes(k, out.shape))
    b = np.zeros(n, np.float32) if bias is None else bias
    jit.set_threads(num_threads())
    with single_threaded_blas():  # each block's products on its own thread
        f["kernel_tiles"](rhs, U, reverse)
        f["forward"](xs, U, b, slope is not None, 0.0 if slope is None else float(slope), ys,
                     lo[0], lo[1], rows)
    return 2 * 16 * N * th * tw * parts * width * n


def _weight_grad(x: np.ndarray, gy: np.ndarray, gw: np.ndarray, lo: tuple) -> int:
    """gw (O, C, 3, 3) of x and gy: each thread sums its blocks' tile products in
    float64 (one accumulator per thread: the sums do not depend on the order the
    threads run), then the kernel's transform."""
    f = winograd_loops.loops()
    C, O = x.shape[1], gy.shape[1]
    N, _, Ho, Wo = gy.shape
    th, tw = tiles(Ho, Wo)
    threads = num_threads()
    acc = np.zeros((threads, 16, C, O))
    rows = max(1, BLOCK_BYTES // _row_bytes(C, gy.shape))
    many = N * th * tw >= MANY_TILES
    jit.set_threads(threads)
    with single_threaded_blas():
        f["weight_products"](_nhwc(x), _nhwc(gy), acc, lo[0], lo[1], rows,
                             SUM_TILES if many else SUM_TILES_FEW)
        f["weight_tiles"](acc, gw)
    return 2 * 16 * N * th * tw * C * O
