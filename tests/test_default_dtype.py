"""``cg.set_default_dtype`` / ``cg.get_default_dtype`` against torch's (the oracle): after
``set_default_dtype(float64)`` in both libraries, each creation function and each layer
makes the dtype torch makes, and a model trains a step in float64 to torch's values; the
float32 default changes nothing; every refusal names the value.  A fixture restores both
libraries' defaults, whatever a test does.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import convgrad as cg
import convgrad.nn as nn
import convgrad.optim as optim


@pytest.fixture(params=["float32", "float64"])
def default(request):
    """Both libraries' default dtype set to the param; restored afterwards."""
    saved_cg, saved_torch = cg.get_default_dtype(), torch.get_default_dtype()
    cg.set_default_dtype(np.dtype(request.param))
    torch.set_default_dtype(getattr(torch, request.param))
    try:
        yield np.dtype(request.param)
    finally:
        cg.set_default_dtype(saved_cg)
        torch.set_default_dtype(saved_torch)


@pytest.fixture
def float64_default():
    saved_cg, saved_torch = cg.get_default_dtype(), torch.get_default_dtype()
    cg.set_default_dtype(cg.float64)
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        cg.set_default_dtype(saved_cg)
        torch.set_default_dtype(saved_torch)


def _np(dtype: torch.dtype) -> np.dtype:
    return np.dtype(str(dtype).removeprefix("torch."))


f32 = np.zeros(3, np.float32)
# (name, convgrad call, torch call): each made without dtype=
CREATIONS = [
    ("zeros", lambda m: m.zeros(2, 3), None),
    ("ones", lambda m: m.ones((2,)), None),
    ("empty", lambda m: m.empty(2), None),
    ("full float", lambda m: m.full((2,), 1.5), None),
    ("full int", lambda m: m.full((2,), 3), None),
    ("full bool", lambda m: m.full((2,), True), None),
    ("rand", lambda m: m.rand(2, 2), None),
    ("randn", lambda m: m.randn(2), None),
    ("eye", lambda m: m.eye(3), None),
    ("linspace", lambda m: m.linspace(0, 1, 5), None),
    ("logspace", lambda m: m.logspace(0, 1, 5), None),
    ("arange float", lambda m: m.arange(0.5, 3), None),
    ("arange float step", lambda m: m.arange(0, 3, 0.5), None),
    ("arange int", lambda m: m.arange(3), None),
    ("tensor float", lambda m: m.tensor(1.5), None),
    ("tensor list", lambda m: m.tensor([[1.0, 2.0]]), None),
    ("tensor float32 array", lambda m: m.tensor(f32), None),
    ("tensor float64 array", lambda m: m.tensor(f32.astype(np.float64)), None),
    ("as_tensor list", lambda m: m.as_tensor([1.5, 2.5]), None),
    ("as_tensor float32 array", lambda m: m.as_tensor(f32), None),
    ("Tensor sizes", lambda m: m.Tensor(2, 3), None),
    ("zeros_like float32", lambda m: m.zeros_like(m.zeros(2, dtype=m.float32)), None),
    ("rand_like float32", lambda m: m.rand_like(m.zeros(2, dtype=m.float32)), None),
    ("full_like float32", lambda m: m.full_like(m.zeros(2, dtype=m.float32), 1.5), None),
    ("scalar_tensor", lambda m: m.scalar_tensor(2), None),
    ("empty_strided", lambda m: m.empty_strided((2, 2), (2, 1)), None),
    ("normal", lambda m: m.normal(0.0, 1.0, (3,)), None),
    ("hann_window", lambda m: m.hann_window(4), None),
    ("kaiser_window", lambda m: m.kaiser_window(4), None),
    ("randint", lambda m: m.randint(0, 5, (3,)), None),
    ("int tensor times float", lambda m: m.arange(3) * 2.5, None),
    ("float plus int tensor", lambda m: 0.5 + m.arange(3), None),
    ("int true division", lambda m: m.arange(3) / 2, None),
    ("int over int tensor", lambda m: m.arange(3) / m.arange(1, 4), None),
    ("exp of int", lambda m: m.exp(m.arange(3)), None),
    ("sqrt of bool", lambda m: m.sqrt(m.arange(3) > 0), None),
    ("mean of float32", lambda m: m.ones(2, dtype=m.float32).mean(), None),
    ("block_diag of none", lambda m: m.block_diag(), None),
    ("where int and float", lambda m: m.where(m.arange(3) > 0, m.arange(3), 1.5), None),
]


