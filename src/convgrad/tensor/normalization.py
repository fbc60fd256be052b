"""Standardisation, the one Function behind every normalisation layer, and the
statistics it standardises by.

``batch_norm``, ``instance_norm``, ``group_norm`` and ``layer_norm``
(:mod:`convgrad.functional.normalization`) each standardise over some dims,
``(x - mean) / sqrt(var + eps)`` with the biased variance, then scale and shift.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function, is_grad_enabled
from ..ops import group_norm as group_kernels
from ..ops import layer_norm as layer_kernels
from ..ops import normalization as kernels
from ..ops import reduction

Tensor = Any  # annotations: these rules see the tensor layer's Tensor

__all__ = ["BatchNorm", "BatchNormEval", "BatchNormReLU", "ChannelAffine", "GroupNorm",
           "GroupNormReLU", "GroupNormSiLU", "LayerNorm", "Standardize", "moments"]


def moments(x: np.ndarray, dims: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Mean and biased variance over ``dims`` (kept as size-1 dims): two passes, the
    variance as the mean of squared deviations (never E[x^2] - E[x]^2, which cancels)."""
    mu = reduction.mean(x, axis=dims, keepdims=True)
    d = x - mu
    return mu, reduction.mean(d * d, axis=dims, keepdims=True)


def _inv_std(x: Tensor, dims: tuple, eps: float) -> Tensor:
    """``(var(x) + eps) ** -1/2`` over ``dims`` as recorded Tensor operations."""
    d = x - x.mean(dims, keepdim=True)
    return ((d * d).mean(dims, keepdim=True) + eps) ** -0.5


class Standardize(Function):
    """``y = (x - mean) * inv`` with ``mean``, ``inv = (var + eps)^-1/2`` of x over ``dims``.

    ``mean`` and ``var`` come in precomputed (the caller also needs them for running
    statistics); they are x's own moments, so the rule below differentiates through them.
    The rule reads x, not the output, as torch's: an in-place activation applied to the
    output (``relu_``) is harmless.
    """

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, dims: tuple, eps: float, mean: np.ndarray,
                var: np.ndarray) -> np.ndarray:
        ctx.dims, ctx.eps, ctx.mean = dims, eps, mean
        ctx.inv = 1.0 / np.sqrt(var + eps)
        return (x - mean) * ctx.inv

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> Tensor:
        x, dims = ctx.inputs[0], ctx.dims
        if is_grad_enabled():  # create_graph: mean and inv as recorded functions of x
            inv = _inv_std(x, dims, ctx.eps)
            y = (x - x.mean(dims, keepdim=True)) * inv
        else:
            inv = type(g)._wrap(ctx.inv)
            y = type(g)._wrap((x.data - ctx.mean) * ctx.inv)
        # y = (x - m) s, m = mean(x), s = (mean((x - m)^2) + eps)^-1/2:
        # dx = s (g - mean(g) - y mean(g y))
        return inv * (g - g.mean(dims, keepdim=True) - y * (g * y).mean(dims, keepdim=True))


