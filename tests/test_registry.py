"""The kernel registry: one prefer() for every family, one profiler event per kernel run."""

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad.ops import prefer, registry


def test_every_family_is_declared_once_with_its_algorithms():
    fams = registry.families()
    assert "conv" in fams
    assert fams["conv"].algorithms == ("onednn", "numpy", "scatter", "direct", "im2col", "fft")
    with pytest.raises(ValueError, match="declared twice"):
        registry.family("conv", ("numpy",))
    assert registry.family("conv", fams["conv"].algorithms) is fams["conv"]


def test_prefer_names_the_known_algorithms():
    with pytest.raises(ValueError, match=r"prefer: name='cudnn' must be one of"):
        with prefer("cudnn"):
            pass


def test_a_pin_reaches_only_the_families_that_have_it():
    conv = registry.families()["conv"]
    other = registry.family("test-only", ("numpy", "special"))
    with prefer("im2col"):
        assert conv.pinned() == "im2col" and other.pinned() is None
    with prefer("special"):
        assert conv.pinned() is None and other.pinned() == "special"
    with prefer("numpy"):
        assert conv.pinned() == "numpy" and other.pinned() == "numpy"
    assert conv.pinned() is None and other.pinned() is None


def test_events_carry_their_family_and_the_algorithm_that_ran():
    rng = np.random.default_rng(0)
    x = cg.tensor(rng.standard_normal((2, 3, 9, 9)), requires_grad=True)
    w = cg.tensor(rng.standard_normal((4, 3, 3, 3)), requires_grad=True)
    with prefer("im2col"), cg.profile() as prof:
        F.conv2d(x, w).sum().backward()
    conv = prof.of("conv")
    assert [e.name for e in conv] == ["conv_forward", "conv_input_grad", "conv_weight_grad"]
    assert {e.algorithm for e in conv} == {"im2col"}
    assert "conv" in prof.summary() and "im2col" in prof.summary()
