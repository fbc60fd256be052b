"""Per-axis resampling rules of ``interpolate``, with torch's coordinate conventions.

Along one axis of length ``n`` resampled to ``m``, output ``o`` reads the source
coordinate ``src(o)``:

* ``align_corners=True``: ``src = o (n - 1) / (m - 1)`` (0 when ``m == 1``);
* otherwise ``src = (o + 1/2) r - 1/2`` with ``r = 1 / scale_factor`` when a scale
  factor is given (and not recomputed), else ``r = n / m``.

``nearest`` takes ``floor(o r)`` and ``nearest-exact`` ``floor(src + 1/2)``, both in the
input's float precision as torch computes them (so ties fall the same way); ``linear``
blends the two neighbours of ``src`` (clamped at 0 and at the last input);
``cubic`` blends four with Keys' kernel (a = -0.75), reading clamped indices.  Each rule
gives an :class:`AxisMatrix`; for an integer upsampling factor ``s`` without
``align_corners`` the weights repeat every ``s`` outputs, which is a transposed
convolution with a constant kernel (:func:`upsampling_kernel`).
"""

from __future__ import annotations

import numpy as np

from ..tensor.axis_matrix import AxisMatrix

__all__ = ["CUBIC_A", "cubic_weights", "linear_matrix", "cubic_matrix", "nearest_index",
           "source_scale", "upsampling_kernel"]

CUBIC_A = -0.75


def source_scale(n: int, m: int, scale_factor: float | None, align_corners: bool) -> float:
    """The ratio between source and output coordinates (torch's area_pixel scale)."""
    if align_corners:
        return (n - 1) / (m - 1) if m > 1 else 0.0
    if scale_factor is not None and scale_factor > 0:
        return 1.0 / scale_factor
    return n / m


def _source(n: int, m: int, scale_factor: float | None, align_corners: bool) -> np.ndarray:
    r = source_scale(n, m, scale_factor, align_corners)
    o = np.arange(m, dtype=np.float64)
    return o * r if align_corners else (o + 0.5) * r - 0.5


def nearest_index(n: int, m: int, scale_factor: float | None, exact: bool,
                  dtype: np.dtype, whole_factor_shortcut: bool = False) -> np.ndarray:
    """Source index of each output for ``nearest`` (``exact=False``) or ``nearest-exact``.

    Computed in ``dtype`` (float32 or float64), then rounded through float32 before the
    floor, with a fused multiply-add for ``exact``, as torch's CPU kernels do.
    ``whole_factor_shortcut``: ``m == n`` is the identity and ``m == 2 n`` takes
    ``o // 2`` whatever the scale factor (torch's 2-d nearest forward does this).
    """
    if whole_factor_shortcut and m in (n, 2 * n):
        return np.arange(m) // (m // n)
    t = np.dtype(dtype).type
    r = t(1.0 / scale_factor) if scale_factor is not None and scale_factor > 0 else t(n) / t(m)
    o = np.arange(m).astype(t)
    if exact:
        src = (np.float64(r) * (o + t(0.5)).astype(np.float64) - 0.5).astype(t)
        src = np.where(src < 0, t(0), src) + t(0.5)
    else:
        src = r * o
    return np.minimum(np.floor(src.astype(np.float32)).astype(np.intp), n - 1)


def _linear_taps(src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index, weight) of the two neighbours of each source coordinate (unclamped)."""
    i0 = np.floor(src)
    frac = src - i0
    i0 = i0.astype(np.intp)
    return np.stack([i0, i0 + 1], 1), np.stack([1.0 - frac, frac], 1)


def cubic_weights(t: np.ndarray, a: float = CUBIC_A) -> np.ndarray:
    """Keys' cubic convolution weights of the taps at offsets -1, 0, 1, 2 from floor(src)."""

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1)


def _cubic_taps(src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    i = np.floor(src)
    return (i.astype(np.intp)[:, None] + np.arange(-1, 3)), cubic_weights(src - i)


def linear_matrix(n: int, m: int, scale_factor: float | None,
                  align_corners: bool) -> AxisMatrix | None:
    """Linear interpolation from ``n`` to ``m`` points (None: the identity, as torch when
    ``m == n``)."""
    if m == n:
        return None
    src = np.maximum(_source(n, m, scale_factor, align_corners), 0.0)
    i0 = np.minimum(np.floor(src), n - 1)
    frac = np.clip(src - i0, 0.0, 1.0)
    i0 = i0.astype(np.intp)
    index = np.stack([i0, i0 + (i0 < n - 1)], 1)
    return AxisMatrix(index, np.stack([1.0 - frac, frac], 1), n)


def cubic_matrix(n: int, m: int, scale_factor: float | None, align_corners: bool) -> AxisMatrix:
    """Bicubic interpolation (per axis) from ``n`` to ``m`` points, clamped reads."""
    src = _source(n, m, scale_factor, align_corners)
    i = np.minimum(np.floor(src), n - 1)
    t = np.clip(src - i, 0.0, 1.0)
    index = np.clip(i.astype(np.intp)[:, None] + np.arange(-1, 3), 0, n - 1)
    return AxisMatrix(index, cubic_weights(t), n)


def upsampling_kernel(s: int, cubic: bool) -> tuple[np.ndarray, int, int]:
    """Integer-factor upsampling along one axis as a convolution.

    Returns ``(kernel, pad, lo)``: replicate-pad the input by ``pad`` on each side, insert
    ``s - 1`` zeros between samples (input dilation ``s``), zero-pad by ``lo`` in front,
    and cross-correlate with ``kernel``.  Output ``o = s i + r`` reads
    ``src = i + (r + 1/2) / s - 1/2``; its taps ``x[i + q]`` sit at kernel position
    ``s (q + pad) - r + lo``.  Replicate padding reproduces torch's clamping at both ends.
    """
    r = np.arange(s)
    src = (r + 0.5) / s - 0.5
    index, weight = _cubic_taps(src) if cubic else _linear_taps(src)
    pad = 2 if cubic else 1
    pos = s * (index + pad) - r[:, None]
    keep = weight != 0
    lo = -int(pos[keep].min())
    kernel = np.zeros(int(pos[keep].max()) + lo + 1)
    np.add.at(kernel, pos[keep] + lo, weight[keep])
    return kernel, pad, lo
