"""Lazy layers (``LazyLinear``, ``LazyConv*d``, ``LazyConvTranspose*d``,
``LazyBatchNorm*d``, ``LazyInstanceNorm*d``).  Oracle: torch's lazy layers (the size each
infers, the class it becomes, reprs, state-dict keys) and torch's eager layers holding
the same weights (outputs and gradients); the initialisation against convgrad's own eager
layer drawn at the same point of the stream."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import convgrad as cg

# (lazy class, constructor args, input shape, torch's eager class it becomes)
CASES = [
    ("LazyLinear", (3,), (4, 5), "Linear"),
    ("LazyLinear", (3,), (2, 6, 5), "Linear"),
    ("LazyConv1d", (4, 3), (2, 6, 9), "Conv1d"),
    ("LazyConv2d", (4, 3), (5, 8, 8), "Conv2d"),  # unbatched: in_channels = shape[0]
    ("LazyConv2d", (6, 3), (2, 4, 7, 7), "Conv2d"),
    ("LazyConv3d", (2, 2), (1, 3, 4, 4, 4), "Conv3d"),
    ("LazyConvTranspose1d", (4, 3), (2, 5, 6), "ConvTranspose1d"),
    ("LazyConvTranspose2d", (4, 2), (2, 3, 5, 5), "ConvTranspose2d"),
    ("LazyConvTranspose3d", (2, 2), (1, 3, 3, 3, 3), "ConvTranspose3d"),
    ("LazyBatchNorm1d", (), (4, 5), "BatchNorm1d"),
    ("LazyBatchNorm2d", (), (4, 3, 5, 5), "BatchNorm2d"),
    ("LazyBatchNorm3d", (), (2, 3, 2, 3, 3), "BatchNorm3d"),
    ("LazyInstanceNorm1d", (), (2, 3, 7), "InstanceNorm1d"),
    ("LazyInstanceNorm2d", (), (2, 3, 5, 5), "InstanceNorm2d"),
    ("LazyInstanceNorm3d", (), (2, 3, 2, 3, 3), "InstanceNorm3d"),
]
KW = {"LazyConv2d": {"padding": 1, "stride": 2}, "LazyConvTranspose2d": {"stride": 2}}


@pytest.mark.parametrize("name,args,shape,becomes", CASES)
def test_lazy_layers_become_torchs_eager_layers(name, args, shape, becomes):
    kw = KW.get(name, {}) if shape != (5, 8, 8) else {}
    ours, theirs = getattr(cg.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    ours_out = ours(cg.tensor(x.astype(np.float32), requires_grad=True))
    theirs(torch.tensor(x, dtype=torch.float32))
    assert type(ours) is getattr(cg.nn, becomes) and type(theirs) is getattr(torch.nn, becomes)
    assert repr(ours) == repr(theirs)
    for (k, v), (tk, tv) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert k == tk and np.shape(v) == tuple(tv.shape)
    # with torch's weights and buffers, the layer is torch's: values and gradients
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    xt = torch.tensor(x, requires_grad=True)
    xc = cg.tensor(x, requires_grad=True)
    theirs.double()
    ours_out = ours.double()(xc) if hasattr(ours, "double") else None
    t_out = theirs(xt)
    np.testing.assert_allclose(ours_out.numpy(), t_out.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    w = np.random.default_rng(0).standard_normal(t_out.shape)
    (t_out * torch.tensor(w)).sum().backward()
    (ours_out * cg.tensor(w)).sum().backward()
    np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    for (n, p), (tn, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert n == tn
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_an_unbatched_instance_norm_takes_its_channels_from_dim_0():
    """(C, L): torch's lazy instance norm reads dim 1 here and then refuses its input;
    the channels are dim 0 (as ``InstanceNorm1d`` reads them)."""
    layer = cg.nn.LazyInstanceNorm1d(dtype=cg.float64)
    x = np.random.default_rng(2).standard_normal((3, 7))
    y = layer(cg.tensor(x)).numpy()
    assert layer.num_features == 3
    want = torch.nn.InstanceNorm1d(3, affine=True, track_running_stats=True).double()(
        torch.tensor(x))
    np.testing.assert_allclose(y, want.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_an_optimiser_made_before_the_first_call_trains_the_layer():
    """The parameter objects are filled in place: the optimiser's references stay valid."""
    model = cg.nn.Sequential(cg.nn.LazyConv2d(4, 3), cg.nn.ReLU(), cg.nn.Flatten(),
                             cg.nn.LazyLinear(2))
    held = list(model.parameters())
    assert all(isinstance(p, cg.nn.UninitializedParameter) for p in held)
    opt = cg.optim.Adam(model.parameters(), lr=0.1)
    x = cg.tensor(np.random.default_rng(1).standard_normal((3, 2, 6, 6)).astype(np.float32))
    model(x).square().sum().backward()
    assert [id(p) for p in model.parameters()] == [id(p) for p in held]
    assert all(type(p) is cg.nn.Parameter for p in held)
    assert held[0].shape == (4, 2, 3, 3) and held[2].shape == (2, 64)
    before = [p.data.copy() for p in held]
    opt.step()
    assert all(np.abs(p.data - b).max() > 0 for p, b in zip(held, before))


