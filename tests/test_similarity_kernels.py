"""The ``similarity`` kernel family: SSIM's combination of its five filtered moments and
its gradient, on the compiled loops (float32) and NumPy (float64, pinned), against torch
autograd of the same formula in float64 on the same values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import convgrad as cg
from convgrad.ops import jit, prefer
from convgrad.tensor.similarity import SSIMTerms

needs_numba = pytest.mark.skipif(not jit.enabled(), reason="the loops are compiled by Numba")
C1, C2 = 0.01 ** 2, 0.03 ** 2


def _moments(shape, rng):
    """Five moments of two images (N, C, *spatial) filtered by one window, stacked along
    the batch: mu_x, mu_y, E[x^2], E[y^2], E[xy], float32."""
    x = rng.random(shape)
    y = np.clip(x + 0.1 * rng.standard_normal(shape), 0, 1)
    mx, my = 0.9 * x + 0.05, 0.9 * y + 0.05
    var = 0.01 * rng.random((3, *shape))
    f = np.concatenate([mx, my, mx * mx + var[0], my * my + var[1], mx * my + 0.5 * var[2]])
    return f.astype(np.float32)


def _ours(f, weights):
    t = cg.tensor(f).requires_grad_(True)
    with cg.profile() as prof:
        y = SSIMTerms.apply(t, c1=C1, c2=C2)
        y.backward(cg.tensor(weights.astype(f.dtype)))
    ran = [(e.name, e.algorithm) for e in prof.of("similarity")]
    return np.asarray(y.data), np.asarray(t.grad.data), ran


def _torch(f, weights):
    t = torch.tensor(f, requires_grad=True)
    mx, my, exx, eyy, exy = torch.chunk(t, 5, 0)
    cs = (2 * (exy - mx * my) + C2) / ((exx - mx * mx) + (eyy - my * my) + C2)
    ssim = ((2 * mx * my + C1) / (mx * mx + my * my + C1)) * cs
    dims = tuple(range(2, t.ndim))
    y = torch.stack([ssim.mean(dim=dims), cs.mean(dim=dims)])
    y.backward(torch.tensor(weights, dtype=t.dtype))
    return y.detach().numpy(), t.grad.numpy()


def _err(a, ref):
    return np.max(np.abs(a.astype(np.float64) - ref)) / np.max(np.abs(ref))


@needs_numba
@pytest.mark.parametrize("shape", [(8, 1, 92, 92), (2, 3, 20, 20), (3, 2, 1, 1),
                                   (2, 1, 6, 8, 8)])
def test_the_compiled_passes_are_within_torchs_float32_error(shape):
    """float32 moments: the compiled forward and backward ran, and each is at least as
    close to float64 (torch autograd on the same values) as torch's float32 is."""
    rng = np.random.default_rng(3)
    f = _moments(shape, rng)
    weights = rng.standard_normal((2, shape[0], shape[1]))
    y, g, ran = _ours(f, weights)
    assert ran == [("ssim_terms_forward", "numba"), ("ssim_terms_backward", "numba")]
    assert y.dtype == g.dtype == np.float32 and g.shape == f.shape
    y64, g64 = _torch(f.astype(np.float64), weights)
    y32, g32 = _torch(f, weights)
    tiny = np.finfo(np.float32).eps / 2  # a floor: torch may be exact on a few values
    assert _err(y, y64) <= 2 * max(_err(y32, y64), tiny)
    assert _err(g, g64) <= 2 * max(_err(g32, g64), tiny)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_runs_float64_and_when_pinned(dtype):
    """float64 (the reference) and a pin to NumPy run the Function's own NumPy code: torch's
    float64 values to float64 rounding, float32 within torch's float32 error."""
    rng = np.random.default_rng(5)
    f = _moments((2, 3, 20, 20), rng).astype(dtype)
    weights = rng.standard_normal((2, 2, 3))
    with prefer("numpy"):
        y, g, ran = _ours(f, weights)
    assert ran == [("ssim_terms_forward", "numpy"), ("ssim_terms_backward", "numpy")]
    y64, g64 = _torch(f.astype(np.float64), weights)
    if dtype == np.float64:
        np.testing.assert_allclose(y, y64, rtol=1e-12)
        np.testing.assert_allclose(g, g64, rtol=1e-9, atol=1e-12 * np.abs(g64).max())
        y, g, ran = _ours(f, weights)  # float64 without a pin: NumPy too
        assert {a for _, a in ran} == {"numpy"}
    else:
        y32, g32 = _torch(f, weights)
        assert _err(g, g64) <= 2 * _err(g32, g64)


@needs_numba
def test_a_nan_moment_spreads_to_its_row_only():
    """A NaN pixel makes its own (image, channel) means and gradient row NaN, as the
    formula does; the other rows keep their values."""
    rng = np.random.default_rng(7)
    f = _moments((2, 2, 8, 8), rng)
    f[4 + 1, 0, 3, 3] = np.nan  # E[x^2] of image 1, channel 0
    weights = np.ones((2, 2, 2))
    y, g, _ = _ours(f, weights)
    assert np.isnan(y[:, 1, 0]).all() and not np.isnan(np.delete(y.reshape(2, 4), 2, 1)).any()
    rows = g.reshape(5, 2, 2, -1)
    assert np.isnan(rows[:, 1, 0]).any() and not np.isnan(rows[:, 0]).any()
    assert not np.isnan(rows[:, 1, 1]).any()


@needs_numba
def test_the_compiled_gradient_is_the_numpy_references_bit_for_bit():
    """Each pixel's gradient is the Function's NumPy operations in their order, in float32:
    the same bits (the forward's means are summed in float64, NumPy's pairwise in float32:
    within an ulp of each other)."""
    rng = np.random.default_rng(9)
    f = _moments((4, 2, 24, 20), rng)
    weights = rng.standard_normal((2, 4, 2))
    y, g, ran = _ours(f, weights)
    with prefer("numpy"):
        y0, g0, ran0 = _ours(f, weights)
    assert {a for _, a in ran} == {"numba"} and {a for _, a in ran0} == {"numpy"}
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_allclose(y, y0, rtol=2 * np.finfo(np.float32).eps)
