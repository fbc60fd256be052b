"""The one point that chooses how a convolution pass runs: :func:`choose`.

:func:`choose` returns the algorithm and its parameters for one pass (forward, input
gradient, weight gradient), and the output array it will fill; :meth:`Choice.run`
executes it.  First, large kernels: ``fft`` (:mod:`.fft`, real FFTs in tiles over the
lowered pass) where a measured cost model (:func:`_fft_plan`) says it beats the direct
algorithms, in float32 and float64.  Then, for float32: ``onednn`` (:mod:`.onednn`, the library
PyTorch uses on CPU), for every pass it supports.  Everything else runs on the NumPy
engine: the pass is lowered to one unflipped grouped convolution (:mod:`.lowering`)
and computed by

* ``scatter`` (:mod:`.scatter`): unit stride and fewer output than input channels (an
  input gradient, a transposed convolution): multiply, then add onto the output lattice;
* otherwise input dilation is split by :mod:`.polyphase` into dense convolutions (one
  per output residue class, so no zero is multiplied), each computed by
  - ``direct`` (:mod:`.direct`, Numba loops over a padded slab): groups with few
    channels, where a patch matrix costs more to build than to multiply (depthwise,
    SSIM windows);
  - ``im2col`` (:mod:`.im2col`, patch matrix + BLAS, chunked): everything else.

Every threshold below carries the reason for its value.  Tests pin decisions through
the profiler's ``algorithm`` (``Choice.name``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from math import prod

import numpy as np

from . import cpu, direct, jit, layouts, onednn, relayout, winograd, winograd_loops
from . import fft as fft_mod
from .im2col import im2col_conv
from .lowering import Lowered, lower
from .parallel import num_threads
from .polyphase import covers_all, phases
from .registry import family
from .scatter import scatter_conv
from .slab import slab_extent
from .spec import ConvSpec, Pass
from .workspace import get_workspace_limit

__all__ = ["ALGORITHMS", "CONV", "Choice", "Step", "choose", "output_channels_last",
           "winograd_by_default"]

ALGORITHMS = ("onednn", "numpy", "scatter", "direct", "im2col", "fft", "winograd")

# C*O at most this: im2col's patch copy (C*K per output) costs more than its product
# (O*C*K multiply-adds per output), so read the slab in place with the direct loops.
DIRECT_MAX_CHANNEL_PRODUCT = 16
# The padded slab is the direct loops' one buffer: half the workspace, the rest holds
# the result block it is copied from.
DIRECT_SLAB_SHARE = 2
# Numba's threads: below this many multiply-adds waking them costs more than the loop.
DIRECT_PARALLEL_MIN_FMAS = 1 << 18
# An output row at least this long (two AVX-512 or four AVX2 vectors of float32) is
# vectorised along the row; shorter rows with longer kernel rows (weight gradients,
# whose "kernel" is an image) along the kernel taps instead.
DIRECT_ROW_VECTOR_MIN = 16
# scatter's product has O*K rows per input pixel where im2col copies C*K: it pays when
# the input has at least this many times the output's channels.
SCATTER_CHANNEL_RATIO = 4
# scatter's products of all workers together take at most 1/2 of the workspace; the
# rest is for the transposed weight and NumPy's buffers of the strided adds.
SCATTER_COLS_SHARE = 2
# im2col chunks aim at this many bytes (slab + patches + result): cache-sized, so the
# patch copy is still in cache for the GEMM (measured: W1 forward 12.9 -> 11.2 ms
# against 4 MiB); each of the concurrent workers gets its share of a smaller workspace.
IM2COL_CHUNK_BYTES = 8 * 2**20


def _direct_enabled() -> bool:
    return jit.enabled()


#: the convolution family: ``prefer(name)`` pins one of ALGORITHMS (see ``registry.prefer``)
CONV = family("conv", ALGORITHMS)
_F32 = np.dtype(np.float32)


@dataclass(frozen=True)
class Step:
    """One dense convolution (no input dilation) of a plan: a tap lattice of the kernel
    into an output lattice, by ``algorithm`` with its parameters."""

    algorithm: str               # "direct" or "im2col"
    taps: tuple[slice, ...]      # the kernel taps this step uses, per spatial dim
    outs: tuple[slice, ...]      # the outputs it writes, per spatial dim
    stride: tuple[int, ...]
    lo: tuple[int, ...]
    dil: tuple[int, ...]
    budget: int                  # workspace bytes (per chunk, or the slab for direct)
    loop: str = ""               # direct: "rows" (along output rows) or "taps"
    parallel: bool = False       # direct: Numba's parallel loops
    fastmath: bool = False       # direct: let the compiler reassociate the sum


@dataclass(frozen=True)
class Choice:
    """How one lowered pass runs; ``name`` is what the profiler shows."""

    name: str
    low: Lowered | None          # the NumPy engine's lowered pass (None: oneDNN, winograd)
    steps: tuple[Step, ...] = ()
    zero_fill: bool = False      # some outputs meet no real input sample
    budget: int = 0              # scatter: bytes of products for all workers
    backend: onednn.Plan | None = None  # a oneDNN plan, run on ``arrays``
    arrays: tuple = ()           # oneDNN: (lhs, rhs, out, bias or None)
    batches: tuple = ()          # oneDNN in batch slices: ((slice, onednn.Plan), ...)
    tiles: fft_mod.Tiling | None = None  # fft: its tiles
    fused_relu: bool = False     # oneDNN applies the forward's (leaky) ReLU itself
    pass_: Pass | None = None    # winograd: the pass it runs
    lo: tuple = ()               # winograd: the forward's low padding per spatial dim
    slope: float | None = None   # winograd: the fused (leaky) ReLU's slope

    @property
    def out(self) -> np.ndarray:
        """The array this plan fills."""
        return self.arrays[2] if self.low is None else self.low.out_array

    @property
    def fused_bias(self) -> bool:
        """Whether running the plan also adds the forward's bias."""
        return self.low is None and self.arrays[3] is not None

    def run(self) -> int:
        """Execute; returns the multiply-add FLOPs performed."""
        if self.name == "winograd":
            lhs, rhs, out, bias = self.arrays
            return winograd.winograd_conv(self.pass_, lhs, rhs, out, self.lo, bias,
                                          self.slope)
        if self.backend is not None:
            lhs, rhs, out, bias = self.arrays
            if not self.batches:
                self.backend.run(lhs, rhs, out, bias=bias)
                return int(self.backend.flops)
            return self._run_batches(lhs, rhs, out, bias)
        low = self.low
        if self.name == "none":
            return 0
        if self.name == "fft":
            return fft_mod.fft_conv(low.x, low.w, low.out, low.stride, low.lo, low.kdil,
                                    low.idil, self.tiles, num_threads(), low.out.dtype)
        if self.name == "scatter":
            return scatter_conv(low.x, low.w, low.out, low.lo, low.kdil, low.idil, self.budget)
        if self.zero_fill:
            low.out[...] = 0
        flops = 0
        for st in self.steps:
            sub_w = low.w[(Ellipsis, *st.taps)]
            sub_out = low.out[(Ellipsis, *st.outs)]
            if st.algorithm == "direct":
                flops += direct.direct_conv(low.x, sub_w, sub_out, st.stride, st.lo, st.dil,
                                            st.budget, st.loop, st.parallel, st.fastmath)
            else:
                flops += im2col_conv(low.x, sub_w, sub_out, st.stride, st.lo, st.dil,
                                     st.budget)
        return flops

    def _run_batches(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray,
                     bias: np.ndarray | None) -> int:
        """oneDNN on each batch slice: the forward and the input gradient write their
        slice of the output; the weight gradient is the sum of the slices' gradients."""
        pass_ = self.backend.pass_name
        partial = np.empty_like(out) if pass_ == Pass.WEIGHT_GRAD else None
        flops = 0
        for i, (rows, backend) in enumerate(self.batches):
            a, b, c = _batch_views(pass_, lhs, rhs, out, rows)
            if partial is None:
                backend.run(a, b, c, bias=bias)
            elif i == 0:
                backend.run(a, b, c)
            else:
                backend.run(a, b, partial)
                out += partial
            flops += backend.flops
        return int(flops)


