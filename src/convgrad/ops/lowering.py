"""The three passes of a convolution as one unflipped grouped convolution (the transpose rules).

Every pass is the forward convolution with roles swapped (JAX's transpose rules).  With
the matmul analogy ``y[m, k] = x[m, j] w[j, k]`` (m: batch and output pixels, j: input
channels and taps, k: output channels):

* forward         ``y[m, k] = x[m, j] w[j, k]``: the spec as given;
* input gradient  ``gx[m, j] = gy[m, k] w[k, j]``: a convolution of ``gy`` with the
  kernel transposed over channels and flipped in space; the forward's stride becomes
  input dilation and its input dilation becomes stride, and the padding before is
  ``Kd - 1 - lo`` (``Kd``: dilated kernel extent), so gy's first sample meets the last
  tap; whatever is left after is the input's size;
* weight gradient ``gw[j, k] = x[j, m] gy[m, k]``: a convolution of the input (channels
  and batch swapped, so channels play batch and the batch is contracted) with ``gy`` as
  the kernel; the forward's kernel dilation becomes stride and its stride becomes
  kernel dilation; feature groups stay groups, since group g of ``gy`` only meets group
  g of ``x``;
* bias gradient   ``gb[o] = sum over batch and pixels of gy[n, o, p]`` (no convolution).

``flip`` reverses the kernel: the input gradient of a flipped convolution is an
unflipped one, and the weight gradient of a flipped kernel is the flipped weight
gradient.  All views below are free (reshapes and transposes of ndarrays); nothing is
copied.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .spec import ConvSpec, Pass

__all__ = ["Lowered", "lower"]


@dataclass(frozen=True)
class Lowered:
    """``out[b,g,o,p] = sum_{c,k} xd[b,g,c, p*stride + k*kdil - lo] * w[g,o,c,k]``.

    ``x`` (B, G, C, *L), ``w`` (G, O, C, *K), ``out`` (B, G, O, *P) are views; ``xd`` is
    ``x`` dilated by ``idil`` and read as zero outside.  ``lo`` is the padding before.
    """

    x: np.ndarray
    w: np.ndarray
    out: np.ndarray
    stride: tuple[int, ...]
    lo: tuple[int, ...]
    kdil: tuple[int, ...]
    idil: tuple[int, ...]
    out_array: np.ndarray  # the pass's output, of which ``out`` is a view


def _spatial_flip(a: np.ndarray, nd: int) -> np.ndarray:
    return a[(Ellipsis, *([slice(None, None, -1)] * nd))]


def _forward(x: np.ndarray, w: np.ndarray, y: np.ndarray, spec: ConvSpec) -> Lowered:
    nd, G = spec.ndim, spec.groups
    N, C_in, *L = x.shape
    C_out, Cg, *K = w.shape
    wg = w.reshape(G, C_out // G, Cg, *K)
    if spec.flip:
        wg = _spatial_flip(wg, nd)
    return Lowered(x.reshape(N, G, Cg, *L), wg, y.reshape(N, G, C_out // G, *y.shape[2:]),
                   spec.stride, tuple(p[0] for p in spec.padding), spec.kernel_dilation,
                   spec.input_dilation, y)


def _input_grad(gy: np.ndarray, w: np.ndarray, gx: np.ndarray, spec: ConvSpec) -> Lowered:
    nd, G = spec.ndim, spec.groups
    N, C_in, *L = gx.shape
    C_out, Cg, *K = w.shape
    Og = C_out // G
    # the kernel with in/out channels swapped per group, flipped (flip of flip = none)
    wt = w.reshape(G, Og, Cg, *K).swapaxes(1, 2)
    if not spec.flip:
        wt = _spatial_flip(wt, nd)
    lo = tuple((K[d] - 1) * spec.kernel_dilation[d] - spec.padding[d][0] for d in range(nd))
    return Lowered(gy.reshape(N, G, Og, *gy.shape[2:]), wt, gx.reshape(N, G, Cg, *L),
                   spec.input_dilation, lo, spec.kernel_dilation, spec.stride, gx)


def _weight_grad(x: np.ndarray, gy: np.ndarray, gw: np.ndarray, spec: ConvSpec) -> Lowered:
    nd, G = spec.ndim, spec.groups
    N, C_in, *L = x.shape
    C_out, Cg, *K = gw.shape
    Og = C_out // G
    spatial = range(3, 3 + nd)
    # channels of x play batch, the batch is contracted, gy is the kernel
    xt = x.reshape(N, G, Cg, *L).transpose(2, 1, 0, *spatial)
    gyt = gy.reshape(N, G, Og, *gy.shape[2:]).transpose(1, 2, 0, *spatial)
    out = gw.reshape(G, Og, Cg, *K).transpose(2, 0, 1, *spatial)
    if spec.flip:
        out = _spatial_flip(out, nd)
    return Lowered(xt, gyt, out, spec.kernel_dilation, tuple(p[0] for p in spec.padding),
                   spec.stride, spec.input_dilation, gw)


_RULES = {Pass.FORWARD: _forward, Pass.INPUT_GRAD: _input_grad, Pass.WEIGHT_GRAD: _weight_grad}


def lower(pass_: Pass, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray,
          spec: ConvSpec) -> Lowered:
    """``pass_`` is ``forward`` (x, w -> y), ``input_grad`` (gy, w -> gx) or
    ``weight_grad`` (x, gy -> gw)."""
    return _RULES[pass_](lhs, rhs, out, spec)
