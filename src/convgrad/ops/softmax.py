"""The ``softmax`` kernel family: softmax and log-softmax along one axis, forward and
backward (from the forward's output), on Numba's loops or NumPy.

The NumPy reference of each pass is its Function's own code (:mod:`convgrad.tensor.reduce`),
handed in as a callable: this module decides which runs (:func:`_algorithm`, the one
decision) and records every run.  Numba's loops (:mod:`.softmax_loops`) run float32
ndarrays of at least :data:`MIN_LOOP_SIZE` elements that are dense in one order of their
dims (NCHW, channels-last, a classifier's logits), the result in the input's layout;
everything else (float64, the reference; dask arrays; small or strided arrays) runs
NumPy.

oneDNN's softmax primitive was measured and not taken (2 threads, AMD EPYC, ms against
torch): its log-softmax's float32 error was 4-7x torch's (4.0e-6 against 5.8e-7 on
(2, 3, 64, 64, 64)); over the 3 classes of a channels-last (2, 3, 64, 64, 64) its forward
took 16.8 (torch 1.4); along dim 1 of NCHW it has only its reference kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import jit, relayout, softmax_loops
from .layouts import LAYOUT, axis_view
from .parallel import num_threads, run_chunks
from .reduction import PARALLEL_MIN_SIZE
from .registry import family

__all__ = ["MIN_FUSED_ROW", "MIN_LOOP_SIZE", "SOFTMAX", "backward", "forward"]

#: the softmax family: ``prefer("numpy")`` pins the Functions' NumPy code
SOFTMAX = family("softmax", ("numba", "numpy"))

#: Below this many elements NumPy runs: a loop call costs ~10 us from Python, NumPy's
#: passes over a (64, 10) classifier's logits take ~20 us.
MIN_LOOP_SIZE = 1 << 12
#: the shortest rows whose exponentials the compiled passes build themselves: on shorter
#: rows (a segmentation's 3 classes, channels-last) their runs of LANES cost more per row
#: than NumPy's exp pass (N5's (2, 3, 64, 64, 64) log-softmax: 10.1 against 5.1 ms)
MIN_FUSED_ROW = 64
_F32 = np.dtype(np.float32)


def _algorithm(*arrays: Any) -> str:
    """The one decision: "numba" or "numpy" for a pass on ``arrays``."""
    if SOFTMAX.pinned() == "numpy":
        return "numpy"
    if not all(type(a) is np.ndarray and a.dtype == _F32 for a in arrays):
        return "numpy"  # float64 stays the NumPy reference; dask arrays are chunked there
    if arrays[0].size < MIN_LOOP_SIZE and SOFTMAX.pinned() != "numba":
        return "numpy"
    return "numba" if softmax_loops.loops() is not None else "numpy"


def _exp(a: np.ndarray, out: np.ndarray) -> None:
    """``out = exp(a)`` by NumPy's vector exp, the flat arrays cut into one piece per
    thread of the pool (NumPy releases the GIL)."""
    n = num_threads() if a.size >= PARALLEL_MIN_SIZE else 1
    cuts = [a.size * k // n for k in range(n + 1)]

    def piece(lo: int, hi: int) -> Callable[[], int]:
        def run() -> int:
            np.exp(a[lo:hi], out=out[lo:hi])
            return 0
        return run

    run_chunks([piece(lo, hi) for lo, hi in zip(cuts, cuts[1:])])


class _Loops:
    """The loops for views of one shape ``(outer, C, inner)``: each takes the 3-D arrays
    and the per-position ``(outer, inner)`` ones, and calls the rows form (on 2-D and 1-D
    views) where ``inner`` is 1."""

    def __init__(self, inner: int) -> None:
        if jit.thread_safe():
            jit.set_threads(num_threads())
        self._rows = inner == 1
        self._loops = softmax_loops.loops()

    def __getitem__(self, name: str) -> Callable[..., None]:
        rows, blocks = self._loops[name]
        if not self._rows:
            return blocks
        return lambda *arrays: rows(*(a[..., 0] for a in arrays))


def _forward_loops(x: np.ndarray, axis: int, log: bool) -> np.ndarray | None:
    out = np.empty_like(x)
    xs, outs = axis_view(x, axis), axis_view(out, axis)
    if xs is None or outs is None:
        return None
    lp = _Loops(xs.shape[2])
    fused = xs.shape[2] == 1 and xs.shape[1] >= MIN_FUSED_ROW
    if not log and fused:  # long rows: the whole softmax in one compiled pass
        lp["softmax"](xs, outs)
        return out
    per_position = (xs.shape[0], xs.shape[2])
    lp["max_shift"](xs, np.empty(per_position, x.dtype), outs)   # z = x - max
    s = np.empty(per_position)
    if log and fused:  # long rows: s = sum exp(z) without keeping exp(z)
        lp["exp_sums"](outs, s)
    elif log:
        e = np.empty_like(outs)
        _exp(outs.reshape(-1), e.reshape(-1))                     # e = exp(z)
        lp["sums"](e, s)                                          # s = sum e
    else:
        _exp(outs.reshape(-1), outs.reshape(-1))                  # e = exp(z), in place
        lp["sums"](outs, s)                                       # s = sum e
    if log:  # float32's vector log of the float64 sum (>= 1: its log loses nothing)
        lp["minus"](outs, np.log(s.astype(x.dtype)).astype(np.float64), outs)  # z - log s
    else:
        lp["divide"](outs, s, outs)                               # e / s
    return out


def _backward_loops(g: np.ndarray, y: np.ndarray, axis: int, log: bool
                    ) -> np.ndarray | None:
    out = np.empty_like(y)
    gs, ys, outs = (axis_view(a, axis) for a in (g, y, out))
    if gs is None or ys is None or outs is None:
        return None
    lp = _Loops(ys.shape[2])
    s = np.empty((ys.shape[0], ys.shape[2]))
    if log and ys.shape[2] == 1 and ys.shape[1] >= MIN_FUSED_ROW:  # exp(y) in the pass
        lp["sums"](gs, s)                                         # s = sum g
        lp["minus_scaled_exp"](gs, ys, s, outs)                   # g - exp(y) s
    elif log:
        lp["sums"](gs, s)                                         # s = sum g
        e = np.empty_like(ys)
        _exp(ys.reshape(-1), e.reshape(-1))                       # e = exp(y), the softmax
        lp["minus_scaled"](gs, e, s, outs)                        # g - e s
    else:
        lp["dot_sums"](gs, ys, s)                                 # s = sum g y
        lp["times_minus"](ys, gs, s, outs)                        # y (g - s)
    return out


def forward(x: Any, axis: int, log: bool, reference: Callable[[], Any]) -> Any:
    """``softmax(x)`` (``log_softmax(x)`` if ``log``) along ``axis``; ``reference()`` is
    the NumPy result."""
    name = "log_softmax" if log else "softmax"
    with SOFTMAX.record(f"{name}_forward", tuple(getattr(x, "shape", ()))) as rec:
        if _algorithm(x) == "numba":
            out = _forward_loops(x, axis, log)
            if out is not None:
                rec.algorithm = "numba"
                return out
        rec.algorithm = "numpy"
        return reference()


def backward(g: Any, y: Any, axis: int, log: bool, reference: Callable[[], Any]) -> Any:
    """The gradient of :func:`forward` from its output ``y`` and the gradient ``g`` of
    ``y``; ``reference()`` is the NumPy result."""
    name = "log_softmax" if log else "softmax"
    with SOFTMAX.record(f"{name}_backward", tuple(getattr(y, "shape", ()))) as rec:
        if _algorithm(y, g) == "numba" and g.shape == y.shape:
            if g.strides != y.strides:  # one copy into y's layout (a broadcast gradient)
                with LAYOUT.record("copy", g.shape) as copy:
                    staged = np.empty_like(y)
                    copy.algorithm = relayout.copy(staged, g)
                    g = staged
            out = _backward_loops(g, y, axis, log)
            if out is not None:
                rec.algorithm = "numba"
                return out
        rec.algorithm = "numpy"
        return reference()


@jit.exercise
def _exercise() -> None:
    """The compiled loops once (:func:`.jit.warm_up`)."""
    for inner in (1, 2):  # the rows and the blocks forms, with the real calls' types
        lp = _Loops(inner)
        x, s = np.zeros((1, 2, inner), np.float32), np.ones((1, inner))
        lp["max_shift"](x, np.zeros((1, inner), np.float32), x)
        lp["sums"](x, s)
        lp["dot_sums"](x, x, s)
        lp["minus"](x, s, x)
        lp["divide"](x, s, x)
        lp["minus_scaled"](x, x, s, x)
        lp["times_minus"](x, x, s, x)
        if inner == 1:
            lp["exp_sums"](x, s)
            lp["minus_scaled_exp"](x, x, s, x)
            lp["softmax"](x, x)
