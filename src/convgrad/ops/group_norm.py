"""Group normalisation (instance normalisation is its one-channel-per-group case) on
float32 ndarrays in NCHW or channels-last memory, without changing the layout: the
``norm`` family's ``group_norm_forward`` and ``group_norm_backward`` kernels, algorithm
``numba`` (:mod:`.group_loops`).

Standardising each group of G of a sample over its channels and positions, as batch
normalisation of an (N*G, rest) view, needs C-contiguous memory: a channels-last
activation was copied to NCHW and left there, so every convolution after it reordered
its input and output.  Here the statistics are per-(sample, channel) moments of fixed
blocks, combined per group:

* forward: ``y = (x - m) s w + b`` with a group's mean ``m`` and ``s = (var + eps)^-1/2``,
  one pass, as ``(x - m) sc + sh`` per (sample, channel);
* backward, with ``xh = (x - m) s`` and ``gs = g w``: ``gb = sum g``, ``gw = sum g xh``
  per channel; ``gx = s (gs - mean(gs) - xh mean(gs xh))`` over the group (the group's
  statistics differentiated), i.e. ``a g + k (x - m) + d`` per (sample, channel) with
  ``a = s w``, ``k = -s^2 mean(gs xh)``, ``d = -s mean(gs)``: two passes, the sums,
  then gx.

:func:`available` says where it runs; elsewhere (float64, strided views, no Numba,
``prefer("numpy")`` or ``prefer("chunked")``) the functional layer standardises the
(N*G, rest) view with :mod:`.normalization`'s kernels, the reference.
"""

from __future__ import annotations

import numpy as np

from . import jit, layouts, parallel, reduction
from .group_loops import loops
from .normalization import NORM

__all__ = ["BLOCK", "available", "group_norm_backward", "group_norm_forward"]

#: elements of one task's block (128 KB of float32): the two passes over a block of the
#: moments read it from L2; fixed, so the sums do not depend on the thread count
BLOCK = 1 << 15
_F32 = np.dtype(np.float32)


def available(x: np.ndarray) -> bool:
    """Whether the compiled kernels run ``x``: float32, (N, C, *) with spatial dims,
    C-contiguous or channels-last, not empty, Numba loaded, the family not pinned away."""
    return (x.dtype == _F32 and x.ndim >= 3 and x.size > 0 and NORM.pinned() in (None, "numba")
            and (x.flags.c_contiguous or layouts.is_channels_last(x)) and loops() is not None)


