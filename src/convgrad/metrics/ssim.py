"""Differentiable image metrics: ``ssim``, ``ms_ssim`` (as pytorch-msssim computes them), ``psnr``.

SSIM (Wang et al. 2004) with a Gaussian window and valid filtering; MS-SSIM (Wang et
al. 2003) over five scales with 2x average pooling in between.  The Gaussian window is
separable, so each filtering is two 1-D depthwise convolutions (``(C, 1, K, 1)`` then
``(C, 1, 1, K)``, ``groups = C``): ``2K`` multiply-adds per pixel instead of ``K^2``.
The window is a constant ndarray, so backward runs only ``conv_input_grad`` for it,
never ``conv_weight_grad``.

Faithfulness to pytorch-msssim: the window is computed in float32 as
``_fspecial_gauss_1d`` does (including torch's order of summation for the normalising
sum) and then cast to the input's dtype; it is bit-identical to torch's for every odd
size up to 51 (torch's vectorised float32 ``exp`` is not correctly rounded, and differs
by an ulp for a few wider windows, e.g. 53 taps with sigma 7); the filter passes run over H then
W; ``C1 = (K1 R)^2``, ``C2 = (K2 R)^2``; the contrast-structure term of the first four
scales and the SSIM of the last go through ``relu`` and are raised to the weights and
multiplied; the result is the mean over channels and batch.  Two deliberate
differences: an image smaller than the window is a ValueError (pytorch-msssim skips
the smoothing with a warning), and ``ms_ssim`` requires the smaller side to exceed
``(win_size - 1) * 2**(levels - 1)`` for ``levels = len(weights)`` (pytorch-msssim's
``(win_size - 1) * 2**4`` for the default five weights).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..functional import conv as Fc
from ..functional import pooling as Fp
from ..tensor import Tensor, as_tensor

__all__ = ["MS_SSIM_WEIGHTS", "gaussian_filter", "gaussian_window", "ms_ssim", "psnr", "ssim"]

MS_SSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


# ----------------------------------------------------------------------------- the window
def _torch_float32_sum(a: np.ndarray) -> np.float32:
    """Sum of a 1-D float32 array in the order of torch's CPU ``sum`` (cascade_sum).

    torch sums contiguous rows with 8-lane vectors when there are at least 8 elements:
    the vectors are summed four at a time into partial sums (``row_sum``), the scalar
    tail is added to a running total first, and the 8 lanes after it.  Shorter rows use
    the same ``row_sum`` on scalars.  Emulated here so that the normalised window
    matches torch's bit for bit.
    """
    f32 = np.float32
    lanes = 8
    if a.size >= lanes:
        n_vec = a.size // lanes
        acc = _row_sum(a[: n_vec * lanes].reshape(n_vec, lanes))
        total = f32(0)
        for v in a[n_vec * lanes:]:
            total = f32(total + v)
        for v in acc:
            total = f32(total + v)
        return total
    return _row_sum(a.reshape(-1, 1))[0]


def _row_sum(rows: np.ndarray) -> np.ndarray:
    """torch's ``row_sum``: rows in groups of 4 (``multi_row_sum``), tail, then the 4 partials."""
    ilp = 4
    n_ilp = len(rows) // ilp
    partial = _multi_row_sum(rows[: n_ilp * ilp].reshape(n_ilp, ilp * rows.shape[1]))
    partial = partial.reshape(ilp, rows.shape[1])
    for r in rows[n_ilp * ilp:]:
        partial[0] = partial[0] + r
    for k in range(1, ilp):
        partial[0] = partial[0] + partial[k]
    return partial[0]


