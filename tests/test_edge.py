"""Oracle: counts of the shape rule's evaluations (the edge normalises once), and torch 2.13
for the transposed convolution written as an input gradient."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad.ops import onednn
from convgrad.ops.spec import ConvSpec

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.usefixtures("backend")  # with oneDNN, then without


@pytest.fixture
def shape_rule_calls(monkeypatch):
    # a layer's construction starts oneDNN's warm-up, a convolution on another thread:
    # finished first, so that only this test's calls are counted (run alone, it raced)
    onednn.warm_up()
    onednn.wait_for_warm_up(60)
    calls = []
    for name in ("output_shape", "transposed_shape"):
        original = getattr(ConvSpec, name)

        def counted(self, *a, _original=original, **k):
            calls.append(1)
            return _original(self, *a, **k)

        monkeypatch.setattr(ConvSpec, name, counted)
    return calls


CALLS = {
    "conv2d": lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
    "conv2d_reflect": lambda x, w, b: F.conv2d(x, w, b, padding=2, padding_mode="reflect"),
    "conv2d_same": lambda x, w, b: F.conv2d(x, w, b, padding="same", dilation=2),
    "conv_general": lambda x, w, b: F.conv_general(x, w, b, padding=((1, -1), (0, 2)),
                                                   input_dilation=2, flip=True),
    "conv_transpose2d": lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                           output_padding=1),
}


@pytest.mark.parametrize("kind", list(CALLS))
def test_shape_rule_runs_once_per_call(kind, shape_rule_calls):
    x = cg.randn(2, 4, 9, 9, rng=0, requires_grad=True)
    w = cg.randn(4, 4, 3, 3, rng=1, requires_grad=True)
    b = cg.randn(4, rng=2, requires_grad=True)
    y = CALLS[kind](x, w, b)
    assert len(shape_rule_calls) == 1, "forward"
    (y * y).sum().backward()
    assert len(shape_rule_calls) == 1, "forward + backward: the kernels run unchecked"


def test_nn_layer_reuses_its_normalised_arguments(shape_rule_calls):
    layer = cg.nn.Conv2d(3, 5, 3, padding="same", padding_mode="circular")
    x = cg.randn(1, 3, 8, 8, rng=3, requires_grad=True)
    layer(x).sum().backward()
    assert len(shape_rule_calls) == 1


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [
    (2, 1, 1, 1, 1),
    (1, 0, 2, 3, 1),   # stride <= output_padding < dilation
    (3, 2, 1, 2, 2),
    (2, 3, 0, 1, 4),   # padding beyond the kernel extent: the output is cropped
    ((1, 2), (0, 1), (0, 1), (2, 1), 1),
])
def test_transposed_convolution_is_the_input_gradient(stride, padding, output_padding,
                                                      dilation, groups):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 5, 6))
    w = rng.standard_normal((4, 8 // groups, 3, 3))
    b = rng.standard_normal(8)
    ref = torch.nn.functional.conv_transpose2d(
        torch.tensor(x), torch.tensor(w), torch.tensor(b), stride, padding, output_padding,
        groups, dilation).numpy()
    with cg.profile() as prof:
        y = F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation)
    np.testing.assert_allclose(y.data, ref, rtol=1e-12, atol=1e-12)
    assert [e.name for e in prof.of("conv")] == ["conv_input_grad"]