class BatchNorm(Function):
    """Training batch normalization, ``y = (x - mean) inv w + b`` per channel, with the
    batch's ``mean`` and ``inv = (var + eps)^-1/2`` over (N, *spatial); ``w``, ``b`` may be
    None.  The kernels are the ``norm`` family's (:mod:`convgrad.ops.normalization`).

    ``stats``: a dict that receives the batch ``mean`` and biased ``var`` ((C,) arrays)
    for the caller's running statistics.  Reads x and w (and b, for the fused ReLU's
    mask recomputed by the reference kernel), never its output: an in-place activation
    applied to y is harmless.
    """

    reads = (0, 1, 2)
    relu = False

    @classmethod
    def forward(cls, ctx: Context, x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None,
                eps: float, stats: dict | None = None, slope: float = 0.0) -> np.ndarray:
        mean, var = kernels.batch_stats(x)
        y, ctx.mask = kernels.batch_norm_forward(x, mean, var, w, b, eps, relu=cls.relu,
                                                 slope=slope)
        ctx.eps, ctx.mean, ctx.var, ctx.slope = eps, mean, var, slope
        if stats is not None:
            stats["mean"], stats["var"] = mean, var
        return y

    @classmethod
    def backward(cls, ctx: Context, g: Tensor) -> tuple:
        x, w, b = ctx.inputs
        need = ctx.needs_input_grad
        if not is_grad_enabled():
            return kernels.batch_norm_backward(
                g.data, x.data, ctx.mean, ctx.var, None if w is None else w.data,
                None if b is None else b.data, ctx.eps, need, ctx.mask, cls.relu, ctx.slope)
        # create_graph: the same rule as recorded Tensor operations of x (and w), evaluated
        # in float64 for float32 operands and cast back (recorded casts): in float32 its
        # cancellations put 2.5-3x torch's float32 error into the first-order gradient
        dtype = x.dtype
        if dtype == np.float32:
            x, g = x.double(), g.double()
            w = None if w is None else w.double()
        dims = (0, *range(2, x.ndim))
        shape = (1, -1) + (1,) * (x.ndim - 2)
        inv = _inv_std(x, dims, ctx.eps)
        xh = (x - x.mean(dims, keepdim=True)) * inv
        if cls.relu:  # the (leaky) ReLU's derivative: 1 where the output (rounded as the
            # forward rounds it) is positive, else the slope (0 for a ReLU): a constant
            y = xh.data * (1.0 if w is None else w.data.reshape(shape))
            y = (y + (0.0 if b is None else b.data.reshape(shape))).astype(dtype)
            g = g * type(g)._wrap(np.where(y > 0, 1.0, dtype.type(ctx.slope)).astype(g.dtype))
        gw = (g * xh).sum(dims) if need[1] else None
        gb = g.sum(dims) if need[2] else None
        gx = None
        if need[0]:
            gs = g if w is None else g * w.reshape(shape)
            # xh = (x - m) s; dx = s (gs - mean(gs) - xh mean(gs xh)), gs = g w
            gx = inv * (gs - gs.mean(dims, keepdim=True)
                        - xh * (gs * xh).mean(dims, keepdim=True))
        return tuple(None if t is None else t.to(dtype) for t in (gx, gw, gb))


class ChannelAffine(Function):
    """``y = x w + b`` per channel of x (N, C, *), ``w`` and ``b`` (C,) or None: the affine
    step of group and instance normalisation, one kernel each way (the norm family's
    ``channel_affine``) where the Tensor operations made a pass per product, sum and
    reduction."""

    reads = {0: (1,), 1: (0,)}

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, w: np.ndarray | None,
                b: np.ndarray | None) -> np.ndarray:
        return kernels.channel_affine(x, w, b)

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        x, w, _ = ctx.inputs
        need = ctx.needs_input_grad
        if not is_grad_enabled():
            return kernels.channel_affine_backward(g.data, x.data,
                                                   None if w is None else w.data, need)
        # create_graph: d(x w + b)/dx = w, /dw = sum x, /db = sum 1, as Tensor operations
        dims = (0, *range(2, x.ndim))
        shape = (1, -1) + (1,) * (x.ndim - 2)
        return ((g if w is None else g * w.reshape(shape)) if need[0] else None,
                (g * x).sum(dims) if need[1] else None, g.sum(dims) if need[2] else None)


