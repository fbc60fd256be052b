"""Oracle: torch.nn.utils (torch 2.13) on the same gradients: clipping by norm and by value,
and parameters_to_vector / vector_to_parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import convgrad as cg  # noqa: E402
from convgrad import nn  # noqa: E402
from convgrad.nn.utils import (  # noqa: E402
    clip_grad_norm_,
    clip_grad_value_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)

SHAPES = [(7, 5), (16,), (3, 2, 2, 2), ()]


def _pair(dtype, scale=1.0, seed=0, with_none=True):
    rng = np.random.default_rng(seed)
    ours, theirs = [], []
    for i, s in enumerate(SHAPES + [(4,)]):
        p = np.asarray(rng.standard_normal(s), dtype)
        a, b = nn.Parameter(p.copy()), torch.nn.Parameter(torch.from_numpy(p.copy()))
        if not (with_none and i == len(SHAPES)):  # the last parameter has no gradient
            g = np.asarray(rng.standard_normal(s) * scale, dtype)
            a.grad, b.grad = cg.tensor(g, dtype=dtype), torch.from_numpy(g.copy())
        ours.append(a)
        theirs.append(b)
    return ours, theirs


TOL = {np.float32: dict(rtol=2e-6, atol=1e-7), np.float64: dict(rtol=1e-13, atol=1e-15)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, -math.inf, 0])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_equals_torch(dtype, norm_type, max_norm):
    ours, theirs = _pair(dtype)
    total = clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    want = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    assert isinstance(total, cg.Tensor) and total.dtype == dtype and total.shape == ()
    np.testing.assert_allclose(total.item(), want.item(), **TOL[dtype])
    for a, b in zip(ours, theirs):
        if b.grad is None:
            assert a.grad is None
        else:
            assert a.grad.dtype == dtype
            np.testing.assert_allclose(a.grad.data, b.grad.numpy(), **TOL[dtype])


def test_clip_grad_norm_of_a_model_and_non_finite_norms():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.Tanh(),
                                 torch.nn.Flatten(), torch.nn.Linear(12, 2))
    ours = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Tanh(), nn.Flatten(), nn.Linear(12, 2))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 2, 4, 4)).astype(np.float32)
    (ours(x) ** 2).sum().backward()
    (theirs(torch.from_numpy(x)) ** 2).sum().backward()
    total = clip_grad_norm_(ours.parameters(), 0.1)
    want = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.1)
    np.testing.assert_allclose(float(total), float(want), rtol=1e-5)
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(a.grad.data, b.grad.numpy(), rtol=1e-4, atol=1e-7,
                                   err_msg=name)
    ours_p, theirs_p = _pair(np.float32)
    ours_p[0].grad.data[0, 0] = np.inf
    theirs_p[0].grad[0, 0] = math.inf
    with pytest.raises(ValueError, match="clip_grad_norm_: the total norm of order 2.0.*inf"):
        clip_grad_norm_(ours_p, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(ours_p, 1.0)
    want = torch.nn.utils.clip_grad_norm_(theirs_p, 1.0)
    assert math.isinf(float(total)) and math.isinf(float(want))
    for a, b in zip(ours_p, theirs_p):
        if b.grad is not None:
            np.testing.assert_array_equal(np.isnan(a.grad.data), np.isnan(b.grad.numpy()))


def test_get_total_norm_and_empty_inputs():
    ours, theirs = _pair(np.float64)
    grads = [p.grad for p in ours if p.grad is not None]
    want = torch.nn.utils.get_total_norm([p.grad for p in theirs if p.grad is not None])
    np.testing.assert_allclose(get_total_norm(grads).item(), want.item(), rtol=1e-14)
    assert clip_grad_norm_([nn.Parameter(np.ones(2, np.float32))], 1.0).item() == 0.0


def test_clipping_a_graph_gradient_leaves_the_graph_alone():
    p = nn.Parameter(np.array([3.0, 4.0]))
    (gp,) = cg.grad((p * p).sum(), [p], create_graph=True)
    p.grad = gp
    before = gp.data.copy()
    clip_grad_norm_([p], 1.0)
    np.testing.assert_array_equal(gp.data, before)
    np.testing.assert_allclose(p.grad.data, before / (10 + 1e-6))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_clip_grad_value_equals_torch(dtype):
    ours, theirs = _pair(dtype, scale=3.0)
    assert clip_grad_value_(ours, 1.25) is None
    torch.nn.utils.clip_grad_value_(theirs, 1.25)
    for a, b in zip(ours, theirs):
        if b.grad is not None:
            np.testing.assert_array_equal(a.grad.data, b.grad.numpy())
            assert a.grad.dtype == dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_parameters_to_vector_and_back_equal_torch(dtype):
    ours, theirs = _pair(dtype, with_none=False)
    vec = parameters_to_vector(ours)
    tvec = torch.nn.utils.parameters_to_vector(theirs)
    np.testing.assert_array_equal(vec.data, tvec.detach().numpy())
    # differentiable: d(sum(vec * w)) / dp is w's slice, as torch's
    w = np.linspace(-1, 1, vec.shape[0]).astype(dtype)
    (vec * w).sum().backward()
    (tvec * torch.from_numpy(w)).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.grad.data, b.grad.numpy())
    new = np.arange(vec.shape[0], dtype=dtype) / 7
    before = [a.data for a in ours]
    vector_to_parameters(cg.tensor(new, dtype=dtype), ours)
    torch.nn.utils.vector_to_parameters(torch.from_numpy(new.copy()), theirs)
    for a, b, arr in zip(ours, theirs, before):
        assert a.data is arr  # in place
        np.testing.assert_array_equal(a.data, b.detach().numpy())


@pytest.mark.parametrize("call,exc,pattern", [
    (lambda p: clip_grad_norm_(p, "big"), TypeError, "max_norm='big'"),
    (lambda p: clip_grad_norm_(p, 1.0, norm_type=None), TypeError, "norm_type=None"),
    (lambda p: clip_grad_norm_(3, 1.0), TypeError, "parameters must be"),
    (lambda p: clip_grad_norm_([np.ones(2)], 1.0), TypeError, "parameters\\[0\\]"),
    (lambda p: clip_grad_value_(p, -1), ValueError, "clip_value=-1"),
    (lambda p: vector_to_parameters(np.zeros(3), p), TypeError, "vec must be a Tensor"),
    (lambda p: vector_to_parameters(cg.zeros(3), p), ValueError, "3 entries, the parameters 80"),
    (lambda p: vector_to_parameters(cg.zeros(2, 2), p), ValueError, "1-D"),
    (lambda p: parameters_to_vector(p[0]), TypeError, "iterable"),
    (lambda p: parameters_to_vector([]), ValueError, "empty"),
])
def test_errors_name_the_argument(call, exc, pattern):
    ours, _ = _pair(np.float32)
    with pytest.raises(exc, match=pattern):
        call(ours)
