"""``F.bilinear`` / ``nn.Bilinear``.  Oracle: torch's with the same weights: float64
results and gradients (second order too) at 1e-12, float32 within twice torch's float32
error; repr and state dict; errors."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import convgrad as cg


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _run(lib, layer, a, b, dtype, second=False):
    ta, tb = (lib.tensor(v, dtype=dtype, requires_grad=True) for v in (a, b))
    y = layer(ta, tb)
    r = lib.tensor(_rng("r", tuple(y.shape)).standard_normal(tuple(y.shape)), dtype=dtype)
    leaves = [ta, tb, layer.weight, layer.bias]
    grads = lib.autograd.grad((y * r).sum(), leaves, create_graph=second)
    out = [y, *grads]
    if second:
        out += list(lib.autograd.grad(sum((g * g).sum() for g in grads[:3]), leaves[:3]))
    return [np.asarray(v.detach().numpy() if lib is torch else v.numpy(), np.float64)
            for v in out]


@pytest.mark.parametrize("lead", [(6,), (2, 3), ()])
def test_bilinear_equals_torchs(lead):
    theirs = torch.nn.Bilinear(5, 4, 3).double()
    ours = cg.nn.Bilinear(5, 4, 3, dtype=cg.float64)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    a = _rng("a", lead).standard_normal((*lead, 5))
    b = _rng("b", lead).standard_normal((*lead, 4))
    second = bool(lead)
    t = _run(torch, theirs, a, b, torch.float64, second)
    o = _run(cg, ours, a, b, cg.float64, second)
    assert len(o) == len(t)
    for x, y in zip(o, t):
        assert x.shape == y.shape
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


def test_bilinear_float32_within_twice_torchs_error():
    t64 = torch.nn.Bilinear(64, 48, 32).double()
    t32 = torch.nn.Bilinear(64, 48, 32)
    t32.load_state_dict(t64.state_dict())
    ours = cg.nn.Bilinear(64, 48, 32)
    ours.load_state_dict({k: v.detach().float().numpy() for k, v in t64.state_dict().items()})
    a, b = _rng("a32").standard_normal((256, 64)), _rng("b32").standard_normal((256, 48))
    exact = _run(torch, t64, a, b, torch.float64)
    theirs = _run(torch, t32, a.astype(np.float32), b.astype(np.float32), torch.float32)
    mine = _run(cg, ours, a.astype(np.float32), b.astype(np.float32), cg.float32)
    assert all(v.dtype == np.float64 for v in mine)  # (converted for the comparison)
    assert ours(cg.tensor(a.astype(np.float32)), cg.tensor(b.astype(np.float32))).dtype == \
        np.float32
    for o, t, e in zip(mine, theirs, exact):
        err, torch_err = (float(np.linalg.norm(v - e) / np.linalg.norm(e)) for v in (o, t))
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


def test_bilinear_wrong_arguments_name_themselves():
    layer = cg.nn.Bilinear(5, 4, 3)
    with pytest.raises(ValueError, match="must share their leading dims"):
        layer(cg.ones(2, 5), cg.ones(3, 4))
    with pytest.raises(ValueError, match="must end with in1_features=5 and in2_features=4"):
        layer(cg.ones(2, 5), cg.ones(2, 3))
    with pytest.raises(ValueError, match="weight of shape .* must be 3-d"):
        cg.nn.functional.bilinear(cg.ones(2, 5), cg.ones(2, 4), cg.ones(3, 5))
