"""The ``norm`` kernel family: batch normalization on ndarrays, forward and backward.

One decision (:func:`_plan`) picks the algorithm of each call: ``onednn`` (oneDNN's batch
normalization primitive, :mod:`.onednn.norm`) for float32 arrays in NCHW or channels-last
memory where it meets torch's accuracy, else ``numpy``, the reference (exact in float64).

* statistics (:func:`batch_stats`): always the accurate sums of :mod:`.reduction` (two
  passes, never E[x^2] - E[x]^2); oneDNN's own float32 statistics were 100-700x less
  accurate than torch's (see :mod:`.onednn.norm`), so they are handed to it;
* forward (:func:`batch_norm_forward`): ``y = (x - mean) (var + eps)^-1/2 w + b``, with a
  fused ReLU on request (oneDNN then writes a bit mask its backward reads);
* backward (:func:`batch_norm_backward`): with ``xh = (x - mean) inv``,
  ``gb = sum g``, ``gw = sum g xh``, ``gx = w inv (g - gb/n - xh gw/n)`` (the batch
  statistics differentiated), only the gradients asked for.

Outputs have the input's memory layout (:mod:`.layouts`).
"""

from __future__ import annotations

from math import prod

import numpy as np

from . import layouts, reduction
from .onednn import _library as L
from .onednn.norm import NormPlan, batch_norm_plan
from .registry import family

__all__ = ["NORM", "batch_norm_backward", "batch_norm_forward", "batch_stats"]

#: the normalisation family: ``prefer("onednn")`` / ``prefer("numpy")`` pin it
NORM = family("norm", ("onednn", "numpy"))
_F32 = np.dtype(np.float32)


def _channels_last(x: np.ndarray) -> bool | None:
    """True for channels-last, False for C-contiguous memory, None for anything else."""
    if layouts.is_channels_last(x):
        return True
    return False if x.flags.c_contiguous and x.flags.aligned else None


def _plan(pass_name: str, x: np.ndarray, flags: int, eps: float) -> NormPlan | None:
    """The oneDNN plan for this call, or None: the NumPy reference runs it."""
    pinned = NORM.pinned()
    if pinned == "numpy" or x.dtype is not _F32 or x.ndim < 2:
        return None
    layout = _channels_last(x)
    if layout is None:  # a strided view: the reference reads it as it is
        return None
    if pass_name == "backward" and pinned != "onednn":
        # oneDNN's backward sums in float32: NCHW gx off by 7e-7..1.3e-5 relative on
        # (32, 16, 8, 8)..(8, 64, 128, 128) (torch: 1.1e-7..1.5e-7); channels-last gw off
        # by 1.2e-6 on (4, 16, 96, 96) (torch: 2.1e-7), so the accurate reference runs it
        return None
    plan = batch_norm_plan(pass_name, x.shape, layout, flags, eps)
    return plan if isinstance(plan, NormPlan) else None


def _flags(weight, bias, relu: bool) -> int:
    return ((L.USE_SCALE if weight is not None else 0) | (L.USE_SHIFT if bias is not None else 0)
            | (L.FUSE_NORM_RELU if relu else 0))


def _stat(v: np.ndarray | None, dtype) -> np.ndarray | None:
    return None if v is None else np.ascontiguousarray(v, dtype=dtype).reshape(-1)


