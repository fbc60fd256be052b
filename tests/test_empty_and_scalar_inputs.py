"""Empty and 0-d inputs behave as torch: softmax of a 0-d tensor or an empty dim, padding
modes on an empty batch, replicate padding whose negative pad crops a dim to nothing,
BatchNorm training on an empty batch, losses whose every target is ignored."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import convgrad as cg
import convgrad.functional as F


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((), 0), ((), -1), ((0, 3), 1), ((2, 0), 1), ((2, 0), 0)])
def test_softmax_of_empty_and_0d_tensors(fn, shape, dim):
    a = np.full(shape, 0.5, np.float32)
    x, t = cg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, z = getattr(F, fn)(input=x, dim=dim), getattr(TF, fn)(input=t, dim=dim)
    assert y.shape == tuple(z.shape)
    np.testing.assert_allclose(y.numpy(), z.detach().numpy())
    y.sum().backward()
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-7)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
def test_padding_an_empty_batch(mode):
    ours = F.pad(cg.zeros(0, 3, 4, 4), (1, 2, 2, 1), mode=mode)
    assert ours.shape == tuple(TF.pad(torch.zeros(0, 3, 4, 4), (1, 2, 2, 1), mode=mode).shape)
    m = cg.nn.Conv2d(3, 2, 3, padding=1, padding_mode=mode if mode != "constant" else "zeros")
    assert m(cg.zeros(0, 3, 4, 4)).shape == (0, 2, 4, 4)


@pytest.mark.parametrize("pads", [(-3, 2, 0, 0), (1, -3, -1, 2), (-2, 0, 0, 0)])
def test_replicate_padding_whose_negative_pad_crops_everything(pads):
    a = np.arange(6.0, dtype=np.float32).reshape(1, 1, 2, 3)
    x, t = cg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, z = F.pad(x, pads, mode="replicate"), TF.pad(t, pads, mode="replicate")
    np.testing.assert_array_equal(y.numpy(), z.detach().numpy())
    w = np.arange(np.prod(z.shape), dtype=np.float32).reshape(z.shape)
    (y * cg.tensor(w)).sum().backward()
    (z * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 4, 4)])
def test_batchnorm_training_on_an_empty_batch(shape):
    name = "BatchNorm1d" if len(shape) == 2 else "BatchNorm2d"
    m, tm = getattr(cg.nn, name)(3), getattr(torch.nn, name)(3)
    x, t = cg.zeros(*shape, requires_grad=True), torch.zeros(*shape, requires_grad=True)
    y, z = m(x), tm(t)
    assert y.shape == tuple(z.shape)
    y.sum().backward()
    z.sum().backward()
    np.testing.assert_array_equal(m.running_mean, tm.running_mean.numpy())
    np.testing.assert_array_equal(m.running_var, tm.running_var.numpy())
    assert x.grad.shape == tuple(t.grad.shape)
    np.testing.assert_array_equal(m.weight.grad.numpy(), tm.weight.grad.numpy())


@pytest.mark.parametrize("fn,kw", [("cross_entropy", {}), ("nll_loss", {"ignore_index": 1}),
                                   ("cross_entropy", {"weight": [1.0, 2.0, 0.5, 1.0]})])
def test_every_target_ignored_gives_nan_and_a_zero_gradient(fn, kw):
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    target = np.array([1, 1, 1] if "ignore_index" in kw else [-100] * 3)
    x, t = cg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ck = {k: (cg.tensor(v) if k == "weight" else v) for k, v in kw.items()}
    tk = {k: (torch.tensor(v) if k == "weight" else v) for k, v in kw.items()}
    y = getattr(F, fn)(x, cg.tensor(target, dtype=cg.int64), **ck)
    z = getattr(TF, fn)(t, torch.tensor(target), **tk)
    assert np.isnan(y.item()) and np.isnan(z.item())
    y.backward()
    z.backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_forward_argument_names_as_torchs():
    lin = cg.nn.Linear(2, 3)
    assert lin(input=cg.zeros(1, 2)).shape == (1, 3)
    assert F.relu(input=cg.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
