"""SELU, CELU, Softsign, Tanhshrink, LogSigmoid, GLU, Hardsigmoid, Threshold, Hardshrink,
Softshrink, Softmin, LogSoftmax and Softmax2d against torch.

Oracle: torch float64.  convgrad's float32 output and input gradient are within twice
torch float32's error on the same values (relative 2-norm); second derivatives in
float64 equal torch float64's; special values (NaN, infinities, signed zeros,
boundaries) give torch float32's results; ``repr`` and the errors for bad arguments as
torch's.
"""

import numpy as np
import pytest
import torch

import convgrad as cg
import convgrad.functional as F

RNG = np.random.default_rng(11)

#: (layer name, constructor args, whether its input needs an even last dim)
LAYERS = [
    ("SELU", ()), ("CELU", (0.7,)), ("CELU", (1.0,)), ("Softsign", ()), ("Tanhshrink", ()),
    ("LogSigmoid", ()), ("GLU", ()), ("GLU", (1,)), ("Hardsigmoid", ()),
    ("Threshold", (0.1, -2.0)), ("Hardshrink", ()), ("Hardshrink", (1.2,)),
    ("Softshrink", ()), ("Softshrink", (0.9,)), ("Softmin", (1,)), ("LogSoftmax", (-1,)),
    ("Softmax2d", ()),
]


def _input(dtype=np.float32):
    return (RNG.standard_normal((3, 4, 6, 8)) * 3).astype(dtype)


def _err(ours, exact, theirs):
    """Relative 2-norm errors (a max-norm ratio of two equally accurate float32 results
    strays past 2 in a few draws in a hundred; the 2-norm's does not)."""
    scale = max(float(np.linalg.norm(exact)), 1e-30)
    return (float(np.linalg.norm(ours - exact)) / scale,
            float(np.linalg.norm(theirs - exact)) / scale)


def _torch_run(name, args, a, w, dtype):
    t = torch.tensor(a, dtype=dtype, requires_grad=True)
    y = getattr(torch.nn, name)(*args)(t)
    (y * torch.tensor(w, dtype=dtype)).sum().backward()
    return y.detach().double().numpy(), t.grad.double().numpy()


@pytest.mark.parametrize("name, args", LAYERS)
def test_float32_output_and_gradient_within_twice_torchs_error(name, args):
    a = _input()
    layer = getattr(cg.nn, name)(*args)
    x = cg.tensor(a, requires_grad=True)
    y = layer(x)
    w = RNG.standard_normal(y.shape).astype(np.float32)
    (y * cg.tensor(w)).sum().backward()
    assert y.dtype == np.float32 and x.grad.dtype == np.float32
    exact = _torch_run(name, args, a, w, torch.float64)
    theirs = _torch_run(name, args, a, w, torch.float32)
    for ours, e, t in zip((y.numpy(), x.grad.numpy()), exact, theirs):
        err, torch_err = _err(ours.astype(np.float64), e, t)
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)
    assert repr(layer) == repr(getattr(torch.nn, name)(*args))


@pytest.mark.parametrize("name, args", LAYERS)
def test_second_derivatives_equal_torchs_in_float64(name, args):
    """create_graph through each layer.  The piecewise-linear ones' gradient is a mask
    times g, constant in x: it records no function of x (torch's graph gives a zero second
    derivative).  CELU with alpha != 1 and Hardsigmoid: torch's float64 backwards use
    float32 constants (1 / alpha, 1 / 6: 3e-8 relative off the exact gradient), so they are
    compared at 1e-6."""
    a = _input(np.float64)
    x = cg.tensor(a, requires_grad=True)
    y = getattr(cg.nn, name)(*args)(x)
    w = RNG.standard_normal(y.shape)
    (gx,) = cg.autograd.grad((y * cg.tensor(w)).sum(), x, create_graph=True)
    t = torch.tensor(a, requires_grad=True)
    (tgx,) = torch.autograd.grad((getattr(torch.nn, name)(*args)(t) * torch.tensor(w)).sum(),
                                 t, create_graph=True)
    tol = 1e-6 if (name == "CELU" and args != (1.0,)) or name == "Hardsigmoid" else 1e-12
    np.testing.assert_allclose(gx.numpy(), tgx.detach().numpy(), rtol=tol, atol=tol)
    if not gx.requires_grad:
        assert name in ("Hardsigmoid", "Threshold", "Hardshrink", "Softshrink")
        if name != "Hardsigmoid":  # torch has no second derivative of hardsigmoid
            (tggx,) = torch.autograd.grad((tgx * tgx).sum(), t, allow_unused=True)
            assert tggx is None or not tggx.abs().max().item()
        return
    (tggx,) = torch.autograd.grad((tgx * tgx).sum(), t)
    (ggx,) = cg.autograd.grad((gx * gx).sum(), x)
    np.testing.assert_allclose(ggx.numpy(), tggx.numpy(), rtol=100 * tol, atol=100 * tol)


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -3.0, 3.0, 0.5, -0.5, 0.1, -1.2,
                    1.2, 0.9, -0.9, 88.0, -88.0, 1e-30, -1e-30], np.float32)


