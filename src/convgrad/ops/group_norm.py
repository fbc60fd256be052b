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
* an activation after it, fused (``activation``: a float, the slope of a ReLU (0) or a
  leaky ReLU; ``"silu"``): applied to each y as it is written, keeping what its backward
  needs (``keep``).  A (leaky) ReLU keeps a byte per element, set where y passed
  unscaled; the backward first scales g by 1 there, by the slope elsewhere.  Measured on
  the 3-D U-Net's (2, 16, 64, 64, 64) InstanceNorm3d + LeakyReLU, channels-last,
  ms, unfused / fused: forward 5.6-6.9 / 3.4-5.0, backward 7.8-8.7 / 6.1-6.5 (recomputing
  y from x in the backward instead of keeping the byte: 8.5, no faster than unfused).
  SiLU keeps its float32 derivative (the separate SiLU kept its input, as many bytes),
  by which the backward scales g;
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

from . import jit, layouts, parallel, relayout
from .group_loops import ACTIVATIONS, loops
from .normalization import NORM

__all__ = ["BLOCK", "TILE", "available", "group_norm_backward", "group_norm_forward"]

#: elements of one task's block (128 KB of float32): the two passes over a block of the
#: moments read it from L2; fixed, so the sums do not depend on the thread count
BLOCK = 1 << 15
#: elements of a channels-last tile (whole rows): the loops run along it, vectorised
TILE = 512
_F32 = np.dtype(np.float32)
# the loops' keep argument without an activation: float32, as SiLU's, so that the two
# share their machine code (each keep dtype is a signature of its own, 10-40 ms to load)
_NO_KEEP = np.empty((0, 0), np.float32)


def _act(activation: float | str | None) -> tuple[int, np.float32, type | None]:
    """The loops' activation code and slope, and ``keep``'s dtype (None: no keep)."""
    if activation is None:
        return 0, np.float32(0), None
    if activation == "silu":
        return ACTIVATIONS["silu"], np.float32(0), np.float32
    return ACTIVATIONS["relu"], np.float32(activation), np.uint8


def available(x: np.ndarray) -> bool:
    """Whether the compiled kernels run ``x``: a float32 ndarray (a dask array takes the
    reference, which stays lazy), (N, C, *) with spatial dims, C-contiguous or
    channels-last, not empty, Numba loaded, the family not pinned away."""
    return (type(x) is np.ndarray and x.dtype == _F32 and x.ndim >= 3 and x.size > 0
            and NORM.pinned() in (None, "numba")
            and (x.flags.c_contiguous or layouts.is_channels_last(x)) and loops() is not None)


