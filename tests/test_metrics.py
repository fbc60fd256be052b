"""Oracle: scikit-image's SSIM (and SciPy's Gaussian filter), pytorch_msssim with torch autograd.

float64 is compared with scikit-image and with pytorch-msssim given a float64 window (its
own window is float32 whatever the input), to 1e-9; float32 with pytorch-msssim as it is
(1e-5) and, on photographs, with the float64 result.
"""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
from convgrad.metrics import gaussian_filter, gaussian_window, ms_ssim, psnr, ssim
from convgrad.testing.gradcheck import check

from .tolerances import assert_close

torch = pytest.importorskip("torch")
pm = pytest.importorskip("pytorch_msssim")
pm_window = pytest.importorskip("pytorch_msssim.ssim")._fspecial_gauss_1d  # float32
skimage_metrics = pytest.importorskip("skimage.metrics")
data = pytest.importorskip("skimage.data")
ndimage = pytest.importorskip("scipy.ndimage")  # scikit-image's own dependency

SKIMAGE_GAUSSIAN = dict(gaussian_weights=True, use_sample_covariance=False)


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


def _torch_window(size: int, sigma: float, channels: int, dtype=torch.float64) -> torch.Tensor:
    """pytorch-msssim's window, but built by torch in ``dtype``: (C, 1, 1, size)."""
    coords = torch.arange(size, dtype=dtype) - size // 2
    g = torch.exp(-(coords**2) / (2 * sigma**2))
    return (g / g.sum()).reshape(1, 1, 1, size).repeat(channels, 1, 1, 1)


def _pm(fn, a, b, win_size=11, win_sigma=1.5, **kwargs):
    """pytorch-msssim's ``fn`` on float64 ndarrays with a float64 window."""
    win = _torch_window(win_size, win_sigma, a.shape[1])
    return fn(torch.from_numpy(a), torch.from_numpy(b), win=win, **kwargs)


def _skimage_ssim(x, y, sigma=1.5, **kwargs):
    """scikit-image's mean SSIM of (1, C, H, W) arrays, channels averaged."""
    return skimage_metrics.structural_similarity(x[0], y[0], channel_axis=0, sigma=sigma,
                                                 **SKIMAGE_GAUSSIAN, **kwargs)


# ----------------------------------------------------------------------------- window
def _scipy_window(size: int, sigma: float) -> np.ndarray:
    """SciPy's Gaussian kernel of radius size // 2, read off as the response to an impulse."""
    impulse = np.zeros(2 * size + 1)
    impulse[size] = 1.0
    radius = size // 2
    response = ndimage.gaussian_filter1d(impulse, sigma, mode="constant",
                                         truncate=(radius + 0.25) / sigma)
    return response[size - radius:size + radius + 1]


WINDOWS = [(1, 1.5), (3, 0.5), (5, 1.0), (7, 1.0), (11, 1.5), (15, 2.0), (21, 3.3), (51, 7.0),
           (53, 7.0)]


@pytest.mark.parametrize("size,sigma", WINDOWS)
def test_window_float64_is_scipys_gaussian(size, sigma):
    window = gaussian_window(size, sigma, np.float64)
    assert window.dtype == np.float64
    np.testing.assert_allclose(window, _scipy_window(size, sigma), rtol=1e-14, atol=1e-17)


@pytest.mark.parametrize("size,sigma", WINDOWS)
def test_window_float32_is_the_exact_window_rounded(size, sigma):
    window = gaussian_window(size, sigma)  # float32 by default
    assert window.dtype == np.float32
    exact = _scipy_window(size, sigma)
    np.testing.assert_allclose(window, exact, rtol=2.0**-24)  # within half an ulp
    # so its sum is 1 within the taps' own rounding (a float32 sum could add ~1e-7)
    assert abs(window.astype(np.float64).sum() - 1) <= np.spacing(window).sum() / 2
    # pytorch-msssim's float32 window (summed in float32) agrees to its rounding
    np.testing.assert_allclose(window, pm_window(size, sigma).numpy().ravel(), rtol=1e-6)


def test_window_rejects_a_non_float_dtype():
    with pytest.raises(TypeError, match="gaussian_window: dtype=.*int64.*floating-point"):
        gaussian_window(11, 1.5, np.int64)