def _multi_row_sum(rows: np.ndarray) -> np.ndarray:
    """torch's ``multi_row_sum``: a 4-level cascade of accumulators, columnwise."""
    levels, size = 4, len(rows)
    power = max(4, (math.ceil(math.log2(size)) if size > 1 else 0) // levels)
    step, mask = 1 << power, (1 << power) - 1
    acc = np.zeros((levels, rows.shape[1]), np.float32)
    i = 0
    while i + step <= size:
        for _ in range(step):
            acc[0] = acc[0] + rows[i]
            i += 1
        for j in range(1, levels):
            acc[j] = acc[j] + acc[j - 1]
            acc[j - 1] = 0
            if i & (mask << (j * power)):
                break
    for r in rows[i:]:
        acc[0] = acc[0] + r
    for j in range(1, levels):
        acc[0] = acc[0] + acc[j]
    return acc[0]


def gaussian_window(win_size: int = 11, win_sigma: float = 1.5, dtype: Any = np.float32
                    ) -> np.ndarray:
    """The normalised 1-D Gaussian ``exp(-(i - size//2)^2 / (2 sigma^2))``, shape (win_size,).

    Computed in float32 as pytorch-msssim's ``_fspecial_gauss_1d`` (the exponential
    correctly rounded, the sum in torch's order), then cast to ``dtype``.
    """
    _check_window(win_size, win_sigma, "gaussian_window")
    coords = np.arange(win_size, dtype=np.float32)
    coords -= win_size // 2
    arg = -(coords**2) / np.float32(2 * win_sigma**2)
    g = np.exp(arg.astype(np.float64)).astype(np.float32)
    g /= _torch_float32_sum(g)
    return g.astype(dtype)


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
def _inputs(x: Any, y: Any, data_range: Any, K: Any, fn: str) -> tuple[Tensor, Tensor]:
    for name, v in (("x", x), ("y", y)):
        if not isinstance(v, Tensor | np.ndarray):
            raise TypeError(f"{fn}: {name} must be a Tensor or an ndarray, got {type(v).__name__}")
    x, y = as_tensor(x), as_tensor(y)
    if x.shape != y.shape:
        raise ValueError(f"{fn}: x and y must have the same shape, got {x.shape} and {y.shape}")
    if x.ndim != 4:
        raise ValueError(f"{fn}: inputs must be (N, C, H, W), got shape {x.shape}")
    if x.dtype != y.dtype:  # promote as NumPy does (float32 + float64 -> float64)
        x, y = x.astype(np.float64), y.astype(np.float64)
    if isinstance(data_range, bool) or not isinstance(data_range, Real) or not data_range > 0:
        raise ValueError(f"{fn}: data_range={data_range!r} must be a positive number")
    if (not isinstance(K, Sequence) or len(K) != 2
            or not all(isinstance(k, Real) and not isinstance(k, bool) and k >= 0 for k in K)):
        raise ValueError(f"{fn}: K={K!r} must be a pair of non-negative numbers (K1, K2)")
    return x, y


def _ssim_terms(x: Tensor, y: Tensor, win: np.ndarray, data_range: float, K: Sequence
                ) -> tuple[Tensor, Tensor]:
    """(ssim, cs), each (N, C): the means of the SSIM and contrast-structure maps."""
    c1 = (K[0] * data_range) ** 2
    c2 = (K[1] * data_range) ** 2
    mu1, mu2 = gaussian_filter(x, win), gaussian_filter(y, win)
    mu1_sq, mu2_sq, mu1_mu2 = mu1**2, mu2**2, mu1 * mu2
    sigma1_sq = gaussian_filter(x * x, win) - mu1_sq
    sigma2_sq = gaussian_filter(y * y, win) - mu2_sq
    sigma12 = gaussian_filter(x * y, win) - mu1_mu2
    cs_map = (2 * sigma12 + c2) / (sigma1_sq + sigma2_sq + c2)
    ssim_map = ((2 * mu1_mu2 + c1) / (mu1_sq + mu2_sq + c1)) * cs_map
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


def ssim(x: Any, y: Any, data_range: float = 1.0, win_size: int = 11, win_sigma: float = 1.5,
         K: tuple[float, float] = (0.01, 0.03), *, win: np.ndarray | None = None) -> Tensor:
    """Mean SSIM of ``x`` and ``y`` (N, C, H, W) over channels and batch (a 0-d Tensor).

    Equal to ``pytorch_msssim.ssim(x, y, data_range, win_size=..., win_sigma=..., K=...)``.
    ``win``: a 1-D window to use instead of the Gaussian (as pytorch-msssim's ``win``).
    """
    fn = "ssim"
    x, y = _inputs(x, y, data_range, K, fn)
    win = _window(win, win_size, win_sigma, x.dtype, fn)
    if min(x.shape[-2:]) < win.size:
        raise ValueError(f"{fn}: images of size {x.shape[-2]}x{x.shape[-1]} are smaller than "
                         f"the window (win_size={win.size}); expected H, W >= {win.size}")
    ssim_per_channel, _ = _ssim_terms(x, y, win, data_range, K)
    return ssim_per_channel.mean()


def ms_ssim(x: Any, y: Any, data_range: float = 1.0, win_size: int = 11, win_sigma: float = 1.5,
            weights: Sequence[float] | None = None, K: tuple[float, float] = (0.01, 0.03), *,
            win: np.ndarray | None = None) -> Tensor:
    """Mean MS-SSIM of ``x`` and ``y`` (N, C, H, W) over channels and batch (a 0-d Tensor).

    Equal to ``pytorch_msssim.ms_ssim(x, y, data_range, ...)``: ``len(weights)`` scales
    (five by default, :data:`MS_SSIM_WEIGHTS`), 2x average pooling between them with
    zero padding of ``size % 2`` on both sides of an odd side (zeros counted);
    ``prod_i relu(cs_i)^w_i`` over the first scales times ``relu(ssim)^w`` of the last.
    ``win``: a 1-D window to use instead of the Gaussian (as pytorch-msssim's ``win``).
    """
    fn = "ms_ssim"
    x, y = _inputs(x, y, data_range, K, fn)
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


def psnr(x: Any, y: Any, data_range: float = 1.0) -> Tensor:
    """Peak signal-to-noise ratio in dB, ``10 log10(R^2 / mean((x - y)^2))`` (a 0-d Tensor)."""
    fn = "psnr"
    x, y = as_tensor(x), as_tensor(y)
    if x.shape != y.shape:
        raise ValueError(f"{fn}: x and y must have the same shape, got {x.shape} and {y.shape}")
    if isinstance(data_range, bool) or not isinstance(data_range, Real) or not data_range > 0:
        raise ValueError(f"{fn}: data_range={data_range!r} must be a positive number")
    mse = ((x - y) ** 2).mean()
    return (mse.log() * (-10 / math.log(10))) + 20 * math.log10(data_range)
