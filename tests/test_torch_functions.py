"""torch's further functions: ``einsum``, ``logsumexp``, ``log2``/``log10``, ``outer``,
``isclose``/``allclose``, ``is_tensor``, ``inference_mode`` and ``F.normalize``.  Oracle:
torch 2.13 on the same values: float64 results, gradients and second-order gradients at
1e-10, float32 within twice torch's float32 error; errors name their argument."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import convgrad as cg


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _orders(lib, fn, arrays, dtype) -> list:
    """[y, first-order gradients..., second-order gradients...] as float64 arrays."""
    ts = [lib.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    y = fn(lib, *ts)
    r = lib.tensor(_rng("r", tuple(y.shape)).standard_normal(tuple(y.shape)), dtype=dtype)
    gs = lib.autograd.grad((y * r).sum(), ts, create_graph=True)
    second = sum((g * g).sum() for g in gs)
    hs = (lib.autograd.grad(second, ts, allow_unused=True) if second.requires_grad
          else [])  # (a linear map: its gradients are constants)
    return [np.asarray((a.detach().numpy() if lib is torch else a.numpy()), np.float64)
            for a in (y, *gs, *hs) if a is not None]


def _equal_torch(fn, arrays, rtol=1e-10):
    theirs = _orders(torch, fn, arrays, torch.float64)
    ours = _orders(cg, fn, arrays, cg.float64)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape
        np.testing.assert_allclose(o, t, rtol=rtol, atol=1e-11)


EINSUM = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,ij->", [(3, 4), (3, 4)]),
          ("bhid,bhjd->bhij", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("i,j->ij", [(3,), (4,)]),
          ("ij->j", [(3, 4)]), ("ij->ji", [(3, 4)]), ("...ij,...jk->...ik", [(2, 3, 4),
                                                                          (2, 4, 5)]),
          ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ij,jk", [(2, 3), (3, 4)]),
          ("ijk,ik->j", [(2, 3, 4), (2, 4)]), ("b i d, b j d -> b i j", [(2, 3, 4),
                                                                         (2, 5, 4)])]


@pytest.mark.parametrize("equation, shapes", EINSUM)
def test_einsum_equals_torchs(equation, shapes):
    arrays = [_rng(equation, s).standard_normal(s) for s in shapes]
    _equal_torch(lambda lib, *ts: lib.einsum(equation, *ts), arrays)


def test_einsum_float32_and_one_node_per_contraction():
    a, b = (_rng("e32", k).standard_normal((64, 300)) for k in range(2))
    fn = lambda lib, x, y: lib.einsum("ik,jk->ij", x, y)  # noqa: E731
    exact = _orders(torch, fn, [a, b], torch.float64)[:3]
    theirs = _orders(torch, fn, [a.astype(np.float32), b.astype(np.float32)],
                     torch.float32)[:3]
    ours = _orders(cg, fn, [a.astype(np.float32), b.astype(np.float32)], cg.float32)[:3]
    for o, t, e in zip(ours, theirs, exact):
        err, torch_err = (float(np.linalg.norm(v - e) / np.linalg.norm(e)) for v in (o, t))
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)
    y = cg.einsum("ij,jk,kl->il", cg.ones(2, 3), cg.ones(3, 4), cg.ones(4, 5))
    assert y.dtype == np.float32 and y.grad_fn is None  # (constants: nothing recorded)
    x = cg.ones(2, 3, requires_grad=True)
    assert cg.einsum("ij,jk,kl->il", x, cg.ones(3, 4), cg.ones(4, 5)).grad_fn.op.__name__ \
        == "Einsum"


@pytest.mark.parametrize("dim, keepdim", [(1, False), ((0, 2), True), (-1, False)])
def test_logsumexp_equals_torchs(dim, keepdim):
    x = _rng("lse", dim).standard_normal((3, 4, 5)) * 30
    x[0, 0, :] = -np.inf  # a row of -inf: -inf, as torch
    _equal_torch(lambda lib, t: lib.logsumexp(t, dim, keepdim=keepdim).clamp(min=-1e300),
                 [x])


@pytest.mark.parametrize("name", ["log2", "log10"])
def test_log_bases_equal_torchs(name):
    x = np.abs(_rng(name).standard_normal((4, 5))) + 0.1
    _equal_torch(lambda lib, t: getattr(lib, name)(t), [x])
    x32 = np.abs(_rng(name, 32).standard_normal(10000)).astype(np.float32) + 1e-3
    exact = getattr(np, name)(x32.astype(np.float64))
    ours = getattr(cg, name)(cg.tensor(x32)).numpy().astype(np.float64)
    theirs = getattr(torch, name)(torch.tensor(x32)).numpy().astype(np.float64)
    err, torch_err = (float(np.linalg.norm(v - exact)) for v in (ours, theirs))
    assert err <= 2 * torch_err


def test_normalize_outer_equal_torchs():
    x = _rng("normalize").standard_normal((3, 4, 5))
    for p in (2.0, 1.0, 3.0):
        _equal_torch(lambda lib, t, p=p: lib.nn.functional.normalize(t, p=p, dim=1), [x], 1e-9)
    _equal_torch(lambda lib, a, b: lib.outer(a, b), [x[0, 0], x[1, 1, :3]])
    # a zero vector: divided by eps, the norm's gradient 0 there, as torch's (its second
    # order is NaN there in torch, 0 here: not compared)
    x[0, :, 0] = 0
    for p in (2.0, 3.0):
        fn = lambda lib, t, p=p: lib.nn.functional.normalize(t, p=p, dim=1)  # noqa: E731
        ours, theirs = (_orders(lib, fn, [x], dt)[:2] for lib, dt in ((cg, cg.float64),
                                                                      (torch, torch.float64)))
        for o, t in zip(ours, theirs):
            np.testing.assert_allclose(o, t, rtol=1e-9, atol=1e-11)


def test_predicates_and_modes():
    a = cg.tensor(np.array([1.0, 2.0, np.nan]))
    b = cg.tensor(np.array([1.0 + 1e-9, 2.1, np.nan]))
    np.testing.assert_array_equal(cg.isclose(a, b).numpy(),
                                  torch.isclose(torch.tensor(a.numpy()),
                                                torch.tensor(b.numpy())).numpy())
    assert cg.isclose(a, b, equal_nan=True).numpy().tolist() == [True, False, True]
    assert cg.allclose(a[:1], b[:1]) and not cg.allclose(a, b)
    assert cg.is_tensor(a) and not cg.is_tensor(a.numpy())
    x = cg.ones(2, requires_grad=True)
    with cg.inference_mode():
        assert not (x * 2).requires_grad
    with cg.inference_mode(False):
        assert (x * 2).requires_grad

    @cg.inference_mode()
    def f():
        return (x * 2).requires_grad

    assert not f() and (x * 2).requires_grad
    assert not cg.inference_mode(lambda: (x * 2).requires_grad)()


def test_wrong_arguments_name_themselves():
    x = cg.ones(2, 3)
    with pytest.raises(ValueError, match="names 2 operands, 1 given"):
        cg.einsum("ij,jk->ik", x)
    with pytest.raises(ValueError, match="repeat an index"):
        cg.einsum("ii->i", cg.ones(3, 3))
    with pytest.raises(ValueError, match="index 'j' has size 3 and 4"):
        cg.einsum("ij,jk->ik", x, cg.ones(4, 2))
    with pytest.raises(ValueError, match="has 2 dims, its subscripts 'ijk' name 3"):
        cg.einsum("ijk->i", x)
    with pytest.raises(ValueError, match="outer: expected two 1-d tensors"):
        cg.outer(x, x)
    with pytest.raises(ValueError, match="normalize: dim=3"):
        cg.nn.functional.normalize(x, dim=3)
