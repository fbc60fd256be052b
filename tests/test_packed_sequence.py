"""Packed sequences (``convgrad.nn.utils.rnn``) and the recurrent layers on them.  Oracle:
torch's functions and layers holding the same weights: packing and padding exactly;
float64 outputs, final states and every gradient (input, initial states, parameters;
second order) at 1e-10; float32 within twice torch's float32 error."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import convgrad as cg
from convgrad.nn.utils import rnn as R
from convgrad.ops.profiler import profile

TR = torch.nn.utils.rnn
F_IN, HIDDEN = 3, 5


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


@pytest.mark.parametrize("lengths,enforce_sorted", [([5, 3, 3, 1], True), ([2, 5, 1, 4], False),
                                                    ([4], True), ([3, 3], False)])
@pytest.mark.parametrize("batch_first", [False, True])
def test_packing_and_padding_equal_torchs(lengths, enforce_sorted, batch_first):
    rng = _rng(lengths, batch_first)
    shape = (len(lengths), max(lengths), 2) if batch_first else (max(lengths), len(lengths), 2)
    x = rng.standard_normal(shape)
    theirs = TR.pack_padded_sequence(torch.tensor(x), lengths, batch_first, enforce_sorted)
    ours = R.pack_padded_sequence(cg.tensor(x), lengths, batch_first, enforce_sorted)
    np.testing.assert_array_equal(ours.data.numpy(), theirs.data.numpy())
    assert ours.batch_sizes.tolist() == theirs.batch_sizes.tolist()
    assert ours.batch_sizes.dtype == np.int64
    for a, b in ((ours.sorted_indices, theirs.sorted_indices),
                 (ours.unsorted_indices, theirs.unsorted_indices)):
        assert (a is None) == (b is None) and (a is None or a.tolist() == b.tolist())
    for total in (None, max(lengths) + 2):
        padded, lens = R.pad_packed_sequence(ours, batch_first, -1.5, total)
        t_padded, t_lens = TR.pad_packed_sequence(theirs, batch_first, -1.5, total)
        np.testing.assert_array_equal(padded.numpy(), t_padded.numpy())
        assert lens.tolist() == t_lens.tolist() and lens.dtype == np.int64
    for a, b in zip(R.unpack_sequence(ours), TR.unpack_sequence(theirs)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_packing_is_differentiable():
    """The gradient of a packed input's data flows back to the padded input (zero at the
    padding), and through padding back to the packed data."""
    x = _rng("grad").standard_normal((4, 3, 2))
    xt, xc = torch.tensor(x, requires_grad=True), cg.tensor(x, requires_grad=True)
    weights = _rng("w").standard_normal((6, 6))
    for lib, xx, mod in ((torch, xt, TR), (cg, xc, R)):
        packed = mod.pack_padded_sequence(xx, [2, 4, 1], enforce_sorted=False)
        padded, _ = mod.pad_packed_sequence(packed, total_length=6)
        (padded.reshape(6, 6) * lib.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(xc.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_and_pack_sequence_equal_torchs(batch_first, side):
    rng = _rng("pad", batch_first, side)
    seqs = [rng.standard_normal((n, 2, 3)) for n in (3, 5, 1)]
    theirs = TR.pad_sequence([torch.tensor(s) for s in seqs], batch_first, 7.0, side)
    ours = R.pad_sequence([cg.tensor(s) for s in seqs], batch_first, 7.0, side)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    ordered = sorted(seqs, key=len, reverse=True)
    t_packed = TR.pack_sequence([torch.tensor(s) for s in ordered])
    packed = R.pack_sequence([cg.tensor(s) for s in ordered])
    np.testing.assert_array_equal(packed.data.numpy(), t_packed.data.numpy())
    for a, s in zip(R.unpad_sequence(ours, [3, 5, 1], batch_first), seqs):
        if side == "right":
            np.testing.assert_array_equal(a.numpy(), s)


LAYERS = [
    ("LSTM", {}), ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 3, "bidirectional": True}), ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("RNN", {"nonlinearity": "relu", "bidirectional": True}), ("RNN", {"num_layers": 2}),
]


def _pair(name: str, kw: dict, dtype) -> tuple:
    theirs = getattr(torch.nn, name)(F_IN, HIDDEN, **kw).to(dtype)
    ours = getattr(cg.nn, name)(F_IN, HIDDEN, dtype=cg.float64 if dtype == torch.float64
                                else cg.float32, **kw)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return theirs, ours


def _run(lib, layer, x, states, lengths, enforce_sorted, weights) -> list:
    """Packed output, final states and every gradient of a weighted sum of them."""
    mod, tensor = (TR, torch.tensor) if lib is torch else (R, cg.tensor)
    xx = tensor(x, requires_grad=True)
    hx = [tensor(s, requires_grad=True) for s in states]
    packed = mod.pack_padded_sequence(xx, lengths, enforce_sorted=enforce_sorted)
    out, st = layer(packed, (tuple(hx) if len(hx) == 2 else hx[0]) if hx else None)
    finals = list(st) if isinstance(st, tuple) else [st]
    results = [out.data, *finals]
    loss = sum((r * tensor(w)).sum() for r, w in zip(results, weights))
    loss.backward()
    grads = [xx.grad, *(h.grad for h in hx), *(p.grad for p in layer.parameters())]
    return [np.asarray(r.detach().numpy() if lib is torch else r.numpy(), np.float64)
            for r in results + grads]


def _case(name, kw, dtype, given):
    rng = _rng(name, repr(kw), given)
    lengths = [2, 6, 1, 4]
    x = rng.standard_normal((6, 4, F_IN))
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    states = []
    if given:
        states = [rng.standard_normal((layers, 4, kw.get("proj_size") or HIDDEN))]
        if name == "LSTM":
            states.append(rng.standard_normal((layers, 4, HIDDEN)))
    theirs, ours = _pair(name, kw, dtype)
    width = HIDDEN * (2 if kw.get("bidirectional") else 1) if not kw.get("proj_size") else \
        kw["proj_size"] * (2 if kw.get("bidirectional") else 1)
    shapes = [(sum(lengths), width), (layers, 4, kw.get("proj_size") or HIDDEN)]
    if name == "LSTM":
        shapes.append((layers, 4, HIDDEN))
    weights = [rng.standard_normal(s) for s in shapes]
    return theirs, ours, x, states, lengths, weights


@pytest.mark.parametrize("name,kw", LAYERS)
@pytest.mark.parametrize("given", [False, True])
def test_layers_on_packed_sequences_equal_torchs_float64(name, kw, given):
    theirs, ours, x, states, lengths, weights = _case(name, kw, torch.float64, given)
    want = _run(torch, theirs, x, states, lengths, False, weights)
    with profile() as prof:
        got = _run(cg, ours, x, states, lengths, False, weights)
    assert prof.count("recurrence_forward") and prof.count("recurrence_backward")
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,kw", LAYERS[:4])
def test_layers_on_packed_sequences_float32_within_twice_torchs_error(name, kw):
    theirs, ours, x, states, lengths, weights = _case(name, kw, torch.float64, True)
    ref = _run(torch, theirs, x, states, lengths, False, weights)
    theirs32, ours32 = _pair(name, kw, torch.float32)
    theirs32.load_state_dict(theirs.state_dict())
    ours32.load_state_dict({k: v.detach().float().numpy() for k, v in theirs.state_dict().items()})
    x32, states32 = x.astype(np.float32), [s.astype(np.float32) for s in states]
    t32 = _run(torch, theirs32, x32, states32, lengths, False, weights)
    c32 = _run(cg, ours32, x32, states32, lengths, False, weights)
    for a, b, r in zip(c32, t32, ref):
        ours_err = np.linalg.norm(a - r) / np.linalg.norm(r)
        torch_err = np.linalg.norm(b - r) / np.linalg.norm(r)
        assert ours_err <= 2 * torch_err + 1e-7, (ours_err, torch_err)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_second_order_through_a_packed_layer_equals_torchs(name):
    theirs, ours = _pair(name, {"bidirectional": True}, torch.float64)
    x = _rng("second", name).standard_normal((4, 3, F_IN))
    found = []
    for lib, layer, mod, tensor in ((torch, theirs, TR, torch.tensor), (cg, ours, R, cg.tensor)):
        xx = tensor(x, requires_grad=True)
        out, _ = layer(mod.pack_padded_sequence(xx, [2, 4, 1], enforce_sorted=False))
        g, = lib.autograd.grad((out.data ** 2).sum(), xx, create_graph=True)
        gg, = lib.autograd.grad((g ** 2).sum(), layer.weight_hh_l0_reverse)
        found.append([np.asarray(v.detach().numpy() if lib is torch else v.numpy())
                      for v in (g, gg)])
    for a, b in zip(*found):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14)


def test_wrong_arguments_name_themselves():
    x = cg.tensor(np.zeros((3, 2, 1)))
    with pytest.raises(ValueError, match="lengths=.*decreasing.*enforce_sorted"):
        R.pack_padded_sequence(x, [1, 3])
    with pytest.raises(ValueError, match="lengths=.*exceed"):
        R.pack_padded_sequence(x, [4, 1])
    with pytest.raises(ValueError, match="at least 1"):
        R.pack_padded_sequence(x, [3, 0])
    with pytest.raises(ValueError, match="one entry per sequence"):
        R.pack_padded_sequence(x, [3, 2, 1])
    with pytest.raises(TypeError, match="convgrad.Tensor"):
        R.pack_padded_sequence(np.zeros((3, 2, 1)), [3, 2])
    packed = R.pack_padded_sequence(x, [3, 2])
    with pytest.raises(ValueError, match="total_length=2"):
        R.pad_packed_sequence(packed, total_length=2)
    with pytest.raises(TypeError, match="PackedSequence"):
        R.pad_packed_sequence(x)
    with pytest.raises(ValueError, match="padding_side"):
        R.pad_sequence([x], padding_side="middle")
    with pytest.raises(ValueError, match="input_size=4"):
        cg.nn.LSTM(4, 2)(R.pack_padded_sequence(x.float(), [3, 2]))
