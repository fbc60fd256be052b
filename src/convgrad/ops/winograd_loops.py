"""Winograd's F(2x2, 3x3) as compiled loops (Numba, :mod:`.jit`): the tile transforms
and, block by block, the products between them.

Each 2x2 block of outputs comes from the 4x4 block of inputs under it as
``Y = A^T [(G g G^T) * (B^T d B)] A``, with

    B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
    G   = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]
    A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]

(every coefficient 0, +-1 or +-1/2: the transforms round only in their sums).  Over the
channels the pointwise products are 16 matmuls, one per tile position.  The weight
gradient is the adjoint of ``g -> Y`` (linear in ``U = G g G^T``, then in ``g``):
``dg = G^T [sum over tiles of (B^T d B) * (A dY A^T)] G``, 16 matmuls over the tiles.

Tiles are numbered ``t = (n * th + i) * tw + j`` (image ``n``, tile row ``i``, tile column
``j``); tile ``(i, j)`` reads the inputs from row ``2i - lo_h``, column ``2j - lo_w`` (those
outside the image read as zeros: any padding, crops included) and writes outputs
``(2i, 2j)`` to ``(2i + 1, 2j + 1)`` (those past the output dropped).  Activations are
(N, H, W, C) arrays, channels innermost.

* ``forward``: x, U (16, C, O) -> y, block by block of tile rows in a ``prange``: the
  block's input tiles ``V = B^T d B`` (16, parts, T, width), the products ``M = V U`` by
  BLAS (one ``np.dot`` per position and chunk of ``width`` channels, U (16, parts,
  width, O) zero past C, the chunks' results added: shorter sums), the output tiles
  ``A^T M A`` plus the bias, then the (leaky) ReLU of slope ``slope`` where ``act``.  A
  block's arrays stay in its core's cache between the three steps;
* ``kernel_tiles``: w (O, C, 3, 3) -> U, ``G g G^T`` in the forward's chunks of channels;
  with ``reverse`` the input gradient's, of the taps reversed and the channels swapped;
* ``weight_products``: x, gy -> the weight gradient's tiles ``sum over tiles of V * Z``
  (``V = B^T d B`` as the forward's, ``Z = A dY A^T`` of the tile's 2x2 output
  gradients), block by block of tile rows: 16 BLAS products ``V^T Z`` per run of
  ``sum_tiles`` of a block's tiles (float32 sums over those tiles), added in float64,
  one accumulator per thread;
* ``weight_tiles``: those sums -> gw (O, C, 3, 3), ``G^T u G`` in float64.

Every loop runs in Numba's ``prange``, on the OpenMP threads oneDNN's kernels use:
handed to Python threads instead, the blocks waited for the cores of OpenMP's threads
still spinning after the previous kernel (1.5-3x slower than oneDNN, measured).  The
caller holds BLAS to one thread (each block's products run on its own thread).
"""

from __future__ import annotations

import numpy as np

from . import jit

__all__ = ["loops"]


