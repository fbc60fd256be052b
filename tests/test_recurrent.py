"""Recurrent layers (``RNN``, ``LSTM``, ``GRU`` and their cells).  Oracle: torch's own
layers holding the same weights: float64 results and gradients (input, initial states,
every parameter; second order) at 1e-10, float32 results and gradients within twice
torch's float32 error (relative 2-norm, both against torch float64)."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
import torch

import convgrad as cg


def _rng(*key: object) -> np.random.Generator:
    """A generator seeded by the test case (the same draws however the tests are selected)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))

# (class, constructor keywords, input shape): every option, alone and together
LAYERS = [
    ("LSTM", {}, (12, 8, 5)),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}, (8, 12, 5)),
    ("LSTM", {"proj_size": 4, "num_layers": 2, "bidirectional": True}, (12, 8, 5)),
    ("LSTM", {"bias": False}, (4, 2, 5)),
    ("GRU", {}, (12, 8, 5)),
    ("GRU", {"num_layers": 3, "bidirectional": True, "batch_first": True}, (8, 10, 5)),
    ("RNN", {}, (12, 8, 5)),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}, (12, 8, 5)),
    ("LSTM", {"num_layers": 2}, (6, 5)),  # unbatched
    ("GRU", {"bidirectional": True}, (6, 5)),
    ("RNN", {"nonlinearity": "relu"}, (6, 5)),
]
HIDDEN = 24


def _pair(name: str, kw: dict, dtype) -> tuple:
    """torch's layer and ours, with torch's weights."""
    theirs = getattr(torch.nn, name)(5, HIDDEN, **kw).to(dtype)
    ours = getattr(cg.nn, name)(5, HIDDEN, dtype=cg.float64 if dtype == torch.float64
                                else cg.float32, **kw)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return theirs, ours


def _states(rng, name: str, kw: dict, shape: tuple) -> list[np.ndarray]:
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    batch = () if len(shape) == 2 else (shape[0] if kw.get("batch_first") else shape[1],)
    out = kw.get("proj_size") or HIDDEN
    states = [rng.standard_normal((layers, *batch, out))]
    if name == "LSTM":
        states.append(rng.standard_normal((layers, *batch, HIDDEN)))
    return states


def _run(lib, layer, x: np.ndarray, states: list, dtype, weights: list) -> list:
    """Outputs and every gradient of ``sum(w_i * out_i)``, as float64 arrays."""
    tensor = torch.tensor if lib is torch else cg.tensor
    xt = tensor(x.astype(np.float64), dtype=dtype, requires_grad=True)
    st = [tensor(s, dtype=dtype, requires_grad=True) for s in states]
    out, hidden = layer(xt, tuple(st) if len(st) == 2 else st[0])
    outs = [out, *(hidden if isinstance(hidden, tuple) else (hidden,))]
    total = sum((o * tensor(w, dtype=dtype)).sum() for o, w in zip(outs, weights))
    total.backward()
    arrays = outs + [xt.grad, *(s.grad for s in st), *(p.grad for p in layer.parameters())]
    return [np.asarray(a.detach().numpy() if lib is torch else a.numpy(), np.float64)
            for a in arrays]


def _weights(rng, theirs, x, states) -> list[np.ndarray]:
    xt = torch.tensor(x)
    st = [torch.tensor(s) for s in states]
    with torch.no_grad():
        out, hidden = theirs.double()(xt, tuple(st) if len(st) == 2 else st[0])
    outs = [out, *(hidden if isinstance(hidden, tuple) else (hidden,))]
    return [rng.standard_normal(tuple(o.shape)) for o in outs]


@pytest.mark.parametrize("name, kw, shape", LAYERS)
def test_float64_results_and_gradients_equal_torchs(name, kw, shape):
    rng = _rng(name, kw, shape)
    theirs, ours = _pair(name, kw, torch.float64)
    x, states = rng.standard_normal(shape), _states(rng, name, kw, shape)
    weights = _weights(rng, theirs, x, states)
    expected = _run(torch, theirs, x, states, torch.float64, weights)
    got = _run(cg, ours, x, states, cg.float64, weights)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, kw, shape", LAYERS[:8])
