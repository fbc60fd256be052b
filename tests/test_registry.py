"""The kernel registry: one prefer() for every family, one profiler event per kernel run."""

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad.ops import prefer, registry


def test_every_family_is_declared_once_with_its_algorithms():
    fams = registry.families()
    assert "conv" in fams
    assert fams["conv"].algorithms == ("onednn", "numpy", "scatter", "direct", "im2col", "fft",
                                      "winograd")
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


def test_nested_events_are_counted_once():
    import time

    outer, inner = registry.family("test-outer", ("numpy",)), registry.family("test-inner",
                                                                             ("numpy",))
    with cg.profile() as prof:
        with outer.record("outer_kernel"):
            time.sleep(0.02)
            with inner.record("inner_kernel"):
                time.sleep(0.06)
    (o,), (i,) = prof.of("test-outer"), prof.of("test-inner")
    assert i.seconds >= 0.06 and 0.02 <= o.seconds < 0.06, (o.seconds, i.seconds)


def test_a_convolutions_reorders_are_layout_events():
    from convgrad.ops import onednn_available

    if not onednn_available():
        pytest.skip("reorders are oneDNN's")
    rng = np.random.default_rng(1)
    x = cg.tensor(rng.standard_normal((2, 16, 20, 20)).astype(np.float32))  # NCHW
    w = cg.tensor(rng.standard_normal((16, 16, 3, 3)).astype(np.float32))
    with cg.profile() as prof:
        F.conv2d(x, w, padding=1)
    layout = prof.of("layout")
    assert layout and {e.name for e in layout} <= {"reorder", "copy"}
    assert all(e.algorithm == "onednn" for e in layout if e.name == "reorder")
    assert "layout" in prof.summary()


def test_the_summary_keeps_its_columns_in_line_for_long_names():
    """A family or kernel name longer than the default column (``similarity``) widens its
    column: every row's numbers start where the header's do."""
    from convgrad.ops.profiler import Event, Profiler

    prof = Profiler([Event("ssim_terms_forward", 1e-3, 0, ((10, 1, 8, 8),), "numba",
                           "similarity"),
                     Event("a_kernel_name_longer_than_the_column", 2e-3, 0, (), "numpy",
                           "eltwise")])
    lines = prof.summary().splitlines()
    at = lines[0].index("calls")
    end = at + len("calls")  # the counts are right-aligned under the header's last letter
    assert all(line[end - 1].isdigit() and line[end] == " " for line in lines[2:]), lines
