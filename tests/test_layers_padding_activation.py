"""Padding layers and the piecewise activations against torch (values, gradients, repr)."""

import numpy as np
import pytest
import torch

import convgrad as cg

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("name,args", [
    ("ReflectionPad1d", (2,)), ("ReflectionPad2d", ((1, 2, 0, 3),)), ("ReflectionPad3d", (1,)),
    ("ReplicationPad1d", ((3, 1),)), ("ReplicationPad2d", (2,)), ("ReplicationPad3d", (1,)),
    ("ZeroPad1d", (2,)), ("ZeroPad2d", ((1, 0, 2, 1),)), ("ZeroPad3d", (1,)),
    ("ConstantPad1d", (2, 3.5)), ("ConstantPad2d", (1, -1.0)), ("ConstantPad3d", (1, 2.0)),
    ("CircularPad1d", ((2, 1),)), ("CircularPad2d", ((1, 2, 0, 3),)), ("CircularPad3d", (1,)),
])
def test_padding_layers_equal_torchs(name, args):
    nd = int(name[-2])
    a = RNG.standard_normal((2, 3) + (5,) * nd).astype(np.float32)
    m, tm = getattr(cg.nn, name)(*args), getattr(torch.nn, name)(*args)
    x, t = cg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, z = m(x), tm(t)
    np.testing.assert_array_equal(y.numpy(), z.detach().numpy())
    w = RNG.standard_normal(tuple(z.shape)).astype(np.float32)
    (y * cg.tensor(w)).sum().backward()
    (z * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert m.padding == tm.padding


@pytest.mark.parametrize("name,args", [("Hardtanh", (-0.5, 0.7)), ("ReLU6", ()),
                                       ("Hardswish", ()), ("Mish", ()), ("PReLU", ()),
                                       ("PReLU", (3, 0.1)), ("LeakyReLU", (0.2,))])
def test_activation_layers_equal_torchs(name, args):
    a = (RNG.standard_normal((4, 3, 5)) * 4).astype(np.float32)
    m, tm = getattr(cg.nn, name)(*args), getattr(torch.nn, name)(*args)
    x, t = cg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, z = m(x), tm(t)
    np.testing.assert_allclose(y.numpy(), z.detach().numpy(), rtol=1e-5, atol=1e-6)
    w = RNG.standard_normal(a.shape).astype(np.float32)
    (y * cg.tensor(w)).sum().backward()
    (z * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)
    if name == "PReLU":
        np.testing.assert_allclose(m.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-4)
        assert repr(m) == repr(tm)