def test_separable_filter_equals_the_2d_window():
    x = np.random.default_rng(0).random((2, 3, 40, 37))
    w = gaussian_window(11, 1.5, np.float64)
    sep = gaussian_filter(x, w).data
    full = gaussian_filter(x, w, separable=False).data
    assert sep.shape == (2, 3, 30, 27)
    assert_close(sep, full, np.float64, "separable vs 2-D")


# ----------------------------------------------------------------------------- SSIM
@pytest.mark.parametrize("colour", [False, True])
@pytest.mark.parametrize("sigma,win_size", [(1.5, 11), (1.0, 9), (2.0, 15)])
def test_ssim_float64_matches_skimage(colour, sigma, win_size):
    """scikit-image filters the whole image ('reflect' borders) and averages the SSIM map
    over the image cropped by (win_size - 1) // 2: exactly our valid filtering."""
    x, y = _photo_pair(colour=colour)
    expected = _skimage_ssim(x, y, sigma=sigma, data_range=1.0)
    value = ssim(x, y, data_range=1.0, win_size=win_size, win_sigma=sigma)
    assert value.dtype == np.float64
    assert _rel(value.item(), expected) <= 1e-9
    # the valid region is what skimage averages: a crop by one more pixel is detectably off
    inner = ssim(x[..., 1:-1, 1:-1], y[..., 1:-1, 1:-1], win_size=win_size, win_sigma=sigma)
    assert _rel(inner.item(), expected) > 1e-6


def test_ssim_float64_matches_skimages_map_and_constants():
    """Another data range and other K: the mean of skimage's full map, cropped."""
    x, y = _photo_pair(size=(120, 97), seed=3)
    x, y = 255 * x, 255 * y
    _, full_map = skimage_metrics.structural_similarity(
        x[0, 0], y[0, 0], data_range=255.0, K1=0.02, K2=0.05, sigma=1.5, full=True,
        **SKIMAGE_GAUSSIAN)
    expected = full_map[5:-5, 5:-5].mean()
    assert _rel(ssim(x, y, data_range=255.0, K=(0.02, 0.05)).item(), expected) <= 1e-9


@pytest.mark.parametrize("shape,kwargs", [
    ((2, 3, 40, 47), {}),
    ((1, 1, 11, 11), {}),
    ((3, 2, 33, 20), dict(win_size=7, win_sigma=1.0)),
    ((1, 1, 30, 30), dict(data_range=255.0, K=(0.02, 0.05))),
])
def test_ssim_and_gradient_match_pytorch_msssim_float64(shape, kwargs):
    a, b = _pair(shape)
    kwargs = {"data_range": 1.0, **kwargs}
    a, b = a * kwargs["data_range"], b * kwargs["data_range"]
    x = cg.tensor(a, requires_grad=True)
    y = cg.tensor(b, requires_grad=True)
    v = ssim(x, y, **kwargs)
    v.backward()
    tx = torch.from_numpy(a).requires_grad_()
    ty = torch.from_numpy(b).requires_grad_()
    win = _torch_window(kwargs.pop("win_size", 11), kwargs.pop("win_sigma", 1.5), shape[1])
    tv = pm.ssim(tx, ty, win=win, **kwargs)
    tv.backward()
    assert v.dtype == np.float64
    assert _rel(v.item(), tv.item()) <= 1e-9
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
    assert _rel(v.item(), tv.item()) <= 1e-5
    assert_close(x.grad.data, tx.grad.numpy(), np.float32)


@pytest.mark.parametrize("metric", [ssim, ms_ssim])
@pytest.mark.parametrize("photo", ["camera", "moon"])
def test_float32_on_photographs_is_close_to_float64(metric, photo):
    """Flat regions make the variances E[x^2] - mu^2 small, so a window summing to 1 only
    within float32 rounding biases float32 SSIM (pytorch-msssim's own float32 SSIM of this
    camera crop is 2.8e-5 off its float64 value); the rounded exact window keeps 1e-6."""
    img = getattr(data, photo)()[:200, :232].astype(np.float64) / 255
    noisy = np.clip(img + 0.1 * np.random.default_rng(0).standard_normal(img.shape), 0, 1)
    x, y = img[None, None], noisy[None, None]
    exact = metric(x, y).item()
    assert _rel(exact, _pm(getattr(pm, metric.__name__), x, y, data_range=1.0).item()) <= 1e-9
    assert _rel(metric(x.astype(np.float32), y.astype(np.float32)).item(), exact) <= 5e-6


