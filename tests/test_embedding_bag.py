"""``F.embedding_bag`` and ``nn.EmbeddingBag``.  Oracle: torch's on the same table and
indices: float64 results and gradients (of the table and of per-sample weights; second
order through the weights) at 1e-12, float32 within twice torch's float32 error; reprs
and state-dict keys; errors."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import convgrad as cg


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# (input, offsets, kwargs): 1-d with offsets and an empty bag, include_last_offset, 2-d
# bags, padding_idx (left out of the sums and the means' counts), per-sample weights
INPUT = np.array([1, 2, 4, 5, 4, 3, 2, 9, 9, 0])
CASES = [
    (INPUT, [0, 4, 4, 7], {}),
    (INPUT, [0, 3, 6, 10], {"include_last_offset": True}),
    (INPUT.reshape(2, 5), None, {}),
    (INPUT, [0, 2, 5], {"padding_idx": 2}),
    (INPUT.reshape(5, 2), None, {"padding_idx": 9}),
]


def _run(lib, table, inp, off, mode, kw, dtype, psw=None, second=False):
    w = lib.tensor(table, dtype=dtype, requires_grad=True)
    args = {"mode": mode, **kw}
    if psw is not None:
        args["per_sample_weights"] = p = lib.tensor(psw, dtype=dtype, requires_grad=True)
    i = torch.tensor(inp) if lib is torch else inp
    o = None if off is None else (torch.tensor(off) if lib is torch else np.array(off))
    y = lib.nn.functional.embedding_bag(i, w, o, **args)
    r = lib.tensor(_rng("r", tuple(y.shape)).standard_normal(tuple(y.shape)), dtype=dtype)
    leaves = [w] if psw is None else [w, p]
    grads = lib.autograd.grad((y * r).sum(), leaves, create_graph=second)
    out = [y, *grads]
    if second:
        out += list(lib.autograd.grad(sum((g * g).sum() for g in grads), leaves,
                                      allow_unused=True))
    return [np.asarray(a.detach().numpy() if lib is torch else a.numpy(), np.float64)
            for a in out if a is not None]


@pytest.mark.parametrize("inp, off, kw", CASES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_equals_torchs(inp, off, kw, mode):
    table = _rng("table").standard_normal((10, 4))
    table[3] = table[4]  # a tie for max: the first occurrence takes the gradient, as torch
    theirs = _run(torch, table, inp, off, mode, kw, torch.float64)
    ours = _run(cg, table, inp, off, mode, kw, cg.float64)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


def test_per_sample_weights_with_second_order():
    table = _rng("psw table").standard_normal((10, 4))
    psw = _rng("psw").standard_normal(INPUT.shape)
    off = [0, 4, 4, 7]
    theirs = _run(torch, table, INPUT, off, "sum", {}, torch.float64, psw)
    ours = _run(cg, table, INPUT, off, "sum", {}, cg.float64, psw, True)
    assert len(ours) == 5 and len(theirs) == 3
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)
    # second order (torch's embedding_bag has none): torch's same sum composed of
    # index_add, differentiated twice
    w = torch.tensor(table, requires_grad=True)
    p = torch.tensor(psw, requires_grad=True)
    bag = torch.tensor(np.repeat(np.arange(4), np.diff(off + [10])))
    y = torch.zeros(4, 4, dtype=torch.float64).index_add(0, bag, w[torch.tensor(INPUT)]
                                                         * p[:, None])
    r = torch.tensor(_rng("r", (4, 4)).standard_normal((4, 4)))
    grads = torch.autograd.grad((y * r).sum(), [w, p], create_graph=True)
    second = torch.autograd.grad(sum((g * g).sum() for g in grads), [w, p])
    for o, t in zip(ours[3:], second):
        np.testing.assert_allclose(o, t.numpy(), rtol=1e-12, atol=1e-12)


def test_float32_within_twice_torchs_error():
    rng = _rng("f32")
    table = rng.standard_normal((500, 16))
    inp = rng.integers(0, 500, 4000)
    off = np.sort(rng.choice(np.arange(1, 4000), 63, replace=False)).tolist()
    off = [0] + off
    for mode in ("sum", "mean"):
        exact = _run(torch, table, inp, off, mode, {}, torch.float64)
        theirs = _run(torch, table.astype(np.float32), inp, off, mode, {}, torch.float32)
        ours = _run(cg, table.astype(np.float32), inp, off, mode, {}, cg.float32)
        for o, t, e in zip(ours, theirs, exact):
            scale = float(np.linalg.norm(e))
            err, torch_err = (float(np.linalg.norm(a - e)) / scale for a in (o, t))
            assert err <= 2 * max(torch_err, 2.0 ** -24), (mode, err, torch_err)


def test_layer_equals_its_function_and_torchs_layer():
    theirs = torch.nn.EmbeddingBag(10, 4, mode="max", padding_idx=1).double()
    ours = cg.nn.EmbeddingBag(10, 4, mode="max", padding_idx=1, dtype=cg.float64)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    assert (ours.weight.numpy()[1] == 0).all()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    np.testing.assert_array_equal(
        ours(INPUT.reshape(2, 5)).numpy(),
        theirs(torch.tensor(INPUT.reshape(2, 5))).detach().numpy())


def test_wrong_arguments_name_themselves():
    F = cg.nn.functional
    w = cg.tensor(np.ones((10, 4)))
    with pytest.raises(ValueError, match="mode='median' must be one of"):
        F.embedding_bag(INPUT, w, [0], mode="median")
    with pytest.raises(ValueError, match="a 1-d input needs offsets"):
        F.embedding_bag(INPUT, w)
    with pytest.raises(ValueError, match="offsets must be None for a 2-d input"):
        F.embedding_bag(INPUT.reshape(2, 5), w, [0, 5])
    with pytest.raises(ValueError, match="must start at 0"):
        F.embedding_bag(INPUT, w, [1, 4])
    with pytest.raises(ValueError, match="per_sample_weights are only supported with "
                                         "mode='sum'"):
        F.embedding_bag(INPUT, w, [0], per_sample_weights=np.ones(10))
    with pytest.raises(ValueError, match="per_sample_weights of shape"):
        F.embedding_bag(INPUT, w, [0], mode="sum", per_sample_weights=np.ones(3))
    with pytest.raises(IndexError, match="index 10 is out of range"):
        F.embedding_bag(np.array([10]), w, [0])
