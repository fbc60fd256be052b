"""``F.linear`` and the layers on it (``nn.Linear``, the recurrent cells' one step).
Oracle: torch's ``F.linear`` on the same values: float64 results and gradients (second
order too) at 1e-12, float32 within twice torch's float32 error; the structure (one node,
its products in the ``matmul`` family) through the autograd graph and the profiler."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import convgrad as cg
from convgrad.ops.profiler import profile
from convgrad.tensor.linear import Linear

# (input shape, weight shape, bias shape or None): a batch, leading dims, one vector, no
# bias, a 1-d weight (no output dim), a bias broadcast from (1,)
CASES = [((5, 7), (3, 7), (3,)), ((2, 4, 7), (6, 7), (6,)), ((7,), (3, 7), (3,)),
         ((4, 7), (3, 7), None), ((4, 7), (7,), None), ((4, 7), (3, 7), (1,))]


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _run(lib, arrays: list, dtype, second_order: bool) -> list:
    """[y, dx, dw, db (, the second-order gradients)] as float64 arrays."""
    dt = dtype if lib is torch else {torch.float64: cg.float64, torch.float32: cg.float32}[
        dtype]
    ts = [None if a is None else lib.tensor(a, dtype=dt, requires_grad=True) for a in arrays]
    y = lib.nn.functional.linear(*ts)
    r = lib.tensor(_rng("r", tuple(y.shape)).standard_normal(tuple(y.shape)), dtype=dt)
    leaves = [t for t in ts if t is not None]
    grads = lib.autograd.grad((y * r).sum(), leaves, retain_graph=second_order)
    res = [y, *grads]
    if second_order:  # the rule again, recorded (create_graph), then differentiated
        grads = lib.autograd.grad((y * r).sum(), leaves, create_graph=True)
        res += grads
        second = lib.autograd.grad(sum((g * g).sum() for g in grads), leaves,
                                   allow_unused=True)
        res += [lib.zeros_like(t) if s is None else s for s, t in zip(second, leaves)]
    return [np.asarray(a.detach().numpy() if lib is torch else a.numpy(), np.float64)
            for a in res]


def _arrays(*shapes) -> list:
    return [None if s is None else _rng(s, i).standard_normal(s) for i, s in enumerate(shapes)]


@pytest.mark.parametrize("xs, ws, bs", CASES)
def test_linear_equals_torchs_float64_with_second_order(xs, ws, bs):
    arrays = _arrays(xs, ws, bs)
    theirs = _run(torch, arrays, torch.float64, True)
    ours = _run(cg, arrays, torch.float64, True)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


def test_float32_within_twice_torchs_error():
    # a wide reduction (in 300) and a long one for the weight and bias (rows 4096)
    arrays = _arrays((64, 64, 300), (40, 300), (40,))
    exact = _run(torch, arrays, torch.float64, False)
    f32 = [a.astype(np.float32) for a in arrays]
    theirs = _run(torch, f32, torch.float32, False)
    ours = _run(cg, f32, torch.float32, False)
    for o, t, e in zip(ours, theirs, exact):
        scale = float(np.linalg.norm(e))
        err, torch_err = (float(np.linalg.norm(a - e)) / scale for a in (o, t))
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


def test_one_node_whose_products_are_the_matmul_familys():
    x = cg.tensor(_rng("x").standard_normal((6, 5)), requires_grad=True)
    w = cg.tensor(_rng("w").standard_normal((4, 5)), requires_grad=True)
    b = cg.tensor(_rng("b").standard_normal(4), requires_grad=True)
    with profile() as prof:
        y = cg.nn.functional.linear(x, w, b)
    assert y.grad_fn.op is Linear
    assert [e.name for e in prof.events] == ["matmul"]
    with profile() as prof:
        y.sum().backward()
    names = [e.name for e in prof.events]
    assert names.count("matmul") == 2 and names.count("sum") >= 1
    # only the gradients asked for: none of x's product when x needs none
    x.requires_grad_(False)
    with profile() as prof:
        cg.nn.functional.linear(x, w, b).sum().backward()
    assert [e.name for e in prof.events].count("matmul") == 2  # forward + weight's


def test_linear_layer_runs_it():
    layer = cg.nn.Linear(5, 3)
    y = layer(cg.tensor(np.ones((2, 5), np.float32)))
    assert y.grad_fn.op is Linear
    t = torch.nn.Linear(5, 3)
    with torch.no_grad():
        t.weight.copy_(torch.from_numpy(layer.weight.numpy()))
        t.bias.copy_(torch.from_numpy(layer.bias.numpy()))
    np.testing.assert_allclose(y.detach().numpy(), t(torch.ones(2, 5)).detach().numpy(),
                               rtol=1e-6, atol=1e-7)  # (torch adds the bias inside addmm)


def test_wrong_arguments_name_themselves():
    F = cg.nn.functional
    x = cg.tensor(np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"input of shape \(2, 5\) must end with in_features=4"):
        F.linear(x, cg.tensor(np.ones((3, 4))))
    with pytest.raises(ValueError, match="weight of shape .* must be 2-d"):
        F.linear(x, cg.tensor(np.ones((1, 3, 5))))
    with pytest.raises(TypeError, match="input has dtype float32 but the weight has dtype "
                                        "float64"):
        F.linear(cg.tensor(np.ones((2, 5), np.float32)), cg.tensor(np.ones((3, 5))))
    with pytest.raises(ValueError, match=r"bias of shape \(2,\) does not broadcast"):
        F.linear(x, cg.tensor(np.ones((3, 5))), cg.tensor(np.ones(2)))
    with pytest.raises(ValueError, match="at least 1 dim"):
        F.linear(cg.tensor(np.float64(1.0)), cg.tensor(np.ones((3, 1))))