def _bcast(v: np.ndarray, ndim: int) -> np.ndarray:
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def batch_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and biased variance of ``x`` (N, C, *) over every other dim, as
    (C,) float64 arrays (float32 x's mean carries the float32 mean's rounding residual):
    the accurate sums, two passes (the residual is the mean of the deviations)."""
    dims = (0, *range(2, x.ndim))
    n = prod(x.shape[d] for d in dims)
    hi = reduction.total(x, axis=dims, keepdims=True) / x.dtype.type(n)
    d = x - hi
    lo = reduction.total(d, axis=dims).astype(np.float64) / n
    np.multiply(d, d, out=d)
    var = reduction.total(d, axis=dims).astype(np.float64) / n - lo * lo
    return hi.reshape(-1).astype(np.float64) + lo, np.maximum(var, 0.0)


def _split(mean: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """``mean`` as its rounding to ``dtype`` (what the kernels subtract) and the float64
    residual (folded into the shift: a mean of 50 rounded to float32 alone put 1.7e-6
    relative error into y, torch's being 5.8e-7)."""
    mean = np.asarray(mean).reshape(-1)
    hi = np.ascontiguousarray(mean, dtype=dtype)
    return hi, mean.astype(np.float64) - hi


def batch_norm_forward(x: np.ndarray, mean: np.ndarray, var: np.ndarray,
                       weight: np.ndarray | None, bias: np.ndarray | None, eps: float,
                       relu: bool = False, training: bool = True
                       ) -> tuple[np.ndarray, np.ndarray | None]:
    """``y = (x - mean) (var + eps)^-1/2 weight + bias`` per channel (then ReLU with
    ``relu``), in x's layout, and the fused ReLU's mask (a uint8 array, or None) for
    :func:`batch_norm_backward`.  ``training``: the statistics are the batch's (a
    training forward), else the running ones (inference)."""
    c = x.shape[1]
    mean, lo = _split(mean, x.dtype)
    var = _stat(var, x.dtype)
    s = _scale(var, _stat(weight, x.dtype), eps)
    # the mean's residual: y = (x - hi) inv w + (b - inv w lo)
    shift = (np.zeros(c) if bias is None else np.asarray(bias, np.float64).reshape(-1)) - s * lo
    weight = np.ones(c, x.dtype) if weight is None else _stat(weight, x.dtype)
    shift = shift.astype(x.dtype)
    pass_name = "forward_training" if training else "forward_inference"
    plan = _plan(pass_name, x, _flags(weight, shift, relu), eps)
    with NORM.record(f"batch_norm_{pass_name}", x.shape) as rec:
        y = layouts.empty(x.shape, layouts.is_channels_last(x), x.dtype)
        ws = None
        if plan is not None:
            rec.algorithm = plan.name
            arrays = {"src": x, "dst": y, "mean": mean, "var": var, "scale": weight,
                      "shift": shift}
            if plan.workspace_size:
                ws = arrays["ws"] = np.empty(plan.workspace_size, dtype=np.uint8)
            plan.run(arrays)
            return y, ws
        rec.algorithm = "numpy"
        _reference_forward(x, mean, s.astype(x.dtype), shift, relu, y)
        return y, None


def _scale(var: np.ndarray, weight: np.ndarray | None, eps: float) -> np.ndarray:
    inv = 1.0 / np.sqrt(var + var.dtype.type(eps))
    return inv if weight is None else inv * weight


def _reference_forward(x, mean, scale, shift, relu, out) -> np.ndarray:
    np.subtract(x, _bcast(mean, x.ndim), out=out)
    out *= _bcast(scale, x.ndim)
    out += _bcast(shift, x.ndim)
    if relu:
        np.maximum(out, 0, out=out)
    return out


def batch_norm_backward(g: np.ndarray, x: np.ndarray, mean: np.ndarray, var: np.ndarray,
                        weight: np.ndarray | None, bias: np.ndarray | None, eps: float,
                        need: tuple[bool, bool, bool], relu_mask: np.ndarray | None = None,
                        relu: bool = False) -> tuple:
    """The gradients (x, weight, bias) of a training :func:`batch_norm_forward` (batch
    statistics differentiated) at ``g``; None for those ``need`` does not ask.  A fused
    ReLU's gradient comes from ``relu_mask`` (oneDNN's) or, in the reference, from the
    output recomputed from x (``relu``; ``bias`` is read for it)."""
    mean, lo = _split(mean, x.dtype)
    var, weight = _stat(var, x.dtype), _stat(weight, x.dtype)
    flags = _flags(weight, bias if need[2] or relu else None, relu)
    plan = _plan("backward", x, flags, eps) if relu_mask is not None or not relu else None
    with NORM.record("batch_norm_backward", x.shape) as rec:
        if plan is not None:
            rec.algorithm = plan.name
            cl = plan.channels_last
            if _channels_last(g) is not cl or g.dtype is not _F32:  # to x's layout
                staged = layouts.empty(x.shape, cl, x.dtype)
                np.copyto(staged, g)
                g = staged
            arrays = {"src": x, "diff_dst": g, "diff_src": layouts.empty(x.shape, cl, x.dtype),
                      "mean": mean, "var": var, "scale": weight, "ws": relu_mask}
            c = x.shape[1]
            if plan.flags & L.USE_SCALE:
                arrays["diff_scale"] = np.empty(c, x.dtype)
            if plan.flags & L.USE_SHIFT:
                arrays["diff_shift"] = np.empty(c, x.dtype)
            plan.run(arrays)
            return (arrays["diff_src"] if need[0] else None,
                    arrays.get("diff_scale") if need[1] else None,
                    arrays.get("diff_shift") if need[2] else None)
        bias = _stat(bias, x.dtype)
        affine = _plan("forward_inference", x, L.USE_SCALE | L.USE_SHIFT, eps)
        if affine is not None:
            rec.algorithm = affine.name + "+accurate_sums"
            return _affine_backward(affine, g, x, mean, lo, var, weight, bias, eps, need, relu)
        rec.algorithm = "numpy"
        return _reference_backward(g, x, mean, lo, var, weight, bias, eps, need, relu)


def _affine_backward(affine: NormPlan, g, x, mean, lo, var, weight, bias, eps, need,
                     relu) -> tuple:
    """The reference's rule with its elementwise passes on oneDNN's inference primitive
    (``s (x - mean) inv + t`` per channel, multi-threaded, x's mean subtracted first) and
    its sums accurate (:mod:`.reduction`): ``gx = w inv g + [-w inv gw/n] xh - w inv gb/n``.
    """
    nd, dims = x.ndim, (0, *range(2, x.ndim))
    n, c = prod(x.shape[d] for d in dims), x.shape[1]
    cl = affine.channels_last
    inv = 1.0 / np.sqrt(var + var.dtype.type(eps))
    one, zero = np.ones(c, x.dtype), np.zeros(c, x.dtype)
    buf = layouts.empty(x.shape, cl, x.dtype)
    if relu:  # the ReLU's gradient: g where the output (recomputed) is positive
        w = one if weight is None else weight
        b = zero if bias is None else bias
        affine.run({"src": x, "dst": buf, "mean": mean, "var": var, "scale": w,
                    "shift": (b - w * inv * lo).astype(x.dtype)})
        g = np.where(buf > 0, g, g.dtype.type(0))
    affine.run({"src": x, "dst": buf, "mean": mean, "var": var, "scale": one,
                "shift": (-inv * lo).astype(x.dtype)})  # xh, the residual folded in
    gb = reduction.total(g, axis=dims)
    np.multiply(buf, g, out=buf)  # g xh
    gw = reduction.total(buf, axis=dims)
    if not need[0]:
        return None, (gw if need[1] else None), (gb if need[2] else None)
    a = inv if weight is None else inv * weight
    k = -a * gw.astype(np.float64) / n  # gx = a g + k xh - a gb/n
    affine.run({"src": x, "dst": buf, "mean": mean, "var": var, "scale": k.astype(x.dtype),
                "shift": (-a * gb.astype(np.float64) / n - k * inv * lo).astype(x.dtype)})
    buf += g * _bcast(a, nd)
    return buf, (gw if need[1] else None), (gb if need[2] else None)


def _reference_backward(g, x, mean, lo, var, weight, bias, eps, need, relu) -> tuple:
    nd, dims = x.ndim, (0, *range(2, x.ndim))
    n = prod(x.shape[d] for d in dims)
    inv = 1.0 / np.sqrt(var + var.dtype.type(eps))
    xh = layouts.empty(x.shape, layouts.is_channels_last(x), x.dtype)
    np.subtract(x, _bcast(mean, nd), out=xh)
    xh *= _bcast(inv, nd)
    if lo.any():  # the float32 mean's residual
        xh -= _bcast((inv * lo).astype(x.dtype), nd)
    if relu:  # the ReLU's gradient: g where the output is positive
        y = xh * _bcast(weight, nd) if weight is not None else xh.copy()
        if bias is not None:
            y += _bcast(bias, nd)
        g = np.where(y > 0, g, g.dtype.type(0))
    gb = reduction.total(g, axis=dims)
    t = g * xh
    gw = reduction.total(t, axis=dims)
    gx = None
    if need[0]:
        s = inv if weight is None else inv * weight
        # gx = w inv (g - gb/n - xh gw/n), in xh's memory
        np.multiply(xh, _bcast(gw / n, nd), out=xh)
        np.subtract(g, xh, out=xh)
        xh -= _bcast(gb / n, nd)
        xh *= _bcast(s, nd)
        gx = xh
    return gx, (gw if need[1] else None), (gb if need[2] else None)
