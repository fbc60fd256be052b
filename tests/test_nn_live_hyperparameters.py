"""Module hyper-parameters are read on every call, as torch reads them: a script that
changes ``stride``, ``padding``, ``eps``, ``p``... after construction gets what torch gives
for the same edit.  Oracle: torch.nn with the same weights and the same edit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import convgrad as cg

RNG = np.random.default_rng(0)


def twins(name: str, *args, **kwargs):
    ours = getattr(cg.nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs).double()
    ours = ours.double() if hasattr(ours, "double") else ours
    theirs.load_state_dict({k: torch.from_numpy(np.array(v.data if isinstance(v, cg.Tensor)
                                                         else v, dtype=np.float64))
                            for k, v in ours.state_dict().items()}, strict=False)
    return ours, theirs


def same(ours, theirs, x):
    y = ours(cg.tensor(x))
    t = theirs(torch.from_numpy(x))
    assert y.shape == tuple(t.shape)
    np.testing.assert_allclose(y.data, t.detach().numpy(), rtol=1e-10, atol=1e-12)
    return y


@pytest.mark.parametrize("name, ctor, edits, x_shape", [
    ("Conv2d", (3, 4, 3), {"stride": (2, 2), "padding": (1, 1)}, (1, 3, 12, 12)),
    ("Conv2d", (3, 4, 3), {"dilation": (2, 1)}, (1, 3, 12, 12)),
    ("Conv2d", (3, 4, 3), {"stride": 2, "padding": 1}, (1, 3, 12, 12)),
    ("Conv1d", (2, 3, 5), {"padding": (2,)}, (2, 2, 16)),
    ("Conv3d", (2, 2, 3), {"stride": (1, 2, 2)}, (1, 2, 6, 8, 8)),
    ("ConvTranspose2d", (3, 2, 4), {"stride": (2, 2), "padding": (1, 1)}, (1, 3, 5, 5)),
    ("ConvTranspose2d", (3, 2, 3), {"stride": (2, 2), "output_padding": (1, 1)}, (1, 3, 5, 5)),
    ("MaxPool2d", (2,), {"stride": 1, "padding": 1}, (1, 2, 6, 6)),
    ("AvgPool2d", (2,), {"kernel_size": 3, "stride": 1}, (1, 2, 6, 6)),
    ("Upsample", (), {"scale_factor": 3.0}, (1, 2, 4, 4)),
])
def test_a_changed_hyperparameter_changes_the_output_as_torch(name, ctor, edits, x_shape):
    kwargs = {"scale_factor": 2.0} if name == "Upsample" else {}
    ours, theirs = twins(name, *ctor, **kwargs)
    x = RNG.standard_normal(x_shape)
    before = same(ours, theirs, x).shape
    for k, v in edits.items():
        setattr(ours, k, v)
        setattr(theirs, k, v)
    assert same(ours, theirs, x).shape != before


def test_the_cifar_stem_edit():
    """``model.conv1.stride = (1, 1)``, as ResNet-on-CIFAR scripts do, and back."""
    conv = cg.nn.Conv2d(3, 8, 7, stride=2, padding=3, bias=False)
    x = cg.randn(1, 3, 32, 32, rng=1)
    assert conv(x).shape == (1, 8, 16, 16)
    conv.stride = (1, 1)
    assert conv(x).shape == (1, 8, 32, 32)
    conv.stride = (2, 2)
    assert conv(x).shape == (1, 8, 16, 16)


def test_a_bad_edit_is_refused_at_the_next_call():
    conv = cg.nn.Conv2d(3, 4, 3)
    conv.stride = (0, 1)
    with pytest.raises(ValueError, match="Conv2d: stride"):
        conv(cg.randn(1, 3, 8, 8, rng=0))


@pytest.mark.parametrize("name, ctor, attr, value, x_shape", [
    ("BatchNorm2d", (3,), "eps", 0.5, (4, 3, 5, 5)),
    ("BatchNorm2d", (3,), "momentum", 0.7, (4, 3, 5, 5)),
    ("GroupNorm", (1, 3), "eps", 0.5, (2, 3, 5, 5)),
    ("LayerNorm", ((5, 5),), "eps", 0.5, (2, 3, 5, 5)),
    ("InstanceNorm2d", (3,), "eps", 0.5, (2, 3, 5, 5)),
])
def test_normalisation_reads_eps_and_momentum_live(name, ctor, attr, value, x_shape):
    ours, theirs = twins(name, *ctor)
    setattr(ours, attr, value)
    setattr(theirs, attr, value)
    x = RNG.standard_normal(x_shape)
    same(ours, theirs, x)
    for key, buf in theirs.state_dict().items():
        if "running" in key:
            np.testing.assert_allclose(np.asarray(ours.state_dict()[key].data
                                                  if hasattr(ours.state_dict()[key], "data")
                                                  else ours.state_dict()[key]),
                                       buf.numpy(), rtol=1e-10)


def test_dropout_reads_p_live():
    drop = cg.nn.Dropout(0.5)
    drop.p = 0.0
    x = cg.ones(1000)
    np.testing.assert_array_equal(drop(x).data, x.data)
    drop.p = 1.0
    np.testing.assert_array_equal(drop(x).data, np.zeros(1000, np.float32))