class _Cut:
    """x's view ((N, S, C) channels-last, else (N, C, S)) and its tasks' blocks."""

    def __init__(self, x: np.ndarray):
        self.nsc = layouts.is_channels_last(x)
        n, c = x.shape[:2]
        self.s = x.size // (n * c)
        self.r = max(1, BLOCK // c) if self.nsc else min(self.s, BLOCK)
        self.r = min(self.r, self.s)
        self.b = -(-self.s // self.r)
        self.tasks = n * self.b * (1 if self.nsc else c)
        starts = np.arange(self.b) * self.r
        self.counts = np.minimum(self.s, starts + self.r) - starts  # each block's positions
        self.size = x.size
        self.suffix = "nsc" if self.nsc else "ncs"

    def view(self, a: np.ndarray) -> np.ndarray:
        n, c = a.shape[:2]
        if self.nsc:
            return np.reshape(np.moveaxis(a, 1, -1), (n, -1, c), copy=False)
        return np.reshape(a, (n, c, -1), copy=False)

    def like(self, x: np.ndarray) -> np.ndarray:
        return layouts.empty(x.shape, self.nsc, x.dtype)

    def run(self, name: str, *args) -> None:
        lp = loops()
        kernel = lp[f"{name}_{self.suffix}"]
        threads = 1 if self.size < reduction.PARALLEL_MIN_SIZE else parallel.num_threads()
        if lp["parallel"]:
            jit.set_threads(threads)
            kernel(*args, 0, self.tasks)
            return
        cuts = [self.tasks * i // threads for i in range(threads + 1)]
        parallel.run_chunks([lambda a=a, b=b: kernel(*args, a, b) or 0
                             for a, b in zip(cuts, cuts[1:]) if b > a])


def _per_channel(v: np.ndarray, c: int) -> np.ndarray:
    """(N, G) per-group values as (N, C), each channel its group's."""
    return np.repeat(v, c // v.shape[1], axis=1)


def group_norm_forward(x: np.ndarray, groups: int, weight: np.ndarray | None,
                       bias: np.ndarray | None, eps: float
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``y`` in x's layout, and each (sample, group)'s mean and biased variance ((N, G)
    float64) of x (N, C, *), for :func:`group_norm_backward` and running statistics."""
    n, c = x.shape[:2]
    cut = _Cut(x)
    with NORM.record("group_norm_forward", x.shape) as rec:
        rec.algorithm = "numba"
        v = cut.view(x)
        pm, pq = np.empty((n, cut.b, c)), np.empty((n, cut.b, c))
        cut.run("moments", v, cut.r, pm, pq)
        # Chan et al.: a group's sum of squares is its blocks' plus their means' spread
        k = cut.counts[None, :, None, None]
        pm, pq = pm.reshape(n, cut.b, groups, -1), pq.reshape(n, cut.b, groups, -1)
        count = cut.s * (c // groups)
        mean = (k * pm).sum(axis=(1, 3)) / count
        var = (pq.sum(axis=(1, 3)) + (k * (pm - mean[:, None, :, None]) ** 2).sum(axis=(1, 3)))
        var = np.maximum(var / count, 0.0)
        sc = _per_channel(1.0 / np.sqrt(var + eps), c)
        if weight is not None:
            sc = sc * weight.astype(np.float64)
        sh = np.zeros((n, c)) + (0.0 if bias is None else bias.astype(np.float64))
        y = cut.like(x)
        cut.run("apply", v, _per_channel(mean, c), sc, sh, cut.view(y), cut.r, cut.b)
    return y, mean, var


def group_norm_backward(g: np.ndarray, x: np.ndarray, mean: np.ndarray, var: np.ndarray,
                        weight: np.ndarray | None, eps: float, need: tuple
                        ) -> tuple:
    """The gradients (x, weight, bias) of :func:`group_norm_forward` at ``g`` (any
    layout: copied to x's if it differs), None where ``need`` does not ask."""
    n, c = x.shape[:2]
    groups = mean.shape[1]
    cut = _Cut(x)
    with NORM.record("group_norm_backward", x.shape) as rec:
        rec.algorithm = "numba"
        if g.dtype != _F32 or g.strides != x.strides:
            staged = cut.like(x)
            np.copyto(staged, g)
            g = staged
        vx, vg = cut.view(x), cut.view(g)
        mc = _per_channel(mean, c)
        pa, pb = np.empty((n, cut.b, c)), np.empty((n, cut.b, c))
        cut.run("sums", vg, vx, mc, cut.r, pa, pb)
        sum_g, sum_gd = pa.sum(axis=1), pb.sum(axis=1)  # (N, C): sum g, sum g (x - m)
        inv = _per_channel(1.0 / np.sqrt(var + eps), c)
        gw = (inv * sum_gd).sum(axis=0) if need[1] else None
        gb = sum_g.sum(axis=0) if need[2] else None
        gx = None
        if need[0]:
            w = np.ones(c) if weight is None else weight.astype(np.float64)
            count = cut.s * (c // groups)
            # per group: mean(gs) and mean(gs xh), gs = g w, xh = (x - m) inv
            mean_gs = _per_channel((w * sum_g).reshape(n, groups, -1).sum(axis=2), c) / count
            mean_gsxh = _per_channel((w * inv * sum_gd).reshape(n, groups, -1).sum(axis=2),
                                     c) / count
            # gx = inv (g w - mean(gs) - (x - m) inv mean(gs xh))
            a, k, d0 = inv * w, -inv * inv * mean_gsxh, -inv * mean_gs
            gx = cut.like(x)
            cut.run("grad", vg, vx, mc, a, k, d0, cut.view(gx), cut.r, cut.b)
    return (gx, None if gw is None else gw.astype(x.dtype),
            None if gb is None else gb.astype(x.dtype))


@jit.exercise
def _exercise() -> None:
    """Every compiled pass once, on tiny arrays of both layouts (:func:`.jit.warm_up`)."""
    for channels_last in (False, True):
        x = layouts.empty((2, 4, 3, 3), channels_last, np.float32)
        x[...] = np.arange(x.size, dtype=np.float32).reshape(x.shape) % 5
        w = np.ones(4, np.float32)
        y, mean, var = group_norm_forward(x, 2, w, w, 1e-5)
        group_norm_backward(y, x, mean, var, w, 1e-5, (True, True, True))
