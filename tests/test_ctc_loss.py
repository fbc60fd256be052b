"""``F.ctc_loss`` / ``nn.CTCLoss``.  Oracles: torch's ``ctc_loss`` through a
``log_softmax`` (where its gradient and the exact one agree) in float64 at 1e-12, for
every reduction, padded and concatenated targets, another blank, unbatched input and
inputs shorter than T; the exact gradient with respect to ``log_probs`` itself, and the
second order, against float64 finite differences; torch's relation between the two
gradients; float32 within twice torch's error; infinities as torch's."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import convgrad as cg
import convgrad.nn.functional as F

T, N, C = 12, 4, 6
TARGETS = np.array([[1, 2, 2, 3], [1, 1, 0, 0], [5, 4, 3, 0], [2, 0, 0, 0]])
INPUT_LENGTHS = np.array([12, 10, 7, 12])
TARGET_LENGTHS = np.array([4, 2, 3, 1])


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _case(blank: int, concatenated: bool) -> tuple:
    """targets (labels moved off ``blank``), as (N, S) or concatenated."""
    tg = np.where(TARGETS >= blank, TARGETS + 1, TARGETS) % C
    tg = np.where(tg == blank, (blank + 1) % C, tg)
    if concatenated:
        tg = np.concatenate([r[:k] for r, k in zip(tg, TARGET_LENGTHS)])
    return tg, INPUT_LENGTHS, TARGET_LENGTHS


def _through_log_softmax(lib, logits, dtype, tg, il, tl, **kw) -> list:
    """[loss, d(weighted loss)/d logits] as float64 arrays."""
    x = lib.tensor(logits, dtype=dtype, requires_grad=True)
    lp = lib.nn.functional.log_softmax(x, -1)
    conv = torch.tensor if lib is torch else np.asarray
    loss = lib.nn.functional.ctc_loss(lp, conv(tg), conv(il), conv(tl), **kw)
    w = lib.tensor(_rng("w", tuple(loss.shape)).standard_normal(tuple(loss.shape)),
                   dtype=dtype)
    (loss * w).sum().backward()
    return [np.asarray(loss.detach().numpy() if lib is torch else loss.numpy(), np.float64),
            np.asarray(x.grad.numpy(), np.float64)]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("blank, concatenated", [(0, False), (0, True), (3, False)])
def test_float64_equals_torchs(reduction, blank, concatenated):
    tg, il, tl = _case(blank, concatenated)
    logits = _rng(reduction, blank, concatenated).standard_normal((T, N, C))
    theirs = _through_log_softmax(torch, logits, torch.float64, tg, il, tl, blank=blank,
                                  reduction=reduction)
    ours = _through_log_softmax(cg, logits, cg.float64, tg, il, tl, blank=blank,
                                reduction=reduction)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-13)


def test_unbatched_equals_torchs():
    logits = _rng("unbatched").standard_normal((T, C))
    tg, tl = np.array([1, 3, 3]), np.array([3])
    theirs = _through_log_softmax(torch, logits, torch.float64, tg, np.array([T]), tl)
    ours = _through_log_softmax(cg, logits, cg.float64, tg, np.array([T]), tl)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-13)


def _loss_of(lp: np.ndarray, w: np.ndarray) -> float:
    tg, il, tl = _case(0, False)
    return float((F.ctc_loss(cg.tensor(lp), tg, il, tl, reduction="none")
                  * cg.tensor(w)).sum().numpy())


def test_exact_gradient_and_second_order_against_finite_differences():
    rng = _rng("fd")
    lp = rng.standard_normal((T, N, C)) - 2.0  # any values, not only log-softmax outputs
    w = rng.standard_normal(N)
    tg, il, tl = _case(0, False)
    x = cg.tensor(lp, requires_grad=True)
    loss = (F.ctc_loss(x, tg, il, tl, reduction="none") * cg.tensor(w)).sum()
    (g,) = cg.autograd.grad(loss, x, create_graph=True)
    v = rng.standard_normal(lp.shape)
    (hv,) = cg.autograd.grad((g * cg.tensor(v)).sum(), x)
    h = 1e-6
    fd = (_loss_of(lp + h * v, w) - _loss_of(lp - h * v, w)) / (2 * h)
    assert abs(float((g.numpy() * v).sum()) - fd) <= 1e-7 * max(1.0, abs(fd))
    u = rng.standard_normal(lp.shape)
    grads = []
    for sign in (1, -1):
        y = cg.tensor(lp + sign * h * u, requires_grad=True)
        lo = (F.ctc_loss(y, tg, il, tl, reduction="none") * cg.tensor(w)).sum()
        grads.append(float((cg.autograd.grad(lo, y)[0].numpy() * v).sum()))
    fd2 = (grads[0] - grads[1]) / (2 * h)
    assert abs(float((hv.numpy() * u).sum()) - fd2) <= 1e-6 * max(1.0, abs(fd2))
    assert np.all(g.numpy()[INPUT_LENGTHS[2]:, 2] == 0)  # steps past a sample's length


def test_torchs_gradient_adds_exp_log_probs():
    """torch's gradient with respect to log_probs is ours plus exp(log_probs) (times each
    sample's weight, over its steps): a preceding log_softmax removes that term."""
    rng = _rng("relation")
    lp = np.log(rng.dirichlet(np.ones(C), size=(T, N)))
    tg, il, tl = _case(0, False)
    w = rng.standard_normal(N)
    grads = []
    for lib in (torch, cg):
        x = lib.tensor(lp, requires_grad=True)
        conv = torch.tensor if lib is torch else np.asarray
        loss = lib.nn.functional.ctc_loss(x, conv(tg), conv(il), conv(tl), reduction="none")
        (loss * lib.tensor(w)).sum().backward()
        grads.append(x.grad.numpy())
    live = (np.arange(T)[:, None] < il[None, :])[..., None]
    np.testing.assert_allclose(grads[1] + np.exp(lp) * w[None, :, None] * live, grads[0],
                               rtol=1e-10, atol=1e-12)


