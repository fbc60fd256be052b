"""Oracle: NumPy's PCG64 stream seeded directly (np.random.default_rng(seed)), and repetition:
``cg.manual_seed`` makes every draw of the library repeat."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
from convgrad import nn
from convgrad.utils.data import DataLoader, TensorDataset


def _draws():
    x = cg.randn(3, 4).data.copy()
    conv = nn.Conv2d(2, 3, 3).weight.data.copy()
    lin = nn.Linear(4, 2).bias.data.copy()
    data = TensorDataset(cg.tensor(np.arange(12, dtype=np.float32)))
    order = [b[0].data.tolist() for b in DataLoader(data, batch_size=4, shuffle=True)]
    return x, conv, lin, order


def test_manual_seed_repeats_every_draw():
    cg.manual_seed(2024)
    first = _draws()
    cg.manual_seed(2024)
    again = _draws()
    for a, b in zip(first, again):
        np.testing.assert_array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
    cg.manual_seed(2025)
    other = _draws()
    assert not np.array_equal(first[0], other[0])
    assert not np.array_equal(first[1], other[1])


def test_the_stream_is_numpys_pcg64_with_that_seed():
    gen = cg.manual_seed(7)
    assert gen is cg.random.default_generator() is nn.init.default_generator()
    want = np.random.default_rng(7).standard_normal((2, 5), dtype=np.float32)
    np.testing.assert_array_equal(cg.randn(2, 5).data, want)
    assert cg.random.initial_seed() == 7


def test_reseeding_keeps_the_generator_object():
    held = cg.random.default_generator()
    cg.manual_seed(1)
    a = held.standard_normal(3)
    cg.manual_seed(1)
    np.testing.assert_array_equal(held.standard_normal(3), a)
    assert cg.random.default_generator() is held


def test_explicit_generators_are_independent_of_the_seed():
    cg.manual_seed(0)
    a = cg.randn(4, rng=5).data
    cg.manual_seed(99)
    b = cg.randn(4, rng=5).data
    np.testing.assert_array_equal(a, b)
    fresh = cg.random.seed()
    assert isinstance(fresh, int) and cg.random.initial_seed() == fresh


@pytest.mark.parametrize("seed,exc", [(1.5, TypeError), ("1", TypeError), (True, TypeError),
                                      (-1, ValueError)])
def test_bad_seeds(seed, exc):
    with pytest.raises(exc, match="manual_seed: seed="):
        cg.manual_seed(seed)
    with pytest.raises(TypeError, match="randn: rng="):
        cg.randn(2, rng="x")