@pytest.mark.parametrize("name,make,_", CREATIONS, ids=[c[0] for c in CREATIONS])
def test_creation_dtype_is_torchs(default, name, make, _):
    assert make(cg).dtype == _np(make(torch).dtype), name


def test_integer_data_becomes_the_default_float(default):
    """convgrad's contract (torch keeps int64 here): integer and bool data given to
    ``cg.tensor`` without ``dtype`` become the default float dtype."""
    assert cg.tensor([1, 2]).dtype == default
    assert cg.tensor(np.arange(3)).dtype == default
    assert cg.tensor([True]).dtype == default
    assert cg.tensor([1, 2], dtype=cg.int64).dtype == cg.int64


def test_result_type_of_a_float_number(default):
    for ours, theirs in (((cg.arange(3), 2.5), (torch.arange(3), 2.5)),
                         ((cg.tensor(True, dtype=cg.bool), 1), (torch.tensor(True), 1)),
                         ((cg.tensor(True, dtype=cg.bool), 1.5), (torch.tensor(True), 1.5))):
        assert cg.result_type(*ours) == _np(torch.result_type(*theirs))


def test_finfo_of_the_default(default):
    assert cg.finfo().bits == torch.finfo().bits == default.itemsize * 8


def _layers(m):
    return {
        "Linear": lambda: m.nn.Linear(3, 2),
        "Bilinear": lambda: m.nn.Bilinear(2, 3, 2),
        "Conv1d": lambda: m.nn.Conv1d(2, 3, 3),
        "Conv2d": lambda: m.nn.Conv2d(2, 3, 3),
        "ConvTranspose2d": lambda: m.nn.ConvTranspose2d(2, 3, 3),
        "BatchNorm2d": lambda: m.nn.BatchNorm2d(3),
        "LayerNorm": lambda: m.nn.LayerNorm(4),
        "GroupNorm": lambda: m.nn.GroupNorm(2, 4),
        "RMSNorm": lambda: m.nn.RMSNorm(4),
        "Embedding": lambda: m.nn.Embedding(5, 3),
        "PReLU": lambda: m.nn.PReLU(),
        "LSTM": lambda: m.nn.LSTM(3, 4),
        "GRUCell": lambda: m.nn.GRUCell(3, 4),
        "MultiheadAttention": lambda: m.nn.MultiheadAttention(4, 2),
        "Parameter()": lambda: m.nn.Parameter(),
    }


@pytest.mark.parametrize("layer", sorted(_layers(torch)))
def test_layer_parameters_and_buffers_dtype_is_torchs(default, layer):
    ours, theirs = _layers(cg)[layer](), _layers(torch)[layer]()
    if layer == "Parameter()":
        assert ours.dtype == _np(theirs.dtype) == default
        return
    want = {k: _np(v.dtype) for k, v in [*theirs.named_parameters(), *theirs.named_buffers()]}
    got = {k: np.dtype(v.dtype) for k, v in [*ours.named_parameters(), *ours.named_buffers()]}
    assert got == want
    assert default in set(got.values())


def _model(m):
    return m.nn.Sequential(m.nn.Conv2d(2, 3, 3), m.nn.BatchNorm2d(3), m.nn.ReLU(),
                           m.nn.Flatten(), m.nn.Linear(12, 2))


def test_a_model_trains_a_step_in_float64_as_torch(float64_default):
    ours, theirs = _model(cg), _model(torch)
    with torch.no_grad():
        for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            q.copy_(torch.from_numpy(np.asarray(p.data)))
    x = cg.randn(4, 2, 4, 4)
    target = cg.tensor([0, 1, 1, 0], dtype=cg.int64)
    opt_c = optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        loss_c = cg.functional.cross_entropy(ours(x), target)
        loss_t = torch.nn.functional.cross_entropy(
            theirs(torch.from_numpy(np.asarray(x.data))),
            torch.from_numpy(np.asarray(target.data)))
        assert loss_c.dtype == cg.float64
        np.testing.assert_allclose(float(loss_c.item()), loss_t.item(), rtol=1e-12)
        opt_c.zero_grad()
        opt_t.zero_grad()
        loss_c.backward()
        loss_t.backward()
        for p, q in zip(ours.parameters(), theirs.parameters()):
            assert p.dtype == cg.float64 and p.grad.dtype == cg.float64
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10,
                                       atol=1e-13)
        opt_c.step()
        opt_t.step()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert p.dtype == cg.float64
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-10,
                                   atol=1e-13)
    assert ours[1].running_mean.dtype == cg.float64


