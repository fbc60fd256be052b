"""The ``similarity`` kernel family: SSIM's per-pixel combination of its five filtered
moments into the means of its two maps, and that combination's gradient, on Numba's
loops or NumPy.

The NumPy reference of each pass is its Function's own code
(:class:`convgrad.tensor.similarity.SSIMTerms`), handed in as a callable: this module
decides which runs (:func:`_algorithm`, the one decision) and records every run.  The
compiled loops (:mod:`.similarity_loops`, algorithm ``numba``) take float32 ndarrays and
work each pixel out as the reference does, in one pass; NumPy's reference makes a float32
pass per operation, some fifteen passes each way, which on an MS-SSIM loss's five small scales
((8, 1, 92, 92) at most) took 2.7 ms forward and 3.4 backward, mostly call overhead.
float64 inputs (the reference) and dask arrays run NumPy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import jit, similarity_loops
from .parallel import num_threads
from .registry import family

__all__ = ["SIMILARITY", "ssim_terms", "ssim_terms_grad"]

#: the similarity family: ``prefer("numpy")`` pins the Function's NumPy code
SIMILARITY = family("similarity", ("numba", "numpy"))
_F32 = np.dtype(np.float32)


def _algorithm(f: Any) -> str:
    """The one decision: "numba" or "numpy" for the moments ``f``."""
    if SIMILARITY.pinned() == "numpy" or type(f) is not np.ndarray or f.dtype != _F32:
        return "numpy"  # float64 stays the NumPy reference; dask arrays are chunked there
    return "numba" if similarity_loops.loops() is not None else "numpy"


def _rows(f: np.ndarray) -> np.ndarray:
    """``f`` (5N, C, *spatial) as the C-contiguous (5N, C, S) the loops walk."""
    return np.ascontiguousarray(f).reshape(f.shape[0], f.shape[1], -1)


def _set_threads(size: int) -> None:
    if jit.thread_safe():
        jit.set_threads(num_threads() if size >= jit.PARALLEL_MIN_SIZE else 1)


def ssim_terms(f: Any, c1: float, c2: float, reference: Callable[[], Any]) -> Any:
    """(2, N, C): the mean SSIM and contrast-structure of each image and channel, from the
    moments ``f`` (5N, C, *spatial) stacked along the batch; ``reference()`` is NumPy's."""
    with SIMILARITY.record("ssim_terms_forward", tuple(f.shape)) as rec:
        rec.algorithm = _algorithm(f)
        if rec.algorithm == "numpy":
            return reference()
        rows = _rows(f)
        n = f.shape[0] // 5
        out = np.empty((2, n, f.shape[1]), np.float32)
        _set_threads(f.size)
        similarity_loops.loops()["terms"](rows, n, np.float32(c1), np.float32(c2), out)
        return out


def ssim_terms_grad(f: Any, c1: float, c2: float, grad: Any,
                    reference: Callable[[], Any]) -> Any:
    """The gradient of :func:`ssim_terms` with respect to ``f``, for the gradient ``grad``
    (2, N, C) of its result; ``reference()`` is NumPy's."""
    with SIMILARITY.record("ssim_terms_backward", tuple(f.shape)) as rec:
        rec.algorithm = _algorithm(f)
        if rec.algorithm == "numpy" or type(grad) is not np.ndarray:
            rec.algorithm = "numpy"
            return reference()
        rows = _rows(f)
        n, count = f.shape[0] // 5, rows.shape[2]
        # each mean spreads its gradient evenly over the row's pixels (the reference's
        # float32 division)
        a = np.ascontiguousarray(grad[0] / np.float32(count), dtype=np.float32)
        b = np.ascontiguousarray(grad[1] / np.float32(count), dtype=np.float32)
        out = np.empty(rows.shape, np.float32)
        _set_threads(f.size)
        similarity_loops.loops()["terms_grad"](rows, n, np.float32(c1), np.float32(c2), a, b,
                                               out)
        return out.reshape(f.shape)


@jit.exercise
def _exercise() -> None:
    """The compiled loops once, with the argument types of real calls (:func:`.jit.warm_up`)."""
    lp = similarity_loops.loops()
    if lp is not None:
        f = np.ones((5, 1, 2), np.float32)
        c1, c2 = np.float32(1e-4), np.float32(9e-4)
        lp["terms"](f, 1, c1, c2, np.empty((2, 1, 1), np.float32))
        ab = np.zeros((1, 1), np.float32)
        lp["terms_grad"](f, 1, c1, c2, ab, ab, np.empty_like(f))
