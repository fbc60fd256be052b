"""The four convolution kernels of the public API, on ndarrays.

These are the only places that do convolution arithmetic.  The two gradient kernels
are the forward kernel with derived specs (JAX's transpose rules).  With the matmul
analogy ``y[m, k] = x[m, j] w[j, k]`` (m: batch and output pixels, j: input channels
and taps, k: output channels):

* input gradient  ``gx[m, j] = gy[m, k] w[k, j]``: a convolution of ``gy`` with the
  kernel transposed over channels and flipped in space; the forward's stride becomes
  input dilation and its input dilation becomes stride, and the padding is
  ``Kd - 1 - lo`` before, whatever makes the output the input's size after
  (``Kd``: dilated kernel extent);
* weight gradient ``gw[j, k] = x[j, m] gy[m, k]``: a convolution of the input (channels
  and batch swapped, so channels play batch and batch is contracted) with ``gy`` as
  the kernel; the forward's kernel dilation becomes stride and its stride becomes
  kernel dilation; feature groups stay groups because group g of ``gy`` only meets
  group g of ``x``;
* bias gradient: ``gb[o] = sum over batch and pixels of gy[n, o, p]``.

``flip`` reverses the kernel; the input gradient of a flipped convolution is an
unflipped one, and the weight gradient of a flipped kernel is the flipped weight
gradient.
"""

from __future__ import annotations

import numpy as np

from .dask import is_dask_array
from .dispatch import general_conv
from .profiler import record
from .spec import ConvSpec, _is_int, check_float_array

__all__ = ["conv_forward", "conv_input_grad", "conv_weight_grad", "conv_bias_grad",
           "grouped_conv"]


def grouped_conv(x: np.ndarray, w: np.ndarray, out: np.ndarray, stride: tuple,
                 lo: tuple, kdil: tuple, idil: tuple) -> tuple[int, str]:
    """General (unflipped) convolution on grouped views, written into ``out``.

    x (B, G, C, *L), w (G, O, C, *K), out (B, G, O, *P); the algorithm is chosen by
    :func:`.dispatch.general_conv`.  Returns (FLOPs, algorithm name).
    """
    return general_conv(x, w, out, stride, lo, kdil, idil)


def _spatial_flip(a: np.ndarray, nd: int) -> np.ndarray:
    return a[(Ellipsis, *([slice(None, None, -1)] * nd))]


def _check_spec(spec: object, fn: str) -> ConvSpec:
    if not isinstance(spec, ConvSpec):
        raise TypeError(f"{fn}: spec must be a ConvSpec, got {type(spec).__name__}")
    return spec


def _check_shape(name: str, shape: object, ndim: int, fn: str) -> tuple[int, ...]:
    if not isinstance(shape, tuple | list) or not all(_is_int(s) for s in shape):
        raise TypeError(f"{fn}: {name}={shape!r} must be a shape tuple of ints")
    out = tuple(int(s) for s in shape)
    if len(out) != ndim or any(s < 0 for s in out):
        raise ValueError(f"{fn}: {name}={out} must be {ndim} non-negative ints")
    return out


