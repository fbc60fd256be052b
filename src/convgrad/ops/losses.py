"""The pointwise regression losses (mean squared error, L1, smooth L1, Huber) reduced to
one number, and their input gradient: the ``eltwise`` family's ``pointwise_loss_forward``
and ``pointwise_loss_backward`` kernels, algorithm ``numba`` (:mod:`.loss_loops`), one
pass over input and target each way.

Composed of Tensor operations, a loss read a network's output three to eleven times
((8, 3, 256, 256) float32, forward and backward, ms, composed / torch: MSE 2.7 / 0.9,
L1 2.5 / 2.2, smooth L1 14.0 / 0.9).  Here the sum is float64 over fixed blocks (added
in block order), the gradient ``float32(scale * dl/dd)`` rounded once.

:func:`available` says where it runs; elsewhere (float64, views with gaps, broadcast
targets, no Numba, ``prefer("numpy")``) the functional layer composes the loss.
"""

from __future__ import annotations

import numpy as np

from . import jit, layouts, parallel, relayout
from .eltwise import ELTWISE
from .loss_loops import loops

__all__ = ["BLOCK", "KINDS", "aligned", "available", "pointwise_loss_backward",
           "pointwise_loss_sum"]

#: the loops' ``kind`` of each loss
KINDS = {"mse": 0, "l1": 1, "smooth_l1": 2, "huber": 3}
#: elements of one block: fixed, so the sum does not depend on the thread count
BLOCK = 1 << 15
_F32 = np.dtype(np.float32)


def available(x: np.ndarray, t: np.ndarray) -> bool:
    """Whether the compiled kernels run input ``x`` and target ``t``: float32 ndarrays of
    one shape, each dense (a target in another layout is copied into x's), not empty,
    Numba loaded, the family not pinned away, and the loops' machine code loaded
    (:func:`.jit.ready`: until then the loss is composed; a reproducible run waits,
    :func:`.jit.wait_for_loops`)."""
    if not (type(x) is np.ndarray and type(t) is np.ndarray and x.dtype == _F32
            and t.dtype == _F32 and x.shape == t.shape and x.size > 0
            and layouts.is_dense(x) and layouts.is_dense(t)
            and ELTWISE.pinned() in (None, "numba") and loops() is not None):
        return False
    return jit.ready("losses")


def _flat(a: np.ndarray) -> np.ndarray:
    """A dense array's memory as one run (no copy)."""
    return a.transpose(layouts.memory_order(a)).reshape(-1, copy=False)


def aligned(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``t`` in ``x``'s memory order: itself, or a copy (a ``layout`` event ``copy``; a
    caller differentiating the loss keeps it for the backward)."""
    if all(a == b for a, b, n in zip(x.strides, t.strides, x.shape) if n > 1):
        return t  # one memory order (the strides of size-1 dims say nothing)
    with layouts.LAYOUT.record("copy", t.shape) as rec:
        staged = np.empty_like(x)
        rec.algorithm = relayout.copy(staged, t)
    return staged


def _pair(x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x and t flat, t first copied into x's memory order where it differs."""
    return _flat(x), _flat(aligned(x, t))


def _threads(size: int) -> None:
    if loops()["parallel"]:
        jit.set_threads(1 if size < jit.PARALLEL_MIN_SIZE else parallel.num_threads())


def pointwise_loss_sum(x: np.ndarray, t: np.ndarray, kind: str, beta: float) -> float:
    """The sum over every element of the loss ``kind`` (:data:`KINDS`) of ``x - t``
    (``beta``: smooth L1's beta, Huber's delta), in float64."""
    with ELTWISE.record("pointwise_loss_forward", x.shape, t.shape) as rec:
        rec.algorithm = "numba"
        xf, tf = _pair(x, t)
        out = np.empty(-(-xf.size // BLOCK))
        _threads(x.size)
        loops()["forward"](xf, tf, KINDS[kind], float(beta), BLOCK, out)
        return float(out.sum())


def pointwise_loss_backward(x: np.ndarray, t: np.ndarray, kind: str, beta: float,
                            scale: float) -> np.ndarray:
    """``scale * dl/dx`` of the loss ``kind`` at ``x - t``, in x's layout."""
    with ELTWISE.record("pointwise_loss_backward", x.shape, t.shape) as rec:
        rec.algorithm = "numba"
        xf, tf = _pair(x, t)
        gx = np.empty_like(x)
        _threads(x.size)
        loops()["backward"](xf, tf, KINDS[kind], float(beta), float(scale), BLOCK,
                            _flat(gx))
        return gx


@jit.exercise(kernel="losses")
def _exercise() -> None:
    """Every loss each way on tiny arrays (:func:`.jit.warm_up`)."""
    x = (np.arange(12, dtype=np.float32) % 5).reshape(3, 4)
    t = np.ones((3, 4), np.float32)
    for kind in KINDS:
        pointwise_loss_sum(x, t, kind, 1.0)
        pointwise_loss_backward(x, t, kind, 1.0, 0.5)