def _dense_step(low: Lowered, taps: tuple, outs: tuple, stride: tuple, lo: tuple,
                dil: tuple) -> Step:
    """The algorithm for one dense convolution of the lowered shapes."""
    B, G, C, *L = low.x.shape
    O = low.w.shape[1]
    K = [len(range(*t.indices(k))) for t, k in zip(taps, low.w.shape[3:])]
    P = [len(range(*s.indices(p))) for s, p in zip(outs, low.out.shape[3:])]
    itemsize = low.out.dtype.itemsize
    limit = get_workspace_limit()
    pinned = CONV.pinned()
    if pinned in ("onednn", "numpy"):
        pinned = None  # the engine's own thresholds
    small = C * O <= DIRECT_MAX_CHANNEL_PRODUCT if pinned is None else pinned == "direct"
    if small and _direct_enabled() and B and C and all(L):
        extent = [slab_extent(P[i], K[i], stride[i], dil[i]) for i in range(len(P))]
        if G * C * prod(extent) * itemsize <= limit // DIRECT_SLAB_SHARE:
            rows = P[-1] >= K[-1] or P[-1] >= DIRECT_ROW_VECTOR_MIN
            fmas = B * G * O * C * prod(K) * prod(P)
            # rows: one accumulator per output, vectorised along the row as written, so
            # the sum keeps its order; taps: a scalar reduction, which the compiler only
            # vectorises when allowed to reassociate it (fastmath)
            return Step("direct", taps, outs, stride, lo, dil, limit // DIRECT_SLAB_SHARE,
                        loop="rows" if rows else "taps",
                        parallel=fmas >= DIRECT_PARALLEL_MIN_FMAS, fastmath=not rows)
    budget = min(limit // num_threads(), IM2COL_CHUNK_BYTES)
    return Step("im2col", taps, outs, stride, lo, dil, budget)


def _use_scatter(low: Lowered) -> bool:
    C, O = low.x.shape[2], low.w.shape[1]
    pinned = CONV.pinned()
    if pinned in ("onednn", "numpy"):
        pinned = None  # the engine's own thresholds
    if any(s != 1 for s in low.stride) or pinned in ("direct", "im2col"):
        return False
    if pinned == "scatter":
        return True
    if C * O <= DIRECT_MAX_CHANNEL_PRODUCT:
        return False
    if prod(low.w.shape[3:]) == 1 and all(d == 1 for d in low.idil):
        return False  # one tap, no dilation: a plain GEMM already, im2col copies nothing
    # fewer output channels: O*K product rows instead of C*K patch rows; with input
    # dilation, one pass over real samples instead of a polyphase split
    return SCATTER_CHANNEL_RATIO * O <= C or (O < C and any(d > 1 for d in low.idil))


def choose_lowered(low: Lowered) -> Choice:
    """The plan of a lowered pass on the NumPy engine."""
    if low.out.size == 0:
        return Choice("none", low)
    if _use_scatter(low):
        return Choice("scatter", low, budget=get_workspace_limit() // SCATTER_COLS_SHARE)
    nd = len(low.stride)
    K, P = low.w.shape[3:], low.out.shape[3:]
    per_dim = [phases(K[d], P[d], low.stride[d], low.lo[d], low.kdil[d], low.idil[d])
               for d in range(nd)]
    steps = tuple(
        _dense_step(low, tuple(ph.tap_slice() for ph in combo),
                    tuple(ph.out_slice() for ph in combo), tuple(ph.stride for ph in combo),
                    tuple(-ph.base for ph in combo), tuple(ph.dilation for ph in combo))
        for combo in itertools.product(*per_dim))
    zero_fill = not all(covers_all(per_dim[d], P[d]) for d in range(nd))
    name = "+".join(sorted({s.algorithm for s in steps})) or "zeros"
    if any(i > 1 for i in low.idil):
        name += "/polyphase"
    return Choice(name, low, steps, zero_fill)


# A forward pass reading fewer input channels than this (a network's input image)
# writes channels-last at no cost: measured W3 (3 channels) 11.4 ms NCHW -> NHWC
# against 12.1 ms NCHW -> NCHW, so the network behind it runs channels-last.
CHANNELS_LAST_FROM_FEW_CHANNELS = 8


def output_channels_last(pass_: Pass, lhs: np.ndarray, out_shape: tuple) -> bool:
    """The memory layout of a oneDNN pass's output (its logical layout is channels first).

    The output follows the input's layout: oneDNN is fastest when both match (forward,
    ms, NCHW/NCHW vs channels-last/channels-last vs mixed: W1 10.4 / 9.1 / 11.4, W2
    1.05 / 1.11 / 2.0, W4 2.7 / 2.2 / 12.7, W6 7.0 / 4.7 / 6.6, W8 1.75 / 1.51 / 2.2),
    and channels-last pairs are faster still, so a forward reading few channels (a
    network's input) starts the channels-last run and elementwise operations keep it:
    a network pays one reorder at its input instead of one per call; so does an input
    gradient reading few channels (a loss's gradient into a network's head).  A strided
    view with channels innermost (a channel slice of a channels-last array) counts as
    channels-last.  1-D activations and weights stay as they are (a 1-D weight gradient
    was slower channels-last).
    """
    if pass_ == Pass.WEIGHT_GRAD or len(out_shape) not in (4, 5) or out_shape[1] < 2:
        return False
    if layouts.is_channels_last(lhs) or layouts.channels_innermost(lhs):
        return True
    # few channels in (an image into the first convolution; a loss's gradient into the
    # head's input gradient): the network behind runs channels-last
    return lhs.shape[1] < CHANNELS_LAST_FROM_FEW_CHANNELS


def _dense(a: np.ndarray) -> np.ndarray | None:
    """``a`` as oneDNN reads it: C-contiguous, channels-last, or a view with positive
    strides (a channel slice of a channels-last array, as a concatenation's backward
    hands each part), which the plan's reorder reads as it lies (NumPy's copy of such a
    slice, 64-byte runs, took 7.6 ms on (2, 16, 64, 64, 64)); other strides (a broadcast
    gradient) are copied once if the copy fits the workspace, which costs less than the
    NumPy engine would; None if it does not fit."""
    if a.flags.c_contiguous or layouts.is_channels_last(a):
        return a
    if all(st > 0 and st % a.itemsize == 0 for st, n in zip(a.strides, a.shape) if n > 1):
        return a
    if a.nbytes > get_workspace_limit():
        return None
    with layouts.LAYOUT.record("copy", a.shape) as rec:
        out = np.empty(a.shape, a.dtype)
        rec.algorithm = relayout.copy(out, a)
        return out


# One channel per group (the windows of SSIM and MS-SSIM), at most this many groups: the
# direct loops read the slab in place but cost ~0.1 ms to start; oneDNN pads each
# group's channel to its channel block (one channel in all it reads the arrays as they
# lie and runs a GEMM).  Measured (2 threads, AVX-512 EPYC, interleaved), ms, oneDNN /
# direct, forward and input gradient: one channel, 5-tap window, (40, 1, 96, 96) 0.61 /
# 0.31 and 0.71 / 0.36, (40, 1, 48, 48) 0.18 / 0.16 and 0.21 / 0.18, (40, 1, 24, 24)
# 0.08 / 0.12 and 0.10 / 0.13; three groups, 11-tap 1-D window, (20, 3, 256, 256) 9.5 /
# 3.8 and 4.3 / 5.3, (20, 3, 32, 32) 0.19 / 0.15 and 0.12 / 0.18, 1x11 on (5, 3, 600,
# 900) 16.7 / 8.1 and 8.7 / 10.7; three groups, 2-D windows, (4, 3, 64, 64) 3x3 0.19 /
# 0.24 (both passes), 5x5 0.31 / 0.29, 11x11 on (4, 3, 256, 256) 13.7 / 4.8 (both).
# 128 groups (W4): oneDNN's depthwise kernels, 3.6 against 11.9.
DIRECT_ONE_CHANNEL_MAX_GROUPS = 8
# below this many multiply-adds the direct loops' start costs more than oneDNN's kernel
DIRECT_ONE_CHANNEL_MIN_MACS = 1 << 19


def _direct_beats_onednn(pass_: Pass, rhs: np.ndarray, out_shape: tuple,
                         spec: ConvSpec) -> bool:
    one_channel = rhs.shape[0] == spec.groups and rhs.shape[1] == 1  # C = O = 1 per group
    if not one_channel or spec.groups > DIRECT_ONE_CHANNEL_MAX_GROUPS:
        return False
    taps = rhs.shape[2:]
    if pass_ == Pass.WEIGHT_GRAD or prod(out_shape) * prod(taps) < DIRECT_ONE_CHANNEL_MIN_MACS:
        return False
    if pass_ == Pass.INPUT_GRAD and spec.groups > 1 and sum(k > 1 for k in taps) < 2:
        return False  # a 1-D window over several groups: oneDNN's backward-data
    # the shape first: asking whether Numba is installed imports it (~0.4 s)
    return _direct_enabled()


#: :func:`choose`'s oneDNN answers, by everything the answer depends on (see
#: :func:`_choice_key`): a network makes the same calls every step, and choosing anew
#: (the FFT's and Winograd's tests, oneDNN's plan lookup) took 55-68 us a call in
#: ResNet-18's step, whose kernels leave the caches cold.  Dropped whole when full, and
#: entry by entry after :func:`.onednn.clear_cache`.
_chosen: dict = {}
CHOSEN_KEPT = onednn.CACHE_CAPACITY  # (a plan the cache let go lives until then)


def _choice_key(pass_: Pass, lhs: np.ndarray, rhs: np.ndarray, out_shape: tuple,
                spec: ConvSpec, bias: np.ndarray | None,
                relu_slope: float | None) -> tuple | None:
    """What :func:`choose`'s answer for float32 ndarrays depends on: the pass, the arrays'
    shapes and strides, the output's shape, the spec, the bias's dtype, the fused
    ReLU's slope, the pin, the thread count, the workspace limit, whether Winograd is
    this processor's default and, where the direct loops or Winograd's may be chosen,
    whether Numba runs (asked only there: asking imports it, ~0.4 s); None for any
    other arrays."""
    if not (type(lhs) is np.ndarray and type(rhs) is np.ndarray and lhs.dtype == _F32
            and rhs.dtype == _F32):
        return None
    winograd_default = winograd_by_default()
    one_channel = rhs.shape[0] == spec.groups and rhs.shape[1] == 1  # _direct_beats_onednn's
    numba_runs = jit.enabled() if one_channel or winograd_default else None
    return (pass_, lhs.shape, lhs.strides, rhs.shape, rhs.strides, tuple(out_shape), spec,
            None if bias is None else bias.dtype, relu_slope, CONV.pinned(), num_threads(),
            get_workspace_limit(), winograd_default, numba_runs)


def _onednn_plan(pass_: Pass, lhs: np.ndarray, rhs: np.ndarray, out_shape: tuple,
                 spec: ConvSpec, bias: np.ndarray | None,
                 relu_slope: float | None = None) -> Choice | None:
    pinned = CONV.pinned()
    if pinned not in (None, "onednn"):
        return None
    if pinned is None and _direct_beats_onednn(pass_, rhs, out_shape, spec):
        return None
    if lhs.dtype != np.float32 or rhs.dtype != np.float32 or not onednn.available():
        return None
    if bias is not None and (pass_ != Pass.FORWARD or bias.dtype != np.float32):
        bias = None  # the kernel adds it (or promotes) itself
    lhs, rhs = _dense(lhs), _dense(rhs)
    if lhs is None or rhs is None:
        return None
    out = layouts.empty(out_shape, output_channels_last(pass_, lhs, out_shape))
    backend = None
    # the activation as a post-op, else the kernel applies it; not a plain ReLU: oneDNN
    # computes it as max(y, 0), which turns a NaN into 0 (a leaky ReLU keeps it)
    if relu_slope is not None and relu_slope > 0:
        backend = onednn.plan_for(pass_, lhs, rhs, out, spec, bias=bias is not None,
                                  checked=False, relu_slope=relu_slope)
        if backend is not None:
            return Choice(backend.name, None, backend=backend, arrays=(lhs, rhs, out, bias),
                          fused_relu=True)
    backend = onednn.plan_for(pass_, lhs, rhs, out, spec, bias=bias is not None, checked=False)
    if backend is None and bias is not None:  # perhaps without the fused bias
        bias = None
        backend = onednn.plan_for(pass_, lhs, rhs, out, spec, checked=False)
    if backend is not None:
        return Choice(backend.name, None, backend=backend, arrays=(lhs, rhs, out, bias))
    batches = _onednn_batches(pass_, lhs, rhs, out, spec)
    if batches is None:
        return None
    return Choice(f"{batches[0][1].name}/batches", None, backend=batches[0][1],
                arrays=(lhs, rhs, out, None), batches=batches)


def _batch_views(pass_: Pass, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray,
                 rows: slice) -> tuple:
    """The arrays of a pass restricted to the samples ``rows``: (x, gy, gw) of a weight
    gradient share gw; (x, w, y) and (gy, w, gx) share w."""
    if pass_ == Pass.WEIGHT_GRAD:
        return lhs[rows], rhs[rows], out
    return lhs[rows], rhs, out[rows]


def _onednn_batches(pass_: Pass, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray,
                    spec: ConvSpec) -> tuple | None:
    """oneDNN plans for batch slices of a pass whose arena (oneDNN's layout copies of
    the activations and its scratchpad, which grow with the batch) is over the
    workspace limit: the largest of N/2, N/4, ... samples whose plan fits, so the pass
    stays on oneDNN instead of falling to the NumPy engine (measured on x (2, 16, 64, 64,
    64), w (16, 16, 3, 3, 3), NCDHW, interleaved with torch, ms: forward 91 -> 56 (torch
    47), input gradient 94 -> 54 (48), weight gradient 600 -> 25 (39)).
    ``None`` when the limit is not what stops oneDNN, or one sample does not fit."""
    reason = onednn.reason_for(pass_, lhs, rhs, out, spec, checked=False)
    if reason is None or not reason.startswith(onednn.OVER_WORKSPACE):
        return None
    n_total = lhs.shape[0]

    def plan_rows(rows: slice) -> onednn.Plan | None:
        return onednn.plan_for(pass_, *_batch_views(pass_, lhs, rhs, out, rows), spec,
                               checked=False)

    n = n_total
    while n > 1:
        n = (n + 1) // 2
        if plan_rows(slice(0, n)) is None:
            continue
        plans = [(rows, plan_rows(rows)) for rows in
                 (slice(b, min(b + n, n_total)) for b in range(0, n_total, n))]
        return None if any(p is None for _, p in plans) else tuple(plans)
    return None


# ---- FFT or direct: a measured cost model (2 cores of an AMD EPYC, AVX2; ms in the notes)
# Kernels with fewer taps never go to the FFT: its two transforms cost >= 20 flops per
# sample and channel at a third of the direct loops' rate (measured: 7x7 on (1, 1, 512,
# 512): im2col 5.2 ms, FFT 11.6-26 ms), so it cannot win below 5x5.
FFT_MIN_TAPS = 25
# Multiply-adds per second of the direct algorithms, by dtype and whether the groups have
# few channels (C*O <= 16: one-channel images, depthwise, where no GEMM is fed), the best
# measured in each class, so that the FFT is chosen only where it is clearly faster:
# NumPy engine (im2col), float32: few 3.1 G (31x31 on 512^2), many 52 G ((8, 64, 32, 32)
# 5x5 64->64); float64: few 2.1 G, many 16 G.  oneDNN, many: ~100 G (AVX2 FMA peak of
# two cores); few, per pass, the best measured on 7x7-15x15 one-channel and depthwise
# 2-D kernels, 5^3-7^3 volumes and 31-63-tap 1-D filters with 4 channels: forward 4.1 G,
# input gradient 3.7 G, weight gradient 1.6 G, except oneDNN's depthwise kernels (jit_dw)
# on 2-D kernels up to 7x7 (forward, 21.7 G) and 15x15 (input gradient, 24.1 G at 11x11,
# 5.9-13.4 G at 15x15 in two runs).
DIRECT_MACS_PER_S = {("numpy", 4, True): 3.5e9, ("numpy", 4, False): 60e9,
                     ("numpy", 8, True): 2.5e9, ("numpy", 8, False): 20e9,
                     ("onednn", 4, False): 100e9}
ONEDNN_FEW_CHANNEL_MACS_PER_S = {Pass.FORWARD: 4.5e9, Pass.INPUT_GRAD: 4e9, Pass.WEIGHT_GRAD: 1.6e9}
ONEDNN_DEPTHWISE_FAST = {Pass.FORWARD: (7, 24e9), Pass.INPUT_GRAD: (15, 26e9)}  # (side, rate)
# Flops of fft.cost per second (measured on F1-F4 and on 7x7..31x31 kernels: 1.4-4.7 G in
# float32, 1.2-3.6 G in float64): the low end, again so that the FFT must clearly win.
FFT_FLOPS_PER_S = {4: 2.0e9, 8: 1.2e9}


def _fft_taps(pass_: Pass, rhs: np.ndarray, out_shape: tuple) -> int:
    """The forward kernel's taps (the weight gradient's output is the kernel)."""
    return prod(out_shape[2:]) if pass_ == Pass.WEIGHT_GRAD else prod(rhs.shape[2:])


def _direct_seconds(pass_: Pass, low: Lowered, onednn_runs: bool) -> float:
    B, G, C = low.x.shape[:3]
    O = low.w.shape[1]
    macs = B * G * O * C * prod(low.w.shape[3:]) * prod(low.out.shape[3:])
    # the forward convolution's channels per group (a weight gradient's lowered batch
    # is the input's channels, its lowered channels the batch)
    few = (B if pass_ == Pass.WEIGHT_GRAD else C) * O <= DIRECT_MAX_CHANNEL_PRODUCT
    itemsize = low.out.dtype.itemsize
    if onednn_runs and itemsize == 4 and not few:
        rate = DIRECT_MACS_PER_S[("onednn", 4, False)]
    elif onednn_runs and itemsize == 4:
        rate = ONEDNN_FEW_CHANNEL_MACS_PER_S[pass_]
        side, fast = ONEDNN_DEPTHWISE_FAST.get(pass_, (0, 0.0))
        K = low.w.shape[3:]
        if pass_ != Pass.WEIGHT_GRAD and G > 1 and C == O == 1 and len(K) == 2 and max(K) <= side:
            rate = fast
    else:
        rate = DIRECT_MACS_PER_S[("numpy", itemsize, few)]
    return macs / rate


def _fft_plan(pass_: Pass, lhs: np.ndarray, rhs: np.ndarray, out_shape: tuple,
              spec: ConvSpec) -> Choice | None:
    """The FFT plan of a pass when it is pinned or the cost model says it is faster."""
    pinned = CONV.pinned()
    if pinned not in (None, "fft"):
        return None
    if pinned is None and _fft_taps(pass_, rhs, out_shape) < FFT_MIN_TAPS:
        return None
    dtype = np.result_type(lhs, rhs)
    # the lowered geometry on a stand-in output (no memory), the real one once chosen
    low = lower(pass_, lhs, rhs, np.broadcast_to(np.zeros((), dtype), out_shape), spec)
    B, G, C = low.x.shape[:3]
    O = low.w.shape[1]
    Kd = tuple((k - 1) * d + 1 for k, d in zip(low.w.shape[3:], low.kdil))
    P = tuple(low.out.shape[3:])
    itemsize = dtype.itemsize
    rate = FFT_FLOPS_PER_S[itemsize]
    if pinned is None:
        direct_s = _direct_seconds(pass_, low, onednn.available())
        # a lower bound of the FFT's work: each output and each sample it reads
        # transformed once, at the smallest FFT length tried (16 per dim)
        reads = prod(((p - 1) * s + k) for p, s, k in zip(P, low.stride, Kd))
        bound = fft_mod.FFT_FLOPS_PER_SAMPLE_LOG * 4 * len(P) * B * G * (C * reads + O * prod(P))
        if bound / rate >= direct_s:
            return None
    tiles = fft_mod.tiling(B, G, C, O, P, Kd, tuple(low.stride), itemsize,
                           get_workspace_limit())
    if tiles is None or (pinned is None and tiles.flops / rate >= direct_s):
        return None
    return Choice("fft", lower(pass_, lhs, rhs, np.empty(out_shape, dtype), spec), tiles=tiles)


# ---- Winograd F(2x2, 3x3) (:mod:`.winograd`): unstrided 3x3 2-D convolutions, channels-last
# Each pass (forward, input gradient, weight gradient) when both the input's and the
# output's channels are in this range and there are at least WINOGRAD_MIN_TILES 2x2 output
# tiles: there its 16 products per tile (36 direct) beat oneDNN's direct kernels; with
# fewer channels the transforms cost more than the products save, with more a block of
# tiles that fits the core's cache is too few rows for an efficient product, and few
# tiles leave the threads too little work.  Measured (ms, Winograd / oneDNN, a oneDNN
# convolution right before each, channels-last, forward and input gradient): (16, 64, 32,
# 32) 64->64 4.63 / 5.55 and 4.79 / 5.55; (8, 64, 32, 32) 2.31 / 2.83 and 2.39 / 2.89;
# (8, 128, 64, 32) 4.67 / 5.50 and 4.27 / 5.72; but (8, 128, 16, 16) 2.60 / 2.74 and 2.49
# / 2.76 (512 tiles, 1.05-1.08x in other runs), (4, 64, 16, 16) 0.49 / 0.41, 48 channels
# 1.77 / 1.62, 32 3.25 / 2.76, 96 7.46 / 6.80, 256 3.89 / 2.67.  The weight gradient, in
# a network's step (its inputs cold in cache): (16, 64, 32, 32) 4.7-4.9 / 7.2-7.5, (8, 64,
# 32, 32) 2.5-2.7 / 3.0-4.1; alone, (8, 128, 32, 32) 10.05 / 11.71, but (8, 128, 16, 16)
# 3.91 / 3.02 (512 tiles).  Those were an AMD EPYC's (Zen 4: AVX-512 on 256-bit
# units, oneDNN's direct kernels at 100-250 GFLOP/s).  On an Intel Xeon (AVX-512 on
# 512-bit units, 2 MiB L2) the direct kernels run at NumPy's matmul ceiling (309 of 319
# GFLOP/s) and Winograd, whose tile transforms are bound by memory, lost on every shape
# above: (16, 64, 32, 32) 4.00 / 3.79, (8, 64, 32, 32) 2.19 / 2.00, (8, 128, 16, 16)
# 2.44 / 2.15, (8, 64, 56, 56) 6.30 / 5.69 (at 512 KiB, 1 MiB and 2 MiB blocks alike).
# So the dispatch takes it on the vendors' cores where it was measured faster only.
WINOGRAD_CHANNELS = (64, 128)
WINOGRAD_MIN_TILES = 2048
WINOGRAD_VENDORS = ("AuthenticAMD",)


def winograd_by_default() -> bool:
    """Whether the dispatch may choose Winograd unpinned on this processor (its loops are
    worth loading in the background warm-up only then)."""
    return cpu.vendor() in WINOGRAD_VENDORS


@jit.exercise(kernel="dispatch.winograd")
def _exercise_winograd() -> None:
    """Winograd's forward loops (the input gradient's too) loaded in the background
    warm-up where it is chosen by default (elsewhere a pin loads them on first use: the
    warm-up's ~70 ms of loading them ran beside a network's first step for nothing)."""
    if winograd_by_default():
        winograd_loops.exercise()


@jit.exercise(kernel="dispatch.winograd_weight")
def _exercise_winograd_weight() -> None:
    """Its weight gradient's loops, a part of their own: a first step's forward waits
    for the forward's loops only (N1's first Winograd forward waited 44-56 ms, 52-70
    with all four loaded together; the first step as a whole did not measurably move)."""
    if winograd_by_default():
        winograd_loops.exercise_weight()


#: :func:`_winograd_plan`'s answer while the warm-up loads the pass's loops
_LOADING = object()


def _winograd_plan(pass_: Pass, lhs: np.ndarray, rhs: np.ndarray, out_shape: tuple,
                   spec: ConvSpec, bias: np.ndarray | None,
                   relu_slope: float | None) -> Choice | object | None:
    pinned = CONV.pinned()
    if pinned not in (None, "winograd") or (pinned is None and not winograd_by_default()):
        return None
    if lhs.dtype != np.float32 or rhs.dtype != np.float32 or len(out_shape) != 4:
        return None
    if (spec.groups != 1 or spec.flip or any(s != 1 for s in spec.stride)
            or any(d != 1 for d in spec.kernel_dilation)
            or any(d != 1 for d in spec.input_dilation)):
        return None
    dw = pass_ == Pass.WEIGHT_GRAD
    kernel, tiled = (out_shape, rhs.shape) if dw else (rhs.shape, out_shape)  # tiled: y or gx
    if kernel[2:] != (3, 3) or not layouts.is_channels_last(lhs):
        return None
    if dw and not layouts.is_channels_last(rhs):
        return None
    if pinned is None:
        low, high = WINOGRAD_CHANNELS
        if not all(low <= c <= high for c in (lhs.shape[1], tiled[1])):
            return None
        if tiled[0] * prod(winograd.tiles(*tiled[2:])) < WINOGRAD_MIN_TILES:
            return None
    if winograd.workspace_bytes(lhs.shape, tiled, pass_) > get_workspace_limit():
        return None
    if not winograd.available():
        return None
    if pinned is None and jit.still_loading("dispatch.winograd_weight" if dw
                                            else "dispatch.winograd"):
        return _LOADING  # oneDNN runs this call, not a wait for the warm-up (not kept)
    out = np.empty(out_shape, np.float32) if dw else layouts.empty(out_shape, channels_last=True)
    if bias is not None and (pass_ != Pass.FORWARD or bias.dtype != np.float32):
        bias = None
    slope = relu_slope if pass_ == Pass.FORWARD else None
    rhs = rhs if dw else np.ascontiguousarray(rhs)  # gy stays channels-last
    return Choice("winograd", None, arrays=(lhs, rhs, out, bias),
                  pass_=pass_, lo=tuple(p[0] for p in spec.padding), slope=slope,
                  fused_relu=slope is not None)


def choose(pass_: Pass, lhs: np.ndarray, rhs: np.ndarray, out_shape: tuple, spec: ConvSpec,
           bias: np.ndarray | None = None, relu_slope: float | None = None) -> Choice:
    """How ``pass_(lhs, rhs)`` of the convolution ``spec`` runs, into an output of
    ``out_shape`` that the plan allocates: ``forward`` (x, w -> y; ``bias`` is fused
    when the backend can, see :attr:`Choice.fused_bias`, and so is a (leaky) ReLU of
    slope ``relu_slope``, see :attr:`Choice.fused_relu`), ``input_grad`` (gy, w -> gx)
    or ``weight_grad`` (x, gy -> gw)."""
    if math.prod(out_shape):
        key = _choice_key(pass_, lhs, rhs, out_shape, spec, bias, relu_slope)
        known = _chosen.get(key) if key is not None else None
        if (known is not None and known[0] == onednn.generation() and lhs.flags.aligned
                and rhs.flags.aligned):
            _, plan, channels_last, with_bias, fused_relu = known
            return Choice(plan.name, None, backend=plan, fused_relu=fused_relu,
                          arrays=(lhs, rhs, layouts.empty(tuple(out_shape), channels_last),
                                  bias if with_bias else None))
        found = _fft_plan(pass_, lhs, rhs, tuple(out_shape), spec)
        if found is not None:
            return found
        found = _winograd_plan(pass_, lhs, rhs, tuple(out_shape), spec, bias, relu_slope)
        if found is _LOADING:
            key = None  # Winograd's once its loops are loaded: this answer is not kept
        elif found is not None:
            return found
        # oneDNN for float32, wherever it runs the pass
        found = _onednn_plan(pass_, lhs, rhs, tuple(out_shape), spec, bias, relu_slope)
        if found is not None:
            if (key is not None and not found.batches and found.arrays[0] is lhs
                    and found.arrays[1] is rhs):  # no copy of an input was made
                if len(_chosen) >= CHOSEN_KEPT:
                    _chosen.clear()
                _chosen[key] = (onednn.generation(), found.backend,
                                output_channels_last(pass_, lhs, tuple(out_shape)),
                                found.arrays[3] is not None, found.fused_relu)
            return found
    out = np.empty(out_shape, dtype=np.result_type(lhs, rhs))
    return choose_lowered(lower(pass_, lhs, rhs, out, spec))