def test_float32_within_twice_torchs_error():
    tg, il, tl = _case(0, False)
    logits = _rng("f32").standard_normal((T, N, C)) * 3
    exact = _through_log_softmax(torch, logits, torch.float64, tg, il, tl, reduction="none")
    theirs = _through_log_softmax(torch, logits.astype(np.float32), torch.float32, tg, il,
                                  tl, reduction="none")
    ours = _through_log_softmax(cg, logits.astype(np.float32), cg.float32, tg, il, tl,
                                reduction="none")
    x = cg.tensor(logits.astype(np.float32))
    assert F.ctc_loss(F.log_softmax(x, -1), tg, il, tl).dtype == np.float32
    for o, t, e in zip(ours, theirs, exact):
        scale = float(np.linalg.norm(e))
        err, torch_err = (float(np.linalg.norm(a - e)) / scale for a in (o, t))
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_no_alignment_is_infinite_as_torchs(zero_infinity):
    logits = _rng("inf").standard_normal((3, 2, C))
    tg, il, tl = np.array([[1, 2, 2, 3], [1, 1, 0, 0]]), np.array([3, 3]), np.array([4, 2])
    results = []
    for lib in (torch, cg):
        x = lib.tensor(logits, requires_grad=True)
        conv = torch.tensor if lib is torch else np.asarray
        loss = lib.nn.functional.ctc_loss(lib.nn.functional.log_softmax(x, -1), conv(tg),
                                          conv(il), conv(tl), reduction="none",
                                          zero_infinity=zero_infinity)
        loss.sum().backward()
        results.append((np.asarray(loss.detach().numpy() if lib is torch else loss.numpy()),
                        x.grad.numpy()))
    (lt, gt), (lo, go) = results
    np.testing.assert_allclose(lo, lt, rtol=1e-12)  # [inf or 0, finite]
    np.testing.assert_allclose(go[:, 1], gt[:, 1], rtol=1e-10, atol=1e-12)
    if zero_infinity:
        assert np.all(go[:, 0] == 0)
    else:
        assert not np.isfinite(go[:, 0]).all() and not np.isfinite(gt[:, 0]).any()


def test_layer_and_wrong_arguments():
    tg, il, tl = _case(0, False)
    lp = F.log_softmax(cg.tensor(_rng("layer").standard_normal((T, N, C))), -1)
    layer = cg.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert repr(layer) == repr(torch.nn.CTCLoss()) == "CTCLoss()"
    np.testing.assert_array_equal(layer(lp, tg, il, tl).numpy(),
                                  F.ctc_loss(lp, tg, il, tl, reduction="sum",
                                             zero_infinity=True).numpy())
    with pytest.raises(ValueError, match="blank=6"):
        F.ctc_loss(lp, tg, il, tl, blank=6)
    with pytest.raises(ValueError, match="other than blank=0"):
        F.ctc_loss(lp, np.zeros_like(tg), il, tl)
    with pytest.raises(ValueError, match=r"input_lengths \[13"):
        F.ctc_loss(lp, tg, np.array([13, 1, 1, 1]), tl)
    with pytest.raises(ValueError, match="target_lengths must hold 4"):
        F.ctc_loss(lp, tg, il, tl[:3])
    with pytest.raises(ValueError, match="1-d targets hold 3 labels"):
        F.ctc_loss(lp, np.array([1, 2, 3]), il, tl)
    with pytest.raises(ValueError, match=r"must be \(T, N, C\)"):
        F.ctc_loss(lp[0, 0], tg, il, tl)
    with pytest.raises(TypeError, match="input_lengths has dtype"):
        F.ctc_loss(lp, tg, np.array([1.5, 2, 3, 4]), tl)


def test_the_likelihood_is_one_node_and_its_kernels_ran():
    tg, il, tl = _case(0, False)
    x = cg.tensor(_rng("node").standard_normal((T, N, C)), requires_grad=True)
    with cg.profile() as prof:
        loss = F.ctc_loss(x, tg, il, tl, reduction="sum")
        seen, stack, names = set(), [loss.grad_fn], []
        while stack:
            node = stack.pop()
            if node is not None and id(node) not in seen:
                seen.add(id(node))
                names.append(node.op.__name__)
                stack.extend(node.edges)
        loss.backward()
    assert names.count("CTCNegLogLikelihood") == 1 and len(names) < 10, names
    assert [(e.name, e.algorithm) for e in prof.of("ctc")] == [("ctc_forward", "numpy"),
                                                              ("ctc_backward", "numpy")]