@pytest.mark.parametrize("name,key", [("NAdam", "mu_product"), ("ASGD", "eta"),
                                      ("ASGD", "mu")])
def test_optimizer_scalar_state_takes_the_default(default, name, key):
    p = nn.Parameter(cg.ones(2, dtype=cg.float32))
    q = torch.nn.Parameter(torch.ones(2, dtype=torch.float32))
    opt_c, opt_t = getattr(optim, name)([p], lr=0.01), getattr(torch.optim, name)([q], lr=0.01)
    p.grad, q.grad = cg.ones(2, dtype=cg.float32), torch.ones(2, dtype=torch.float32)
    opt_c.step()
    opt_t.step()
    assert np.asarray(opt_c.state[p][key]).dtype == _np(opt_t.state[q][key].dtype)
    assert p.dtype == cg.float32  # the parameter keeps its own dtype


def test_get_and_set():
    assert cg.get_default_dtype() == cg.float32  # the start (the fixtures restore it)
    saved = torch.get_default_dtype()
    try:
        cg.set_default_dtype(np.float64)  # NumPy's scalar type is a dtype too
        assert cg.get_default_dtype() == cg.float64
        assert cg.zeros(1).dtype == cg.float64
        cg.set_default_dtype(cg.float32)
        assert cg.get_default_dtype() == cg.float32
        assert cg.zeros(1).dtype == cg.float32
        with pytest.warns(UserWarning, match="deprecated"):
            cg.set_default_tensor_type(cg.DoubleTensor)
        assert cg.get_default_dtype() == cg.float64
        with pytest.warns(UserWarning, match="deprecated"):
            cg.set_default_tensor_type("torch.FloatTensor")
        assert cg.get_default_dtype() == cg.float32
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.set_default_tensor_type(torch.DoubleTensor)
        assert torch.get_default_dtype() == torch.float64  # torch agrees
    finally:
        cg.set_default_dtype(cg.float32)
        torch.set_default_dtype(saved)


@pytest.mark.parametrize("bad", [cg.float16, cg.int64, cg.int32, cg.bool, np.float16,
                                 "float64", float, int, 3, None, torch.float64])
def test_refusals_name_the_value(bad):
    with pytest.raises(TypeError, match=r"set_default_dtype: d=.*only floating-point types"):
        cg.set_default_dtype(bad)
    assert cg.get_default_dtype() == cg.float32  # unchanged


def test_torch_refuses_the_non_floats_too():
    for bad in (torch.int64, "float64", float, 3):
        with pytest.raises(TypeError, match="only floating-point types"):
            torch.set_default_dtype(bad)
    assert torch.get_default_dtype() == torch.float32


@pytest.mark.parametrize("bad", [cg.LongTensor, "torch.IntTensor", "DoubleTensors", 3,
                                 cg.float64])
def test_set_default_tensor_type_refusals(bad):
    with pytest.raises(TypeError, match=r"set_default_tensor_type: t=.*expected "
                                        r"cg.FloatTensor or cg.DoubleTensor"):
        cg.set_default_tensor_type(bad)
    assert cg.get_default_dtype() == cg.float32


def test_explicit_dtypes_ignore_the_default(float64_default):
    assert cg.zeros(2, dtype=cg.float32).dtype == cg.float32
    assert nn.Linear(2, 2, dtype=cg.float32).weight.dtype == cg.float32
    assert cg.tensor([1.5], dtype=cg.float32).dtype == cg.float32
    assert cg.FloatTensor(2).dtype == cg.float32  # a typed constructor keeps its type


def test_unknown_dtypes_are_refused_and_torchs_are_read_by_name():
    """A dtype NumPy cannot read is a TypeError (it had become float64: NumPy's dtype
    compares equal to None); torch's dtype objects mean their namesakes."""
    with pytest.raises(TypeError, match="dtype=<object"):
        cg.zeros(2, dtype=object())
    with pytest.raises(TypeError, match="torch.float16"):
        cg.zeros(2, dtype=torch.float16)
    assert cg.zeros(2, dtype=torch.int64).dtype == cg.int64
    assert cg.ones(2, dtype=torch.float32).dtype == cg.float32
    assert cg.tensor([1.0], dtype=torch.float64).dtype == cg.float64
