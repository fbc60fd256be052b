"""Channels-last from the first convolution to the loss: the operations that used to turn
an activation or a gradient to NCHW (a transposed convolution's bias, ``clone``, a
concatenation's backward slices, a loss's few-channel gradient into the head) keep the
layout, without copies, and their values match torch (float64) and the NumPy reference."""

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad import nn
from convgrad.ops import layouts, onednn_available, reduction

torch = pytest.importorskip("torch")
TF = torch.nn.functional
needs_onednn = pytest.mark.skipif(not onednn_available(), reason="oneDNN unavailable")
RNG = np.random.default_rng(5)


def _cl(shape):
    a = layouts.empty(shape, True, np.float32)
    a[...] = RNG.standard_normal(shape)
    return a


@needs_onednn
def test_a_transposed_convolution_with_bias_stays_channels_last():
    x = _cl((2, 8, 5, 6, 4))
    up = nn.ConvTranspose3d(8, 4, 2, stride=2)
    y = up(cg.tensor(x))
    assert layouts.is_channels_last(y.data)
    ref = TF.conv_transpose3d(torch.tensor(np.ascontiguousarray(x), dtype=torch.float64),
                              torch.tensor(up.weight.data, dtype=torch.float64),
                              torch.tensor(up.bias.data, dtype=torch.float64), stride=2)
    np.testing.assert_allclose(y.data, ref.numpy(), rtol=0, atol=1e-5 * ref.abs().max().item())


def test_clone_preserves_the_memory_format():
    x = cg.tensor(_cl((2, 3, 4, 5)))
    c = x.clone()
    assert layouts.is_channels_last(c.data) and np.array_equal(c.data, x.data)
    assert not np.shares_memory(c.data, x.data)


@needs_onednn
def test_a_concatenations_gradient_slices_reach_onednn_without_a_copy():
    """y = conv(cat([a, b])); the gradient of each part is a channel slice of a
    channels-last array: the transposed convolution behind a reads it as it lies."""
    a_in, b = _cl((2, 8, 4, 4, 4)), _cl((2, 4, 8, 8, 8))
    w_up = RNG.standard_normal((8, 4, 2, 2, 2)).astype(np.float32)
    w = RNG.standard_normal((6, 8, 3, 3, 3)).astype(np.float32)
    ts = [cg.tensor(v, requires_grad=True) for v in (a_in, b, w_up, w)]
    up = F.conv_transpose3d(ts[0], ts[2], stride=2)
    y = F.conv3d(cg.cat([up, ts[1]], dim=1), ts[3], padding=1)
    g = RNG.standard_normal(y.shape).astype(np.float32)
    with cg.profile() as prof:
        y.backward(cg.tensor(g))
    assert not [e for e in prof.of("layout") if e.name == "copy"]
    assert layouts.is_channels_last(ts[0].grad.data)
    tt = [torch.tensor(np.ascontiguousarray(v), dtype=torch.float64, requires_grad=True)
          for v in (a_in, b, w_up, w)]
    ty = TF.conv3d(torch.cat([TF.conv_transpose3d(tt[0], tt[2], stride=2), tt[1]], 1), tt[3],
                   padding=1)
    ty.backward(torch.tensor(g, dtype=torch.float64))
    for ours, ref in zip(ts, tt):
        r = ref.grad.numpy()
        np.testing.assert_allclose(ours.grad.data, r, rtol=0, atol=2e-5 * np.abs(r).max())


@needs_onednn
def test_a_few_channel_gradient_into_the_head_comes_back_channels_last():
    x = cg.tensor(_cl((2, 16, 6, 7)), requires_grad=True)
    head = nn.Conv2d(16, 3, 1)
    y = head(x)
    g = np.ascontiguousarray(RNG.standard_normal(y.shape).astype(np.float32))  # NCHW
    y.backward(cg.tensor(g))
    assert layouts.is_channels_last(x.grad.data)
    ref = np.einsum("nohw,oc->nchw", g.astype(np.float64),
                    head.weight.data[:, :, 0, 0].astype(np.float64))
    np.testing.assert_allclose(x.grad.data, ref, rtol=0, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("width", [3, 16])
def test_sums_over_a_channel_slice_of_a_channels_last_array(width):
    """The bias gradient of one part of a concatenation: reduced dims outer, with a row
    pitch wider than the slice; summed accurately (against float64), as the dense case."""
    full = _cl((2, 32, 9, 10, 11))
    part = full[:, 5:5 + width]
    assert not layouts.is_channels_last(part) and not part.flags.c_contiguous
    got = reduction.total(part, axis=(0, 2, 3, 4))
    exact = part.astype(np.float64).sum(axis=(0, 2, 3, 4))
    dense = reduction.total(np.ascontiguousarray(part), axis=(0, 2, 3, 4))
    scale = np.abs(exact).max()
    assert np.abs(got - exact).max() <= 4 * max(np.abs(dense - exact).max(), 2**-24 * scale)
