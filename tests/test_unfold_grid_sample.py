"""F.unfold/fold, nn.Unfold/Fold, F.affine_grid and F.grid_sample against torch: values
and the gradients of every input."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import convgrad as cg
import convgrad.functional as F

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3, 7, 8)).astype(np.float32)


def _grads(f_cg, f_t, *arrays):
    ours = [cg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, z = f_cg(*ours), f_t(*theirs)
    np.testing.assert_allclose(y.detach().numpy(), z.detach().numpy(), rtol=1e-5, atol=2e-6)
    w = RNG.standard_normal(tuple(z.shape)).astype(np.float32)
    (y * cg.tensor(w)).sum().backward()
    (z * torch.tensor(w)).sum().backward()
    for o, t in zip(ours, theirs):
        got = np.zeros_like(t.grad.numpy()) if o.grad is None else o.grad.numpy()
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=(2, 3), dilation=(1, 2),
                                                          padding=1, stride=(2, 1))])
def test_unfold_and_fold_equal_torchs(kw):
    _grads(lambda x: F.unfold(x, **kw), lambda x: TF.unfold(x, **kw), A)
    cols = TF.unfold(torch.tensor(A), **kw).numpy()
    _grads(lambda c: F.fold(c, (7, 8), **kw), lambda c: TF.fold(c, (7, 8), **kw), cols)
    m, tm = cg.nn.Unfold(**kw), torch.nn.Unfold(**kw)
    np.testing.assert_array_equal(m(cg.tensor(A)).numpy(), tm(torch.tensor(A)).numpy())
    f, tf = cg.nn.Fold((7, 8), **kw), torch.nn.Fold((7, 8), **kw)
    np.testing.assert_allclose(f(cg.tensor(cols)).numpy(), tf(torch.tensor(cols)).numpy(),
                               rtol=1e-6)
    assert repr(m) == repr(tm) and repr(f) == repr(tf)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_affine_grid_and_grid_sample_equal_torchs(align, mode, padding_mode):
    theta = (RNG.standard_normal((2, 2, 3)) * 0.8).astype(np.float32)

    def ours(x, th):
        return F.grid_sample(x, F.affine_grid(th, (2, 3, 5, 6), align_corners=align), mode,
                             padding_mode, align)

    def theirs(x, th):
        return TF.grid_sample(x, TF.affine_grid(th, (2, 3, 5, 6), align_corners=align), mode,
                              padding_mode, align)
    _grads(ours, theirs, A, theta)


def test_grid_sample_checks_its_arguments():
    with pytest.raises(ValueError, match="mode='bicubic'"):
        F.grid_sample(cg.tensor(A), cg.zeros(2, 3, 3, 2), mode="bicubic")
    with pytest.raises(TypeError, match="float64"):
        F.grid_sample(cg.tensor(A), cg.zeros(2, 3, 3, 2, dtype=cg.float64))
