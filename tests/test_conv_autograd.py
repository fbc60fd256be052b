"""Oracle: torch.autograd (torch 2.13 CPU) and jax.grad, float64; the profiler's kernel counts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F

from .tolerances import assert_close

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
torch = pytest.importorskip("torch")
TF = pytest.importorskip("torch.nn.functional")

pytestmark = pytest.mark.usefixtures("backend")  # with oneDNN, then without

jax.config.update("jax_enable_x64", True)
KERNELS = ("conv_forward", "conv_input_grad", "conv_weight_grad", "conv_bias_grad")
rng = np.random.default_rng(7)


def _call(kind, x, w, b):
    if kind == "conv2d":
        return F.conv2d(x, w, b, stride=2, padding=1, groups=2)
    if kind == "conv_transpose2d":
        return F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2)
    return F.conv_general(x, w, b, stride=(1, 2), padding=((1, 0), (-1, 2)),
                          input_dilation=(2, 1), kernel_dilation=(1, 2), groups=2, flip=True)


@pytest.mark.parametrize("kind", ["conv2d", "conv_transpose2d", "conv_general"])
@pytest.mark.parametrize("x_grad,w_grad,bias", list(itertools.product(
    [False, True], [False, True], ["none", "constant", "trainable"])))
def test_only_the_needed_kernels_run(kind, x_grad, w_grad, bias):
    x = cg.tensor(rng.standard_normal((2, 4, 9, 9)), requires_grad=x_grad)
    w = cg.tensor(rng.standard_normal((4, 2, 3, 3)), requires_grad=w_grad)
    b = None if bias == "none" else cg.tensor(rng.standard_normal(4),
                                              requires_grad=bias == "trainable")
    with cg.profile() as prof:
        y = _call(kind, x, w, b)
        if y.requires_grad:
            (y * y).sum().backward()
    counts = {k: prof.count(k) for k in KERNELS}
    if kind == "conv_transpose2d":  # the input gradient of a convolution: roles swapped
        expected = {"conv_input_grad": 1, "conv_forward": int(x_grad),
                    "conv_weight_grad": int(w_grad), "conv_bias_grad": int(bias == "trainable")}
    else:
        expected = {"conv_forward": 1, "conv_input_grad": int(x_grad),
                    "conv_weight_grad": int(w_grad), "conv_bias_grad": int(bias == "trainable")}
    assert counts == expected
    assert y.requires_grad == (x_grad or w_grad or bias == "trainable")


def _torch_double_backward(fn, x, w, b, gy, v):
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y = fn(tx, tw, tb)
    (gx,) = torch.autograd.grad(y, tx, torch.tensor(gy), create_graph=True)
    penalty = (gx * torch.tensor(v)).sum() + (gx ** 2).sum()
    return [t.numpy() for t in torch.autograd.grad(penalty, (tx, tw, tb), allow_unused=True,
                                                    materialize_grads=True)]


def _ours_double_backward(fn, x, w, b, gy, v):
    cx, cw, cb = (cg.tensor(a, requires_grad=True) for a in (x, w, b))
    y = fn(cx, cw, cb)
    (gx,) = cg.grad(y, cx, gy, create_graph=True)
    penalty = (gx * v).sum() + (gx ** 2).sum()
    out = cg.grad(penalty, (cx, cw, cb), allow_unused=True)
    return [np.zeros_like(a) if g is None else g.data for g, a in zip(out, (x, w, b))]


@pytest.mark.parametrize("case", [
    dict(kind="conv2d", stride=2, padding=1, dilation=1, groups=1),
    dict(kind="conv2d", stride=1, padding=2, dilation=2, groups=2),
    dict(kind="conv2d", stride=(2, 1), padding=(0, 1), dilation=(1, 3), groups=4),
    dict(kind="conv_transpose2d", stride=2, padding=1, dilation=1, groups=1, output_padding=1),
    dict(kind="conv_transpose2d", stride=3, padding=2, dilation=2, groups=2, output_padding=1),
    dict(kind="conv_transpose2d", stride=(1, 2), padding=0, dilation=(2, 1), groups=4,
         output_padding=(1, 0)),
])
def test_double_backward_matches_torch(case):
    case = dict(case)
    kind, groups = case.pop("kind"), case["groups"]
    x = rng.standard_normal((2, 4, 8, 7))
    if kind == "conv2d":
        w = rng.standard_normal((8, 4 // groups, 3, 2))
        t_fn = lambda a, b_, c: TF.conv2d(a, b_, c, **case)
        c_fn = lambda a, b_, c: F.conv2d(a, b_, c, **case)
        c_out = 8
    else:
        w = rng.standard_normal((4, 2, 3, 2))
        t_fn = lambda a, b_, c: TF.conv_transpose2d(a, b_, c, **case)
        c_fn = lambda a, b_, c: F.conv_transpose2d(a, b_, c, **case)
        c_out = 2 * groups
    b = rng.standard_normal(c_out)
    y_shape = t_fn(torch.tensor(x), torch.tensor(w), torch.tensor(b)).shape
    gy, v = rng.standard_normal(tuple(y_shape)), rng.standard_normal(x.shape)
    expected = _torch_double_backward(t_fn, x, w, b, gy, v)
    got = _ours_double_backward(c_fn, x, w, b, gy, v)
    for name, g, e in zip("xwb", got, expected):
        assert_close(g, e, np.float64, f"d penalty / d{name}")


def test_double_backward_of_weight_grad_matches_torch():
    """Second order through conv_weight_grad: a penalty on d loss / d w."""
    x, w = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 3))
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (tgw,) = torch.autograd.grad((TF.conv2d(tx, tw, stride=2, dilation=(1, 2)) ** 2).sum(), tw,
                                 create_graph=True)
    expected = torch.autograd.grad((tgw ** 2).sum(), (tx, tw))
    cx, cw = cg.tensor(x, requires_grad=True), cg.tensor(w, requires_grad=True)
    (gw,) = cg.grad((F.conv2d(cx, cw, stride=2, dilation=(1, 2)) ** 2).sum(), cw,
                    create_graph=True)
    got = cg.grad((gw ** 2).sum(), (cx, cw))
    for g, e in zip(got, expected):
        assert_close(g.data, e.numpy(), np.float64)


def test_hessian_vector_product_of_conv_general_matches_jax():
    """Input dilation, flip, groups and kernel dilation together, second order, vs JAX."""
    spec = dict(stride=(2, 1), padding=((2, -1), (1, 3)), kernel_dilation=(2, 1),
                input_dilation=(3, 2), groups=2, flip=True)
    x, w = rng.standard_normal((2, 4, 5, 4)), rng.standard_normal((6, 2, 2, 3))

    def jax_loss(xx, ww):
        y = jax.lax.conv_general_dilated(
            xx, ww[:, :, ::-1, ::-1], spec["stride"], list(spec["padding"]),
            lhs_dilation=spec["input_dilation"], rhs_dilation=spec["kernel_dilation"],
            dimension_numbers=("NCHW", "OIHW", "NCHW"), feature_group_count=2)
        return jnp.sum(jnp.tanh(y))

    vx, vw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    # Hessian-vector product: d/d(x, w) of <grad loss, (vx, vw)>
    hvp = jax.grad(lambda xx, ww: sum(
        jnp.vdot(g, v) for g, v in zip(jax.grad(jax_loss, (0, 1))(xx, ww), (vx, vw))),
        (0, 1))(x, w)
    cx, cw = cg.tensor(x, requires_grad=True), cg.tensor(w, requires_grad=True)
    y = F.conv_general(cx, cw, **spec)
    loss = y.tanh().sum()
    gx, gw = cg.grad(loss, (cx, cw), create_graph=True)
    got = cg.grad((gx * vx).sum() + (gw * vw).sum(), (cx, cw))
    for g, e in zip(got, hvp):
        assert_close(g.data, np.asarray(e), np.float64)

