"""SELU's ``F.alpha_dropout``/``nn.AlphaDropout`` and the feature variants.  Oracle:
torch's formula element by element (its mask is random), its statistics, reprs."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import convgrad as cg

ALPHA = 1.7580993408473766  # SELU's scale * alpha


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_alpha_dropout_is_torchs_formula(p):
    cg.manual_seed(0)
    x = cg.tensor(_rng("x", p).standard_normal(100000).astype(np.float32), requires_grad=True)
    y = cg.nn.functional.alpha_dropout(x, p, training=True)
    a = 1 / np.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    kept_value = a * x.numpy().astype(np.float64) + ALPHA * a * p
    dropped_value = -ALPHA * a + ALPHA * a * p
    yv = y.numpy().astype(np.float64)
    dropped = np.isclose(yv, dropped_value, rtol=0, atol=1e-6) & ~np.isclose(
        kept_value, dropped_value, rtol=0, atol=1e-6)
    np.testing.assert_allclose(yv[~dropped], kept_value[~dropped], rtol=1e-6, atol=1e-6)
    assert abs(dropped.mean() - p) < 0.01
    # a zero-mean, unit-variance input keeps both (torch's own statistics alike)
    t = torch.nn.functional.alpha_dropout(torch.tensor(x.numpy()), p, True).numpy()
    for v in (yv, t):
        assert abs(v.mean()) < 0.02 and abs(v.std() - 1) < 0.02
    (g,) = cg.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(g.numpy()[~dropped], a, rtol=1e-6)
    assert (g.numpy()[dropped] == 0).all()


def test_alpha_dropout_layers():
    x = cg.tensor(_rng("layer").standard_normal((4, 6, 5, 5)).astype(np.float32))
    layer = cg.nn.FeatureAlphaDropout(0.5)
    assert repr(layer) == repr(torch.nn.FeatureAlphaDropout(0.5))
    assert repr(cg.nn.AlphaDropout(0.2)) == repr(torch.nn.AlphaDropout(0.2))
    y = layer(x).numpy()
    a = 1 / np.sqrt((ALPHA * ALPHA * 0.5 + 1) * 0.5)
    dropped_value = np.float32(-ALPHA * a + ALPHA * a * 0.5)
    # whole channels: each (sample, channel) is all dropped or all kept
    whole = np.isclose(y, dropped_value, atol=1e-6).reshape(4, 6, -1)
    assert (whole.all(-1) | ~whole.any(-1)).all()
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy())
    np.testing.assert_array_equal(cg.nn.functional.alpha_dropout(x, 0.5).numpy(), x.numpy())
    with pytest.raises(ValueError, match="p=1.5 is a dropout probability"):
        cg.nn.AlphaDropout(1.5)