def conv_forward(x: np.ndarray, w: np.ndarray, spec: ConvSpec) -> np.ndarray:
    """``y = conv(x, w)`` per ``spec``; x (N, C_in, *L), w (C_out, C_in/G, *K), no bias."""
    if type(x) is not np.ndarray and is_dask_array(x):  # chunk by chunk, lazily
        from .dask import kernels
        return kernels.conv_forward(x, w, spec)
    fn = "conv_forward"
    spec = _check_spec(spec, fn)
    x, w = check_float_array("x", x, fn), check_float_array("weight", w, fn)
    y_shape = spec.output_shape(x.shape, w.shape, fn)
    nd, G = spec.ndim, spec.groups
    N, C_in, *L = x.shape
    C_out, Cg, *K = w.shape
    y = np.empty(y_shape, dtype=np.result_type(x, w))
    with record(fn, x.shape, w.shape, y_shape) as rec:
        wg = w.reshape(G, C_out // G, Cg, *K)
        if spec.flip:
            wg = _spatial_flip(wg, nd)
        rec.flops, rec.algorithm = grouped_conv(
            x.reshape(N, G, Cg, *L), wg, y.reshape(N, G, C_out // G, *y_shape[2:]),
            spec.stride, tuple(p[0] for p in spec.padding), spec.kernel_dilation,
            spec.input_dilation)
    return y


def conv_input_grad(gy: np.ndarray, w: np.ndarray, x_shape: tuple, spec: ConvSpec) -> np.ndarray:
    """``d(sum(conv(x, w) * gy)) / dx`` for an input of shape ``x_shape``."""
    if type(gy) is not np.ndarray and is_dask_array(gy):  # chunk by chunk, lazily
        from .dask import kernels
        return kernels.conv_input_grad(gy, w, x_shape, spec)
    fn = "conv_input_grad"
    spec = _check_spec(spec, fn)
    gy, w = check_float_array("gy", gy, fn), check_float_array("weight", w, fn)
    nd, G = spec.ndim, spec.groups
    x_shape = _check_shape("x_shape", x_shape, nd + 2, fn)
    y_shape = spec.output_shape(x_shape, w.shape, fn)
    if gy.shape != y_shape:
        raise ValueError(f"{fn}: gy has shape {gy.shape}; the convolution's output is {y_shape}")
    N, C_in, *L = x_shape
    C_out, Cg, *K = w.shape
    Og = C_out // G
    gx = np.empty(x_shape, dtype=np.result_type(gy, w))
    with record(fn, gy.shape, w.shape, x_shape) as rec:
        # the kernel with in/out channels swapped per group, flipped (flip of flip = none)
        wt = w.reshape(G, Og, Cg, *K).swapaxes(1, 2)
        if not spec.flip:
            wt = _spatial_flip(wt, nd)
        # padding before: Kd - 1 - lo, so gy's first sample meets the last tap
        lo = tuple((K[d] - 1) * spec.kernel_dilation[d] - spec.padding[d][0] for d in range(nd))
        rec.flops, rec.algorithm = grouped_conv(
            gy.reshape(N, G, Og, *y_shape[2:]), wt, gx.reshape(N, G, Cg, *L),
            stride=spec.input_dilation, lo=lo, kdil=spec.kernel_dilation,
            idil=spec.stride)
    return gx


def conv_weight_grad(x: np.ndarray, gy: np.ndarray, w_shape: tuple, spec: ConvSpec) -> np.ndarray:
    """``d(sum(conv(x, w) * gy)) / dw`` for a weight of shape ``w_shape``."""
    if is_dask_array(x) or is_dask_array(gy):  # chunk by chunk, lazily
        from .dask import kernels
        return kernels.conv_weight_grad(x, gy, w_shape, spec)
    fn = "conv_weight_grad"
    spec = _check_spec(spec, fn)
    x, gy = check_float_array("x", x, fn), check_float_array("gy", gy, fn)
    nd, G = spec.ndim, spec.groups
    w_shape = _check_shape("w_shape", w_shape, nd + 2, fn)
    y_shape = spec.output_shape(x.shape, w_shape, fn)
    if gy.shape != y_shape:
        raise ValueError(f"{fn}: gy has shape {gy.shape}; the convolution's output is {y_shape}")
    N, C_in, *L = x.shape
    C_out, Cg, *K = w_shape
    Og = C_out // G
    gw = np.empty(w_shape, dtype=np.result_type(x, gy))
    with record(fn, x.shape, gy.shape, w_shape) as rec:
        # channels of x play batch, the batch is contracted, gy is the kernel
        xt = x.reshape(N, G, Cg, *L).transpose(2, 1, 0, *range(3, 3 + nd))
        gyt = gy.reshape(N, G, Og, *y_shape[2:]).transpose(1, 2, 0, *range(3, 3 + nd))
        out = gw.reshape(G, Og, Cg, *K).transpose(2, 0, 1, *range(3, 3 + nd))
        if spec.flip:
            out = _spatial_flip(out, nd)
        rec.flops, rec.algorithm = grouped_conv(
            xt, gyt, out, stride=spec.kernel_dilation,
            lo=tuple(p[0] for p in spec.padding), kdil=spec.stride, idil=spec.input_dilation)
    return gw


def conv_bias_grad(gy: np.ndarray) -> np.ndarray:
    """Sum of ``gy`` (N, C_out, *spatial) over the batch and spatial dims: shape (C_out,)."""
    if type(gy) is not np.ndarray and is_dask_array(gy):  # chunk by chunk, lazily
        from .dask import kernels
        return kernels.conv_bias_grad(gy)
    fn = "conv_bias_grad"
    gy = check_float_array("gy", gy, fn)
    if gy.ndim < 3:
        raise ValueError(f"{fn}: gy must have shape (N, C_out, *spatial), got {gy.shape}")
    with record(fn, gy.shape, flops=gy.size) as rec:
        rec.algorithm = "reduce"
        return gy.sum(axis=(0, *range(2, gy.ndim)))