def _geometry(x: np.ndarray) -> tuple:
    """(view of x as (N, L), channels-last, tile rows, block positions) for the loops."""
    n, c = x.shape[:2]
    nsc = layouts.is_channels_last(x)
    s = x.size // (n * c)
    view = _view(x, nsc)
    r = min(s, max(1, BLOCK // c) if nsc else BLOCK)
    return view, nsc, max(1, TILE // c) if nsc else 1, r


def _view(a: np.ndarray, nsc: bool) -> np.ndarray:
    """``a`` as the (N, L) array of its memory (a transpose, then a reshape: no copy;
    ``np.moveaxis`` cost 15 us a call, a tenth of a U-Net layer's kernel)."""
    if nsc:
        a = a.transpose(0, *range(2, a.ndim), 1)
    return a.reshape(a.shape[0], -1, copy=False)


def _threads(x: np.ndarray) -> None:
    if loops()["parallel"]:
        jit.set_threads(1 if x.size < jit.PARALLEL_MIN_SIZE else parallel.num_threads())


def _f64(v: np.ndarray | None, c: int, fill: float) -> np.ndarray:
    return np.full(c, fill) if v is None else np.ascontiguousarray(v, dtype=np.float64)


def group_norm_forward(x: np.ndarray, groups: int, weight: np.ndarray | None,
                       bias: np.ndarray | None, eps: float,
                       activation: float | str | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """``y`` in x's layout, each (sample, group)'s mean and biased variance ((N, G)
    float64) of x (N, C, *), for :func:`group_norm_backward` and running statistics, and
    ``keep`` (None without ``activation``).  ``activation``: y goes through a ReLU (0), a
    leaky ReLU of that slope (a float > 0) or SiLU (``"silu"``) as it is written;
    ``keep`` (x's shape and layout) is what the backward needs of it: uint8, set where a
    (leaky) ReLU passed y unscaled; float32, SiLU's derivative."""
    n, c = x.shape[:2]
    with NORM.record("group_norm_forward", x.shape) as rec:
        rec.algorithm = "numba"
        view, nsc, tile, r = _geometry(x)
        y = layouts.empty(x.shape, nsc, x.dtype)
        mean, var = np.empty((n, groups)), np.empty((n, groups))
        act, slope, keep_dtype = _act(activation)
        keep = None if keep_dtype is None else layouts.empty(x.shape, nsc, keep_dtype)
        _threads(x)
        loops()["forward"](view, nsc, c, groups, tile, r, _f64(weight, c, 1.0),
                           _f64(bias, c, 0.0), float(eps), act, slope, _view(y, nsc), mean,
                           var, _NO_KEEP if keep is None else _view(keep, nsc))
    return y, mean, var, keep


def group_norm_backward(g: np.ndarray, x: np.ndarray, mean: np.ndarray, var: np.ndarray,
                        weight: np.ndarray | None, eps: float, need: tuple,
                        activation: float | str | None = None,
                        keep: np.ndarray | None = None) -> tuple:
    """The gradients (x, weight, bias) of :func:`group_norm_forward` (with its
    ``activation`` and the ``keep`` it returned) at ``g`` (any layout: copied to x's if it
    differs), None where ``need`` does not ask."""
    n, c = x.shape[:2]
    groups = mean.shape[1]
    with NORM.record("group_norm_backward", x.shape) as rec:
        rec.algorithm = "numba"
        view, nsc, tile, r = _geometry(x)
        if g.dtype != _F32 or g.strides != x.strides:
            staged = layouts.empty(x.shape, nsc, x.dtype)
            with layouts.LAYOUT.record("copy", g.shape) as copy:
                copy.algorithm = relayout.copy(staged, g)
            g = staged
        gx = layouts.empty(x.shape, nsc, x.dtype) if need[0] else x
        gw, gb = np.empty(c), np.empty(c)
        act, slope, _ = _act(activation)
        _threads(x)
        loops()["backward"](_view(g, nsc), view, nsc, c, groups, tile, r,
                            np.ascontiguousarray(mean), np.ascontiguousarray(var),
                            _f64(weight, c, 1.0), float(eps), act, slope,
                            _NO_KEEP if keep is None else _view(keep, nsc), bool(need[0]),
                            _view(gx, nsc), gw, gb)
    return (gx if need[0] else None, gw.astype(x.dtype) if need[1] else None,
            gb.astype(x.dtype) if need[2] else None)


def _exercise_with(activations: tuple) -> None:
    """Every compiled pass with each of ``activations``, on tiny arrays of both layouts."""
    for channels_last in (False, True):
        x = layouts.empty((2, 4, 3, 3), channels_last, np.float32)
        x[...] = np.arange(x.size, dtype=np.float32).reshape(x.shape) % 5
        w = np.ones(4, np.float32)
        for activation in activations:
            y, mean, var, keep = group_norm_forward(x, 2, w, w, 1e-5, activation)
            group_norm_backward(y, x, mean, var, w, 1e-5, (True, True, True), activation,
                                keep)


@jit.exercise(kernel="group_norm.plain")
def _exercise_plain() -> None:
    """The passes alone and with SiLU (one signature), what every group norm layer asks
    for (:func:`.jit.warm_up`)."""
    _exercise_with((None, "silu"))


@jit.exercise(kernel="group_norm.relu")
def _exercise_relu() -> None:
    """The passes with a (leaky) ReLU (a byte mask: a signature of its own), asked for
    where a ``Sequential`` holds the pair."""
    _exercise_with((0.1,))
