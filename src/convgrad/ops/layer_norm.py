"""Layer normalisation over the trailing K elements of each row of a C-contiguous
float32 array: the ``norm`` family's ``layer_norm_forward`` and ``layer_norm_backward``
kernels, algorithm ``numba`` (:mod:`.layer_loops`), one pass over x each way.

Standardising the rows as batch normalisation of a (1, R, K) view, then scaling and
shifting by the (K,) weight and bias as broadcast products, read the activation five
times forward and seven backward ((8, 4096, 64): 5.7 ms against torch's 2.0).

:func:`available` says where it runs; elsewhere (float64, a strided view, no Numba,
``prefer("numpy")`` or ``prefer("chunked")``, a dask array) the functional layer takes
the batch-norm view, the reference.
"""

from __future__ import annotations

import numpy as np

from . import jit, parallel
from .layer_loops import loops
from .normalization import NORM

__all__ = ["BLOCK", "ROWS_MIN", "available", "layer_norm_backward", "layer_norm_forward"]

#: elements of one task's rows (128 KB of float32, its rows in L2 through their passes);
#: fixed, so the weight's and bias's sums do not depend on the thread count
BLOCK = 1 << 15
#: at least this many rows a task: the backward's partial sums (2 K float64 a task)
#: stay at most a quarter of x's bytes however long the rows
ROWS_MIN = 16
_F32 = np.dtype(np.float32)


def available(x: np.ndarray, k: int) -> bool:
    """Whether the compiled kernels run ``x`` normalised over its trailing ``k`` elements
    a row: a float32 C-contiguous ndarray (a dask array takes the reference, which stays
    lazy), not empty, Numba loaded, the family not pinned away, and the loops' machine
    code loaded (:func:`.jit.ready`: until then the reference runs; a reproducible run
    waits, :func:`.jit.wait_for_loops`)."""
    if not (type(x) is np.ndarray and x.dtype == _F32 and x.flags.c_contiguous
            and x.size > 0 and k > 0 and NORM.pinned() in (None, "numba")
            and loops() is not None):
        return False
    return jit.ready("layer_norm")


def _rows(k: int) -> int:
    return max(ROWS_MIN, BLOCK // k)


def _threads(size: int) -> None:
    if loops()["parallel"]:
        jit.set_threads(1 if size < jit.PARALLEL_MIN_SIZE else parallel.num_threads())


def _f64(v: np.ndarray | None, k: int, fill: float) -> np.ndarray:
    return np.full(k, fill) if v is None else np.ascontiguousarray(v, np.float64).reshape(k)


def layer_norm_forward(x: np.ndarray, k: int, weight: np.ndarray | None,
                       bias: np.ndarray | None, eps: float
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``y = (x - m) s weight + bias`` over each row of ``k`` trailing elements (``s =
    (var + eps)^-1/2``, the biased variance), x's shape; and each row's mean and ``s``
    ((R,) float64) for :func:`layer_norm_backward`.  ``weight``, ``bias``: ``k``
    elements, or None."""
    with NORM.record("layer_norm_forward", x.shape) as rec:
        rec.algorithm = "numba"
        x2 = x.reshape(-1, k)
        y = np.empty_like(x)
        mean, rstd = np.empty(x2.shape[0]), np.empty(x2.shape[0])
        _threads(x.size)
        loops()["forward"](x2, _rows(k), _f64(weight, k, 1.0), _f64(bias, k, 0.0),
                           float(eps), y.reshape(-1, k), mean, rstd)
    return y, mean, rstd


def layer_norm_backward(g: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                        weight: np.ndarray | None, k: int, need: tuple) -> tuple:
    """The gradients (x, weight, bias) of :func:`layer_norm_forward` at ``g`` (x's shape,
    any layout: copied C-contiguous if it is not), None where ``need`` does not ask; the
    weight's and bias's shaped as ``weight`` (``k`` elements when it is None)."""
    with NORM.record("layer_norm_backward", x.shape) as rec:
        rec.algorithm = "numba"
        g = np.ascontiguousarray(g, _F32)
        x2 = x.reshape(-1, k)
        rows = _rows(k)
        tasks = -(-x2.shape[0] // rows)
        gx = np.empty_like(x) if need[0] else x
        gw, gb = np.empty((tasks, k)), np.empty((tasks, k))
        _threads(x.size)
        loops()["backward"](g.reshape(-1, k), x2, _f64(weight, k, 1.0), mean, rstd, rows,
                            bool(need[0]), gx.reshape(-1, k), gw, gb)
    shape = (k,) if weight is None else weight.shape
    return (gx if need[0] else None,
            gw.sum(axis=0).astype(x.dtype).reshape(shape) if need[1] else None,
            gb.sum(axis=0).astype(x.dtype).reshape(shape) if need[2] else None)


@jit.exercise(kernel="layer_norm")
def _exercise() -> None:
    """Both passes once on a tiny array (:func:`.jit.warm_up`)."""
    x = (np.arange(24, dtype=np.float32) % 5).reshape(2, 3, 4)
    w = np.ones(4, np.float32)
    y, mean, rstd = layer_norm_forward(x, 4, w, w, 1e-5)
    layer_norm_backward(y, x, mean, rstd, w, 4, (True, True, True))