def _compile(numba) -> dict:
    """The loops compiled (what ``loops()`` returns; None without Numba)."""
    njit = numba.njit(nogil=True, cache=True, parallel=True)
    prange = numba.prange

    @njit
    def forward(x, U, bias, act, slope, y, lo_h, lo_w, rows_per_block):
        # U (16, parts, width, O): the kernel's tiles in chunks of channels, zero past C
        N, H, W, C = x.shape
        _, Ho, Wo, O = y.shape
        parts, width = U.shape[1], U.shape[2]
        th, tw = (Ho + 1) // 2, (Wo + 1) // 2
        rows = N * th
        for blk in prange((rows + rows_per_block - 1) // rows_per_block):
            r0 = blk * rows_per_block
            r1 = min(r0 + rows_per_block, rows)
            T = (r1 - r0) * tw
            d = np.empty((4, 4, C), np.float32)  # one tile of x
            V = np.empty((16, parts, T, width), np.float32)
            for row in range(r0, r1):
                n, i = row // th, row % th
                for j in range(tw):
                    # V[:, :, t] = B^T d B of the 4x4 tile of x at (2i - lo_h, 2j - lo_w)
                    # (helpers are written out: a cached loop calling another compiled
                    # closure is compiled again in every process)
                    t = (row - r0) * tw + j
                    for a in range(4):
                        r = 2 * i - lo_h + a
                        for b in range(4):
                            s = 2 * j - lo_w + b
                            if 0 <= r < H and 0 <= s < W:
                                for c in range(C):
                                    d[a, b, c] = x[n, r, s, c]
                            else:
                                for c in range(C):
                                    d[a, b, c] = 0.0
                    for b in range(4):  # B^T d, down the columns
                        for c in range(C):
                            d0, d1, d2, d3 = d[0, b, c], d[1, b, c], d[2, b, c], d[3, b, c]
                            d[0, b, c] = d0 - d2
                            d[1, b, c] = d1 + d2
                            d[2, b, c] = d2 - d1
                            d[3, b, c] = d1 - d3
                    for a in range(4):  # (B^T d) B, along the rows; zero past C
                        for k in range(parts):
                            c0 = k * width
                            for cc in range(min(width, C - c0)):
                                c = c0 + cc
                                e0, e1, e2, e3 = d[a, 0, c], d[a, 1, c], d[a, 2, c], d[a, 3, c]
                                V[4 * a, k, t, cc] = e0 - e2
                                V[4 * a + 1, k, t, cc] = e1 + e2
                                V[4 * a + 2, k, t, cc] = e2 - e1
                                V[4 * a + 3, k, t, cc] = e1 - e3
                            for cc in range(max(0, C - c0), width):
                                for b in range(4):
                                    V[4 * a + b, k, t, cc] = 0.0
            M = np.empty((16, T, O), np.float32)
            for p in range(16):
                M[p] = np.dot(V[p, 0], U[p, 0])
                for k in range(1, parts):
                    M[p] += np.dot(V[p, k], U[p, k])
            h = np.empty((2, 4, O), np.float32)
            for row in range(r0, r1):
                n, i = row // th, row % th
                for j in range(tw):
                    t = (row - r0) * tw + j
                    for b in range(4):  # A^T M, down the columns
                        for o in range(O):
                            m0, m1, m2, m3 = M[b, t, o], M[4 + b, t, o], M[8 + b, t, o], M[
                                12 + b, t, o]
                            h[0, b, o] = m0 + m1 + m2
                            h[1, b, o] = m1 - m2 - m3
                    for a in range(2):
                        r = 2 * i + a
                        if r >= Ho:
                            continue
                        for q in range(2):
                            s = 2 * j + q
                            if s >= Wo:
                                continue
                            for o in range(O):
                                if q == 0:
                                    v = h[a, 0, o] + h[a, 1, o] + h[a, 2, o]
                                else:
                                    v = h[a, 1, o] - h[a, 2, o] - h[a, 3, o]
                                v += bias[o]
                                if act and v <= 0:  # a NaN stays NaN, as max(v, 0)
                                    v = v * slope if slope != 0 else 0.0
                                y[n, r, s, o] = v

    @njit
    def kernel_tiles(w, U, reverse):
        # U (16, parts, width, O) of w[o, c] at [:, c // width, c % width, o], or with
        # ``reverse`` (16, parts, width, C) of its taps reversed at [:, o // width, o %
        # width, c], zero past the summed channels; in 16x16 blocks of (c, o): U's rows and
        # w's are read and written along memory
        O, C = w.shape[0], w.shape[1]
        width = U.shape[2]
        U[...] = 0.0
        B = 16
        for cb in prange((C + B - 1) // B):
            u = np.empty(16, np.float32)  # G g G^T of one (o, c) pair, row-major
            block = np.empty((16, B, B), np.float32)
            c0 = cb * B
            cn = min(B, C - c0)
            for o0 in range(0, O, B):
                on = min(B, O - o0)
                for oo in range(on):
                    o = o0 + oo
                    for cc in range(cn):
                        c = c0 + cc
                        for k in range(3):  # G g, per column k of g = w[o, c] (reversed)
                            g0 = w[o, c, 2, 2 - k] if reverse else w[o, c, 0, k]
                            g1 = w[o, c, 1, 2 - k] if reverse else w[o, c, 1, k]
                            g2 = w[o, c, 0, 2 - k] if reverse else w[o, c, 2, k]
                            u[k] = g0
                            u[4 + k] = 0.5 * (g0 + g1 + g2)
                            u[8 + k] = 0.5 * (g0 - g1 + g2)
                            u[12 + k] = g2
                        for a in range(4):  # (G g) G^T, along the rows
                            t0, t1, t2 = u[4 * a], u[4 * a + 1], u[4 * a + 2]
                            u[4 * a + 1] = 0.5 * (t0 + t1 + t2)
                            u[4 * a + 2] = 0.5 * (t0 - t1 + t2)
                            u[4 * a + 3] = t2
                        for p in range(16):
                            block[p, oo, cc] = u[p]
                for p in range(16):
                    if reverse:
                        for oo in range(on):
                            o = o0 + oo
                            for cc in range(cn):
                                U[p, o // width, o % width, c0 + cc] = block[p, oo, cc]
                    else:
                        for cc in range(cn):
                            c = c0 + cc
                            for oo in range(on):
                                U[p, c // width, c % width, o0 + oo] = block[p, oo, cc]

    @njit
    def weight_products(x, gy, acc, lo_h, lo_w, rows_per_block, sum_tiles):
        # acc (parts, 16, C, O) float64, zero on entry: part k sums the products of blocks
        # k, k + parts, ...; the 16 products V^T Z over each run of sum_tiles tiles by
        # BLAS in float32, added in float64
        N, H, W, C = x.shape
        _, Ho, Wo, O = gy.shape
        parts = acc.shape[0]
        th, tw = (Ho + 1) // 2, (Wo + 1) // 2
        rows = N * th
        blocks = (rows + rows_per_block - 1) // rows_per_block
        for part in prange(parts):
            d = np.empty((4, 4, C), np.float32)  # one tile of x
            g = np.empty((4, O), np.float32)  # one 2x2 block of gy, row-major
            V = np.empty((16, rows_per_block * tw, C), np.float32)
            Z = np.empty((16, rows_per_block * tw, O), np.float32)
            for blk in range(part, blocks, parts):
                r0 = blk * rows_per_block
                r1 = min(r0 + rows_per_block, rows)
                for row in range(r0, r1):
                    n, i = row // th, row % th
                    for j in range(tw):
                        t = (row - r0) * tw + j
                        # V[:, t] = B^T d B, as the forward's (written out again: a
                        # shared compiled helper would break Numba's cache, see there)
                        for a in range(4):
                            r = 2 * i - lo_h + a
                            for b in range(4):
                                s = 2 * j - lo_w + b
                                if 0 <= r < H and 0 <= s < W:
                                    for c in range(C):
                                        d[a, b, c] = x[n, r, s, c]
                                else:
                                    for c in range(C):
                                        d[a, b, c] = 0.0
                        for b in range(4):
                            for c in range(C):
                                d0, d1, d2, d3 = d[0, b, c], d[1, b, c], d[2, b, c], d[3, b, c]
                                d[0, b, c] = d0 - d2
                                d[1, b, c] = d1 + d2
                                d[2, b, c] = d2 - d1
                                d[3, b, c] = d1 - d3
                        for a in range(4):
                            for c in range(C):
                                e0, e1, e2, e3 = d[a, 0, c], d[a, 1, c], d[a, 2, c], d[a, 3, c]
                                V[4 * a, t, c] = e0 - e2
                                V[4 * a + 1, t, c] = e1 + e2
                                V[4 * a + 2, t, c] = e2 - e1
                                V[4 * a + 3, t, c] = e1 - e3
                        # Z[:, t] = A dY A^T of the tile's 2x2 outputs (zeros past gy's)
                        for a in range(2):
                            for q in range(2):
                                r = 2 * i + a
                                s = 2 * j + q
                                if r < Ho and s < Wo:
                                    for o in range(O):
                                        g[2 * a + q, o] = gy[n, r, s, o]
                                else:
                                    for o in range(O):
                                        g[2 * a + q, o] = 0.0
                        # one row a of A dY at a time: 4 output streams per loop (16 at
                        # once, T * O floats apart, thrashed the L1 cache's sets: 10x slower)
                        for a in range(4):
                            for o in range(O):
                                if a == 0:
                                    u, v = g[0, o], g[1, o]
                                elif a == 1:
                                    u, v = g[0, o] + g[2, o], g[1, o] + g[3, o]
                                elif a == 2:
                                    u, v = g[0, o] - g[2, o], g[1, o] - g[3, o]
                                else:
                                    u, v = -g[2, o], -g[3, o]
                                Z[4 * a, t, o] = u
                                Z[4 * a + 1, t, o] = u + v
                                Z[4 * a + 2, t, o] = u - v
                                Z[4 * a + 3, t, o] = -v
                T = (r1 - r0) * tw
                for t0 in range(0, T, sum_tiles):
                    t1 = min(t0 + sum_tiles, T)
                    for p in range(16):
                        M = np.dot(V[p, t0:t1].T, Z[p, t0:t1])
                        for c in range(C):
                            for o in range(O):
                                acc[part, p, c, o] += M[c, o]

    @njit
    def weight_tiles(acc, gw):
        # gw[o, c] = G^T u G, u (4x4) the sum over parts of acc[:, :, c, o], in float64
        parts, _, C, O = acc.shape
        for c in prange(C):
            u = np.empty(16)
            h = np.empty((3, 4))
            for o in range(O):
                for p in range(16):
                    v = 0.0
                    for k in range(parts):
                        v += acc[k, p, c, o]
                    u[p] = v
                for b in range(4):  # G^T u, down the columns
                    u0, u1, u2, u3 = u[b], u[4 + b], u[8 + b], u[12 + b]
                    h[0, b] = u0 + 0.5 * (u1 + u2)
                    h[1, b] = 0.5 * (u1 - u2)
                    h[2, b] = 0.5 * (u1 + u2) + u3
                for k in range(3):  # (G^T u) G, along the rows
                    h0, h1, h2, h3 = h[k, 0], h[k, 1], h[k, 2], h[k, 3]
                    gw[o, c, k, 0] = h0 + 0.5 * (h1 + h2)
                    gw[o, c, k, 1] = 0.5 * (h1 - h2)
                    gw[o, c, k, 2] = 0.5 * (h1 + h2) + h3

    return {"forward": forward, "kernel_tiles": kernel_tiles,
            "weight_products": weight_products, "weight_tiles": weight_tiles}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)


def exercise() -> None:
    """The forward's loops once on tiny arrays of the argument types of real calls (the
    warm-up runs it where the dispatch may choose Winograd by default: :mod:`.dispatch`)."""
    f = loops()
    if f is None:
        return
    x = np.zeros((1, 2, 2, 2), np.float32)
    w = np.zeros((2, 2, 3, 3), np.float32)
    U = np.empty((16, 1, 2, 2), np.float32)
    f["kernel_tiles"](w, U, False)
    f["forward"](x, U, np.zeros(2, np.float32), False, 0.0, np.empty((1, 2, 2, 2), np.float32),
                 1, 1, 1)


def exercise_weight() -> None:
    """The weight gradient's loops once on tiny arrays (a step's backward needs them
    after its forward has run: the warm-up loads them after :func:`exercise`'s)."""
    f = loops()
    if f is None:
        return
    x = np.zeros((1, 2, 2, 2), np.float32)
    acc = np.zeros((1, 16, 2, 2))
    f["weight_products"](x, x, acc, 1, 1, 1, 16)
    f["weight_tiles"](acc, np.empty((2, 2, 3, 3), np.float32))
