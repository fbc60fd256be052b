"""Differentiable image metrics: ``ssim``, ``ms_ssim`` (pytorch-msssim's definitions), ``psnr``.

SSIM (Wang et al. 2004) with a Gaussian window and valid filtering; MS-SSIM (Wang et
al. 2003) over five scales with 2x average pooling in between.  The Gaussian window is
separable, so each filtering is two 1-D depthwise convolutions (``(C, 1, K, 1)`` then
``(C, 1, 1, K)``, ``groups = C``): ``2K`` multiply-adds per pixel instead of ``K^2``.
The window is a constant ndarray, so backward runs only ``conv_input_grad`` for it,
never ``conv_weight_grad``.

Everything is computed in the input's dtype, the window included (exact in float64,
rounded once to the input's dtype: see :func:`gaussian_window`): float64 SSIM is float64
throughout, and equals scikit-image's ``structural_similarity`` with
``gaussian_weights=True, sigma=1.5, use_sample_covariance=False`` (whose average over
the image cropped by ``(win_size - 1) // 2`` is exactly our valid filtering).  As in
pytorch-msssim the filter passes run over H then W; ``C1 = (K1 R)^2``,
``C2 = (K2 R)^2``; the contrast-structure term of the first scales and the SSIM of the
last go through ``relu``, are raised to the weights and multiplied; the result is the
mean over channels and batch.  (pytorch-msssim builds its window in float32 whatever the
input's dtype; given a float64 window through its ``win`` argument, its float64 result
is ours.)  Two deliberate differences: an image smaller than the window is
a ValueError (pytorch-msssim skips the smoothing with a warning), and ``ms_ssim``
requires the smaller side to exceed ``(win_size - 1) * 2**(levels - 1)`` for
``levels = len(weights)`` (pytorch-msssim's ``(win_size - 1) * 2**4`` for the default
five weights).

``data_range`` (the span of possible pixel values, ``R`` above) defaults to 1 for
floating-point inputs and to the dtype's span for integer ndarrays (255 for uint8, as
scikit-image does); integer inputs are compared in float64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..functional import conv as Fc
from ..functional import pooling as Fp
from ..tensor import Tensor, as_tensor, cat
from ..tensor.similarity import SSIMTerms, ssim_maps

__all__ = ["MS_SSIM_WEIGHTS", "gaussian_filter", "gaussian_window", "ms_ssim", "psnr", "ssim"]

MS_SSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


# ----------------------------------------------------------------------------- the window
def gaussian_window(win_size: int = 11, win_sigma: float = 1.5, dtype: Any = np.float32
                    ) -> np.ndarray:
    """The normalised 1-D Gaussian ``exp(-(i - size//2)^2 / (2 sigma^2))``, shape (win_size,).

    Computed in float64 and rounded once to ``dtype``: each float32 tap is the float32
    nearest the exact one, and the taps sum to 1 within their own rounding (1.4e-9 for the
    default 11 taps).  (Normalised in float32 they would sum to 1 only within ~1e-7, and
    that bias of every local mean is multiplied by ``mu^2 / sigma^2`` in the variances
    ``E[x^2] - mu^2``: float32 SSIM 5e-5 off float64 on a photograph with flat regions,
    instead of 1e-6.)
    """
    fn = "gaussian_window"
    _check_window(win_size, win_sigma, fn)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.kind != "f":
        raise TypeError(f"{fn}: dtype={dtype!r} must be a floating-point dtype "
                        "(float32 or float64)")
    coords = np.arange(win_size, dtype=np.float64) - win_size // 2
    g = np.exp(-(coords * coords) / (2.0 * win_sigma**2))
    return (g / g.sum()).astype(dt)


def _check_window(win_size: Any, win_sigma: Any, fn: str) -> None:
    if isinstance(win_size, bool) or not isinstance(win_size, Integral):
        raise TypeError(f"{fn}: win_size={win_size!r} must be an int")
    if win_size < 1 or win_size % 2 == 0:
        raise ValueError(f"{fn}: win_size={win_size} must be a positive odd int")
    if isinstance(win_sigma, bool) or not isinstance(win_sigma, Real) or not win_sigma > 0:
        raise ValueError(f"{fn}: win_sigma={win_sigma!r} must be a positive number")


def gaussian_filter(x: Any, win: np.ndarray, separable: bool = True) -> Tensor:
    """Valid depthwise filtering of ``x`` (N, C, H, W) by the window ``win`` (K,) in H and W.

    ``separable=True``: two 1-D passes (H, then W, as pytorch-msssim); ``False``: one
    2-D pass with the ``K x K`` outer product (for comparison; same result up to rounding).
    """
    x = as_tensor(x)
    c, k = x.shape[1], win.shape[0]
    win = win.astype(x.dtype, copy=False)
    if not separable:
        w2 = np.broadcast_to(np.outer(win, win), (c, 1, k, k))
        return Fc.conv2d(x, w2, groups=c)
    out = Fc.conv2d(x, np.broadcast_to(win.reshape(k, 1), (c, 1, k, 1)), groups=c)
    return Fc.conv2d(out, np.broadcast_to(win.reshape(1, k), (c, 1, 1, k)), groups=c)


# ----------------------------------------------------------------------------- SSIM
def _is_integer(v: Any) -> bool:
    return isinstance(v, np.ndarray) and v.dtype.kind in "biu"


def _data_range(x: Any, y: Any, data_range: Any, fn: str) -> float:
    """``data_range`` checked, or when None: 1 for floats, the integer dtype's span."""
    if data_range is not None:
        if isinstance(data_range, bool) or not isinstance(data_range, Real) or not data_range > 0:
            raise ValueError(f"{fn}: data_range={data_range!r} must be a positive number")
        return data_range
    if not (_is_integer(x) or _is_integer(y)):
        return 1.0
    if not (_is_integer(x) and _is_integer(y)) or x.dtype != y.dtype:
        raise ValueError(f"{fn}: x has dtype {getattr(x, 'dtype', type(x).__name__)} and y "
                         f"{getattr(y, 'dtype', type(y).__name__)}; "
                         "integer images must share one dtype, or pass data_range explicitly")
    if x.dtype.kind == "b":
        return 1.0
    info = np.iinfo(x.dtype)
    return float(int(info.max) - int(info.min))  # 255 for uint8, 65535 for uint16


def _as_float(v: Any) -> Tensor:
    # integer images are compared in float64 (exact for every 32-bit integer)
    return as_tensor(v.astype(np.float64) if _is_integer(v) else v)


def _inputs(x: Any, y: Any, data_range: Any, K: Any, fn: str) -> tuple[Tensor, Tensor, float]:
    """(x, y, data_range) checked: float Tensors of one shape and dtype, and the range."""
    for name, v in (("x", x), ("y", y)):
        if not isinstance(v, Tensor | np.ndarray):
            raise TypeError(f"{fn}: {name} must be a Tensor or an ndarray, got {type(v).__name__}")
    data_range = _data_range(x, y, data_range, fn)
    x, y = _as_float(x), _as_float(y)
    if x.shape != y.shape:
        raise ValueError(f"{fn}: x and y must have the same shape, got {x.shape} and {y.shape}")
    if x.ndim != 4:
        raise ValueError(f"{fn}: inputs must be (N, C, H, W), got shape {x.shape}")
    if x.dtype != y.dtype:  # promote as NumPy does (float32 + float64 -> float64)
        x, y = x.astype(np.float64), y.astype(np.float64)
    if (not isinstance(K, Sequence) or len(K) != 2
            or not all(isinstance(k, Real) and not isinstance(k, bool) and k >= 0 for k in K)):
        raise ValueError(f"{fn}: K={K!r} must be a pair of non-negative numbers (K1, K2)")
    return x, y, data_range


def _ssim_terms(x: Tensor, y: Tensor, win: np.ndarray, data_range: float, K: Sequence
                ) -> tuple[Tensor, Tensor]:
    """(ssim, cs), each (N, C): the means of the SSIM and contrast-structure maps.

    The five moments are filtered as one stack along the batch (one filtering, not
    five) and combined by one :class:`SSIMTerms` node; lazy (dask) images filter and
    combine each moment as Tensor operations, the same formula.
    """
    c1 = (K[0] * data_range) ** 2
    c2 = (K[1] * data_range) ** 2
    moments = (x, y, x * x, y * y, x * y)
    if all(isinstance(t.data, np.ndarray) for t in (x, y)):
        terms = SSIMTerms.apply(gaussian_filter(cat(moments, 0), win), c1=c1, c2=c2)
        return terms[0], terms[1]
    ssim_map, cs_map = ssim_maps(*(gaussian_filter(m, win) for m in moments), c1, c2)
    return ssim_map.flatten(2).mean(-1), cs_map.flatten(2).mean(-1)


def _window(win: Any, win_size: Any, win_sigma: Any, dtype: np.dtype, fn: str) -> np.ndarray:
    """The given 1-D window (its length overrides ``win_size``) or the Gaussian one."""
    if win is None:
        _check_window(win_size, win_sigma, fn)
        return gaussian_window(win_size, win_sigma, dtype)
    w = np.asarray(win.data if isinstance(win, Tensor) else win)
    if w.dtype.kind != "f" or w.ndim != 1 or w.size % 2 == 0:
        raise ValueError(f"{fn}: win must be a 1-D float array of odd length, got shape "
                         f"{w.shape} and dtype {w.dtype}")
    return w.astype(dtype)


def ssim(x: Any, y: Any, data_range: float | None = None, win_size: int = 11,
         win_sigma: float = 1.5, K: tuple[float, float] = (0.01, 0.03), *,
         win: np.ndarray | None = None) -> Tensor:
    """Mean SSIM of ``x`` and ``y`` (N, C, H, W) over channels and batch (a 0-d Tensor).

    ``x``, ``y``: Tensors or ndarrays of one shape (an ndarray is a constant).
    ``data_range``: the span of pixel values; None means 1.0 for float inputs and the
    dtype's span for integer ndarrays (255 for uint8, compared in float64), as
    scikit-image infers it.  ``win_size``, ``win_sigma``: the Gaussian window (odd size),
    built in the input's dtype.  ``K``: ``(K1, K2)`` of ``C1 = (K1 R)^2``,
    ``C2 = (K2 R)^2``.  ``win``: a 1-D window to use instead of the Gaussian (its length
    replaces ``win_size``).  The result is the input's float dtype.
    """
    fn = "ssim"
    x, y, data_range = _inputs(x, y, data_range, K, fn)
    win = _window(win, win_size, win_sigma, x.dtype, fn)
    if min(x.shape[-2:]) < win.size:
        raise ValueError(f"{fn}: images of size {x.shape[-2]}x{x.shape[-1]} are smaller than "
                         f"the window (win_size={win.size}); expected H, W >= {win.size}")
    ssim_per_channel, _ = _ssim_terms(x, y, win, data_range, K)
    return ssim_per_channel.mean()


def ms_ssim(x: Any, y: Any, data_range: float | None = None, win_size: int = 11,
            win_sigma: float = 1.5, weights: Sequence[float] | None = None,
            K: tuple[float, float] = (0.01, 0.03), *, win: np.ndarray | None = None) -> Tensor:
    """Mean MS-SSIM of ``x`` and ``y`` (N, C, H, W) over channels and batch (a 0-d Tensor).

    ``len(weights)`` scales (five by default, :data:`MS_SSIM_WEIGHTS`), 2x average pooling
    between them with zero padding of ``size % 2`` on both sides of an odd side (zeros
    counted); ``prod_i relu(cs_i)^w_i`` over the first scales times ``relu(ssim)^w`` of
    the last.  The smaller side must exceed ``(win_size - 1) * 2**(len(weights) - 1)``
    (160 for the defaults).  The other arguments are :func:`ssim`'s.
    """
    fn = "ms_ssim"
    x, y, data_range = _inputs(x, y, data_range, K, fn)
    win = _window(win, win_size, win_sigma, x.dtype, fn)
    win_size = win.size
    if weights is None:
        weights = MS_SSIM_WEIGHTS
    if (not isinstance(weights, Sequence) or len(weights) < 1 or not all(
            isinstance(w, Real) and not isinstance(w, bool) and w >= 0 for w in weights)):
        raise ValueError(f"{fn}: weights={weights!r} must be a non-empty sequence of "
                         "non-negative numbers (one per scale)")
    levels = len(weights)
    need = (win_size - 1) * 2 ** (levels - 1)
    if min(x.shape[-2:]) <= need:
        raise ValueError(f"{fn}: images of size {x.shape[-2]}x{x.shape[-1]} are too small for "
                         f"{levels} scales with win_size={win_size}: the smaller side must be "
                         f"> (win_size - 1) * 2**{levels - 1} = {need}")
    w = np.asarray(weights, dtype=x.dtype)
    result = None
    for i in range(levels):
        ssim_per_channel, cs = _ssim_terms(x, y, win, data_range, K)
        last = i == levels - 1
        term = (ssim_per_channel if last else cs).relu() ** w[i]
        result = term if result is None else result * term
        if not last:
            pad = (x.shape[2] % 2, x.shape[3] % 2)
            x = Fp.avg_pool2d(x, 2, padding=pad)
            y = Fp.avg_pool2d(y, 2, padding=pad)
    return result.mean()


def psnr(x: Any, y: Any, data_range: float | None = None) -> Tensor:
    """Peak signal-to-noise ratio in dB, ``10 log10(R^2 / mean((x - y)^2))`` (a 0-d Tensor).

    ``R = data_range``, inferred when None as in :func:`ssim` (1.0 for floats, 255 for uint8).
    """
    fn = "psnr"
    data_range = _data_range(x, y, data_range, fn)
    x, y = _as_float(x), _as_float(y)
    if x.shape != y.shape:
        raise ValueError(f"{fn}: x and y must have the same shape, got {x.shape} and {y.shape}")
    mse = ((x - y) ** 2).mean()
    return (mse.log() * (-10 / math.log(10))) + 20 * math.log10(data_range)
