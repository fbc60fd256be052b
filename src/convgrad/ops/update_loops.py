"""The optimiser rules of :mod:`.update` as fused Numba loops (:mod:`.jit`), for SGD and
Adam(W), the rules of the networks people train.

Each loop reads a parameter's arrays once, a cache-sized block at a time (a short loop
per step of the rule over the block), in the rule's own order of floating-point
operations: every ``fma`` of :mod:`.update` is ``float64(a) * b +
float64(c)`` rounded to the parameter's dtype (the same bits), every other operation in
the dtype itself (Numba does not contract a multiply and an add without ``fastmath``).
The loops take flat, dense arrays; a parameter of :data:`PARALLEL_MIN` elements or more
runs in a ``prange`` over blocks, on OpenMP's threads (the team oneDNN's convolutions
leave spinning: Python threads waited for their cores), others serially.  Where Numba's
threading layer is its work queue (not thread safe), only the serial loops exist and
:mod:`.update` runs them on its thread pool.
"""

from __future__ import annotations

import numpy as np

from . import jit

__all__ = ["PARALLEL_MIN", "VECTOR_MIN", "adam_args", "rules", "sgd_args"]

#: elements of one parameter from which its loop runs on OpenMP's threads: waking the
#: team costs ~10 us, an element ~1 ns
PARALLEL_MIN = 1 << 16
#: elements of a smaller parameter from which it runs the parallel build on one thread
#: (:mod:`.update` sets it) rather than the serial build: LLVM leaves the serial build's
#: Adam loop scalar (``vsqrtss``; the parallel build's runs ``vsqrtps``): 18432
#: elements 66.8 -> 15.9 us, 1024 4.6 -> 2.5, 64 1.2 -> 1.8 (the launch)
VECTOR_MIN = 1 << 10
#: elements per block of a parallel loop: a block of each array stays in a core's cache
BLOCK = 1 << 14

_compiled: list = []


@jit.loader
def rules() -> dict | None:
    """``{(rule name, dtype, parallel): loop}`` for ``sgd`` and ``adam`` on float32 and
    float64, or None without Numba; ``parallel`` loops exist only on a thread-safe
    threading layer."""
    if not _compiled:
        if not jit.enabled():
            return None
        _compiled.append(_compile(jit.numba()))
    return _compiled[0]


def _compile(numba) -> dict:
    out: dict = {}
    for parallel in ((False, True) if jit.thread_safe() else (False,)):
        for dt in (np.float32, np.float64):
            sgd, adam = _rules(numba, parallel, dt)
            out["sgd", np.dtype(dt), parallel], out["adam", np.dtype(dt), parallel] = sgd, adam
    return out