class BatchNormEval(Function):
    """Batch normalisation by running statistics, with gradients (a frozen BatchNorm that
    a loss differentiates through): ``y = (x - mean) inv w + b`` per channel (``inv =
    (var + eps)^-1/2``; ``mean``, ``var`` (C,) float64; ``w``, ``b`` (C,) or None), one
    kernel each way: the forward is the inference pass of the no-grad path (the same
    bits), the backward one channel-affine pass: dy/dx = ``a = w inv`` (rounded once to
    x's dtype, as torch's), and the weight's and bias's gradients ``inv sum g (x - mean)``
    and ``sum g`` from the kernel's float64 sums of ``g x`` and ``g``, combined before
    rounding (x far from zero would cancel in x's dtype)."""

    reads = {0: (1,), 1: (0,)}

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None, *,
                mean: np.ndarray, var: np.ndarray, eps: float) -> np.ndarray:
        inv = 1.0 / np.sqrt(var + eps)
        ctx.scale = (inv if w is None else w.astype(np.float64) * inv).astype(x.dtype)
        ctx.mean, ctx.inv = mean, inv
        return kernels.batch_norm_forward(x, mean, var, w, b, eps, training=False)[0]

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        x, w, _ = ctx.inputs
        need = ctx.needs_input_grad
        mean, inv = ctx.mean, ctx.inv
        if not is_grad_enabled():
            gx, sgx, sg = kernels.channel_affine_backward(
                g.data, x.data, ctx.scale, (need[0], need[1], need[1] or need[2]),
                float64_sums=True)
            gw = (inv * (sgx - mean * sg)).astype(x.dtype) if need[1] else None
            return gx, gw, sg.astype(x.dtype) if need[2] else None
        # create_graph: the same derivatives as Tensor operations (x's dtype)
        dims = (0, *range(2, x.ndim))
        shape = (1, -1) + (1,) * (x.ndim - 2)
        dt = x.dtype
        inv_t = type(x)(inv.astype(dt))
        a = inv_t if w is None else w * inv_t
        gx = g * a.reshape(shape) if need[0] else None
        gw = ((g * (x - type(x)(mean.astype(dt).reshape(shape)))).sum(dims) * inv_t
              if need[1] else None)
        return gx, gw, g.sum(dims) if need[2] else None


class LayerNorm(Function):
    """Layer normalisation of x over its trailing ``k`` elements a row, ``y = (x - m) s w
    + b`` with each row's mean ``m`` and ``s = (var + eps)^-1/2``; ``w``, ``b`` (the
    normalised shape) or None.  One kernel each way (:mod:`convgrad.ops.layer_norm`);
    callers check :func:`~convgrad.ops.layer_norm.available` first.  With ``xh = (x -
    m) s`` and ``gs = g w``: ``gx = s (gs - mean(gs) - xh mean(gs xh))`` over the row (its
    statistics differentiated), ``gw = sum g xh`` and ``gb = sum g`` over the rows.  Reads
    x and w, never its output."""

    reads = (0, 1)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None, *,
                k: int, eps: float) -> np.ndarray:
        y, ctx.mean, ctx.rstd = layer_kernels.layer_norm_forward(x, k, w, b, eps)
        ctx.k, ctx.eps = k, eps
        return y

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        x, w, _ = ctx.inputs
        need = ctx.needs_input_grad
        if not is_grad_enabled():
            return layer_kernels.layer_norm_backward(g.data, x.data, ctx.mean, ctx.rstd,
                                                     None if w is None else w.data, ctx.k,
                                                     need)
        # create_graph: the same derivatives as Tensor operations on (rows, k) views, the
        # statistics recomputed as functions of x so that they differentiate too
        xr, gr = x.reshape(-1, ctx.k), g.reshape(-1, ctx.k)
        d = xr - xr.mean(1, keepdim=True)
        s = ((d * d).mean(1, keepdim=True) + ctx.eps) ** -0.5
        xh = d * s
        gs = gr if w is None else gr * w.reshape(1, -1)
        gx = s * (gs - gs.mean(1, keepdim=True) - xh * (gs * xh).mean(1, keepdim=True))
        shape = (ctx.k,) if w is None else w.shape
        return (gx.reshape(x.shape) if need[0] else None,
                (gr * xh).sum(0).reshape(shape) if need[1] else None,
                gr.sum(0).reshape(shape) if need[2] else None)


