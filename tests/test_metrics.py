"""Oracle: pytorch_msssim (ssim, ms_ssim, its window) with torch autograd, and skimage.metrics."""

from __future__ import annotations

import numpy as np
import pytest
import pytorch_msssim as pm
import torch
from pytorch_msssim.ssim import _fspecial_gauss_1d
from skimage import data
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

import convgrad as cg
from convgrad.metrics import gaussian_filter, gaussian_window, ms_ssim, psnr, ssim

from .tolerances import assert_close


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def _pair(shape, seed=0, noise=0.08, dtype=np.float64):
    """A smooth random image and a noisy copy, both in [0, 1]."""
    rng = np.random.default_rng(seed)
    base = rng.random(shape)
    for axis in (-1, -2):  # smooth, so that the SSIM terms are not all tiny
        base = (base + np.roll(base, 1, axis) + np.roll(base, -1, axis)) / 3
    other = np.clip(base + noise * rng.standard_normal(shape), 0, 1)
    return base.astype(dtype), other.astype(dtype)


def _photo_pair(size=(200, 232), colour=False, seed=0):
    img = data.astronaut() if colour else data.camera()
    img = img[:size[0], :size[1]].astype(np.float64) / 255
    noisy = np.clip(img + 0.1 * np.random.default_rng(seed).standard_normal(img.shape), 0, 1)
    if colour:
        return img.transpose(2, 0, 1)[None], noisy.transpose(2, 0, 1)[None]
    return img[None, None], noisy[None, None]


# ----------------------------------------------------------------------------- window
@pytest.mark.parametrize("size", [1, 3, 5, 7, 9, 11, 13, 15, 21, 31, 51])
@pytest.mark.parametrize("sigma", [0.5, 1.0, 1.5, 2.0, 3.3, 7.0])
def test_window_is_bitwise_pytorch_msssims(size, sigma):
    np.testing.assert_array_equal(gaussian_window(size, sigma),
                                  _fspecial_gauss_1d(size, sigma).numpy().ravel())
    assert gaussian_window(size, sigma, np.float64).dtype == np.float64


def test_separable_filter_equals_the_2d_window():
    x = np.random.default_rng(0).random((2, 3, 40, 37))
    w = gaussian_window(11, 1.5, np.float64)
    sep = gaussian_filter(x, w).data
    full = gaussian_filter(x, w, separable=False).data
    assert sep.shape == (2, 3, 30, 27)
    assert_close(sep, full, np.float64, "separable vs 2-D")


# ----------------------------------------------------------------------------- SSIM
@pytest.mark.parametrize("shape,kwargs", [
    ((2, 3, 40, 47), {}),
    ((1, 1, 11, 11), {}),
    ((3, 2, 33, 20), dict(win_size=7, win_sigma=1.0)),
    ((1, 1, 30, 30), dict(data_range=255.0, K=(0.02, 0.05))),
])
def test_ssim_matches_pytorch_msssim_float64(shape, kwargs):
    a, b = _pair(shape)
    scale = kwargs.get("data_range", 1.0)
    a, b = a * scale, b * scale
    x = cg.tensor(a, requires_grad=True)
    y = cg.tensor(b, requires_grad=True)
    v = ssim(x, y, **{"data_range": 1.0, **kwargs})
    v.backward()
    tx = torch.from_numpy(a).requires_grad_()
    ty = torch.from_numpy(b).requires_grad_()
    tv = pm.ssim(tx, ty, **{"data_range": 1.0, **kwargs})
    tv.backward()
    assert v.dtype == np.float64
    assert _rel(v.item(), tv.item()) <= 1e-10
    assert_close(x.grad.data, tx.grad.numpy(), np.float64, "d ssim / dx")
    assert_close(y.grad.data, ty.grad.numpy(), np.float64, "d ssim / dy")


def test_ssim_float32_matches_pytorch_msssim():
    a, b = _pair((2, 3, 48, 50), dtype=np.float32)
    x = cg.tensor(a, requires_grad=True)
    v = ssim(x, b)
    v.backward()
    tx = torch.from_numpy(a).requires_grad_()
    tv = pm.ssim(tx, torch.from_numpy(b), data_range=1.0)
    tv.backward()
    assert v.dtype == np.float32 and x.grad.dtype == np.float32
    assert _rel(v.item(), tv.item()) <= 1e-4
    assert_close(x.grad.data, tx.grad.numpy(), np.float32)


