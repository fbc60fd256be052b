"""torch's Tensor methods (values and gradients against torch), nn.init's list, and the
Tensor and Module hooks."""

import numpy as np
import pytest
import torch

import convgrad as cg

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4, 5)).astype(np.float32)
IDX = RNG.integers(0, 4, (3, 6, 5))
SCAT = np.stack([RNG.permutation(5)[:2] for _ in range(12)]).reshape(3, 4, 2)

CASES = {
    "std": lambda v, L: v.std(1),
    "std_unbiased_false": lambda v, L: v.std(dim=(0, 2), unbiased=False, keepdim=True),
    "var_correction": lambda v, L: v.var(dim=2, correction=0),
    "var_all": lambda v, L: v.var(),
    "repeat": lambda v, L: v.repeat(2, 1, 3, 1),
    "repeat_interleave": lambda v, L: v.repeat_interleave(2, dim=1),
    "flip": lambda v, L: v.flip(0, 2),
    "roll": lambda v, L: v.roll((1, -2), (0, 2)),
    "roll_flat": lambda v, L: v.roll(3),
    "chunk": lambda v, L: v.chunk(3, 1)[1],
    "split": lambda v, L: v.split([1, 3], 1)[1],
    "split_size": lambda v, L: v.split(2, 2)[2],
    "unbind": lambda v, L: v.unbind(2)[4],
    "masked_fill": lambda v, L: v.masked_fill(v > 0.5, 2.0),
    "where": lambda v, L: v.where(v > 0, v * 3),
    "clamp": lambda v, L: v.clamp(-0.5, 0.5),
    "expand_as": lambda v, L: v[:1].expand_as(v),
    "gather": lambda v, L: v.gather(1, L.tensor(IDX) if L is torch else
                                     cg.tensor(IDX, dtype=cg.int64)),
    "scatter": lambda v, L: v.scatter(2, L.tensor(SCAT) if L is torch else
                                      cg.tensor(SCAT, dtype=cg.int64), v[..., :2] * 3),
    "topk": lambda v, L: v.topk(2, 1).values,
    "topk_smallest": lambda v, L: v.topk(3, -1, largest=False)[0],
    "sort": lambda v, L: v.sort(2, descending=True).values,
    "cumsum": lambda v, L: v.cumsum(1),
    "norm": lambda v, L: v.norm(dim=1),
    "norm_p1": lambda v, L: v.norm(p=1),
    "narrow": lambda v, L: v.narrow(2, 1, 3),
    "movedim": lambda v, L: v.movedim(0, 2),
    "unfold": lambda v, L: v.unfold(2, 2, 2),
    "bmm": lambda v, L: v.bmm(v.transpose(1, 2)),
    "mul_div": lambda v, L: v.mul(2).div(3).add(1, alpha=2).sub(v, alpha=0.5),
    "view_as": lambda v, L: v.view_as(v.reshape(12, 5)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_method_values_and_gradients_equal_torchs(name):
    f = CASES[name]
    x, t = cg.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    y, z = f(x, cg), f(t, torch)
    assert y.shape == tuple(z.shape)
    np.testing.assert_allclose(y.numpy(), z.detach().numpy(), rtol=1e-5, atol=1e-6)
    w = RNG.standard_normal(y.shape).astype(np.float32)
    (y * cg.tensor(w)).sum().backward()
    (z * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_index_results_comparisons_and_new_constructors():
    x, t = cg.tensor(A), torch.tensor(A)
    assert x.argsort(1).tolist() == t.argsort(1).tolist()
    assert x.topk(2, 1).indices.tolist() == t.topk(2, 1).indices.tolist()
    assert x.sort(0).indices.dtype == np.int64
    assert (x.eq(x).sum().item(), x.gt(0).sum().item()) == (t.eq(t).sum().item(),
                                                             t.gt(0).sum().item())
    n = x.double().new_tensor([1, 2])
    assert n.dtype == np.float64 and not n.requires_grad
    assert x.new_zeros(2, 3).dtype == np.float32 and x.new_full((2,), 5).tolist() == [5, 5]
    assert len(x.chunk(3, 1)) == len(t.chunk(3, 1))
    r = x.repeat(2, 1, 1)
    r.data[0, 0, 0] = 99  # repeat owns its memory
    assert x.data[0, 0, 0] != 99


def test_in_place_random_fills():
    t = cg.empty(2000)
    assert t.normal_(1.0, 2.0, generator=np.random.default_rng(0)) is t
    assert abs(t.numpy().mean() - 1) < 0.2 and abs(t.numpy().std() - 2) < 0.2
    t.uniform_(-1, 3)
    assert t.numpy().min() >= -1 and t.numpy().max() <= 3
    t.bernoulli_(0.25)
    assert set(np.unique(t.numpy())) <= {0.0, 1.0} and 0.15 < t.numpy().mean() < 0.35
    t.exponential_(2.0)
    assert t.numpy().min() >= 0 and abs(t.numpy().mean() - 0.5) < 0.1
    p = cg.nn.Parameter(np.zeros(3, np.float32))
    with pytest.raises(RuntimeError, match="leaf"):
        p.normal_()
    with cg.no_grad():
        p.fill_(2.0).normal_()


@pytest.mark.parametrize("name,args", [
    ("uniform_", (-0.5, 0.5)), ("normal_", (0.0, 0.02)), ("constant_", (0.3,)),
    ("ones_", ()), ("zeros_", ()), ("eye_", ()), ("dirac_", ()), ("xavier_uniform_", (2.0,)),
    ("xavier_normal_", ()), ("kaiming_uniform_", ()), ("kaiming_normal_", (0, "fan_out")),
    ("trunc_normal_", (0.0, 0.5, -1.0, 1.0)), ("orthogonal_", (1.5,)),
])
def test_init_functions_draw_from_torchs_laws(name, args):
    cg.manual_seed(0)  # one fixed draw each: the range check fails ~0.5% of unseeded pairs
    torch.manual_seed(0)
    shape = (64, 32, 3) if name == "dirac_" else (64, 96)
    ours = getattr(cg.nn.init, name)(cg.empty(*shape), *args).numpy()
    theirs = getattr(torch.nn.init, name)(torch.empty(*shape), *args).numpy()
    if name in ("constant_", "ones_", "zeros_", "eye_", "dirac_"):
        np.testing.assert_array_equal(ours, theirs)
    else:  # same law: the moments and the range agree
        assert abs(ours.std() - theirs.std()) < 0.08 * theirs.std()
        assert abs(ours.mean() - theirs.mean()) < 0.1 * theirs.std()
        assert ours.min() >= theirs.min() * 1.3 - 1e-6 if theirs.min() < 0 else True
    if name == "orthogonal_":
        np.testing.assert_allclose(ours @ ours.T, 2.25 * np.eye(64), atol=1e-4)
    assert cg.nn.init.calculate_gain("selu") == torch.nn.init.calculate_gain("selu")


def test_tensor_hooks_and_retain_grad_as_torch():
    results = []
    for lib in (cg, torch):
        x = lib.tensor(A, requires_grad=True)
        seen = []
        x.register_hook(lambda g: g * 2)
        y = x * 3
        y.retain_grad()
        handle = y.register_hook(lambda g, seen=seen: seen.append(float(g.sum())))
        removed = y.register_hook(lambda g: g * 0)
        removed.remove()
        (y * y).sum().backward()
        handle.remove()
        results.append((x.grad.numpy().copy(), y.grad.numpy().copy(), seen, y.retains_grad))
    (gx, gy, s, r), (tx, ty, ts, tr) = results
    np.testing.assert_allclose(gx, tx, rtol=1e-6)
    np.testing.assert_allclose(gy, ty, rtol=1e-6)
    assert s == pytest.approx(ts) and r and tr
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        cg.ones(2).register_hook(print)


def test_module_hooks_with_torchs_signatures():
    w = RNG.standard_normal((2, 5)).astype(np.float32)
    out = []
    for lib in (cg, torch):
        lin = lib.nn.Linear(5, 2)
        with (cg.no_grad() if lib is cg else torch.no_grad()):
            lin.weight.copy_(lib.tensor(w))
            lin.bias.zero_()
        calls = []
        lin.register_forward_pre_hook(lambda m, a: (a[0] + 1,))
        lin.register_forward_hook(lambda m, a, o: o * 2)
        lin.register_full_backward_hook(
            lambda m, gi, go, calls=calls: calls.append((gi[0].numpy().copy() if gi[0] is not None
                                            else None, go[0].numpy().copy())))
        x = lib.tensor(A[0], requires_grad=True)
        y = lin(x)
        y.sum().backward()
        lin(lib.tensor(A[0])).sum().backward()  # no input needs a gradient: grad_input None
        out.append((y.detach().numpy(), x.grad.numpy(), calls))
    (y, gx, calls), (ty, tgx, tcalls) = out
    np.testing.assert_allclose(y, ty, rtol=1e-5)
    np.testing.assert_allclose(gx, tgx, rtol=1e-5)
    assert len(calls) == len(tcalls) == 2 and calls[1][0] is None and tcalls[1][0] is None
    np.testing.assert_allclose(calls[0][0], tcalls[0][0], rtol=1e-5)
    np.testing.assert_allclose(calls[0][1], tcalls[0][1], rtol=1e-5)


def test_t_transposes_a_matrix_as_torch():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = cg.tensor(a, requires_grad=True)
    y = x.t()
    np.testing.assert_array_equal(y.numpy(), torch.tensor(a).t().numpy())
    (y * cg.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(6, dtype=np.float32).reshape(3, 2).T)
    v = cg.tensor([1.0, 2.0])
    assert v.t().shape == (2,) and cg.tensor(3.0).t().shape == ()
    with pytest.raises(ValueError, match="at most 2"):
        cg.ones(2, 2, 2).t()
