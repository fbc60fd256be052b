"""Oracle: PyTorch 2.13 (CPU) autograd: in-place results, gradients (float64, 1e-10) and the
version-counter error, each scenario run in both libraries (raises in torch <=> raises here)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(2024)
X = np.abs(RNG.standard_normal((2, 3))) + 0.5  # positive: log and sqrt are defined
W = RNG.standard_normal((2, 3)) + 3.0  # away from 0: division is defined
K = RNG.standard_normal((1, 1, 2, 2))

OURS = SimpleNamespace(
    name="convgrad", tensor=cg.tensor, no_grad=cg.no_grad, where=cg.where,
    softmax=lambda t, d: F.softmax(t, d), conv2d=F.conv2d, grad=cg.grad,
    zero_data=lambda t: t.data.__setitem__(Ellipsis, 0.0), optim=cg.optim)
THEIRS = SimpleNamespace(
    name="torch", tensor=lambda a, **kw: torch.tensor(a, **kw), no_grad=torch.no_grad,
    where=torch.where, softmax=lambda t, d: torch.softmax(t, d),
    conv2d=torch.nn.functional.conv2d, grad=torch.autograd.grad,
    zero_data=lambda t: t.data.zero_(), optim=torch.optim)
MODIFIED = "modified by an inplace operation"


def close(ours, theirs, rtol: float = 1e-10) -> None:
    if theirs is None:
        assert ours is None or np.all(ours.data == 0)
        return
    want = theirs.detach().numpy()
    assert ours.shape == want.shape and ours.dtype == want.dtype, (ours.dtype, want.dtype)
    np.testing.assert_allclose(ours.data, want, rtol=rtol, atol=1e-12)


def leaves(lib):
    return (lib.tensor(X.copy(), requires_grad=True), lib.tensor(W.copy(), requires_grad=True))


# ----------------------------------------------------------------------------- results
VALUE_OPS = [
    ("add_", lambda t, o: t.add_(o)),
    ("add_ alpha", lambda t, o: t.add_(o, alpha=-0.5)),
    ("sub_", lambda t, o: t.sub_(o)),
    ("sub_ alpha", lambda t, o: t.sub_(o, alpha=2)),
    ("mul_", lambda t, o: t.mul_(o)),
    ("div_", lambda t, o: t.div_(o)),
    ("iadd", lambda t, o: t.__iadd__(o)),
    ("isub", lambda t, o: t.__isub__(o)),
    ("imul", lambda t, o: t.__imul__(o)),
    ("itruediv", lambda t, o: t.__itruediv__(o)),
    ("copy_", lambda t, o: t.copy_(o)),
    ("clamp_", lambda t, o: t.clamp_(-0.5, 0.5)),
    ("clamp_ min", lambda t, o: t.clamp_(min=0.1)),
    ("clamp_ max", lambda t, o: t.clamp_(max=0.1)),
    ("zero_", lambda t, o: t.zero_()),
    ("fill_", lambda t, o: t.fill_(1.25)),
]
OTHERS = [lambda lib: lib.tensor(W.copy()), lambda lib: lib.tensor(W[0].copy()),
          lambda lib: 2.5, lambda lib: lib.tensor(np.float64(3.0)),
          lambda lib: lib.tensor(W.astype(np.float32))]


@pytest.mark.parametrize("name,op", VALUE_OPS)
@pytest.mark.parametrize("k", range(len(OTHERS)))
def test_results_match_torch(name, op, k):
    if name == "copy_" and k == 2:
        pytest.skip("copy_ takes a tensor")
    base = RNG.standard_normal((2, 3))
    t, tt = cg.tensor(base.copy()), torch.tensor(base.copy())
    view, view_t = t.reshape(6), tt.view(6)
    alias, alias_t = t.detach(), tt.detach()
    r, rt = op(t, OTHERS[k](cg)), op(tt, OTHERS[k](torch))
    assert r is t and rt is tt  # in-place methods return the tensor itself
    close(t, tt)
    close(view, view_t)  # views and aliases see the new values
    close(alias, alias_t)
    assert t._version == tt._version == view._version == view_t._version == alias._version
    assert t.is_leaf and not t.requires_grad


def test_result_keeps_the_dtype_and_shape():
    f32, f32t = cg.tensor(np.ones(3, np.float32)), torch.ones(3)
    f32 += cg.tensor(np.full(3, 0.1))
    f32t += torch.full((3,), 0.1, dtype=torch.float64)
    assert f32.dtype == np.float32
    close(f32, f32t)
    i, it = cg.tensor([1, 2], dtype=np.int64), torch.tensor([1, 2])
    i *= 3
    it *= 3
    i.copy_(cg.tensor([2.7, -1.2]))
    it.copy_(torch.tensor([2.7, -1.2]))
    assert i.tolist() == it.tolist()
    for name, op in [("add_", lambda t, lib: t.add_(1.5)), ("div_", lambda t, lib: t.div_(2)),
                     ("mul_", lambda t, lib: t.mul_(lib.tensor([1.0, 2.0])))]:
        with pytest.raises(RuntimeError, match="can't be cast"):
            op(it.clone(), torch)
        with pytest.raises(TypeError, match=f"{name}: the result type"):
            op(i.clone(), cg)
    with pytest.raises(RuntimeError):
        torch.tensor([True]).add_(1)
    with pytest.raises(TypeError, match="can't be cast"):
        cg.tensor([True], dtype=np.bool_).add_(1)


def test_bad_in_place_operands():
    t = cg.tensor(np.zeros(3))
    with pytest.raises(RuntimeError):
        torch.zeros(3).add_(torch.ones(2, 3))
    with pytest.raises(ValueError, match="add_: the result has shape"):
        t.add_(cg.tensor(np.ones((2, 3))))
    with pytest.raises(RuntimeError):
        torch.ones(1).expand(3).add_(1)
    with pytest.raises(ValueError, match="read-only"):
        cg.ones(1).expand(3).add_(1)
    with pytest.raises(ValueError, match="copy_: src of shape"):
        t.copy_(cg.tensor(np.ones(4)))
    with pytest.raises(ValueError, match="fill_: value"):
        t.fill_(cg.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="clamp_"):
        t.clamp_()
    with pytest.raises(TypeError, match="add_: alpha="):
        t.add_(1.0, alpha="2")
    with pytest.raises(TypeError, match="sub_: not supported for bool"):
        cg.tensor([1.0]).sub_(cg.tensor([True], dtype=np.bool_))


SETITEM = [
    ("basic", lambda lib: (0, slice(1, None)), lambda lib: 7.5),
    ("row", lambda lib: 1, lambda lib: lib.tensor(np.array([1.0, 2.0, 3.0]))),
    ("broadcast", lambda lib: (slice(None), 1), lambda lib: lib.tensor(np.array(4.0))),
    ("mask", lambda lib: lib.tensor(X) > 1.0, lambda lib: -1.0),
    ("int index", lambda lib: lib.tensor(np.array([1, 0, 1])), lambda lib: 0.25),
    ("ellipsis", lambda lib: Ellipsis, lambda lib: lib.tensor(W.astype(np.float32))),
]


@pytest.mark.parametrize("name,index,value", SETITEM, ids=[s[0] for s in SETITEM])
def test_setitem(name, index, value):
    t, tt = cg.tensor(W.copy()), torch.tensor(W.copy())
    alias, alias_t = t.reshape(6), tt.view(6)
    t[index(cg)] = value(cg)
    tt[index(torch)] = value(torch)
    close(t, tt)
    close(alias, alias_t)
    assert t._version == tt._version
    t[index(cg)] *= 2  # the augmented form: get, multiply in place, set
    tt[index(torch)] *= 2
    close(t, tt)
    i, it = cg.tensor([1, 2, 3], dtype=np.int64), torch.tensor([1, 2, 3])
    i[1] = 7.9  # cast to the tensor's dtype, as torch
    it[1] = 7.9
    assert i.tolist() == it.tolist()
    (x, w), (xt, wt) = leaves(cg), leaves(torch)
    for lib, a, b in [(cg, x, w), (torch, xt, wt)]:
        h = a * b
        h[index(lib)] = value(lib)
        h[0] = b[1] * b[0]  # a value requiring grad
        (h * h * a).sum().backward()
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x[0] = 1.0


# ----------------------------------------------------------------------------- leaves
LEAF_OPS = [lambda t: t.add_(1.0), lambda t: t.mul_(2.0), lambda t: t.zero_(),
            lambda t: t.clamp_(0.0, 1.0), lambda t: t.__iadd__(1.0), lambda t: t.copy_(t * 0)]


@pytest.mark.parametrize("k", range(len(LEAF_OPS)))
def test_leaves_that_require_grad_change_only_under_no_grad(k):
    op = LEAF_OPS[k]
    (x, _), (xt, _) = leaves(cg), leaves(torch)
    with pytest.raises(RuntimeError) as theirs:
        op(xt)
    with pytest.raises(RuntimeError) as ours:
        op(x)
    assert str(ours.value) == str(theirs.value)
    close(x, xt)  # nothing was written
    with pytest.raises(RuntimeError) as theirs:
        op(xt[0])
    with pytest.raises(RuntimeError) as ours:
        op(x[0])
    assert str(ours.value) == str(theirs.value)  # "a view of a leaf Variable ..."
    with cg.no_grad():
        op(x)
        op(x[1])
    with torch.no_grad():
        op(xt)
        op(xt[1])
    close(x, xt)
    assert x.is_leaf and x.requires_grad and x.grad_fn is None


def test_leaf_not_requiring_grad_takes_a_history():
    for lib in (cg, torch):
        x, w = leaves(lib)
        buf = x.detach() * 0
        buf += w
        buf *= x
        assert not buf.is_leaf and buf.requires_grad and buf.grad_fn is not None
    (x, w), (xt, wt) = leaves(cg), leaves(torch)
    buf, buf_t = x.detach() * 0, xt.detach() * 0
    buf += w
    buf_t += wt
    buf *= x
    buf_t *= xt
    (buf * buf).sum().backward()
    (buf_t * buf_t).sum().backward()
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)


# ----------------------------------------------------------------------------- gradients
def g_chain(lib, x, w):
    h = x * 2
    h += w
    h *= w
    h -= 1
    h /= w * w + 1
    return (h * h).sum()


def g_earlier_consumer(lib, x, w):
    h = x * 2
    z = h * 3  # recorded before h changes: it keeps h's old history
    h.mul_(5)
    return z.sum() + (h * w).sum()


def g_clamp(lib, x, w):
    h = x * w - 4.0
    h.clamp_(-0.5, 0.5)
    return (h * w).sum()


def g_copy(lib, x, w):
    h = x * 1
    h.copy_(w[0] * w[1])  # broadcast
    return (h * x).sum()


def g_fill(lib, x, w):
    v = (w * w).sum()
    h = x * 1
    h.fill_(v)
    return (h * x).sum()


def g_zero(lib, x, w):
    h = x * 1
    h.zero_()
    return (h + x * w).sum()


def g_alpha(lib, x, w):
    h = x * 1
    h.sub_(w, alpha=2)
    h.add_(w * x, alpha=0.5)
    return (h * h).sum()


def g_mul_div_by_grad_tensor(lib, x, w):
    h = x * 1
    h.mul_(w)
    h.div_(w * x + 1)
    return (h * h * w).sum()


def g_no_grad_on_non_leaf(lib, x, w):
    h = x * 2
    with lib.no_grad():
        h.add_(1)
    return (h * 3).sum()


def g_float32_target(lib, x, w):
    h = x.float() * 1
    h += w  # float64 into float32
    return (h * h).sum().double()


GRAPHS = [g_chain, g_earlier_consumer, g_clamp, g_copy, g_fill, g_zero, g_alpha,
          g_mul_div_by_grad_tensor, g_no_grad_on_non_leaf, g_float32_target]


@pytest.mark.parametrize("graph", GRAPHS, ids=lambda g: g.__name__)
def test_gradients_through_in_place_operations(graph):
    (x, w), (xt, wt) = leaves(cg), leaves(torch)
    loss, loss_t = graph(OURS, x, w), graph(THEIRS, xt, wt)
    rtol = 1e-6 if graph is g_float32_target else 1e-10
    close(loss, loss_t, rtol)
    loss.backward()
    loss_t.backward()
    close(x.grad, xt.grad, rtol)
    close(w.grad, wt.grad, rtol)


def test_second_order_through_in_place():
    results = []
    for lib in (OURS, THEIRS):
        x, w = leaves(lib)
        h = x * x
        h.mul_(w)
        h += x * w
        (g,) = lib.grad(h.sum(), x, create_graph=True)
        (g * g * w).sum().backward()
        results.append((g, x.grad, w.grad))
    for ours, theirs in zip(*results):
        close(ours, theirs)


# ----------------------------------------------------------------------------- versions
def s_exp_output(lib, x, w):
    y = x.exp()
    y.add_(1)
    return y.sum()


def s_scalar_factor(lib, x, w):
    y = x * 2
    y.add_(1)
    return y.sum()


def s_constant_factor_modified(lib, x, w):
    c = lib.tensor(W.copy())
    y = x * c
    c.add_(1)
    return y.sum()


def s_factor_of_constant_modified(lib, x, w):
    h = x * 1
    y = h * 3.0
    h.mul_(2)
    return y.sum()


def s_factor_of_grad_tensor_modified(lib, x, w):
    h = x * 1
    y = h * w
    h.mul_(2)
    return y.sum()


def s_sigmoid_output(lib, x, w):
    s = (x + 0).sigmoid()
    s.mul_(2)
    return s.sum()


def s_tanh_input(lib, x, w):
    a = x + 0
    t = a.tanh()
    a.add_(1)
    return t.sum()


def s_log_input(lib, x, w):
    a = x * 1
    out = a.log()
    a.add_(1)
    return out.sum()


def s_relu_input(lib, x, w):
    a = x * 1
    r = a.relu()
    a.mul_(2)
    return r.sum()


def s_relu_output(lib, x, w):
    r = (x * 1).relu()
    r.mul_(2)
    return r.sum()


def s_sum_input(lib, x, w):
    a = x * 1
    s = a.sum()
    a.zero_()
    return s


def s_view_shares_the_version(lib, x, w):
    e = (x * 1).exp()
    s = e.sum()
    e.view(6).mul_(2)
    return s


def s_detach_shares_the_version(lib, x, w):
    out = x.log()
    x.detach().mul_(2)
    return out.sum()


def s_saved_leaf_under_no_grad(lib, x, w):
    y = x * w
    with lib.no_grad():
        w.add_(1)
    return y.sum()


def s_unsaved_leaf_under_no_grad(lib, x, w):
    y = x * lib.tensor(W.copy())
    with lib.no_grad():
        x.add_(1)
    return y.sum()


def s_pow_input(lib, x, w):
    a = x * 1
    p = a ** 2
    a.add_(1)
    return p.sum()


def s_max_all(lib, x, w):
    a = x * 1
    m = a.max()
    a.add_(1)
    return m


def s_max_dim(lib, x, w):
    a = x * 1
    m = a.max(0).values
    a.add_(1)
    return m.sum()


def s_clone(lib, x, w):
    a = x * 1
    c = a.clone()
    a.add_(1)
    return (c * c).sum()


def s_mul_by_grad_tensor(lib, x, w):
    a = x * 1
    a.mul_(w)
    return a.sum()


def s_div_by_grad_tensor(lib, x, w):
    a = x * 1
    a.div_(w)
    return a.sum()


def s_sqrt_output(lib, x, w):
    s = (x * 1).sqrt()
    s.clamp_(0.0, 1.0)
    return s.sum()


def s_softmax_output(lib, x, w):
    p = lib.softmax(x * 1, 1)
    p.mul_(2)
    return (p * w).sum()


def s_matmul_saved(lib, x, w):
    a = x * 1
    y = a @ w.T
    a.add_(1)
    return y.sum()


def s_matmul_unsaved(lib, x, w):
    a = x * 1
    y = a @ lib.tensor(W.T.copy())
    a.add_(1)
    return y.sum()


def s_conv_input(lib, x, w):
    a = x.reshape(1, 1, 2, 3) * 1
    y = lib.conv2d(a, lib.tensor(K.copy()))
    a.add_(1)
    return y.sum()


def s_where_condition(lib, x, w):
    m = x > 1.0
    y = lib.where(m, x, w)
    m.zero_()
    return y.sum()


def s_data_bypasses(lib, x, w):
    y = x.exp()
    lib.zero_data(y)
    return y.sum()


def s_exp_output_after_later_use(lib, x, w):
    r = x.exp()
    y = r * 2
    r.add_(1)
    return y.sum()


SCENARIOS = {  # name -> raises (in torch, and here)
    s_exp_output: True, s_scalar_factor: False, s_constant_factor_modified: True,
    s_factor_of_constant_modified: False, s_factor_of_grad_tensor_modified: True,
    s_sigmoid_output: True, s_tanh_input: False, s_log_input: True, s_relu_input: False,
    s_relu_output: True, s_sum_input: False, s_view_shares_the_version: True,
    s_detach_shares_the_version: True, s_saved_leaf_under_no_grad: True,
    s_unsaved_leaf_under_no_grad: False, s_pow_input: True, s_max_all: True,
    s_max_dim: False, s_clone: False, s_mul_by_grad_tensor: False,
    s_div_by_grad_tensor: False, s_sqrt_output: True, s_softmax_output: True,
    s_matmul_saved: True, s_matmul_unsaved: False, s_conv_input: True,
    s_where_condition: True, s_data_bypasses: False, s_exp_output_after_later_use: True,
}


def _run(scenario, lib):
    x, w = leaves(lib)
    try:
        scenario(lib, x, w).backward()
    except RuntimeError as e:
        assert MODIFIED in str(e), str(e)
        return True, None
    return False, (x.grad, w.grad)


@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=lambda s: s.__name__[2:])
def test_version_counter_raises_where_torch_raises(scenario):
    theirs, grads_t = _run(scenario, THEIRS)
    ours, grads = _run(scenario, OURS)
    assert theirs == SCENARIOS[scenario], "torch's behaviour changed"
    assert ours == theirs
    if not ours:  # and without an error, the same gradients
        for g, gt in zip(grads, grads_t):
            close(g, gt)


def test_versions_count_like_torch():
    t, tt = cg.tensor(np.ones((2, 3))), torch.ones(2, 3, dtype=torch.float64)
    views, views_t = [t.reshape(6), t[0], t.detach(), t.T], [tt.view(6), tt[0], tt.detach(),
                                                           tt.T]
    ops = [lambda a: a.add_(1), lambda a: a.mul_(2), lambda a: a.zero_(),
           lambda a: a.__iadd__(1), lambda a: a.fill_(3), lambda a: a.copy_(a * 2)]
    assert t._version == tt._version == 0
    for op in ops:
        for a, at in [(t, tt)] + list(zip(views, views_t)):
            op(a)
            op(at)
            assert [v._version for v in [t] + views] == [v._version for v in [tt] + views_t]
    assert t._version == tt._version > 0
    assert cg.tensor(np.ones(2)).clone()._version == 0


def test_optimizer_step_counts_a_version():
    for lib in (OURS, THEIRS):
        x, w = leaves(lib)
        opt = lib.optim.SGD([w], lr=0.1)
        y = (x * w).sum()
        y.backward(retain_graph=True)
        opt.step()
        with pytest.raises(RuntimeError, match=MODIFIED):
            y.backward()
        assert w._version == 1


def test_views_of_updated_leaves_stay_usable():
    """A view of a parameter follows the parameter's values (as in torch): kept across
    optimiser steps and in-place updates under no_grad, it still differentiates."""
    grads = []
    for lib in (OURS, THEIRS):
        x, w = leaves(lib)
        w_t = w.T  # a view kept across steps
        opt = lib.optim.SGD([w], lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            ((x @ w_t) ** 2).sum().backward()
            opt.step()
        with lib.no_grad():
            w.mul_(0.5)
        ((x @ w_t) ** 2).sum().backward()
        grads.append((w, w.grad))
    for ours, theirs in zip(*grads):
        close(ours, theirs)
    h = cg.tensor(W.copy(), requires_grad=True) * 1
    v = h[0]
    with cg.no_grad():
        h.add_(1)  # outside the graph, as torch: its history stays, and so does the view's
    (v * v).sum().backward()


def test_augmented_assignment_to_an_indexed_part():
    """``h[i] *= w`` modifies the view ``h[i]`` in place, then writes it back: recorded."""
    (x, w), (xt, wt) = leaves(cg), leaves(torch)
    for a, b in [(x, w), (xt, wt)]:
        h = a * 2
        h[0] *= b[1]
        h[:, 1:] += b[:, :2] * a[:, :2]
        h[1] /= 3.0
        (h * h * b).sum().backward()
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)


def test_a_view_modified_behind_its_base_is_refused():
    """Torch rebases the base's history onto the view's change; convgrad refuses to record
    on a tensor whose memory changed behind its history (never a silently wrong gradient)."""
    x, _ = leaves(cg)
    h = x * 2
    h[0].mul_(3)
    with pytest.raises(RuntimeError, match="modified in place through another tensor"):
        h.sum()
    with pytest.raises(RuntimeError, match="modified in place through another tensor"):
        h.backward(cg.ones(2, 3, dtype=np.float64))
    # cloning first keeps the histories apart, and the gradient is torch's
    (x, w), (xt, wt) = leaves(cg), leaves(torch)
    for a, b in [(x, w), (xt, wt)]:
        h = a * 2
        v = h[0].clone()
        v.mul_(b[0])
        (h.sum() + (v * v).sum()).backward()
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)
