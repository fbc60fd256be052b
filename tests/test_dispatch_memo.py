"""The dispatch point remembers its oneDNN answers (``dispatch._chosen``): a repeated call
reuses the plan without choosing again, and every input of the choice (the pin, the
thread count, the workspace limit, the arrays' layout, the spec, the bias, the fused
ReLU, a cleared plan cache) makes a new one.  Oracle for results: torch float64, within
twice torch float32's error."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
from convgrad.ops import dispatch, onednn, onednn_available, parallel, prefer
from convgrad.ops.spec import ConvSpec, Pass

from .test_accuracy import assert_as_accurate

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not onednn_available(), reason="oneDNN is not available here")

SPEC = ConvSpec((1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1))
RNG = np.random.default_rng(5)


def _arrays(channels_last=True):
    x = RNG.standard_normal((2, 24, 10, 9)).astype(np.float32)
    if channels_last:
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    return x, (0.1 * RNG.standard_normal((16, 24, 3, 3))).astype(np.float32)


def _run(x, w, **kw):
    p = dispatch.choose(Pass.FORWARD, x, w, (2, 16, 10, 9), SPEC, **kw)
    p.run()
    return p


@pytest.fixture
def no_lookup(monkeypatch):
    """Fails a test that reaches oneDNN's plan lookup."""
    def refuse(*a, **k):
        raise AssertionError("the dispatch chose again")
    return lambda: monkeypatch.setattr(onednn, "plan_for", refuse)


def test_a_repeated_call_reuses_the_plan_with_a_new_output(no_lookup):
    dispatch._chosen.clear()
    x, w = _arrays()
    first = _run(x, w)
    assert first.backend is not None and len(dispatch._chosen) == 1
    no_lookup()
    again = _run(x, w)
    assert again.backend is first.backend and again.name == first.name
    assert again.out is not first.out and again.out.strides == first.out.strides
    np.testing.assert_array_equal(again.out, first.out)
    ref, t32 = (torch.nn.functional.conv2d(torch.from_numpy(x).to(d), torch.from_numpy(w).to(d),
                                           padding=1).double().numpy()
                for d in (torch.float64, torch.float32))
    assert_as_accurate("memoised forward", again.out, t32, ref)


@pytest.mark.parametrize("change", ["pin", "threads", "workspace", "layout", "spec", "bias",
                                    "relu", "cleared"])
def test_every_input_of_the_choice_makes_a_new_one(change, monkeypatch):
    dispatch._chosen.clear()
    x, w = _arrays()
    first = _run(x, w)
    calls = []
    real = onednn.plan_for
    monkeypatch.setattr(onednn, "plan_for", lambda *a, **k: calls.append(1) or real(*a, **k))
    kw, spec, expect = {}, SPEC, "onednn"
    if change == "pin":
        with prefer("im2col"):
            p = dispatch.choose(Pass.FORWARD, x, w, (2, 16, 10, 9), SPEC)
        assert p.backend is None and p.name == "im2col"
        return
    if change == "threads":
        monkeypatch.setattr(dispatch, "num_threads", lambda: parallel.num_threads() + 1)
    elif change == "workspace":
        monkeypatch.setattr(dispatch, "get_workspace_limit", lambda: 1 << 40)
    elif change == "layout":
        x, w = _arrays(channels_last=False)
    elif change == "bias":
        kw = {"bias": np.ones(16, np.float32)}
    elif change == "relu":
        kw = {"relu_slope": 0.1}
    elif change == "cleared":
        onednn.clear_cache()
    if change == "spec":
        spec = ConvSpec((1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), flip=True)
    p = dispatch.choose(Pass.FORWARD, x, w, (2, 16, 10, 9), spec, **kw)
    assert calls, "the dispatch reused an answer whose inputs changed"
    assert p.backend is not None and p.name.startswith(expect)
    if change == "cleared":
        assert p.backend is not first.backend  # the plan was made again


def test_the_memo_stays_bounded(monkeypatch):
    dispatch._chosen.clear()
    monkeypatch.setattr(dispatch, "CHOSEN_KEPT", 3)
    w = (0.1 * RNG.standard_normal((16, 24, 3, 3))).astype(np.float32)
    for n in range(1, 8):
        x = RNG.standard_normal((n, 24, 10, 9)).astype(np.float32)
        dispatch.choose(Pass.FORWARD, x, w, (n, 16, 10, 9), SPEC).run()
        assert len(dispatch._chosen) <= 3


def test_float64_and_numpy_engine_answers_are_not_kept():
    dispatch._chosen.clear()
    x, w = _arrays()
    p = dispatch.choose(Pass.FORWARD, x.astype(np.float64), w.astype(np.float64),
                        (2, 16, 10, 9), SPEC)
    assert p.backend is None and not dispatch._chosen
    y = cg.nn.functional.conv2d(cg.tensor(x), cg.tensor(w), padding=1)  # the public path
    assert len(dispatch._chosen) == 1 and y.shape == (2, 16, 10, 9)


def test_remembering_does_not_import_numba():
    # the key asks whether Numba runs only where the direct loops or Winograd's may be
    # chosen: asking imports it (~0.4 s), which a script of plain convolutions never paid
    import subprocess
    import sys
    code = ("import sys, numpy as np, convgrad as cg, convgrad.functional as F\n"
            "x = cg.tensor(np.ones((1, 8, 16, 16), np.float32))\n"
            "w = cg.tensor(np.ones((8, 8, 3, 3), np.float32), requires_grad=True)\n"
            "F.conv2d(x, w).sum().backward(); F.conv2d(x, w)\n"
            "from convgrad.ops import dispatch\n"
            "print(len(dispatch._chosen), 'numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert int(out[0]) >= 1  # the answers were kept
    if not dispatch.winograd_by_default():
        assert out[1] == "False"