def _skimage_window(sigma=1.5, truncate=3.5):
    """scipy.ndimage's Gaussian kernel, which skimage's SSIM uses (radius 5 for sigma 1.5)."""
    r = np.arange(-int(truncate * sigma + 0.5), int(truncate * sigma + 0.5) + 1)
    w = np.exp(-0.5 / sigma**2 * r**2)
    return w / w.sum()


@pytest.mark.parametrize("colour", [False, True])
def test_ssim_matches_skimage(colour):
    """skimage filters the whole image ('reflect' borders) and averages the SSIM map over
    the region cropped by pad = (win_size - 1) // 2: exactly our valid filtering.  With
    skimage's own (float64) window the two agree to rounding; with pytorch-msssim's window
    (float32, the default) they differ by that rounding, amplified where variances are
    small."""
    x, y = _photo_pair(colour=colour)
    kwargs = dict(gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
                  data_range=1.0)
    if colour:
        expected = structural_similarity(x[0], y[0], channel_axis=0, **kwargs)
    else:
        expected = structural_similarity(x[0, 0], y[0, 0], **kwargs)
    assert _rel(ssim(x, y, win=_skimage_window()).item(), expected) <= 1e-12
    assert _rel(ssim(x, y).item(), expected) <= 1e-4
    # the valid region is what skimage averages: a crop by one more pixel is detectably off
    assert _rel(ssim(x[..., 1:-1, 1:-1], y[..., 1:-1, 1:-1], win=_skimage_window()).item(),
                expected) > 1e-6


# ----------------------------------------------------------------------------- MS-SSIM
MS_CASES = [
    ((1, 1, 161, 161), {}),                       # the smallest size five scales allow
    ((2, 3, 171, 190), {}),                        # odd sides: padded pooling at each scale
    ((1, 2, 177, 165), dict(data_range=255.0)),
    ((2, 1, 97, 112), dict(win_size=7, win_sigma=1.2)),
    ((1, 1, 70, 67), dict(win_size=5, weights=[0.2, 0.3, 0.5], K=(0.02, 0.04))),
]


@pytest.mark.parametrize("shape,kwargs", MS_CASES)
def test_ms_ssim_and_gradient_match_pytorch_msssim_float64(shape, kwargs):
    a, b = _pair(shape, seed=1)
    scale = kwargs.get("data_range", 1.0)
    a, b = a * scale, b * scale
    x, y = cg.tensor(a, requires_grad=True), cg.tensor(b, requires_grad=True)
    v = ms_ssim(x, y, **{"data_range": 1.0, **kwargs})
    v.backward()
    tx = torch.from_numpy(a).requires_grad_()
    ty = torch.from_numpy(b).requires_grad_()
    tv = pm.ms_ssim(tx, ty, **{"data_range": 1.0, **kwargs})
    tv.backward()
    assert _rel(v.item(), tv.item()) <= 1e-10
    assert_close(x.grad.data, tx.grad.numpy(), np.float64, "d ms_ssim / dx")
    assert_close(y.grad.data, ty.grad.numpy(), np.float64, "d ms_ssim / dy")


def test_ms_ssim_on_a_photograph_matches_pytorch_msssim():
    x, y = _photo_pair(size=(200, 232), colour=True)
    v = ms_ssim(x, y)
    tv = pm.ms_ssim(torch.from_numpy(x), torch.from_numpy(y), data_range=1.0)
    assert _rel(v.item(), tv.item()) <= 1e-10


def test_ms_ssim_float32_matches_pytorch_msssim():
    a, b = _pair((2, 3, 170, 181), dtype=np.float32)
    x = cg.tensor(a, requires_grad=True)
    v = ms_ssim(x, b)
    v.backward()
    tx = torch.from_numpy(a).requires_grad_()
    tv = pm.ms_ssim(tx, torch.from_numpy(b), data_range=1.0)
    tv.backward()
    assert v.dtype == np.float32
    assert _rel(v.item(), tv.item()) <= 1e-4
    assert_close(x.grad.data, tx.grad.numpy(), np.float32)