def test_float32_within_twice_torchs_error(name, kw, shape):
    rng = _rng(name, kw, shape, 32)
    exact_layer, _ = _pair(name, kw, torch.float64)
    theirs32, ours32 = _pair(name, kw, torch.float32)
    exact_layer.load_state_dict({k: v.double() for k, v in theirs32.state_dict().items()})
    x = rng.standard_normal(shape).astype(np.float32)
    states = [s.astype(np.float32) for s in _states(rng, name, kw, shape)]
    weights = _weights(rng, exact_layer, x.astype(np.float64), [s.astype(np.float64)
                                                               for s in states])
    exact = _run(torch, exact_layer, x, states, torch.float64, weights)
    theirs = _run(torch, theirs32, x, states, torch.float32, weights)
    ours = _run(cg, ours32, x, states, cg.float32, weights)
    assert ours32.weight_ih_l0.dtype == np.float32
    for o, t, e in zip(ours, theirs, exact):
        scale = max(float(np.linalg.norm(e)), 1e-30)
        err, torch_err = (float(np.linalg.norm(a - e)) / scale for a in (o, t))
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("given", [True, False])
def test_cells_equal_torchs(name, batched, given):
    kw = {"nonlinearity": "relu"} if name == "RNNCell" and batched else {}
    theirs = getattr(torch.nn, name)(5, HIDDEN, **kw).double()
    ours = getattr(cg.nn, name)(5, HIDDEN, dtype=cg.float64, **kw)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    rng = _rng(name, batched, given)
    lead = (3,) if batched else ()
    x = rng.standard_normal((*lead, 5))
    states = [rng.standard_normal((*lead, HIDDEN)) for _ in range(2 if name == "LSTMCell"
                                                                  else 1)]
    results = []
    for lib, layer in ((torch, theirs), (cg, ours)):
        xt = lib.tensor(x, requires_grad=True)
        st = [lib.tensor(s, requires_grad=True) for s in states]
        hx = (tuple(st) if len(st) == 2 else st[0]) if given else None
        out = layer(xt, hx)
        outs = list(out) if isinstance(out, tuple) else [out]
        sum((o * (k + 1)).sum() for k, o in enumerate(outs)).backward()
        grads = [xt.grad] + ([s.grad for s in st] if given else [])
        grads += [p.grad for p in layer.parameters()]
        results.append([np.asarray(a.detach().numpy() if lib is torch else a.numpy())
                        for a in outs + grads])
    for g, e in zip(results[1], results[0]):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_second_order_gradients_equal_torchs():
    theirs, ours = _pair("LSTM", {"num_layers": 2}, torch.float64)
    x = _rng("second order").standard_normal((4, 2, 5))
    results = []
    for lib, layer in ((torch, theirs), (cg, ours)):
        xt = lib.tensor(x, requires_grad=True)
        out, (h, c) = layer(xt)
        (gx,) = lib.autograd.grad((out.tanh().sum() + (h * c).sum()), xt, create_graph=True)
        (gx * gx).sum().backward()
        results.append([np.asarray(a.detach().numpy() if lib is torch else a.numpy())
                        for a in [gx, xt.grad, layer.weight_hh_l1.grad]])
    for g, e in zip(results[1], results[0]):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)


def test_dropout_acts_between_layers_in_training_only():
    theirs, ours = _pair("GRU", {"num_layers": 2, "dropout": 0.5}, torch.float64)
    x = _rng("dropout").standard_normal((5, 4, 5))
    ours.eval()
    np.testing.assert_allclose(ours(cg.tensor(x))[0].numpy(),
                               theirs.eval()(torch.tensor(x))[0].detach().numpy(), rtol=1e-10)
    ours.train()
    a, b = ours(cg.tensor(x))[0].numpy(), ours(cg.tensor(x))[0].numpy()
    assert not np.allclose(a, b)  # a fresh mask each call
    with pytest.warns(UserWarning, match="num_layers > 1"):
        cg.nn.LSTM(5, HIDDEN, dropout=0.2)


def test_parameters_as_torchs():
    for name, kw, _ in LAYERS[:8]:
        theirs, ours = getattr(torch.nn, name)(5, HIDDEN, **kw), getattr(cg.nn, name)(
            5, HIDDEN, **kw, rng=1)
        assert [(k, tuple(v.shape)) for k, v in theirs.named_parameters()] == [
            (k, tuple(v.shape)) for k, v in ours.named_parameters()]
        assert repr(ours) == repr(theirs)
        values = np.concatenate([p.numpy().ravel() for p in ours.parameters()])
        bound = 1 / math.sqrt(HIDDEN)  # U(-bound, bound): its range and spread
        assert values.dtype == np.float32 and np.abs(values).max() <= bound
        assert abs(values.std() - bound / math.sqrt(3)) < 0.1 * bound
        assert [len(w) for w in ours.all_weights] == [len(w) for w in theirs.all_weights]
    for name in ("RNNCell", "LSTMCell", "GRUCell"):
        assert repr(getattr(cg.nn, name)(5, 3, bias=False)) == repr(
            getattr(torch.nn, name)(5, 3, bias=False))
    assert repr(cg.nn.RNNCell(5, 3, nonlinearity="relu")) == repr(
        torch.nn.RNNCell(5, 3, nonlinearity="relu"))
    ours.flatten_parameters()  # nothing to do, as on a CPU


