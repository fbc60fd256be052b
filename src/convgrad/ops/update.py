"""Optimiser updates: the elementwise rules of SGD, Adam(W), RMSprop and Adadelta on
ndarrays, run in cache-sized chunks on the thread pool.

Each rule is written once, as a function of same-shaped arrays (parameter, gradient,
state buffers) and per-parameter scalars, in torch's single-tensor CPU order of
floating-point operations.  Where torch's vectorised kernels fuse a multiply-add
(``add(..., alpha=)``, ``lerp``, ``addcmul``), :func:`fma` rounds once too (exactly,
for float32, through float64).  Every operation is elementwise, so a rule gives the same
bits whether it runs on a whole parameter or on slices of it:

* ``numpy`` (the reference): each parameter whole, on the calling thread, with
  full-size temporaries;
* ``numba``: SGD's and Adam(W)'s rules as compiled loops (:mod:`.update_loops`), one
  pass over each parameter's arrays, on OpenMP's threads (where Numba is installed);
* ``threads``: every parameter of a step cut into flat chunks of :data:`CHUNK` elements
  (whole when its arrays do not share one dense layout), the chunks dealt to
  :func:`~convgrad.ops.parallel.num_threads` pool threads in balanced runs (NumPy's
  ufuncs release the GIL), each thread writing its temporaries into scratch buffers of
  one chunk that stay in cache (``out=``), so no full-size float64 temporary exists.

:func:`step` is the one entry: it chooses the algorithm (:func:`choose`) and records one
profiler event per call in the ``optim`` family.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import jit, update_loops
from .parallel import num_threads, run_chunks
from .registry import family

__all__ = ["OPTIM", "CHUNK", "choose", "fma", "step", "sgd", "adam", "rmsprop", "adadelta"]

OPTIM = family("optim", ("numba", "threads", "numpy"))

# elements per chunk: each NumPy call on a chunk must outlast the threads' hand-over of
# the GIL (a few us on a VM).  ResNet-18's SGD update (11.7M parameters, 2 threads, AMD
# EPYC): 46 ms at 2^15 (calls of ~4 us), 34 at 2^17, 33 at 2^18, 54 at 2^20 (out of cache)
CHUNK = 1 << 17


class Scratch:
    """Temporaries of a rule: ``take(slot, like, dtype)`` is an uninitialised array shaped
    as ``like``, reusing one buffer per (slot, dtype) for the life of the scratch."""

    __slots__ = ("_bufs",)

    def __init__(self) -> None:
        self._bufs: dict = {}

    def take(self, slot: int, like: np.ndarray, dtype: Any = None) -> np.ndarray:
        dt = np.dtype(like.dtype if dtype is None else dtype)
        buf = self._bufs.get((slot, dt))
        if buf is None or buf.size < like.size:
            buf = self._bufs[(slot, dt)] = np.empty(like.size, dt)
        return buf[:like.size].reshape(like.shape)


# ----------------------------------------------------------------------------- rounding
def fma(out: np.ndarray, a: np.ndarray, b: Any, c: np.ndarray, scratch: Scratch) -> np.ndarray:
    """``out = a * b + c`` rounded once, like a fused multiply-add (``b`` may be a scalar);
    ``out`` may be ``a`` or ``c``.

    float32 operands are exact in float64, and so is their product; the sum is then
    rounded to float64 and float32 (a double rounding that differs from a true fused
    operation only when the float64 sum lands exactly on a float32 tie: never, in
    practice).  float64 is computed as ``a * b + c`` (two roundings).
    """
    t = scratch.take(0, out, np.float64)
    np.multiply(a, b, out=t, dtype=np.float64)
    # the sum in float64, rounded to out's dtype as the ufunc writes it (one pass)
    np.add(t, c, out=out, dtype=np.float64, casting="same_kind")
    return out


def _lerp(start: np.ndarray, end: np.ndarray, weight: float, scratch: Scratch) -> None:
    """``start.lerp_(end, weight)`` in place, with torch's two fused branches:
    ``start + w * (end - start)`` for ``|w| < 0.5``, else ``end - (1 - w) * (end - start)``."""
    dt = start.dtype.type
    w = dt(weight)
    diff = np.subtract(end, start, out=scratch.take(1, start))
    if abs(w) < 0.5:
        fma(start, diff, np.float64(w), start, scratch)
    else:
        fma(start, diff, np.float64(w - dt(1)), end, scratch)


def _decayed(p: np.ndarray, g: np.ndarray, wd: float, scratch: Scratch) -> np.ndarray:
    """``g.add(p, alpha=wd)`` in a scratch buffer (the gradient itself is left alone)."""
    if wd == 0:
        return g
    return fma(scratch.take(2, p), p, np.float64(p.dtype.type(wd)), g, scratch)


# ----------------------------------------------------------------------------- the rules
# Each rule: (arrays of one parameter or one chunk of it, that parameter's scalars, scratch).
def sgd(arrays: Sequence[np.ndarray | None], h: tuple, scratch: Scratch) -> None:
    """``p, grad, buf``; ``h = (lr, weight_decay, momentum, dampening, nesterov, first)``:
    ``g = grad + wd * p``; ``buf = g`` at the first step, else ``buf = momentum * buf +
    (1 - dampening) * g``; ``g = g + momentum * buf`` (Nesterov) or ``buf``; ``p -= lr * g``."""
    p, grad, buf = arrays
    lr, wd, momentum, dampening, nesterov, first = h
    dt = p.dtype.type
    g = _decayed(p, grad, wd, scratch)
    if momentum != 0:
        if first:
            np.copyto(buf, g)
        else:
            buf *= dt(momentum)
            if dampening == 0:
                buf += g
            else:  # buf.add_(g, alpha=1 - dampening)
                fma(buf, g, np.float64(dt(1 - dampening)), buf, scratch)
        if nesterov:  # g.add(buf, alpha=momentum)
            g = fma(scratch.take(2, p), buf, np.float64(dt(momentum)), g, scratch)
        else:
            g = buf
    fma(p, g, np.float64(dt(-lr)), p, scratch)  # p.add_(g, alpha=-lr)


def adam(arrays: Sequence[np.ndarray | None], h: tuple, scratch: Scratch) -> None:
    """``p, grad, m, v, v_max`` (``v_max`` None without AMSGrad); ``h = (lr, beta1, beta2,
    eps, weight_decay, decoupled, step)``: ``g = grad + wd * p`` (or, decoupled,
    ``p *= 1 - lr * wd``); ``m = lerp(m, g, 1 - beta1)``; ``v = beta2 * v + (1 - beta2) *
    g * g``; ``v_max = max(v_max, v)`` replaces ``v`` with AMSGrad;
    ``p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``."""
    p, grad, m, v, v_max = arrays
    lr, beta1, beta2, eps, wd, decoupled, step = h
    dt = p.dtype.type
    if decoupled:
        if wd != 0:
            p *= dt(1 - lr * wd)
        g = grad
    else:
        g = _decayed(p, grad, wd, scratch)
    _lerp(m, g, 1 - beta1, scratch)
    v *= dt(beta2)
    g2 = np.multiply(dt(1 - beta2), g, out=scratch.take(1, p))
    fma(v, g2, g, v, scratch)  # v.addcmul_(g, g, value=1 - beta2)
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    step_size = lr / bias_correction1
    if v_max is not None:
        np.maximum(v_max, v, out=v_max)
        v = v_max
    denom = np.sqrt(v, out=scratch.take(3, p))
    denom /= dt(bias_correction2**0.5)
    denom += dt(eps)
    upd = np.multiply(dt(-step_size), m, out=scratch.take(1, p))
    upd /= denom
    p += upd  # p.addcdiv_(m, denom, value=-step_size)


def rmsprop(arrays: Sequence[np.ndarray | None], h: tuple, scratch: Scratch) -> None:
    """``p, grad, s, a, buf`` (``a`` None unless centred, ``buf`` None without momentum);
    ``h = (lr, alpha, eps, weight_decay, momentum)``: ``g = grad + wd * p``;
    ``s = alpha * s + (1 - alpha) * g * g``; centred: ``a = lerp(a, g, 1 - alpha)`` and
    ``d = sqrt(s - a * a) + eps``, else ``d = sqrt(s) + eps``; with momentum
    ``buf = momentum * buf + g / d`` and ``p -= lr * buf``, else ``p -= lr * g / d``."""
    p, grad, s, a, buf = arrays
    lr, alpha, eps, wd, momentum = h
    dt = p.dtype.type
    g = _decayed(p, grad, wd, scratch)
    s *= dt(alpha)
    g2 = np.multiply(dt(1 - alpha), g, out=scratch.take(1, p))
    fma(s, g2, g, s, scratch)  # s.addcmul_(g, g, value=1 - alpha)
    avg = scratch.take(3, p)
    if a is not None:
        _lerp(a, g, 1 - alpha, scratch)
        neg = np.negative(a, out=scratch.take(1, p))
        fma(avg, neg, a, s, scratch)  # s.addcmul(a, a, value=-1)
        np.sqrt(avg, out=avg)
    else:
        np.sqrt(s, out=avg)
    avg += dt(eps)
    q = np.divide(g, avg, out=scratch.take(1, p))
    if buf is not None:
        buf *= dt(momentum)
        buf += q  # buf.addcdiv_(g, avg)
        fma(p, buf, np.float64(dt(-lr)), p, scratch)  # p.add_(buf, alpha=-lr)
    else:
        np.multiply(dt(-lr), g, out=q)
        q /= avg
        p += q  # p.addcdiv_(g, avg, value=-lr)


def adadelta(arrays: Sequence[np.ndarray | None], h: tuple, scratch: Scratch) -> None:
    """``p, grad, s, u``; ``h = (lr, rho, eps, weight_decay)``: ``g = grad + wd * p``;
    ``s = rho * s + (1 - rho) * g * g``; ``delta = sqrt(u + eps) / sqrt(s + eps) * g``;
    ``u = rho * u + (1 - rho) * delta**2``; ``p -= lr * delta``."""
    p, grad, s, u = arrays
    lr, rho, eps, wd = h
    dt = p.dtype.type
    eps = dt(eps)
    g = _decayed(p, grad, wd, scratch)
    s *= dt(rho)
    g2 = np.multiply(dt(1 - rho), g, out=scratch.take(1, p))
    fma(s, g2, g, s, scratch)  # s.addcmul_(g, g, value=1 - rho)
    std = np.add(s, eps, out=scratch.take(1, p))
    np.sqrt(std, out=std)
    delta = np.add(u, eps, out=scratch.take(3, p))
    np.sqrt(delta, out=delta)
    delta /= std
    delta *= g
    u *= dt(rho)
    d2 = np.multiply(dt(1 - rho), delta, out=scratch.take(1, p))
    fma(u, d2, delta, u, scratch)  # u.addcmul_(delta, delta, value=1 - rho)
    fma(p, delta, np.float64(dt(-lr)), p, scratch)  # p.add_(delta, alpha=-lr)


# ----------------------------------------------------------------------------- running
Rule = Callable[[Sequence[np.ndarray | None], tuple, Scratch], None]


def choose(arrays: Sequence[Sequence[np.ndarray | None]], rule: Rule | None = None) -> str:
    """For ndarrays: ``numba`` for a rule with a compiled loop (SGD, Adam) where Numba is
    installed, else ``threads``; ``numpy`` under ``prefer("numpy")`` and for other array
    types (a dask array updates whole, as NumPy does it)."""
    pinned = OPTIM.pinned()
    if pinned == "numpy":
        return "numpy"
    if not all(type(a) is np.ndarray for arrs in arrays for a in arrs if a is not None):
        return "numpy"
    if (pinned != "threads" and rule is not None and rule.__name__ in _LOOPED
            and update_loops.rules() is not None):
        return "numba"
    return "threads"


def step(kernel: str, rule: Rule, arrays: Sequence[Sequence[np.ndarray | None]],
         hypers: Sequence[tuple]) -> None:
    """Apply ``rule`` to every parameter: ``arrays[i]`` are parameter ``i``'s arrays (the
    parameter first, all of one shape; None for absent state), ``hypers[i]`` its scalars.
    One profiler event ``kernel`` in the ``optim`` family."""
    total = sum(int(arrs[0].size) for arrs in arrays)
    with OPTIM.record(kernel, (len(arrays), total)) as rec:
        rec.algorithm = algorithm = choose(arrays, rule)
        if algorithm == "numpy":
            for arrs, h in zip(arrays, hypers):
                rule(arrs, h, Scratch())
            return
        if algorithm == "numba":
            arrays, hypers = _looped(rule.__name__, arrays, hypers)
            if not arrays:
                return
            total = sum(int(arrs[0].size) for arrs in arrays)
        chunks = _chunks(arrays, hypers)
        n = max(1, min(num_threads(), -(-total // CHUNK)))
        run_chunks([_task(rule, part) for part in _deal(chunks, n, total)])


#: the rules with a compiled loop: the loop's arguments for one parameter
_LOOPED = {"sgd": update_loops.sgd_args, "adam": update_loops.adam_args}


def _looped(name: str, arrays, hypers) -> tuple[list, list]:
    """Run rule ``name``'s compiled loop on every parameter it takes (dense arrays of one
    float dtype): large ones on OpenMP's threads, smaller ones on this thread (the
    parallel build from :data:`.update_loops.VECTOR_MIN` elements, see there), or on the
    pool where Numba has no thread-safe threading layer.  Returns the parameters left
    for the pool's NumPy rule."""
    loops, args = update_loops.rules(), _LOOPED[name]
    threads = num_threads()
    built = (name, np.dtype(np.float32), True) in loops  # a thread-safe layer: prange loops
    parallel = built and threads > 1
    if parallel:
        jit.set_threads(threads)
    left: tuple[list, list] = ([], [])
    pooled, one_thread = [], []
    for arrs, h in zip(arrays, hypers):
        flats = _flat(arrs)
        dtype = arrs[0].dtype
        if (flats is None or dtype not in (np.float32, np.float64)
                or any(a is not None and a.dtype != dtype for a in arrs)):
            left[0].append(arrs)
            left[1].append(h)
            continue
        size = int(flats[0].size)
        if parallel and size >= update_loops.PARALLEL_MIN:
            loops[name, dtype, True](*args(flats, h))
        elif built and size >= update_loops.VECTOR_MIN:
            one_thread.append((flats, h))
        else:
            pooled.append((flats, h, size))
    if one_thread:
        jit.set_threads(1)
        for flats, h in one_thread:
            loops[name, flats[0].dtype, True](*args(flats, h))
        jit.set_threads(threads)
    if pooled:  # serial loops: here, or in chunks on the pool when no OpenMP team runs
        if not parallel:
            pooled = [([None if f is None else f[lo:lo + CHUNK] for f in flats], h,
                       min(CHUNK, size - lo))
                      for flats, h, size in pooled for lo in range(0, size, CHUNK)]
        total = sum(c[2] for c in pooled)
        runs = [pooled] if parallel else _deal(pooled, max(1, min(threads, -(-total // CHUNK))),
                                               total)

        def run(chunks) -> int:
            for flats, h, _ in chunks:
                loops[name, flats[0].dtype, False](*args(flats, h))
            return 0

        if len(runs) == 1:
            run(runs[0])
        else:
            run_chunks([lambda c=c: run(c) for c in runs])
    return left


def _flat(arrs: Sequence[np.ndarray | None]) -> list[np.ndarray | None] | None:
    """Flat views of one parameter's arrays in one common memory order, or None when they
    do not share one dense layout."""
    present = [a for a in arrs if a is not None]
    if all(a.flags.c_contiguous for a in present):
        return [None if a is None else a.reshape(-1) for a in arrs]
    strides = present[0].strides
    if any(a.strides != strides for a in present):
        return None
    flats = [None if a is None else np.ravel(a, order="K") for a in arrs]
    if any(f is not None and not np.shares_memory(f, a) for f, a in zip(flats, arrs)):
        return None  # not dense: ravel copied
    return flats


def _chunks(arrays, hypers) -> list[tuple[list, tuple, int]]:
    """(arrays of one chunk, scalars, elements) for every chunk of every parameter."""
    out = []
    for arrs, h in zip(arrays, hypers):
        size = int(arrs[0].size)
        flats = _flat(arrs) if size > CHUNK else None
        if flats is None:
            out.append((list(arrs), h, size))
            continue
        for lo in range(0, size, CHUNK):
            hi = min(size, lo + CHUNK)
            out.append(([None if f is None else f[lo:hi] for f in flats], h, hi - lo))
    return out


def _deal(chunks: list, n: int, total: int) -> list[list]:
    """``n`` consecutive runs of chunks of about ``total / n`` elements each."""
    parts: list[list] = [[] for _ in range(n)]
    done = 0
    for c in chunks:
        parts[min(n - 1, done * n // max(total, 1))].append(c)
        done += c[2]
    return [p for p in parts if p]


def _task(rule: Rule, part: list) -> Callable[[], int]:
    def run() -> int:
        scratch = Scratch()
        for arrs, h, _ in part:
            rule(arrs, h, scratch)
        return 0
    return run


def _arrays(size: int, states: int) -> tuple:
    return (np.zeros(size, np.float32), np.ones(size, np.float32),
            *(np.zeros(size, np.float32) for _ in range(states)))


# each rule's loops, serial and parallel builds (:func:`.jit.warm_up`): an optimiser asks
# for its own rule's (loading both rules' held a core for 32-45 ms of a first step)
@jit.exercise(kernel="update.sgd")
def _exercise_sgd() -> None:
    for size in (8, update_loops.PARALLEL_MIN):
        step("sgd", sgd, [_arrays(size, 1)], [(0.1, 1e-4, 0.9, 0.0, False, False)])


@jit.exercise(kernel="update.adam")
def _exercise_adam() -> None:
    for size in (8, update_loops.PARALLEL_MIN):
        step("adam", adam, [(*_arrays(size, 2), None)], [(1e-3, 0.9, 0.999, 1e-8, 0.0, False, 1)])