def test_ms_ssim_second_order_matches_torch():
    """Hessian-vector product of MS-SSIM: double backward through the window convolutions."""
    a, b = _pair((1, 1, 70, 66), seed=2)
    v_dir = np.random.default_rng(3).standard_normal(a.shape)
    kwargs = dict(data_range=1.0, win_size=3, weights=[0.3, 0.3, 0.4])
    x = cg.tensor(a, requires_grad=True)
    (g,) = cg.grad(ms_ssim(x, b, **kwargs), x, create_graph=True)
    (hv,) = cg.grad((g * v_dir).sum(), x)
    tx = torch.from_numpy(a).requires_grad_()
    (tg,) = torch.autograd.grad(pm.ms_ssim(tx, torch.from_numpy(b), **kwargs), tx,
                                create_graph=True)
    (thv,) = torch.autograd.grad((tg * torch.from_numpy(v_dir)).sum(), tx)
    assert_close(hv.data, thv.numpy(), np.float64, "Hessian-vector product")


def test_window_gets_no_weight_gradient_kernel():
    a, b = _pair((2, 3, 165, 170), dtype=np.float32)
    x = cg.tensor(a, requires_grad=True)
    with cg.profile() as prof:
        v = ms_ssim(x, b)
        v.backward()
    # 5 scales x 5 filtered maps x 2 separable passes, + 4 average pools of x and of y
    assert prof.count("conv_forward") == 50 + 8
    # only the maps that depend on x (x, x*x, x*y) need input gradients, + x's 4 pools
    assert prof.count("conv_input_grad") == 30 + 4
    assert prof.count("conv_weight_grad") == 0
    assert x.grad is not None


def test_identical_images_score_one():
    a, _ = _pair((1, 2, 170, 170))
    assert ms_ssim(a, a).item() == pytest.approx(1.0, abs=1e-12)
    assert ssim(a, a).item() == pytest.approx(1.0, abs=1e-12)


# ----------------------------------------------------------------------------- PSNR, errors
def test_psnr_matches_skimage():
    x, y = _photo_pair()
    assert psnr(x, y).item() == pytest.approx(peak_signal_noise_ratio(x, y, data_range=1.0),
                                              rel=1e-12)
    assert psnr(x * 255, y * 255, data_range=255).item() == pytest.approx(
        peak_signal_noise_ratio(x * 255, y * 255, data_range=255), rel=1e-12)


@pytest.mark.parametrize("call,exc,pattern", [
    (lambda: ssim(np.zeros((1, 1, 20, 20)), np.zeros((1, 1, 20, 21))), ValueError,
     "same shape.*\\(1, 1, 20, 20\\).*\\(1, 1, 20, 21\\)"),
    (lambda: ms_ssim(np.zeros((1, 1, 160, 300)), np.zeros((1, 1, 160, 300))), ValueError,
     "160x300 are too small.*> \\(win_size - 1\\) \\* 2\\*\\*4 = 160"),
    (lambda: ms_ssim(np.zeros((1, 1, 64, 64)), np.zeros((1, 1, 64, 64)), win_size=5),
     ValueError, "= 64"),
    (lambda: ssim(np.zeros((1, 1, 10, 30)), np.zeros((1, 1, 10, 30))), ValueError,
     "smaller than the window"),
    (lambda: ssim(np.zeros((1, 20, 20)), np.zeros((1, 20, 20))), ValueError, "\\(N, C, H, W\\)"),
    (lambda: ssim(np.zeros((1, 1, 20, 20)), np.zeros((1, 1, 20, 20)), win_size=4), ValueError,
     "win_size=4"),
    (lambda: ssim(np.zeros((1, 1, 20, 20)), np.zeros((1, 1, 20, 20)), data_range=0),
     ValueError, "data_range=0"),
    (lambda: ssim(np.zeros((1, 1, 20, 20)), np.zeros((1, 1, 20, 20)), K=(0.01,)), ValueError,
     "K="),
    (lambda: ms_ssim(np.zeros((1, 1, 200, 200)), np.zeros((1, 1, 200, 200)), weights=[]),
     ValueError, "weights"),
    (lambda: ssim([[1.0]], [[1.0]]), TypeError, "x must be a Tensor or an ndarray"),
])
def test_errors_name_the_problem(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()
