"""The optimiser rules of :mod:`.update` as fused Numba loops (:mod:`.jit`), for SGD and
Adam(W), the rules of the networks people train.

Each loop reads a parameter's arrays once, element by element, in the rule's own order
of floating-point operations: every ``fma`` of :mod:`.update` is ``float64(a) * b +
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

__all__ = ["PARALLEL_MIN", "adam_args", "rules", "sgd_args"]

#: elements of one parameter from which its loop runs on OpenMP's threads: waking the
#: team costs ~10 us, an element ~1 ns
PARALLEL_MIN = 1 << 16
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

    def sgd(p, grad, buf, wd, mom, damp, step, decay, momentum, dampened, nesterov, first):
        """:func:`.update.sgd`; scalars from :func:`sgd_args`."""
        n = p.size
        for blk in prange((n + BLOCK - 1) // BLOCK):
            for i in range(blk * BLOCK, min(n, (blk + 1) * BLOCK)):
                g = grad[i]
                if decay:  # g.add(p, alpha=wd)
                    g = dt(np.float64(p[i]) * wd + np.float64(g))
                if momentum:
                    if first:
                        b = g
                    else:
                        b = buf[i] * mom
                        if dampened:  # buf.add_(g, alpha=1 - dampening)
                            b = dt(np.float64(g) * damp + np.float64(b))
                        else:
                            b = b + g
                    buf[i] = b
                    if nesterov:  # g.add(buf, alpha=momentum)
                        g = dt(np.float64(b) * np.float64(mom) + np.float64(g))
                    else:
                        g = b
                p[i] = dt(np.float64(g) * step + np.float64(p[i]))  # p.add_(g, alpha=-lr)

    def adam(p, grad, m, v, v_max, amsgrad, near, w, decay, wd, b2, b2c, root2, eps, step,
             decoupled, decayed):
        """:func:`.update.adam`; scalars from :func:`adam_args`."""
        n = p.size
        for blk in prange((n + BLOCK - 1) // BLOCK):
            for i in range(blk * BLOCK, min(n, (blk + 1) * BLOCK)):
                g = grad[i]
                if decayed:
                    if decoupled:
                        p[i] = p[i] * decay
                    else:
                        g = dt(np.float64(p[i]) * wd + np.float64(g))
                diff = g - m[i]  # m.lerp_(g, 1 - beta1), torch's two branches
                if near:
                    m[i] = dt(np.float64(diff) * w + np.float64(m[i]))
                else:
                    m[i] = dt(np.float64(diff) * w + np.float64(g))
                vi = v[i] * b2  # v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                vi = dt(np.float64(b2c * g) * np.float64(g) + np.float64(vi))
                v[i] = vi
                if amsgrad:  # np.maximum: NaN wins
                    vm = v_max[i]
                    if not (vm >= vi or vm != vm):
                        vm = vi
                    v_max[i] = vm
                    vi = vm
                p[i] = p[i] + (step * m[i]) / (np.sqrt(vi) / root2 + eps)

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
