"""Tolerances of docs/API.md: max-norm relative error 1e-4 (float32), 1e-10 (float64)."""

from __future__ import annotations

import numpy as np

TOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10}


def assert_close(actual, expected, dtype=None, what: str = "") -> None:
    """Max-norm relative agreement at docs/API.md's tolerance for ``dtype``."""
    a = np.asarray(actual, dtype=np.float64)
    b = np.asarray(expected, dtype=np.float64)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    if b.size == 0:
        return
    tol = TOL[np.dtype(dtype if dtype is not None else np.asarray(actual).dtype)]
    scale = max(float(np.abs(b).max()), 1e-30)
    err = float(np.abs(a - b).max()) / scale
    assert err <= tol, f"{what}: max relative error {err:.3e} > {tol:.0e}"