def test_initialisation_draws_as_the_eager_layer_at_that_point():
    x = cg.tensor(np.ones((2, 5), np.float32))
    cg.manual_seed(7)
    lazy = cg.nn.LazyLinear(3)
    lazy(x)
    cg.manual_seed(7)
    eager = cg.nn.Linear(5, 3)
    np.testing.assert_array_equal(lazy.weight.numpy(), eager.weight.numpy())
    np.testing.assert_array_equal(lazy.bias.numpy(), eager.bias.numpy())


def test_loading_a_state_dict_builds_the_layers_from_its_shapes():
    """A lazy model that never ran takes torch's eager model's state dict, as torch's."""
    theirs = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, groups=2), torch.nn.BatchNorm2d(4),
                                 torch.nn.ConvTranspose2d(4, 3, 2, stride=2),
                                 torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 5)).double()
    ours = cg.nn.Sequential(cg.nn.LazyConv2d(4, 3, groups=2), cg.nn.LazyBatchNorm2d(),
                            cg.nn.LazyConvTranspose2d(3, 2, stride=2), cg.nn.Flatten(),
                            cg.nn.LazyLinear(5, dtype=cg.float64))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert type(ours[0]) is cg.nn.Conv2d and ours[0].in_channels == 2
    assert type(ours[2]) is cg.nn.ConvTranspose2d and ours[2].in_channels == 4
    assert type(ours[4]) is cg.nn.Linear and ours[4].in_features == 192
    x = np.random.default_rng(3).standard_normal((2, 2, 6, 6))
    theirs.eval()
    ours.eval()
    want = theirs(torch.tensor(x)).detach().numpy()
    # the float32 layers take the float64 weights rounded; the input rounded too
    y = cg.tensor(x.astype(np.float32))
    for m in list(ours)[:4]:
        y = m(y)
    y = ours[4](y.double())
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-5)


def test_hooks_and_the_training_mode_survive_the_first_call():
    seen = []
    layer = cg.nn.LazyLinear(2)
    layer.register_forward_hook(lambda m, args, out: seen.append(type(m).__name__))
    layer.eval()
    layer(cg.tensor(np.ones((1, 3), np.float32)))
    assert seen == ["Linear"] and not layer.training


def test_wrong_arguments_are_refused_when_the_lazy_layer_is_made():
    with pytest.raises(ValueError, match="out_features"):
        cg.nn.LazyLinear(0)
    with pytest.raises(ValueError, match="groups"):
        cg.nn.LazyConv2d(5, 3, groups=2)
    with pytest.raises(TypeError, match="bias"):
        cg.nn.LazyConv1d(4, 3, bias="yes")
    with pytest.raises(ValueError, match="momentum"):
        cg.nn.LazyBatchNorm2d(momentum=2.0)
    with pytest.raises(ValueError, match="LazyConv2d: input of shape"):
        cg.nn.LazyConv2d(4, 3)(cg.tensor(np.ones((2, 3), np.float32)))
