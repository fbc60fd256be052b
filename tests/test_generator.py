"""``cg.Generator``, torch's class for a random stream of one's own: its methods as torch's
(chaining, seeds, state round trip), every ``generator=`` argument drawing from it, and
errors.  Oracle: torch's own Generator for the semantics (its numbers differ: NumPy's
PCG64 underneath), the stream replayed for the values."""

import numpy as np
import pytest
import torch

import convgrad as cg
from convgrad.utils.data import DataLoader, RandomSampler, TensorDataset, random_split


def test_methods_as_torchs():
    t, g = torch.Generator(), cg.Generator()
    assert type(t.manual_seed(3)) is torch.Generator
    assert g.manual_seed(3) is g  # chained, as torch.Generator().manual_seed(0)
    assert g.initial_seed() == t.initial_seed() == 3
    assert str(g.device) == str(t.device) == "cpu"
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    a = cg.randn(4, generator=g.manual_seed(s)).data
    assert np.array_equal(a, cg.randn(4, generator=cg.Generator().manual_seed(s)).data)


def test_a_stream_of_its_own():
    g = cg.Generator().manual_seed(0)
    cg.manual_seed(1)
    first = cg.randn(5, generator=g).data
    before = cg.get_rng_state().data
    g.manual_seed(0)
    cg.randn(100)  # the library-wide stream moves ...
    assert np.array_equal(cg.randn(5, generator=g).data, first)  # ... this one does not
    assert not np.array_equal(cg.get_rng_state().data, before)


def test_state_round_trip_replays():
    g = cg.Generator().manual_seed(7)
    cg.rand(3, generator=g)
    state = g.get_state()
    assert state.dtype == cg.uint8 and tuple(state.shape) == (48,)
    a = cg.rand(6, generator=g).data
    assert g.set_state(state) is g
    assert np.array_equal(cg.rand(6, generator=g).data, a)


@pytest.mark.parametrize("draw", [
    lambda g: cg.randn(2, 3, generator=g).data,
    lambda g: cg.rand(4, generator=g).data,
    lambda g: cg.randint(0, 10, (5,), generator=g).data,
    lambda g: cg.randperm(9, generator=g).data,
    lambda g: cg.normal(0.0, 1.0, (3,), generator=g).data,
    lambda g: cg.nn.init.uniform_(cg.empty(4), generator=g).data,
    lambda g: cg.empty(3).normal_(generator=g).data,
    lambda g: np.array(list(RandomSampler(range(8), generator=g))),
    lambda g: np.array([len(s) for s in random_split(range(10), [0.3, 0.7], generator=g)]
                       + [i for s in random_split(range(10), [3, 7], generator=g) for i in s]),
    lambda g: np.concatenate([b[0].data for b in DataLoader(
        TensorDataset(cg.arange(10.0)), batch_size=4, shuffle=True, generator=g)]),
])
def test_every_generator_argument_draws_from_it(draw):
    a = draw(cg.Generator().manual_seed(5))
    b = draw(cg.Generator().manual_seed(5))
    c = draw(cg.Generator().manual_seed(6))
    assert np.array_equal(a, b)
    if a.size > 3:
        assert not np.array_equal(a, c)


def test_errors_name_the_argument():
    with pytest.raises(TypeError, match=r"Generator.manual_seed: seed=1.5 must be an int"):
        cg.Generator().manual_seed(1.5)
    with pytest.raises(ValueError, match=r"Generator.manual_seed: seed=-1 must be >= 0"):
        cg.Generator().manual_seed(-1)
    with pytest.raises(ValueError, match="Generator"):
        cg.Generator(device="cuda")
    with pytest.raises(TypeError, match="Generator.set_state"):
        cg.Generator().set_state(cg.zeros(48))
    with pytest.raises(TypeError, match="convgrad Generator, a numpy Generator"):
        cg.randn(2, generator="seed")