# ----------------------------------------------------------------------------- integers
def _camera_and_noisy(sigma=10.0, seed=0):
    """The 512 x 512 camera, uint8, and a noisy copy (SSIM 0.607 by scikit-image)."""
    clean = data.camera()
    noisy = clean + np.random.default_rng(seed).normal(0, sigma, clean.shape)
    return clean, np.clip(noisy, 0, 255).astype(np.uint8)


def test_ssim_of_uint8_images_infers_data_range_255_as_skimage():
    clean, noisy = _camera_and_noisy()
    expected = skimage_metrics.structural_similarity(clean, noisy, **SKIMAGE_GAUSSIAN)
    assert round(expected, 3) == 0.607  # scikit-image's data_range for uint8 is 255
    value = ssim(clean[None, None], noisy[None, None])
    assert value.dtype == np.float64
    assert _rel(value.item(), expected) <= 1e-9
    assert ssim(clean[None, None], noisy[None, None], data_range=255).item() == value.item()
    # an explicit data_range is used as given (here the range of images in [0, 1])
    as_unit = skimage_metrics.structural_similarity(clean, noisy, data_range=1.0,
                                                    **SKIMAGE_GAUSSIAN)
    assert _rel(ssim(clean[None, None], noisy[None, None], data_range=1.0).item(),
                as_unit) <= 1e-9
    assert abs(as_unit - expected) > 0.1