def test_wrong_arguments_name_themselves():
    with pytest.raises(ValueError, match="proj_size=3 is only supported by LSTM"):
        cg.nn.RNNBase("GRU", 5, 7, proj_size=3)
    with pytest.raises(ValueError, match="proj_size=7 must be smaller than hidden_size=7"):
        cg.nn.LSTM(5, 7, proj_size=7)
    with pytest.raises(ValueError, match="nonlinearity='sigmoid'"):
        cg.nn.RNN(5, 7, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="dropout=1.5"):
        cg.nn.LSTM(5, 7, num_layers=2, dropout=1.5)
    with pytest.raises(TypeError, match="hidden_size=2.5"):
        cg.nn.GRU(5, 2.5)
    with pytest.raises(TypeError, match="batch_first=1"):
        cg.nn.LSTM(5, 7, batch_first=1)
    lstm = cg.nn.LSTM(5, 7, num_layers=2)
    with pytest.raises(ValueError, match="input_size=5"):
        lstm(cg.zeros(4, 2, 6))
    with pytest.raises(ValueError, match="must be 3-d"):
        lstm(cg.zeros(4, 2, 1, 5))
    with pytest.raises(TypeError, match=r"tuple \(h_0, c_0\)"):
        lstm(cg.zeros(4, 2, 5), cg.zeros(2, 2, 7))
    with pytest.raises(ValueError, match=r"h_0 of shape \(1, 2, 7\) must be \(2, 2, 7\)"):
        lstm(cg.zeros(4, 2, 5), (cg.zeros(1, 2, 7), cg.zeros(2, 2, 7)))
    with pytest.raises(ValueError, match="hx must be 2-d"):
        lstm(cg.zeros(4, 5), (cg.zeros(2, 1, 7), cg.zeros(2, 1, 7)))
    with pytest.raises(TypeError, match="float64"):
        lstm(cg.zeros(4, 2, 5, dtype=cg.float64))
    with pytest.raises(ValueError, match="no time steps"):
        lstm(cg.zeros(0, 2, 5))
    cell = cg.nn.LSTMCell(5, 7)
    with pytest.raises(ValueError, match="must be 1-d"):
        cell(cg.zeros(5), (cg.zeros(1, 7), cg.zeros(1, 7)))
    with pytest.raises(ValueError, match=r"\(N, input_size\)"):
        cell(cg.zeros(2, 3, 5))


def _ops(t) -> list[str]:
    """The names of every node of ``t``'s graph."""
    seen, stack, names = set(), [t.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.op.__name__)
        stack.extend(node.edges)
    return names


def test_each_direction_of_each_layer_is_one_node_and_its_kernels_ran():
    lstm = cg.nn.LSTM(5, HIDDEN, num_layers=2, bidirectional=True)
    with cg.profile() as prof:
        out, _ = lstm(cg.randn(9, 3, 5, rng=0))
        names = _ops(out)
        out.sum().backward()
    assert names.count("Recurrence") == 4  # no per-step nodes
    assert "Sigmoid" not in names and "Tanh" not in names
    ran = [(e.name, e.algorithm) for e in prof.of("recurrent")]
    assert sorted(set(ran)) == [("recurrence_backward", "numpy"),
                                ("recurrence_forward", "numpy")]
    assert len(ran) == 8  # each direction of each layer, once each way


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_a_cell_is_one_step_of_the_node(name):
    cell = getattr(cg.nn, name)(5, HIDDEN)
    with cg.profile() as prof:
        out = cell(cg.randn(3, 5, rng=1))
        names = _ops(out[0] if isinstance(out, tuple) else out)
        (out[0] if isinstance(out, tuple) else out).sum().backward()
    assert names.count("Recurrence") == 1 and names.count("Linear") == 1
    assert "Sigmoid" not in names and "Tanh" not in names
    assert [e.name for e in prof.of("recurrent")] == ["recurrence_forward",
                                                      "recurrence_backward"]
