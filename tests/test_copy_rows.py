"""The compiled row copy (``convgrad.ops.copy_loops``) behind concatenations along C of
channels-last arrays and copies of their channel slices; oracle: NumPy's own
``concatenate`` and ``copyto`` (a copy moves values, so the results must be equal bit
for bit), torch's ``cat`` for the gradients; the profiler says which copy ran."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
from convgrad.ops import copy_loops, layouts, prefer, relayout

pytestmark = pytest.mark.skipif(copy_loops.loops() is None,
                                reason="the row copy needs Numba")
RNG = np.random.default_rng(11)


def _cl(shape) -> np.ndarray:
    a = layouts.empty(shape, channels_last=True)
    a[...] = RNG.standard_normal(shape)
    return a


def _layout_events(prof) -> list:
    return [(e.name, e.algorithm) for e in prof.of("layout")]


@pytest.mark.parametrize("shapes", [
    [(8, 32, 32, 32), (8, 16, 32, 32)],          # two parts: one pass over each output row
    [(2, 8, 16, 16, 16), (2, 24, 16, 16, 16)],   # 3-D
    [(4, 16, 24, 24), (4, 8, 24, 24), (4, 40, 24, 24)],  # three parts: one copy each
    [(3, 5, 70, 70), (3, 2, 70, 70)],            # odd channel counts (runs of 5 and 2)
])
def test_a_channels_last_concatenation_along_c_runs_the_row_copy(shapes):
    parts = [_cl(s) for s in shapes]
    with cg.profile() as prof:
        out = relayout.concatenate(parts, 1)
    assert _layout_events(prof) == [("concatenate", "numba")]
    assert layouts.is_channels_last(out)
    np.testing.assert_array_equal(out, np.concatenate(parts, 1))


def test_parts_whose_rows_are_not_side_by_side_are_copied_one_by_one():
    """One-channel NCHW parts: each part's rows are its own plane of the output, not
    runs next to each other in one row, so they are copied part by part."""
    a = RNG.standard_normal((1, 1, 300, 300)).astype(np.float32)
    b = RNG.standard_normal((1, 1, 300, 300)).astype(np.float32)
    with cg.profile() as prof:
        out = relayout.concatenate([a, b], 1)
    assert _layout_events(prof) == [("concatenate", "numba")]
    np.testing.assert_array_equal(out, np.concatenate([a, b], 1))


def test_a_channel_slice_is_copied_out_by_the_row_copy():
    full = _cl((8, 48, 32, 32))
    for part in (full[:, 5:21], full[:, 32:]):
        dst = layouts.empty(part.shape, channels_last=True)
        assert relayout.copy(dst, part) == "numba"
        np.testing.assert_array_equal(dst, part)


@pytest.mark.parametrize("why, src, dst", [
    ("small", _cl((2, 16, 16, 16))[:, :8], layouts.empty((2, 8, 16, 16), channels_last=True)),
    ("no common rows (NCHW into channels-last)",
     RNG.standard_normal((8, 16, 32, 32)).astype(np.float32),
     layouts.empty((8, 16, 32, 32), channels_last=True)),
    ("a negative stride", _cl((8, 48, 32, 32))[:, ::-1][:, :16],
     layouts.empty((8, 16, 32, 32), channels_last=True)),
    ("float64", _cl((8, 48, 32, 32)).astype(np.float64)[:, :16],
     np.empty((8, 32, 32, 16)).transpose(0, 3, 1, 2)),
])
def test_other_copies_keep_their_kernels(why, src, dst):
    assert relayout.copy(dst, src) != "numba", why
    np.testing.assert_array_equal(dst, src)


def test_prefer_pins_the_other_copies():
    full = _cl((8, 48, 32, 32))
    part = full[:, :16]
    for name in ("numpy", "onednn"):
        dst = layouts.empty(part.shape, channels_last=True)
        with prefer(name):
            got = relayout.copy(dst, part)
        assert got != "numba" and (got == "numpy" if name == "numpy" else True), got
        np.testing.assert_array_equal(dst, part)
    with prefer("numpy"), cg.profile() as prof:
        out = relayout.concatenate([full, full], 1)
    assert _layout_events(prof) == [("concatenate", "numpy")]
    np.testing.assert_array_equal(out, np.concatenate([full, full], 1))


def test_the_gradient_of_a_concatenation_matches_torch():
    torch = pytest.importorskip("torch")
    a, b = _cl((4, 24, 32, 32)), _cl((4, 8, 32, 32))
    ca, cb = cg.tensor(a, requires_grad=True), cg.tensor(b, requires_grad=True)
    g = _cl((4, 32, 32, 32))
    y = cg.cat([ca, cb], dim=1)
    (y * cg.tensor(g)).sum().backward()
    ta, tb = (torch.tensor(np.ascontiguousarray(v), requires_grad=True) for v in (a, b))
    (torch.cat([ta, tb], 1) * torch.tensor(np.ascontiguousarray(g))).sum().backward()
    np.testing.assert_array_equal(y.data, torch.cat([ta, tb], 1).detach().numpy())
    np.testing.assert_array_equal(ca.grad.data, ta.grad.numpy())
    np.testing.assert_array_equal(cb.grad.data, tb.grad.numpy())