def _rules(numba, parallel: bool, dt):
    """The loops for parameters of dtype ``dt``."""
    prange = numba.prange if parallel else range
    jit_ = numba.njit(nogil=True, cache=True, parallel=parallel)

    # Each block (of every array, in a core's cache) goes through one short loop per
    # step of the rule, every branch taken outside the loops: each loop vectorises (with
    # the branches inside one loop per element, Adam ran 5x slower).
    def sgd(p, grad, buf, wd, mom, damp, step, decay, momentum, dampened, nesterov, first):
        """:func:`.update.sgd`; scalars from :func:`sgd_args`."""
        n = p.size
        for blk in prange((n + BLOCK - 1) // BLOCK):
            lo, hi = blk * BLOCK, min(n, (blk + 1) * BLOCK)
            k = hi - lo
            pp, gg, bb = p[lo:hi], grad[lo:hi], buf[lo:hi]
            # the steady momentum step (and plain SGD) as one loop, the same operations:
            # on ResNet-18's 11.2M parameters, with weight decay, 9.3 -> 4.6 ms
            if momentum and not first and not dampened and not nesterov:
                if decay:
                    for i in range(k):
                        bi = bb[i] * mom + dt(np.float64(pp[i]) * wd + np.float64(gg[i]))
                        bb[i] = bi
                        pp[i] = dt(np.float64(bi) * step + np.float64(pp[i]))
                else:
                    for i in range(k):
                        bi = bb[i] * mom + gg[i]
                        bb[i] = bi
                        pp[i] = dt(np.float64(bi) * step + np.float64(pp[i]))
                continue
            if not momentum:
                if decay:
                    for i in range(k):
                        gi = dt(np.float64(pp[i]) * wd + np.float64(gg[i]))
                        pp[i] = dt(np.float64(gi) * step + np.float64(pp[i]))
                else:
                    for i in range(k):
                        pp[i] = dt(np.float64(gg[i]) * step + np.float64(pp[i]))
                continue
            gs = np.empty(k, dt)
            if decay:  # g.add(p, alpha=wd)
                for i in range(k):
                    gs[i] = dt(np.float64(pp[i]) * wd + np.float64(gg[i]))
            else:
                gs[:] = gg
            if momentum:
                if first:
                    bb[:] = gs
                elif dampened:  # buf.mul_(momentum).add_(g, alpha=1 - dampening)
                    for i in range(k):
                        bb[i] = dt(np.float64(gs[i]) * damp + np.float64(bb[i] * mom))
                else:
                    for i in range(k):
                        bb[i] = bb[i] * mom + gs[i]
                if nesterov:  # g.add(buf, alpha=momentum)
                    for i in range(k):
                        gs[i] = dt(np.float64(bb[i]) * np.float64(mom) + np.float64(gs[i]))
                else:
                    gs[:] = bb
            for i in range(k):  # p.add_(g, alpha=-lr)
                pp[i] = dt(np.float64(gs[i]) * step + np.float64(pp[i]))

    def adam(p, grad, m, v, v_max, amsgrad, near, w, decay, wd, b2, b2c, root2, eps, step,
             decoupled, decayed):
        """:func:`.update.adam`; scalars from :func:`adam_args`."""
        n = p.size
        for blk in prange((n + BLOCK - 1) // BLOCK):
            lo, hi = blk * BLOCK, min(n, (blk + 1) * BLOCK)
            k = hi - lo
            pp, gg, mm, vv, vx = p[lo:hi], grad[lo:hi], m[lo:hi], v[lo:hi], v_max[lo:hi]
            gs = np.empty(k, dt)
            if decayed and not decoupled:  # g.add(p, alpha=wd)
                for i in range(k):
                    gs[i] = dt(np.float64(pp[i]) * wd + np.float64(gg[i]))
            else:
                gs[:] = gg
            if decayed and decoupled:  # p.mul_(1 - lr * wd)
                for i in range(k):
                    pp[i] = pp[i] * decay
            # m, v and p in one loop, one copy per branch of m's update: with the test
            # inside one loop (loop-invariant) Adam ran 3.75 ms against 2.9 on DCGAN's
            # generator, the compiler not hoisting it
            if not amsgrad:
                if near:
                    for i in range(k):
                        mi = dt(np.float64(gs[i] - mm[i]) * w + np.float64(mm[i]))
                        vi = dt(np.float64(b2c * gs[i]) * np.float64(gs[i])
                                + np.float64(vv[i] * b2))
                        mm[i], vv[i] = mi, vi
                        pp[i] = pp[i] + (step * mi) / (np.sqrt(vi) / root2 + eps)
                else:
                    for i in range(k):
                        mi = dt(np.float64(gs[i] - mm[i]) * w + np.float64(gs[i]))
                        vi = dt(np.float64(b2c * gs[i]) * np.float64(gs[i])
                                + np.float64(vv[i] * b2))
                        mm[i], vv[i] = mi, vi
                        pp[i] = pp[i] + (step * mi) / (np.sqrt(vi) / root2 + eps)
                continue
            if near:  # m.lerp_(g, 1 - beta1), torch's two branches
                for i in range(k):
                    mm[i] = dt(np.float64(gs[i] - mm[i]) * w + np.float64(mm[i]))
            else:
                for i in range(k):
                    mm[i] = dt(np.float64(gs[i] - mm[i]) * w + np.float64(gs[i]))
            for i in range(k):  # v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                vv[i] = dt(np.float64(b2c * gs[i]) * np.float64(gs[i]) + np.float64(vv[i] * b2))
            for i in range(k):  # amsgrad's running maximum (np.maximum: NaN wins)
                vm = vx[i]
                if not (vm >= vv[i] or vm != vm):
                    vm = vv[i]
                vx[i] = vm
            for i in range(k):
                pp[i] = pp[i] + (step * mm[i]) / (np.sqrt(vx[i]) / root2 + eps)

    return jit_(sgd), jit_(adam)


# ------------------------------------------------------------------ a loop's arguments
def sgd_args(arrays, h: tuple) -> tuple:
    """The SGD loop's arguments for one parameter's flat arrays ``(p, grad, buf)`` and
    scalars ``h`` of :func:`.update.sgd`: the dtype's roundings of them as that rule
    makes them."""
    p, grad, buf = arrays
    lr, wd, momentum, dampening, nesterov, first = h
    dt = p.dtype.type
    return (p, grad, p if buf is None else buf, np.float64(dt(wd)), dt(momentum),
            np.float64(dt(1 - dampening)), np.float64(dt(-lr)), wd != 0, momentum != 0,
            dampening != 0, bool(nesterov), bool(first))


def adam_args(arrays, h: tuple) -> tuple:
    """The Adam loop's arguments for ``(p, grad, m, v, v_max)`` and the scalars ``h`` of
    :func:`.update.adam` (bias corrections computed as there, in Python floats)."""
    p, grad, m, v, v_max = arrays
    lr, beta1, beta2, eps, wd, decoupled, step = h
    dt = p.dtype.type
    w = dt(1 - beta1)
    near = bool(abs(w) < 0.5)
    step_size = lr / (1 - beta1**step)
    return (p, grad, m, v, v if v_max is None else v_max, v_max is not None, near,
            np.float64(w) if near else np.float64(w - dt(1)), dt(1 - lr * wd),
            np.float64(dt(wd)), dt(beta2), dt(1 - beta2), dt((1 - beta2**step) ** 0.5),
            dt(eps), dt(-step_size), bool(decoupled), wd != 0)
