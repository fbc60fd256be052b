"""``convgrad.autograd.functional`` (vjp, jvp, jacobian, hessian, vhp, hvp) and the
``convgrad.func`` transforms (grad, grad_and_value, vjp, jacrev, jacfwd, hessian).

Oracle: torch's ``torch.autograd.functional`` and ``torch.func`` on the same float64
values, to rounding, with the same tuple nesting of results; ``create_graph=True``
results differentiated once more against torch's; strict-mode and argument errors.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.autograd.functional as TF

import convgrad as cg
import convgrad.func as CF

AF = cg.autograd.functional

RNG = np.random.default_rng(7)
A = RNG.standard_normal((2, 3))
B = RNG.standard_normal(3)


def one_in_one_out(x):
    return (x.sin() * x).sum(1)


def two_in_two_out(x, y):
    return (x * y).exp(), (x @ y).tanh()


def scalar_of_one(x):
    return (x.sin() * x).sum() ** 2


def scalar_of_two(x, y):
    return ((x.cos() * y).sum() * (y * y).sum()).tanh()


def _ours(*arrays, requires_grad=False):
    out = tuple(cg.tensor(a, requires_grad=requires_grad) for a in arrays)
    return out if len(out) > 1 else out[0]


def _theirs(*arrays, requires_grad=False):
    out = tuple(torch.tensor(a, requires_grad=requires_grad) for a in arrays)
    return out if len(out) > 1 else out[0]


def _same(got, want):
    """Equal values to 1e-12 and the same nesting of tuples."""
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple), type(got)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert isinstance(got, cg.Tensor), type(got)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype == want.detach().numpy().dtype
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)


ONE, TWO = (A,), (A, B)


@pytest.mark.parametrize("func, arrays", [(one_in_one_out, ONE), (two_in_two_out, TWO)])
def test_jacobian_matches_torch(func, arrays):
    _same(AF.jacobian(func, _ours(*arrays)), TF.jacobian(func, _theirs(*arrays)))
    # a tuple of one input gives a tuple level, as in torch
    if len(arrays) == 1:
        _same(AF.jacobian(func, (_ours(*arrays),)), TF.jacobian(func, (_theirs(*arrays),)))
    _same(AF.jacobian(func, _ours(*arrays), vectorize=True, strategy="forward-mode"),
          TF.jacobian(func, _theirs(*arrays), vectorize=True, strategy="forward-mode"))


@pytest.mark.parametrize("func, arrays", [(one_in_one_out, ONE), (two_in_two_out, TWO)])
def test_vjp_and_jvp_match_torch(func, arrays):
    outs = func(*[torch.tensor(a) for a in arrays])
    outs_t = outs if isinstance(outs, tuple) else (outs,)
    v_out = tuple(RNG.standard_normal(tuple(o.shape)) for o in outs_t)
    v_in = tuple(RNG.standard_normal(a.shape) for a in arrays)
    _same(AF.vjp(func, _ours(*arrays), _ours(*v_out)),
          TF.vjp(func, _theirs(*arrays), _theirs(*v_out)))
    _same(AF.jvp(func, _ours(*arrays), _ours(*v_in)),
          TF.jvp(func, _theirs(*arrays), _theirs(*v_in)))


@pytest.mark.parametrize("func, arrays", [(scalar_of_one, ONE), (scalar_of_two, TWO)])
def test_hessian_vhp_hvp_match_torch(func, arrays):
    _same(AF.hessian(func, _ours(*arrays)), TF.hessian(func, _theirs(*arrays)))
    v = tuple(RNG.standard_normal(a.shape) for a in arrays)
    for ours, theirs in ((AF.vhp, TF.vhp), (AF.hvp, TF.hvp), (AF.vjp, TF.vjp)):
        if ours is AF.vjp:  # v=None for a single-element output
            _same(ours(func, _ours(*arrays)), theirs(func, _theirs(*arrays)))
            continue
        _same(ours(func, _ours(*arrays), _ours(*v)), theirs(func, _theirs(*arrays),
                                                             _theirs(*v)))


def test_v_none_for_a_single_element_input():
    x = np.array([0.7])
    f = lambda t: (t * t.exp(), t.sin())  # noqa: E731
    _same(AF.jvp(f, _ours(x)), TF.jvp(f, _theirs(x)))
    g = lambda t: (t ** 3).sum()  # noqa: E731
    _same(AF.hvp(g, _ours(x)), TF.hvp(g, _theirs(x)))
    _same(AF.vhp(g, _ours(x)), TF.vhp(g, _theirs(x)))


def test_create_graph_allows_a_further_gradient():
    w = RNG.standard_normal((2, 3, 2, 3))
    xc, xt = _ours(A, requires_grad=True), _theirs(A, requires_grad=True)
    hc = AF.hessian(scalar_of_one, xc, create_graph=True)
    ht = TF.hessian(scalar_of_one, xt, create_graph=True)
    _same(hc, ht)
    (gc,) = cg.grad((hc * cg.tensor(w)).sum(), xc)
    (gt,) = torch.autograd.grad((ht * torch.tensor(w)).sum(), xt)
    _same(gc, gt)
    vc, vt = _ours(B), _theirs(B)
    jc = AF.jvp(lambda t: t.sin() * t, xc[0], vc, create_graph=True)[1]
    jt = TF.jvp(lambda t: t.sin() * t, xt[0], vt, create_graph=True)[1]
    _same(cg.grad(jc.sum(), xc)[0], torch.autograd.grad(jt.sum(), xt)[0])
    # without create_graph the results are detached
    assert not AF.hessian(scalar_of_one, xc)[0].requires_grad


def test_independent_inputs_give_zeros_or_strict_errors():
    f = lambda x, y: x * 2  # noqa: E731  (y unused)
    xs, ts = _ours(A, B), _theirs(A, B)
    _same(AF.jacobian(f, xs), TF.jacobian(f, ts))
    _same(AF.vjp(f, xs, _ours(A)), TF.vjp(f, ts, _theirs(A)))
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.jacobian(f, xs, strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(f, xs, _ours(A), strict=True)
    constant = lambda x: cg.ones(3, dtype=cg.float64)  # noqa: E731
    _same(AF.jacobian(constant, _ours(B)),
          TF.jacobian(lambda x: torch.ones(3, dtype=torch.float64), _theirs(B)))
    for fn in (AF.jacobian, AF.jvp, AF.vjp):
        with pytest.raises(RuntimeError, match="output 0"):
            fn(constant, _ours(B), **({} if fn is AF.jacobian else {"v": _ours(B)}),
               strict=True)
    linear = lambda x: (x * 3.0).sum()  # noqa: E731  (a zero Hessian)
    _same(AF.hessian(linear, _ours(B)), TF.hessian(linear, _theirs(B)))
    for fn in (AF.hessian, AF.hvp, AF.vhp):
        with pytest.raises(RuntimeError, match="jacobian"):
            fn(linear, _ours(B), **({} if fn is AF.hessian else {"v": _ours(B)}), strict=True)


def test_argument_errors():
    x = _ours(B)
    with pytest.raises(TypeError, match="inputs must be a Tensor or a tuple of Tensors"):
        AF.jacobian(one_in_one_out, [x])
    with pytest.raises(TypeError, match="outputs of the user-provided function"):
        AF.vjp(lambda t: 3.0, x)
    with pytest.raises(ValueError, match="v=None is allowed only"):
        AF.vjp(lambda t: t * 2, x)
    with pytest.raises(ValueError, match="v is a tuple of invalid length: should be 2"):
        AF.jvp(two_in_two_out, _ours(A, B), (_ours(A),))
    with pytest.raises(ValueError, match=r"entry 0 in v has invalid size: should be \(3,\)"):
        AF.vjp(lambda t: t * 2, x, _ours(A))
    with pytest.raises(ValueError, match="strategy='sideways'"):
        AF.jacobian(one_in_one_out, x, strategy="sideways")
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        AF.jacobian(one_in_one_out, x, strategy="forward-mode")
    with pytest.raises(ValueError, match="strict=True and vectorize=True"):
        AF.jacobian(one_in_one_out, x, strict=True, vectorize=True)
    with pytest.raises(ValueError, match="single element"):
        AF.hessian(lambda t: t * 2, x)
    with pytest.raises(ValueError, match="single Tensor"):
        AF.vhp(lambda t: (t.sum(), t.sum()), x, x)
    with pytest.raises(TypeError, match="create_graph"):
        AF.vjp(scalar_of_one, x, create_graph="yes")
    with pytest.raises(TypeError, match="func must be callable"):
        AF.jacobian(3, x)


def test_reachable_names():
    from convgrad.autograd.functional import jacobian as imported_jacobian

    assert imported_jacobian is AF.jacobian is cg.autograd.functional.jacobian


# --- convgrad.func transforms


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0), -1])
def test_func_grad_and_hessian_match_torch(argnums):
    ours, theirs = _ours(A, B), _theirs(A, B)
    _same(CF.grad(scalar_of_two, argnums)(*ours), torch.func.grad(scalar_of_two, argnums)(*theirs))
    _same(CF.grad_and_value(scalar_of_two, argnums)(*ours),
          torch.func.grad_and_value(scalar_of_two, argnums)(*theirs))
    # (torch 2.13's jacfwd, and so its hessian, gives zeros for a negative argnums: compare
    # with the same position counted from the front, where torch's jacrev agrees)
    front = 1 if argnums == -1 else argnums
    _same(CF.hessian(scalar_of_two, argnums)(*ours),
          torch.func.hessian(scalar_of_two, front)(*theirs))
    _same(CF.jacrev(two_in_two_out, argnums)(*ours),
          torch.func.jacrev(two_in_two_out, argnums)(*theirs))
    _same(CF.jacfwd(two_in_two_out, argnums)(*ours),
          torch.func.jacfwd(two_in_two_out, front)(*theirs))


def test_func_has_aux_and_nesting():
    def with_aux(x, y):
        return scalar_of_two(x, y), (x * 2).sum()

    ours, theirs = _ours(A, B), _theirs(A, B)
    _same(CF.grad(with_aux, has_aux=True)(*ours),
          torch.func.grad(with_aux, has_aux=True)(*theirs))
    _same(CF.grad_and_value(with_aux, 1, has_aux=True)(*ours),
          torch.func.grad_and_value(with_aux, 1, has_aux=True)(*theirs))
    _same(CF.jacrev(with_aux, has_aux=True)(*ours),
          torch.func.jacrev(with_aux, has_aux=True)(*theirs))
    # grad of grad, and a transform differentiated by the engine afterwards
    _same(CF.grad(lambda t: CF.grad(scalar_of_one)(t).sum())(_ours(A)),
          torch.func.grad(lambda t: torch.func.grad(scalar_of_one)(t).sum())(_theirs(A)))
    xc, xt = _ours(A, requires_grad=True), _theirs(A, requires_grad=True)
    gc, gt = CF.grad(scalar_of_one)(xc), torch.func.grad(scalar_of_one)(xt)
    _same(cg.grad((gc * gc).sum(), xc), torch.autograd.grad((gt * gt).sum(), xt))


def test_func_vjp_matches_torch():
    ours, theirs = _ours(A, B), _theirs(A, B)
    out_c, fn_c = CF.vjp(two_in_two_out, *ours)
    out_t, fn_t = torch.func.vjp(two_in_two_out, *theirs)
    _same(out_c, out_t)
    cots = (RNG.standard_normal((2, 3)), RNG.standard_normal(2))
    _same(fn_c(_ours(*cots)), fn_t(_theirs(*cots)))
    _same(fn_c(_ours(*cots)), fn_t(_theirs(*cots)))  # callable twice
    out_c, fn_c, aux_c = CF.vjp(lambda t: (t.sin(), t.sum()), ours[1], has_aux=True)
    out_t, fn_t, aux_t = torch.func.vjp(lambda t: (t.sin(), t.sum()), theirs[1], has_aux=True)
    _same((out_c, aux_c), (out_t, aux_t))
    _same(fn_c(_ours(A[0])), fn_t(_theirs(A[0])))
    with pytest.raises(ValueError, match=r"cotangent 0 must be a Tensor of shape \(3,\)"):
        fn_c(_ours(A))


def test_func_argument_errors():
    x = _ours(B)
    with pytest.raises(ValueError, match="argnums=2 is out of range"):
        CF.grad(scalar_of_one, 2)(x)
    with pytest.raises(TypeError, match="argnums must be an int"):
        CF.jacrev(scalar_of_one, [0])(x)
    with pytest.raises(ValueError, match="names an argument twice"):
        CF.grad(scalar_of_two, (0, -2))(*_ours(A, B))
    with pytest.raises(ValueError, match="single-element Tensor"):
        CF.grad(lambda t: t * 2)(x)
    with pytest.raises(ValueError, match="pair"):
        CF.grad(scalar_of_one, has_aux=True)(x)
    with pytest.raises(TypeError, match="argument 0"):
        CF.grad(scalar_of_one)(3.0)
    with pytest.raises(TypeError, match="func must be callable"):
        CF.vjp(None, x)
    with pytest.raises(ValueError, match="randomness='often'"):
        CF.jacfwd(scalar_of_one, randomness="often")