@pytest.mark.filterwarnings("ignore:Setting data_range based on im1.dtype")
@pytest.mark.parametrize("dtype", [np.uint16, np.int16])
def test_ssim_of_other_integer_images_uses_the_dtype_span(dtype):
    rng = np.random.default_rng(4)
    info = np.iinfo(dtype)
    base = rng.integers(info.min // 4, info.max // 4, (64, 70))
    a = ndimage.uniform_filter(base, 5).astype(dtype)
    b = np.clip(a + rng.normal(0, 800, a.shape), info.min, info.max).astype(dtype)
    expected = skimage_metrics.structural_similarity(a, b, **SKIMAGE_GAUSSIAN)
    assert _rel(ssim(a[None, None], b[None, None]).item(), expected) <= 1e-9


def test_ms_ssim_and_psnr_of_uint8_images():
    clean, noisy = _camera_and_noisy(sigma=20.0)
    a, b = clean[None, None], noisy[None, None]
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    expected = _pm(pm.ms_ssim, fa, fb, data_range=255.0).item()
    assert _rel(ms_ssim(a, b).item(), expected) <= 1e-9
    assert psnr(a, b).item() == pytest.approx(
        skimage_metrics.peak_signal_noise_ratio(clean, noisy), rel=1e-12)


def test_integer_and_float_inputs_need_an_explicit_data_range():
    clean, noisy = _camera_and_noisy()
    a, b = clean[None, None], noisy[None, None].astype(np.float32)
    with pytest.raises(ValueError, match="ssim: x has dtype uint8 and y float32.*data_range"):
        ssim(a, b)
    with pytest.raises(ValueError, match="uint8 and y uint16"):
        ms_ssim(a, noisy[None, None].astype(np.uint16))
    expected = skimage_metrics.structural_similarity(
        clean.astype(np.float64), noisy.astype(np.float64), data_range=255.0, **SKIMAGE_GAUSSIAN)
    assert _rel(ssim(a, b, data_range=255).item(), expected) <= 1e-9


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
    kwargs = {"data_range": 1.0, **kwargs}
    a, b = a * kwargs["data_range"], b * kwargs["data_range"]
    x, y = cg.tensor(a, requires_grad=True), cg.tensor(b, requires_grad=True)
    v = ms_ssim(x, y, **kwargs)
    v.backward()
    tx = torch.from_numpy(a).requires_grad_()
    ty = torch.from_numpy(b).requires_grad_()
    win = _torch_window(kwargs.pop("win_size", 11), kwargs.pop("win_sigma", 1.5), shape[1])
    tv = pm.ms_ssim(tx, ty, win=win, **kwargs)
    tv.backward()
    assert _rel(v.item(), tv.item()) <= 1e-9
    assert_close(x.grad.data, tx.grad.numpy(), np.float64, "d ms_ssim / dx")
    assert_close(y.grad.data, ty.grad.numpy(), np.float64, "d ms_ssim / dy")


def _avg_pool_half(img: np.ndarray) -> np.ndarray:
    """2 x 2 mean with zero padding of ``size % 2`` on both sides of each odd side."""
    ph, pw = img.shape[0] % 2, img.shape[1] % 2
    p = np.pad(img, ((ph, ph), (pw, pw)))
    h, w = p.shape[0] // 2, p.shape[1] // 2
    return p[:2 * h, :2 * w].reshape(h, 2, w, 2).mean(axis=(1, 3))


def _skimage_ms_ssim(x, y, data_range=1.0, sigma=1.5, weights=(0.0448, 0.2856, 0.3001,
                                                                  0.2363, 0.1333)):
    """MS-SSIM of two 2-D images from scikit-image's SSIM maps: the contrast-structure map
    is the SSIM map divided by the luminance map (SciPy's Gaussian means, as skimage's)."""
    c1 = (0.01 * data_range) ** 2
    pad = int(3.5 * sigma + 0.5)
    result = 1.0
    for i, weight in enumerate(weights):
        _, s_map = skimage_metrics.structural_similarity(
            x, y, data_range=data_range, sigma=sigma, full=True, **SKIMAGE_GAUSSIAN)
        crop = (slice(pad, -pad), slice(pad, -pad))
        if i == len(weights) - 1:
            return result * max(s_map[crop].mean(), 0.0) ** weight
        mx = ndimage.gaussian_filter(x, sigma, truncate=3.5, mode="reflect")
        my = ndimage.gaussian_filter(y, sigma, truncate=3.5, mode="reflect")
        luminance = (2 * mx * my + c1) / (mx * mx + my * my + c1)
        result *= max((s_map / luminance)[crop].mean(), 0.0) ** weight
        x, y = _avg_pool_half(x), _avg_pool_half(y)


@pytest.mark.parametrize("size,data_range", [((200, 232), 1.0), ((171, 190), 255.0)])
def test_ms_ssim_float64_matches_skimage_at_every_scale(size, data_range):
    x, y = _photo_pair(size=size)
    x, y = x * data_range, y * data_range
    expected = _skimage_ms_ssim(x[0, 0], y[0, 0], data_range)
    assert _rel(ms_ssim(x, y, data_range=data_range).item(), expected) <= 1e-9


def test_ms_ssim_on_a_colour_photograph_matches_pytorch_msssim():
    x, y = _photo_pair(size=(200, 232), colour=True)
    assert _rel(ms_ssim(x, y).item(), _pm(pm.ms_ssim, x, y, data_range=1.0).item()) <= 1e-9


def test_ms_ssim_float32_matches_pytorch_msssim():
    a, b = _pair((2, 3, 170, 181), dtype=np.float32)
    x = cg.tensor(a, requires_grad=True)
    v = ms_ssim(x, b)
    v.backward()
    tx = torch.from_numpy(a).requires_grad_()
    tv = pm.ms_ssim(tx, torch.from_numpy(b), data_range=1.0)
    tv.backward()
    assert v.dtype == np.float32
    assert _rel(v.item(), tv.item()) <= 1e-5
    assert_close(x.grad.data, tx.grad.numpy(), np.float32)


def test_ms_ssim_second_order_matches_torch():
    """Hessian-vector product of MS-SSIM: double backward through the window convolutions."""
    a, b = _pair((1, 1, 70, 66), seed=2)
    v_dir = np.random.default_rng(3).standard_normal(a.shape)
    kwargs = dict(data_range=1.0, weights=[0.3, 0.3, 0.4])
    x = cg.tensor(a, requires_grad=True)
    (g,) = cg.grad(ms_ssim(x, b, win_size=3, **kwargs), x, create_graph=True)
    (hv,) = cg.grad((g * v_dir).sum(), x)
    tx = torch.from_numpy(a).requires_grad_()
    win = _torch_window(3, 1.5, 1)
    (tg,) = torch.autograd.grad(pm.ms_ssim(tx, torch.from_numpy(b), win=win, **kwargs), tx,
                                create_graph=True)
    (thv,) = torch.autograd.grad((tg * torch.from_numpy(v_dir)).sum(), tx)
    assert_close(hv.data, thv.numpy(), np.float64, "Hessian-vector product")


def test_window_gets_no_weight_gradient_kernel():
    a, b = _pair((2, 3, 165, 170), dtype=np.float32)
    x = cg.tensor(a, requires_grad=True)
    with cg.profile() as prof:
        v = ms_ssim(x, b)
        v.backward()
    # 5 scales x 2 separable passes over the five maps stacked along the batch, + 4
    # average pools of x and of y (the pooling family's kernel on oneDNN, else a
    # convolution with a box window)
    assert prof.count("conv_forward") + prof.count("avg_pool_forward") == 10 + 8
    stacked = [e.shapes[0][0] for e in prof.events if e.name == "conv_forward"]
    assert stacked[:2] == [5 * 2, 5 * 2]
    # the stack's input gradient (it holds x, x*x and x*y), + x's 4 pools
    assert prof.count("conv_input_grad") + prof.count("avg_pool_backward") == 10 + 4
    assert prof.count("conv_weight_grad") == 0
    assert x.grad is not None


def test_identical_images_score_one():
    a, _ = _pair((1, 2, 170, 170))
    assert ms_ssim(a, a).item() == pytest.approx(1.0, abs=1e-12)
    assert ssim(a, a).item() == pytest.approx(1.0, abs=1e-12)


# ----------------------------------------------------------------------------- PSNR, errors
def test_psnr_matches_skimage():
    x, y = _photo_pair()
    expected = skimage_metrics.peak_signal_noise_ratio(x, y, data_range=1.0)
    assert psnr(x, y).item() == pytest.approx(expected, rel=1e-12)
    assert psnr(x * 255, y * 255, data_range=255).item() == pytest.approx(
        skimage_metrics.peak_signal_noise_ratio(x * 255, y * 255, data_range=255), rel=1e-12)


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
    (lambda: psnr(np.zeros((1, 1, 20, 20)), np.ones((1, 1, 20, 20)), data_range=-1),
     ValueError, "psnr: data_range=-1"),
    (lambda: ssim(np.zeros((1, 1, 20, 20)), np.zeros((1, 1, 20, 20)), K=(0.01,)), ValueError,
     "K="),
    (lambda: ms_ssim(np.zeros((1, 1, 200, 200)), np.zeros((1, 1, 200, 200)), weights=[]),
     ValueError, "weights"),
    (lambda: ssim([[1.0]], [[1.0]]), TypeError, "x must be a Tensor or an ndarray"),
])
def test_errors_name_the_problem(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


# ----------------------------------------------------------------------------- SSIM's node
def _moments(n=2, c=2, size=4, seed=3):
    """Five filtered moments stacked along the batch, with positive variances."""
    rng = np.random.default_rng(seed)
    mu = rng.uniform(0.2, 0.8, (2, n, c, size, size))
    var = rng.uniform(0.01, 0.05, (2, n, c, size, size))
    cov = 0.5 * np.sqrt(var[0] * var[1]) * rng.uniform(-1, 1, (n, c, size, size))
    return np.concatenate([mu[0], mu[1], var[0] + mu[0] ** 2, var[1] + mu[1] ** 2,
                           cov + mu[0] * mu[1]])


def _terms(f):
    from convgrad.tensor.similarity import SSIMTerms

    return SSIMTerms.apply(f, c1=1e-4, c2=9e-4)


@pytest.mark.parametrize("order", [1, 2])
def test_ssim_terms_gradients_match_finite_differences(order):
    # order 1: the node's ndarray backward; order 2: its backward recorded as Tensors
    f = cg.tensor(_moments(), requires_grad=True)
    result = check(_terms, [f], order=order, atol=1e-7, rtol=1e-6)
    assert result.passed, result


def test_ssim_terms_fast_and_recorded_backward_agree():
    f = cg.tensor(_moments(n=3, c=1, size=6), requires_grad=True)
    v = cg.tensor(np.random.default_rng(0).standard_normal((2, 3, 1)))
    (fast,) = cg.grad((_terms(f) * v).sum(), [f])
    (recorded,) = cg.grad((_terms(f) * v).sum(), [f], create_graph=True)
    assert fast.grad_fn is None and recorded.grad_fn is not None
    np.testing.assert_allclose(fast.data, recorded.data, rtol=1e-13, atol=1e-15)


def test_ssim_terms_equal_the_per_map_formula_against_skimage():
    # the node's means are the SSIM and cs of each image: scikit-image's, in float64
    a, b = _pair((1, 1, 40, 44))
    x = cg.tensor(a, requires_grad=True)
    with cg.profile() as prof:
        s = ssim(x, b)
    assert any(e.name == "conv_forward" and e.shapes[0][0] == 5 for e in prof.events)
    ref = skimage_metrics.structural_similarity(a[0, 0], b[0, 0], data_range=1.0, win_size=11,
                                                sigma=1.5, **SKIMAGE_GAUSSIAN)
    assert abs(s.item() - ref) <= 1e-12
