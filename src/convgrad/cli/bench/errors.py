"""How far one result is from another: the measures every agreement check uses."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["max_rel_error", "rel_l2_error"]


def max_rel_error(ours: np.ndarray, ref: np.ndarray) -> float:
    """max|ours - ref| / max|ref| (relative max-norm); inf on a shape mismatch or NaN/inf."""
    a = np.asarray(ours, dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    if a.shape != b.shape or not np.all(np.isfinite(a)) or not np.all(np.isfinite(b)):
        return math.inf
    if a.size == 0:
        return 0.0
    scale = float(np.max(np.abs(b)))
    diff = float(np.max(np.abs(a - b)))
    if scale == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / scale


def rel_l2_error(ours: np.ndarray, ref: np.ndarray) -> float:
    """||ours - ref||_2 / ||ref||_2; inf on a shape mismatch or NaN/inf."""
    a = np.asarray(ours, dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    if a.shape != b.shape or not np.all(np.isfinite(a)) or not np.all(np.isfinite(b)):
        return math.inf
    scale = float(np.linalg.norm(b.ravel()))
    diff = float(np.linalg.norm((a - b).ravel()))
    if scale == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / scale
