"""torch's elementwise math beyond the core operators (``log1p``, trigonometric and
hyperbolic functions, ``erf``, rounding, ``sign``, ``minimum``/``maximum``, the
predicates) and torch's function forms of Tensor methods (``cg.log1p(x)``, ``cg.mm``).
Oracle: torch 2.13: values, first and second derivatives in float64, float32 within 2x
torch's own float32 error against float64."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
from convgrad.tensor.functions import METHOD_FORMS

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(17)

UNARY = {  # name -> input range
    "log1p": (-0.9, 5.0), "expm1": (-5.0, 5.0), "sin": (-6.0, 6.0), "cos": (-6.0, 6.0),
    "tan": (-1.4, 1.4), "atan": (-6.0, 6.0), "sinh": (-4.0, 4.0), "cosh": (-4.0, 4.0),
    "erf": (-3.0, 3.0),
}


def _grads(lib, name, x_np, dtype, order2=False):
    t = lib.tensor(x_np.astype(dtype), requires_grad=True)
    y = getattr(lib, name)(t)
    g = np.linspace(0.5, 1.5, x_np.size).reshape(x_np.shape).astype(dtype)
    (dx,) = lib.autograd.grad(y, t, lib.tensor(g), create_graph=order2)
    out = [y.detach().numpy(), dx.detach().numpy()]
    if order2:
        (ddx,) = lib.autograd.grad(dx.sum(), t)
        out.append(ddx.numpy())
    return out


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_against_torch(name):
    lo, hi = UNARY[name]
    x = RNG.uniform(lo, hi, (7, 9))
    mine64, theirs64 = _grads(cg, name, x, np.float64, True), _grads(torch, name, x,
                                                                     np.float64, True)
    for m, t in zip(mine64, theirs64):
        np.testing.assert_allclose(m, t, rtol=1e-12, atol=1e-14)
    mine32, theirs32 = _grads(cg, name, x, np.float32), _grads(torch, name, x, np.float32)
    for m, t, ref in zip(mine32, theirs32, theirs64):
        scale = np.abs(ref).max()
        torch_err = np.abs(t - ref).max() / scale
        assert m.dtype == np.float32
        assert np.abs(m - ref).max() / scale <= 2 * max(torch_err, 2.0 ** -24)
    # an integer input is computed in float32, as torch
    ints = np.arange(-2, 3) if name not in ("log1p",) else np.arange(0, 5)
    np.testing.assert_allclose(getattr(cg, name)(cg.tensor(ints)).numpy(),
                               getattr(torch, name)(torch.tensor(ints)).numpy(), rtol=1e-6)
    assert getattr(cg, name)(cg.tensor(ints)).dtype == cg.float32


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "sign"])
def test_stepwise_functions_have_zero_gradient_as_torch(name):
    x = np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 2.7, -3.2, np.nan, np.inf])
    for dtype in (np.float32, np.float64):
        t = cg.tensor(x.astype(dtype), requires_grad=True)
        y = getattr(t, name)()
        ty = getattr(torch.tensor(x.astype(dtype)), name)()
        np.testing.assert_array_equal(y.numpy(), ty.numpy())
        np.testing.assert_array_equal(np.signbit(y.numpy()), np.signbit(ty.numpy()))
        y.backward(cg.tensor(np.full(x.shape, np.nan, dtype)))  # torch's zeros, even here
        assert not np.any(t.grad.numpy())
    ints = np.array([-3, 0, 4])
    assert getattr(cg.tensor(ints), name)().numpy().tolist() == getattr(
        torch.tensor(ints), name)().tolist()
    if name == "round":
        v = np.array([1.2345, -2.5678])
        np.testing.assert_allclose(cg.tensor(v).round(decimals=2).numpy(),
                                   torch.tensor(v).round(decimals=2).numpy())


@pytest.mark.parametrize("fn", ["maximum", "minimum"])
def test_maximum_minimum_ties_nan_broadcast_as_torch(fn):
    """Elementwise max/min with broadcasting: NaN wins, a tie sends half the gradient to
    each side (torch's rule), a number as the other operand."""
    a = np.array([[1.0, 2.0, np.nan, 3.0], [0.5, -1.0, 4.0, np.nan]])
    b = np.array([1.0, 5.0, 0.0, np.nan])
    ca, cb = cg.tensor(a, requires_grad=True), cg.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    y, ty = getattr(cg, fn)(ca, cb), getattr(torch, fn)(ta, tb)
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    g = np.arange(1.0, 9.0).reshape(2, 4)
    y.backward(cg.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(ca.grad.numpy(), ta.grad.numpy())
    np.testing.assert_array_equal(cb.grad.numpy(), tb.grad.numpy())
    x = cg.tensor(np.array([-1.0, 0.5, 2.0], np.float32), requires_grad=True)
    z = getattr(x, fn)(0.5)
    assert z.dtype == cg.float32
    tz = getattr(torch, fn)(torch.tensor([-1.0, 0.5, 2.0]), torch.tensor(0.5))
    np.testing.assert_array_equal(z.numpy(), tz.numpy())
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [float(fn == "minimum"), 0.5,
                                                   float(fn == "maximum")])


def test_predicates():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    for name in ("isnan", "isinf", "isfinite"):
        y = getattr(cg, name)(cg.tensor(x))
        assert y.dtype == cg.bool
        assert y.numpy().tolist() == getattr(torch, name)(torch.tensor(x)).tolist()


def test_function_forms_are_the_methods():
    """Each of torch's function forms of a Tensor method that convgrad provides exists at
    the top level and equals the method (pytorch/examples' forward-forward MNIST calls
    ``torch.mm`` and ``torch.log1p``); an unknown name stays an AttributeError."""
    for name in METHOD_FORMS:
        assert hasattr(torch, name), name
        assert hasattr(cg.Tensor, name), name
        assert callable(getattr(cg, name))
    a = RNG.standard_normal((3, 4))
    b = RNG.standard_normal((4, 2))
    np.testing.assert_allclose(cg.mm(cg.tensor(a), cg.tensor(b)).numpy(),
                               torch.mm(torch.tensor(a), torch.tensor(b)).numpy())
    np.testing.assert_allclose(cg.log1p(a.__abs__()).numpy(), np.log1p(np.abs(a)))
    assert cg.argmax(cg.tensor(a), 1).tolist() == torch.argmax(torch.tensor(a), 1).tolist()
    np.testing.assert_allclose(cg.softmax(cg.tensor(a), 1).numpy(),
                               torch.softmax(torch.tensor(a), 1).numpy(), rtol=1e-12)
    with pytest.raises(AttributeError, match="no_such"):
        cg.no_such_function  # noqa: B018


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("diagonal", [-1, 0, 2])
def test_triangles_equal_torchs(name, diagonal):
    x = RNG.standard_normal((2, 4, 5))
    results = []
    for lib in (torch, cg):
        t = lib.tensor(x, requires_grad=True)
        y = getattr(lib, name)(t, diagonal)
        (g,) = lib.autograd.grad((y * y).sum(), t, create_graph=True)
        (h,) = lib.autograd.grad((g * t).sum(), t)
        results.append([a.detach().numpy() for a in (y, g, h)] +
                       [getattr(lib.ones(3, 3), name)(diagonal).detach().numpy()])
    for o, e in zip(results[1], results[0]):
        np.testing.assert_array_equal(o, e)
    with pytest.raises(ValueError, match="tril: input of shape \\(3,\\) must have at least 2"):
        cg.tril(cg.ones(3))
    with pytest.raises(TypeError, match="triu: diagonal=0.5 must be an int"):
        cg.ones(2, 2).triu(0.5)
