"""Oracle: the definition of dropout (Bernoulli(1 - p) masks scaled by 1 / (1 - p)),
checked by statistics on large inputs, and torch 2.13 for the module reprs and the
identity in evaluation mode (the random streams differ, so values are not compared)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad import nn
from convgrad.nn import init

torch = pytest.importorskip("torch")


def _ones(*shape, dtype=np.float64):
    return cg.tensor(np.ones(shape, dtype), requires_grad=True)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dropout_statistics_and_gradient(p, dtype):
    x = _ones(400, 500, dtype=dtype)
    y = F.dropout(x, p)
    kept = y.data != 0
    n = kept.size
    # the kept fraction is Binomial(n, 1 - p) / n: within 5 standard deviations
    assert abs(kept.mean() - (1 - p)) < 5 * np.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(y.data[kept], 1 / (1 - p), rtol=1e-6)
    assert y.dtype == dtype
    (g,) = cg.grad(y.sum(), [x])
    np.testing.assert_array_equal(g.data, y.data)  # d(x * mask)/dx = mask


@pytest.mark.parametrize("fn,shape,mask_shape", [
    (F.dropout1d, (40, 50, 7), (40, 50, 1)), (F.dropout1d, (300, 7), (300, 1)),
    (F.dropout2d, (40, 50, 3, 2), (40, 50, 1, 1)), (F.dropout3d, (20, 50, 2, 2, 2),
                                                    (20, 50, 1, 1, 1)),
    (F.dropout3d, (500, 2, 3, 2), (500, 1, 1, 1))])
def test_feature_dropout_drops_whole_channels(fn, shape, mask_shape):
    p = 0.4
    y = fn(_ones(*shape), p).data
    per_channel = y.reshape(mask_shape[:-1] + (-1,)) if len(mask_shape) > 1 else y
    first = per_channel[..., :1]
    assert np.all(per_channel == first)  # every element of a channel shares its fate
    kept = first != 0
    assert abs(kept.mean() - (1 - p)) < 5 * np.sqrt(p * (1 - p) / kept.size)
    np.testing.assert_allclose(first[kept], 1 / (1 - p))


def test_dropout2d_on_3d_input_warns_and_drops_channels_of_n_c_l():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = F.dropout2d(_ones(30, 40, 5), 0.5).data
    assert any("(N, C, L)" in str(w.message) for w in caught)
    assert np.all(y == y[..., :1])


def test_identity_in_evaluation_and_edge_probabilities():
    x = _ones(5, 6)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    zero = F.dropout(x, 1.0)
    assert not zero.data.any()
    (g,) = cg.grad(zero.sum(), [x])
    assert not g.data.any()
    m = nn.Dropout(0.3)
    m.eval()
    xt = torch.ones(5, 6)
    torch_m = torch.nn.Dropout(0.3).eval()
    np.testing.assert_array_equal(m(x).data, torch_m(xt).numpy())


def test_seeded_by_the_library_generator():
    init.manual_seed(123)
    a = F.dropout(_ones(50, 50), 0.5).data
    b = F.dropout(_ones(50, 50), 0.5).data
    init.manual_seed(123)
    np.testing.assert_array_equal(F.dropout(_ones(50, 50), 0.5).data, a)
    assert not np.array_equal(a, b)


def test_modules_repr_and_modes():
    for ours, theirs in [(nn.Dropout(), torch.nn.Dropout()), (nn.Dropout1d(0.2),
                         torch.nn.Dropout1d(0.2)), (nn.Dropout2d(0.3), torch.nn.Dropout2d(0.3)),
                         (nn.Dropout3d(), torch.nn.Dropout3d())]:
        assert repr(ours) == repr(theirs)
    m = nn.Sequential(nn.Dropout2d(0.5))
    x = _ones(8, 30, 2, 2)
    assert (m(x).data == 0).any()
    m.eval()
    np.testing.assert_array_equal(m(x).data, x.data)


@pytest.mark.parametrize("call,pattern", [
    (lambda: F.dropout(cg.randn(3), 1.5), "p=1.5"),
    (lambda: nn.Dropout(-0.1), "p=-0.1"),
    (lambda: F.dropout1d(cg.randn(2, 3, 4, 5)), r"\(N, C, L\)"),
])
def test_errors_name_the_argument(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()