@pytest.mark.parametrize("name, args", [
    ("selu", ()), ("celu", (0.7,)), ("softsign", ()), ("tanhshrink", ()),
    ("hardsigmoid", ()), ("threshold", (0.1, -2.0)), ("hardshrink", ()),
    ("hardshrink", (1.2,)), ("softshrink", ()), ("softshrink", (0.9,))])
def test_special_values_as_torch(name, args):
    """NaN stays NaN, infinities and the pieces' boundaries (a value equal to lambd,
    threshold, -3 or 3) take torch's piece; signed zeros as torch's, except SELU's -0 (its
    ELU gives +0 where torch's gives -0) and Softshrink's (torch's own differ between its
    vectorised and scalar loops)."""
    ours = getattr(F, name)(cg.tensor(SPECIAL), *args).numpy()
    theirs = getattr(torch.nn.functional, name)(torch.from_numpy(SPECIAL), *args).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    ok = ~np.isnan(theirs)
    if name == "selu":
        ok &= SPECIAL != 0
    np.testing.assert_allclose(ours[ok], theirs[ok], rtol=2e-7, atol=0)
    if name not in ("selu", "softshrink"):
        assert np.array_equal(np.signbit(ours[ok & (theirs == 0)]),
                              np.signbit(theirs[ok & (theirs == 0)]))


def test_boundary_gradients_take_torchs_piece():
    """At a piece's boundary the gradient is torch's: Hardsigmoid's 0 at +-3, Threshold's
    0 at the threshold, Hardshrink's 0 at +-lambd, Softshrink's 0 at +-lambd."""
    b = np.array([-3.0, 3.0, 0.1, 0.5, -0.5, 0.9, -0.9], np.float32)
    for name, args in [("hardsigmoid", ()), ("threshold", (0.1, -2.0)), ("hardshrink", ()),
                       ("softshrink", (0.9,))]:
        x = cg.tensor(b, requires_grad=True)
        getattr(F, name)(x, *args).sum().backward()
        t = torch.tensor(b, requires_grad=True)
        getattr(torch.nn.functional, name)(t, *args).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy(), err_msg=name)


def test_bad_arguments_raise_errors_naming_them():
    x = cg.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"softshrink: lambd=-0\.5 must be >= 0"):
        F.softshrink(x, -0.5)
    with pytest.raises(ValueError, match=r"Softshrink|softshrink"):
        cg.nn.Softshrink(-1.0)
    with pytest.raises(ValueError, match=r"celu: alpha=0 divides by zero"):
        cg.nn.CELU(0.0)
    with pytest.raises(ValueError, match=r"glu: dim 1 .* size 3; expected an even size"):
        F.glu(x, 1)
    with pytest.raises(ValueError, match=r"glu: dim=2 must be an int in \[-2, 1\]"):
        F.glu(x, 2)
    with pytest.raises(TypeError, match=r"threshold"):
        F.threshold(x, "a", 1.0)
    with pytest.raises(ValueError, match=r"Softmax2d: input of shape \(2, 3\) must be"):
        cg.nn.Softmax2d()(x)
    # torch's legacy dim for Softmin / LogSoftmax without dim, with a warning
    a = _input()
    with pytest.warns(UserWarning, match="LogSoftmax: dim=None"):
        y = cg.nn.LogSoftmax()(cg.tensor(a))
    np.testing.assert_allclose(y.numpy(), torch.log_softmax(torch.from_numpy(a), 1).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_rrelu_is_torchs():
    """Evaluation: torch's (the mean slope), value and gradient; training: each negative
    element scaled by its own slope in [lower, upper], the gradient that slope, positive
    ones untouched."""
    x = np.random.default_rng(5).standard_normal(5000)
    x[:3] = [0.0, -0.0, np.nan]
    ours = cg.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    y = cg.nn.functional.rrelu(ours, 0.1, 0.3)
    t = torch.nn.functional.rrelu(theirs, 0.1, 0.3, training=False)
    np.testing.assert_array_equal(y.numpy(), t.detach().numpy())
    y.sum().backward()
    t.sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy()[3:], theirs.grad.numpy()[3:])
    layer = cg.nn.RReLU(0.1, 0.3)
    assert repr(layer) == repr(torch.nn.RReLU(0.1, 0.3))
    xt = cg.tensor(x[3:], requires_grad=True)
    z = layer(xt)
    z.sum().backward()
    neg = x[3:] <= 0
    slopes = z.numpy()[neg] / x[3:][neg]
    assert (slopes >= 0.1 - 1e-12).all() and (slopes <= 0.3 + 1e-12).all()
    assert slopes.std() > 0.03  # random, not the mean
    np.testing.assert_allclose(xt.grad.numpy()[neg], slopes, rtol=1e-12)
    np.testing.assert_array_equal(z.numpy()[~neg], x[3:][~neg])
    layer.eval()
    np.testing.assert_array_equal(layer(cg.tensor(x)).numpy(), y.numpy())
    with pytest.raises(ValueError, match="lower=0.5 must be <= upper=0.2"):
        cg.nn.RReLU(0.5, 0.2)
