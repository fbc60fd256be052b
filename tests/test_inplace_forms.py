"""The in-place forms of methods and activations (``relu_``, ``exp_``, ``addcmul_``,
``lerp_``, ``masked_fill_``, ``index_add_``, ``F.relu_``, ``F.elu_``, ...), torch's other
functional names (``upsample*``, ``*_with_indices``).  Oracle: torch on the same program:
the values written, the tensor returned being the input, the gradients through a chain
of in-place steps; the version error where torch raises."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import convgrad as cg
import convgrad.nn.functional as F

RNG = np.random.default_rng(5)


def _chain(lib, x: np.ndarray, y: np.ndarray):
    """In-place steps on non-leaves, then a backward: values and both gradients."""
    tf = torch.nn.functional if lib is torch else F
    a = lib.tensor(x, requires_grad=True)
    b = lib.tensor(y, requires_grad=True)
    c = a * 2
    c.exp_()
    d = c * 1.0
    d.addcmul_(a, b, value=0.5)
    d.addcdiv_(b, a * a + 1, value=-0.3)
    d.lerp_(b, 0.25)
    d.sigmoid_()
    e = d * 3.0
    e.masked_fill_(lib.tensor(x > 0.5, dtype=lib.bool), 0.7)
    e = e * 1.0
    e.sqrt_()
    e = e + 0.0
    e.index_add_(0, lib.tensor(np.array([1, 0, 1]), dtype=lib.int64), b[:3] * 2, alpha=0.5)
    f = e * 1.0
    tf.leaky_relu_(f, 0.1)
    g = tf.elu_(f * 1.0, 0.7) * 1.0
    g.tanh_()
    g = g - 0.4
    g.pow_(3)
    g.abs_()
    (g * lib.tensor(np.arange(g.numel(), dtype=np.float64).reshape(g.shape))).sum().backward()
    value = g.detach().numpy() if lib is torch else g.numpy()
    return value, a.grad.numpy(), b.grad.numpy()


def test_a_chain_of_in_place_steps_equals_torchs():
    x, y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    for got, want in zip(_chain(cg, x, y), _chain(torch, x, y)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,args", [("relu_", ()), ("leaky_relu_", (0.2,)),
                                       ("elu_", (0.5,)), ("celu_", (1.5,)), ("selu_", ()),
                                       ("hardtanh_", (-0.5, 0.5)), ("threshold_", (0.1, -3.0))])
def test_functional_in_place_activations_write_the_input(name, args):
    x = RNG.standard_normal((2, 3, 4))
    theirs, ours = torch.tensor(x), cg.tensor(x)
    out = getattr(F, name)(ours, *args)
    getattr(torch.nn.functional, name)(theirs, *args)
    assert out is ours
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14, atol=1e-15)


def test_in_place_methods_write_the_tensor_and_refuse_a_leaf():
    x = RNG.standard_normal(5)
    for name, args in (("relu_", ()), ("exp_", ()), ("square_", ()), ("abs_", ()),
                       ("neg_", ()), ("pow_", (3,)), ("nan_to_num_", ())):
        theirs, ours = torch.tensor(x), cg.tensor(x)
        assert getattr(ours, name)(*args) is ours
        getattr(theirs, name)(*args)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14)
    leaf = cg.tensor(x, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.relu_()
    with cg.no_grad():
        leaf.relu_()
    np.testing.assert_array_equal(leaf.numpy(), np.maximum(x, 0))


def test_writing_a_saved_output_in_place_is_the_version_error():
    """``relu_`` keeps its output for the backward; writing it again is refused, as torch."""
    a = cg.tensor(RNG.standard_normal(3), requires_grad=True)
    c = a * 1.0
    c.relu_()
    c.addcmul_(a, a)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_other_functional_names_equal_torchs():
    x = RNG.standard_normal((2, 3, 6, 6))
    tf = torch.nn.functional
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = [(F.upsample(cg.tensor(x), size=(9, 9)), tf.upsample(torch.tensor(x), size=(9, 9))),
                 (F.upsample_nearest(cg.tensor(x), scale_factor=2),
                  tf.upsample_nearest(torch.tensor(x), scale_factor=2)),
                 (F.upsample_bilinear(cg.tensor(x), scale_factor=2),
                  tf.upsample_bilinear(torch.tensor(x), scale_factor=2))]
    for got, want in pairs:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)
    with pytest.warns(UserWarning, match="deprecated"):
        F.upsample(cg.tensor(x), scale_factor=2)
    for ours, theirs, arg in ((F.max_pool1d_with_indices, tf.max_pool1d_with_indices, 2),
                              (F.max_pool2d_with_indices, tf.max_pool2d_with_indices, 2),
                              (F.adaptive_max_pool2d_with_indices,
                               tf.adaptive_max_pool2d_with_indices, 4)):
        xx = x[0] if ours is F.max_pool1d_with_indices else x
        (v, i), (tv, ti) = ours(cg.tensor(xx), arg), theirs(torch.tensor(xx), arg)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
    v, i = F.max_pool3d_with_indices(cg.tensor(x[:, :, None]), (1, 2, 2))
    tv, ti = tf.max_pool3d_with_indices(torch.tensor(x[:, :, None]), (1, 2, 2))
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


def test_a_composed_in_place_step_reads_the_old_values():
    """An in-place form composed of several operations (here ``t * t + 1``, whose product
    reads t) differentiates the values it read, not the ones it wrote."""
    x = RNG.standard_normal(4)
    a = cg.tensor(x, requires_grad=True)
    c = a * 1.0
    c._apply_("square_plus_one_", lambda t: t * t + 1)
    c.sum().backward()
    np.testing.assert_allclose(c.numpy(), x * x + 1, rtol=1e-15)
    np.testing.assert_allclose(a.grad.numpy(), 2 * x, rtol=1e-15)