class GroupNorm(Function):
    """Group normalization, ``y = (x - mean) inv w + b`` with each (sample, group of
    ``groups`` channels)'s ``mean`` and ``inv = (var + eps)^-1/2`` over the group's
    channels and positions, ``w``, ``b`` (C,) or None; instance normalization is
    ``groups = C``.  One kernel each way, in x's layout (:mod:`convgrad.ops.group_norm`);
    callers check :func:`~convgrad.ops.group_norm.available` first.

    ``stats``: a dict that receives ``mean`` and biased ``var`` ((N, groups) arrays) for
    the caller's running statistics.  ``activation``: :class:`GroupNormReLU`'s slope or
    :class:`GroupNormSiLU`'s ``"silu"``.  Reads x and w, never its output.
    """

    reads = (0, 1)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None,
                groups: int, eps: float, stats: dict | None = None,
                activation: float | str | None = None) -> np.ndarray:
        y, ctx.mean, ctx.var, ctx.keep = group_kernels.group_norm_forward(
            x, groups, w, b, eps, activation)
        ctx.groups, ctx.eps, ctx.activation = groups, eps, activation
        if stats is not None:
            stats["mean"], stats["var"] = ctx.mean, ctx.var
        return y

    @staticmethod
    def backward(ctx: Context, g: Tensor) -> tuple:
        x, w, b = ctx.inputs
        need, activation = ctx.needs_input_grad, ctx.activation
        if not is_grad_enabled():
            return group_kernels.group_norm_backward(
                g.data, x.data, ctx.mean, ctx.var, None if w is None else w.data, ctx.eps,
                need, activation, ctx.keep)
        if activation is not None and activation != "silu":
            # a (leaky) ReLU's derivative, a constant: 1 where kept, the slope elsewhere
            g = g * type(g)._wrap(np.where(ctx.keep, 1.0, activation).astype(g.dtype))
        # create_graph: the rule as recorded Tensor operations of x (and w), on the
        # (N, groups, rest) view: xh = (x - m) s; dx = s (gs - mean(gs) - xh mean(gs xh)),
        # evaluated in float64 for float32 operands and cast back (recorded casts), as
        # BatchNorm's: in float32 a second-order gradient's error was 2-4.6x torch's in
        # a third of random draws
        dtype = x.dtype
        if dtype == np.float32:
            x, g = x.double(), g.double()
            w = None if w is None else w.double()
            b = None if b is None else b.double()
        n, c = x.shape[:2]
        dims, shape = (0, *range(2, x.ndim)), (1, c) + (1,) * (x.ndim - 2)
        rows = (n, ctx.groups, -1)
        xr = x.reshape(rows)
        inv = _inv_std(xr, (2,), ctx.eps)
        xh = (xr - xr.mean((2,), keepdim=True)) * inv
        if activation == "silu":
            # SiLU's derivative at z = xh w + b, a function of x (and w, b) recorded too:
            # silu'(z) = s (1 + z (1 - s)), s = sigmoid(z)
            z = xh.reshape(x.shape)
            z = z if w is None else z * w.reshape(shape)
            z = z if b is None else z + b.reshape(shape)
            s = z.sigmoid()
            g = g * (s * (1.0 + z * (1.0 - s)))
        gx = None
        if need[0]:
            gs = (g if w is None else g * w.reshape(shape)).reshape(rows)
            gx = (inv * (gs - gs.mean((2,), keepdim=True)
                         - xh * (gs * xh).mean((2,), keepdim=True))).reshape(x.shape)
        gw = (g * xh.reshape(x.shape)).sum(dims) if need[1] else None
        gb = g.sum(dims) if need[2] else None
        return tuple(None if t is None else t.to(dtype) for t in (gx, gw, gb))


class GroupNormReLU(GroupNorm):
    """``leaky_relu(group_norm(x), slope)`` (a ReLU for ``slope`` 0; ``activation``, the
    slope), one kernel each way (:mod:`convgrad.ops.group_norm`), for callers that fuse
    the pair: the forward keeps a byte per element saying where the activation passed y
    unscaled, the backward scales g by it (never reading the output)."""


class GroupNormSiLU(GroupNorm):
    """``silu(group_norm(x))`` (``activation="silu"``), one kernel each way
    (:mod:`convgrad.ops.group_norm`), for callers that fuse the pair: the forward keeps
    SiLU's derivative per element, the backward scales g by it.  Its second-order rule
    reads b too (z = xh w + b)."""

    reads = (0, 1, 2)


class BatchNormReLU(BatchNorm):
    """``relu(batch_norm(x))`` in training, one kernel each way, for callers that fuse the
    pair: the compiled loops (the mask recomputed from x in the backward; a leaky ReLU of
    ``slope`` > 0 too), or oneDNN's ``fuse_norm_relu`` (its backward reads the forward's
    bit mask; a plain ReLU only)."""

    reads = (0, 1, 2)
    relu = True


# ----------------------------------------------------------------------------- arguments
