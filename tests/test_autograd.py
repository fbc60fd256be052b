"""Oracle: PyTorch autograd (torch 2.13 CPU), float64; engine semantics as torch.autograd's."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import convgrad as cg
from convgrad.autograd import OUTPUT, Context, Function, backward
from convgrad.tensor import Tensor

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(99)


def leaf(*shape: int, dtype=np.float64) -> tuple[Tensor, torch.Tensor]:
    x = RNG.standard_normal(shape).astype(dtype)
    return cg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def close(ours: Tensor, theirs: torch.Tensor) -> None:
    np.testing.assert_allclose(ours.data, theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


class Mul(Function):  # the contract's example, verbatim in spirit
    reads = {0: (1,), 1: (0,)}  # each gradient reads the other factor
    calls: list = []

    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, grad):
        Mul.calls.append(ctx.needs_input_grad)
        a, b = ctx.inputs
        ga = grad * b if ctx.needs_input_grad[0] else None  # d(ab)/da = b
        gb = grad * a if ctx.needs_input_grad[1] else None
        return ga, gb


# ----------------------------------------------------------------------------- backward
def test_diamond_graph_sums_gradients():
    (x, xt) = leaf(3)
    for t in (x, xt):
        a = t * 2
        b = a.exp() + a * t
        c = (b * a).sum()
        c.backward()
    close(x.grad, xt.grad)


def test_accumulation_across_two_backward_calls():
    (x, xt) = leaf(2, 3)
    for t in (x, xt):
        y = (t * t).sum()
        y.backward(retain_graph=True)
        y.backward()
        (t.exp().sum()).backward()
    close(x.grad, xt.grad)
    np.testing.assert_allclose(x.grad.data, 4 * x.data + np.exp(x.data))


def test_freed_graph_raises_clear_error():
    x = cg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="freed.*retain_graph=True"):
        y.backward()
    z = (x * 3).sum()
    z.backward(retain_graph=True)
    z.backward()  # retained once, so a second pass works
    assert x.grad.tolist() == [2 + 3 + 3, 4 + 3 + 3]
    w = x.exp()
    cg.grad(w.sum(), x)
    with pytest.raises(RuntimeError, match="freed"):
        cg.grad((w * 2).sum(), x)


def test_backward_arguments():
    x = cg.tensor([1.0, 2.0], requires_grad=True, dtype=np.float64)
    y = x * x
    with pytest.raises(RuntimeError, match="one element"):
        y.backward()
    with pytest.raises(ValueError, match="shape"):
        y.backward(np.ones(3))
    y.backward(np.array([1.0, 10.0]), retain_graph=True)  # ndarray gradient
    assert x.grad.tolist() == [2.0, 40.0]
    y.backward(cg.tensor([1.0, 0.0]))  # Tensor gradient (float32 is cast to the output's)
    assert x.grad.tolist() == [4.0, 40.0] and x.grad.dtype == np.float64
    with pytest.raises(RuntimeError, match="does not require grad"):
        cg.tensor([1.0]).sum().backward()


def test_backward_on_a_leaf_and_several_roots():
    x = cg.tensor([1.0, 2.0], requires_grad=True)
    x.backward(np.array([3.0, 4.0]))
    assert x.grad.tolist() == [3.0, 4.0]
    x.grad = None
    a, b = (x * 2).sum(), (x * x).sum()
    backward([a, b], [None, cg.tensor(2.0)])
    assert x.grad.tolist() == [2 + 4 * 1.0, 2 + 4 * 2.0]


def test_leaf_grad_owns_its_buffer():
    x = cg.tensor([1.0, 2.0], requires_grad=True)
    w = cg.tensor([1.0, 2.0], requires_grad=True)
    (x + w).sum().backward()  # Add hands the same gradient to both
    x.grad.zero_()
    assert w.grad.tolist() == [1.0, 1.0]


def test_non_leaf_has_no_grad_and_no_graph_without_grad():
    x = cg.tensor([1.0], requires_grad=True)
    y = x * 2
    (y * 3).sum().backward()
    assert y.grad is None and x.grad.tolist() == [6.0]
    c = cg.tensor([1.0]) * 2
    assert not c.requires_grad and c.grad_fn is None and c.is_leaf


def test_graph_is_freed_after_backward():
    x = cg.tensor([1.0], requires_grad=True)
    y = x * 2
    node = y.grad_fn
    y.sum().backward()
    assert node.inputs is None


def test_deep_graph_no_recursion():
    x = cg.tensor([0.5], requires_grad=True, dtype=np.float64)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.sum().backward()
    assert x.grad.tolist() == [1.0]
    y = x
    for _ in range(100_000):  # and a deep retained graph is collected without recursion
        y = y + 0.0
    del y


# ----------------------------------------------------------------------------- grad()
def test_grad_matches_torch_and_leaves_dot_grad_alone():
    (x, xt), (w, wt) = leaf(2, 3), leaf(3, 4)
    y, yt = ((x @ w).tanh() ** 2).sum(), ((xt @ wt).tanh() ** 2).sum()
    gx, gw = cg.grad(y, [x, w])
    gxt, gwt = torch.autograd.grad(yt, [xt, wt])
    close(gx, gxt)
    close(gw, gwt)
    assert x.grad is None and w.grad is None and not gx.requires_grad
    (only,) = cg.grad((x * x).sum(), x)
    assert isinstance(cg.grad((x * x).sum(), x), tuple)
    close(only, 2 * xt)


def test_grad_of_intermediate_tensor():
    (x, xt) = leaf(4)
    h, ht = x.exp(), xt.exp()
    y, yt = (h * h * x).sum(), (ht * ht * xt).sum()
    gh, gx = cg.grad(y, [h, x])
    gh_t, gx_t = torch.autograd.grad(yt, [ht, xt])
    close(gh, gh_t)
    close(gx, gx_t)


def test_grad_allow_unused_and_errors():
    x = cg.tensor([1.0, 2.0], requires_grad=True)
    u = cg.tensor([3.0], requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match="allow_unused"):
        cg.grad(y, [x, u], retain_graph=True)
    gx, gu = cg.grad(y, [x, u], allow_unused=True)
    assert gx.tolist() == [2.0, 4.0] and gu is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        cg.grad((x * 2).sum(), [cg.tensor([1.0])])
    with pytest.raises(TypeError, match="inputs"):
        cg.grad((x * 2).sum(), [np.ones(2)])


def test_grad_outputs():
    (x, xt) = leaf(3)
    v = RNG.standard_normal(3)
    (g,) = cg.grad(x.exp(), x, grad_outputs=v)
    (gt,) = torch.autograd.grad(xt.exp(), xt, grad_outputs=torch.tensor(v))
    close(g, gt)


def test_grad_runs_only_needed_rules():
    Mul.calls.clear()
    x = cg.tensor([1.0, 2.0], requires_grad=True)
    w = cg.tensor([3.0, 4.0], requires_grad=True)
    y = Mul.apply(x, w).sum()
    (gx,) = cg.grad(y, x)
    assert gx.tolist() == [3.0, 4.0] and Mul.calls == [(True, False)]


# ----------------------------------------------------------------------------- create_graph
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_create_graph_backward_keeps_graph_in_grad():
    (x, xt) = leaf(3)
    for t in (x, xt):
        (t ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    close(x.grad, xt.grad)
    gx, gxt = x.grad, xt.grad
    x.grad, xt.grad = None, None
    (gx * gx).sum().backward()
    (gxt * gxt).sum().backward()
    close(x.grad, xt.grad)


def test_double_backward_mixed_graph():
    (x, xt), (w, wt) = leaf(2, 3), leaf(3)

    def second_order(a, b, grad):
        y = ((a * b).exp().sum(1) / (b * b).sum()).log().sum()
        ga, gb = grad(y, [a, b], create_graph=True)
        return grad((ga ** 2).sum() + (gb * a[0]).sum(), [a, b])

    for ours, theirs in zip(second_order(x, w, cg.grad), second_order(xt, wt, torch.autograd.grad)):
        close(ours, theirs)


# ----------------------------------------------------------------------------- grad mode
def test_no_grad_context_and_decorators():
    x = cg.tensor([1.0], requires_grad=True)
    with cg.no_grad():
        assert not cg.is_grad_enabled()
        y = x * 2
        with cg.enable_grad():
            z = x * 2
    assert cg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad

    @cg.no_grad()
    def f(t):
        return t * 2

    @cg.no_grad
    def g(t):
        return t * 2

    @cg.enable_grad()
    def h(t):
        return t * 2

    assert not f(x).requires_grad and not g(x).requires_grad and cg.is_grad_enabled()
    with cg.no_grad():
        assert h(x).requires_grad and not cg.is_grad_enabled()
    with cg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert cg.is_grad_enabled()
    cg.set_grad_enabled(False)  # a plain call switches at once, as in torch
    assert not cg.is_grad_enabled()
    cg.set_grad_enabled(True)

    @cg.set_grad_enabled(False)
    def k(t):
        return t * 2

    assert cg.is_grad_enabled() and not k(x).requires_grad and cg.is_grad_enabled()
    ng = cg.no_grad()
    with ng, ng:  # one object re-entered
        pass
    assert cg.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = []
    with cg.no_grad():
        t = threading.Thread(target=lambda: seen.append(cg.is_grad_enabled()))
        t.start()
        t.join()
        assert not cg.is_grad_enabled()
    assert seen == [True]


# ----------------------------------------------------------------------------- Function contract
class Scale(Function):
    reads = (0,)  # the saved x is the input's own array
    @staticmethod
    def forward(ctx, x, factor, offset, *, power=1):
        ctx.power = power
        ctx.save_for_backward(x, factor)
        assert isinstance(x, np.ndarray) and factor.dtype == np.float64 and offset is None
        return (x * factor) ** power

    @staticmethod
    def backward(ctx, grad):
        x, factor = ctx.saved_tensors  # ndarrays come back as constant Tensors
        assert isinstance(x, Tensor) and not x.requires_grad
        # d(xf)^p/dx = p (xf)^(p-1) f, as an ndarray (the engine wraps it)
        return (grad.data * ctx.power * (x.data * factor.data) ** (ctx.power - 1)
                * factor.data, None, None)


def test_function_passthrough_args_and_ndarray_gradients():
    x = cg.tensor([1.0, 2.0], requires_grad=True, dtype=np.float64)
    f = np.array([3.0, 4.0])
    y = Scale.apply(x, f, None, power=2)
    assert y.grad_fn.needs_input_grad == (True, False, False)
    assert repr(y.grad_fn) == "<ScaleBackward>"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.data, 2 * x.data * f * f)


class Exp(Function):
    reads = (OUTPUT,)
    @staticmethod
    def forward(ctx, x):
        return np.exp(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.output  # the output Tensor, so double backward records through it


def test_ctx_output_gives_double_backward():
    (x, xt) = leaf(3)
    (g,) = cg.grad(Exp.apply(x).sum(), x, create_graph=True)
    (g2,) = cg.grad((g * x).sum(), x)
    (gt,) = torch.autograd.grad(xt.exp().sum(), xt, create_graph=True)
    (g2t,) = torch.autograd.grad((gt * xt).sum(), xt)
    close(g2, g2t)


class BadShape(Function):
    reads = ()
    @staticmethod
    def forward(ctx, x):
        return x.sum(0)

    @staticmethod
    def backward(ctx, grad):
        return grad  # wrong: should be broadcast back to the input's shape


class BadCount(Function):
    reads = ()
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


def test_bad_rules_raise_clear_errors():
    x = cg.tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"BadShape.backward.*shape \(3,\).*\(2, 3\)"):
        BadShape.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="BadCount.backward returned 2 gradients"):
        BadCount.apply(x).sum().backward()


def test_no_node_when_nothing_requires_grad():
    x = cg.tensor([1.0])
    y = Mul.apply(x, np.array([2.0]))
    assert y.grad_fn is None and not y.requires_grad
    with cg.no_grad():
        z = Mul.apply(cg.tensor([1.0], requires_grad=True), x)
    assert z.grad_fn is None


def test_tensor_and_node_use_slots():
    x = cg.tensor([1.0], requires_grad=True)
    assert not hasattr(x, "__dict__")
    node = (x * 2).grad_fn
    assert isinstance(node, Context) and node.op.__name__ == "Mul"


# ------------------------------------------------------------ .grad owns its buffer
def test_leaf_gradients_never_share_memory_with_each_other_or_the_caller():
    import convgrad as _cg

    a = _cg.tensor(np.ones(5), requires_grad=True)
    b = _cg.tensor(np.ones(5), requires_grad=True)
    (a + b).sum().backward()  # one gradient array reaches both leaves
    assert not np.shares_memory(a.grad.data, b.grad.data)
    a.grad.data[0] = 7.0
    assert b.grad.data[0] == 1.0

    seed = _cg.tensor(np.full(5, 2.0))
    c = _cg.tensor(np.ones(5), requires_grad=True)
    c.backward(seed)  # a leaf root: the caller's seed is copied, not taken
    assert not np.shares_memory(c.grad.data, seed.data)

    seen = []
    d = _cg.tensor(np.ones(5), requires_grad=True)
    d.register_hook(lambda g: seen.append(g))
    (d * 3.0).sum().backward()
    assert not np.shares_memory(d.grad.data, seen[0].data)

    e = _cg.tensor(np.ones(5), requires_grad=True)
    y = e * 2.0
    y.register_hook(lambda g: seen.append(g))  # a hook on an inner node sees it first
    y.sum().backward()
    assert all(not np.shares_memory(e.grad.data, s.data) for s in seen)
    assert np.array_equal(e.grad.data, np.full(5, 2.0))
