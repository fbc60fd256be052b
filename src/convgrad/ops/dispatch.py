"""The one place that chooses a convolution algorithm per shape.

Every kernel of :mod:`.conv` lands in :func:`general_conv` on grouped views.  A
unit-stride convolution with fewer output than input channels (an input gradient, a
transposed convolution) is computed by ``scatter`` (multiply, then add onto the output
lattice).  Otherwise input dilation is split by :mod:`.polyphase` into dense
convolutions ``out[b,g,o,p] = sum_{c,k} x[b,g,c,p*s+k*d-lo] * w[g,o,c,k]``, each
computed by:

* ``direct`` (Numba loops over a padded slab): groups with few channels, where a
  patch matrix would cost more to build than to multiply (depthwise, SSIM windows);
* ``im2col`` (patch matrix + BLAS, chunked): everything else.
"""

from __future__ import annotations

import itertools
import os
from math import prod

import numpy as np

from . import direct
from .im2col import im2col_conv, padded_slab
from .polyphase import covers_all, phases
from .scatter import scatter_conv
from .workspace import get_workspace_limit

# a group this small (input x output channels) goes to the direct loops
DIRECT_MAX_CHANNEL_PRODUCT = 16


def _direct_enabled() -> bool:
    return direct.HAVE_NUMBA and os.environ.get("CONVGRAD_DISABLE_NUMBA", "") in ("", "0")


def choose(x_shape: tuple, w_shape: tuple, out_shape: tuple, stride: tuple,
           dil: tuple, itemsize: int) -> str:
    """Name of the algorithm for one dense convolution of these shapes."""
    B, G, C, *L = x_shape
    O, K, P = w_shape[1], w_shape[3:], out_shape[3:]
    if C * O <= DIRECT_MAX_CHANNEL_PRODUCT and _direct_enabled():
        slab = G * C * prod((P[i] - 1) * stride[i] + (K[i] - 1) * dil[i] + 1
                            for i in range(len(P)))
        if slab * itemsize <= get_workspace_limit() // 2:
            return "direct"
    return "im2col"


def _direct_conv(x, w, out, stride, lo, dil) -> int:
    B, G, C, *L = x.shape
    O, K, P = w.shape[1], w.shape[3:], out.shape[3:]
    nd = len(P)
    ext = [(P[i] - 1) * stride[i] + (K[i] - 1) * dil[i] + 1 for i in range(nd)]
    start = [-lo[i] for i in range(nd)]
    per_sample = G * C * prod(ext) * out.dtype.itemsize
    nb = max(1, min(B, (get_workspace_limit() // 2) // max(per_sample, 1)))
    for b0 in range(0, B, nb):
        slab = padded_slab(x[b0:b0 + nb], start, ext, out.dtype, contiguous=True)
        if slab is None:
            out[b0:b0 + nb] = 0
            continue
        direct.direct_conv(slab, w, out[b0:b0 + nb], stride, dil)
    return 2 * B * G * O * C * prod(K) * prod(P)


def dense_conv(x: np.ndarray, w: np.ndarray, out: np.ndarray, stride: tuple, lo: tuple,
               dil: tuple) -> tuple[int, str]:
    """Fill ``out`` (B, G, O, *P) from ``x`` (B, G, C, *L) and ``w`` (G, O, C, *K).

    Returns (FLOPs performed, name of the algorithm used).
    """
    if out.size == 0:
        return 0, "none"
    algo = choose(x.shape, w.shape, out.shape, stride, dil, out.dtype.itemsize)
    if algo == "direct" and x.shape[0] and x.shape[2] and all(x.shape[3:]):
        return _direct_conv(x, w, out, stride, lo, dil), algo
    return im2col_conv(x, w, out, stride, lo, dil), "im2col"


def use_scatter(C: int, O: int, stride: tuple, idil: tuple) -> bool:
    """Scatter needs unit stride; it pays when the output has fewer channels (O*K rows
    instead of C*K) or when input dilation would otherwise split the work in phases."""
    if any(s != 1 for s in stride):
        return False
    return 4 * O <= C or (O < C and any(d > 1 for d in idil))


def general_conv(x: np.ndarray, w: np.ndarray, out: np.ndarray, stride: tuple, lo: tuple,
                 kdil: tuple, idil: tuple) -> tuple[int, str]:
    """Convolution with input dilation on grouped views (see the module docstring)."""
    nd = len(stride)
    C, O = x.shape[2], w.shape[1]
    if out.size == 0:
        return 0, "none"
    one_tap = prod(w.shape[3:]) == 1 and all(d == 1 for d in idil)  # a plain GEMM already
    if use_scatter(C, O, stride, idil) and C * O > DIRECT_MAX_CHANNEL_PRODUCT and not one_tap:
        return scatter_conv(x, w, out, lo, kdil, idil), "scatter"
    K, P = w.shape[3:], out.shape[3:]
    per_dim = [phases(K[d], P[d], stride[d], lo[d], kdil[d], idil[d]) for d in range(nd)]
    if not all(covers_all(per_dim[d], P[d]) for d in range(nd)):
        out[...] = 0
    flops, algos = 0, set()
    for combo in itertools.product(*per_dim):
        sub_w = w[(Ellipsis, *(ph.tap_slice() for ph in combo))]
        sub_out = out[(Ellipsis, *(ph.out_slice() for ph in combo))]
        f, algo = dense_conv(x, sub_w, sub_out, tuple(ph.stride for ph in combo),
                             tuple(-ph.base for ph in combo),
                             tuple(ph.dilation for ph in combo))
        flops += f
        algos.add(algo)
    return flops, "+".join(sorted(algos)) + ("/polyphase" if any(i > 1 for i in idil) else "")
