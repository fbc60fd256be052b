"""Embedding, CosineSimilarity, PairwiseDistance, Unflatten, UpsamplingNearest2d and
UpsamplingBilinear2d against torch.

Oracle: torch float64.  float32 values and gradients are within twice torch float32's
error on the same values (relative 2-norm);
lookups and reshapes are exact; ``repr``, in-place renormalisation (``max_norm``) and the
errors for bad arguments as torch's.
"""

import numpy as np
import pytest
import torch

import convgrad as cg
import convgrad.functional as F

RNG = np.random.default_rng(13)


def _within_twice_torchs_error(ours, exact, theirs):
    """Relative 2-norm errors (a max-norm ratio of two equally accurate float32 results
    strays past 2 in a few draws in a hundred; the 2-norm's does not)."""
    scale = max(float(np.linalg.norm(exact)), 1e-30)
    err = float(np.linalg.norm(np.asarray(ours, np.float64) - exact)) / scale
    torch_err = float(np.linalg.norm(theirs - exact)) / scale
    assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


# ----------------------------------------------------------------------------- Embedding
@pytest.mark.parametrize("padding_idx", [None, 3, -1])
def test_embedding_lookup_and_weight_gradient(padding_idx):
    """Repeated indices sum their gradients into one row; the padding row's entries give
    it none (torch's rule), whatever the row holds."""
    w = RNG.standard_normal((12, 5)).astype(np.float32)
    idx = RNG.integers(0, 12, (4, 7))
    idx[0, :3] = 11  # repeats, and the last row (padding_idx -1)
    idx[1, 2] = 3
    g = RNG.standard_normal((4, 7, 5)).astype(np.float32)
    layer = cg.nn.Embedding.from_pretrained(w, freeze=False, padding_idx=padding_idx)
    y = layer(idx)
    (y * cg.tensor(g)).sum().backward()
    out = {}
    for dtype in (torch.float64, torch.float32):
        tl = torch.nn.Embedding.from_pretrained(torch.tensor(w, dtype=dtype), freeze=False,
                                                padding_idx=padding_idx)
        ty = tl(torch.from_numpy(idx))
        (ty * torch.tensor(g, dtype=dtype)).sum().backward()
        out[dtype] = (ty.detach().double().numpy(), tl.weight.grad.double().numpy())
    np.testing.assert_array_equal(y.numpy(), out[torch.float32][0])
    _within_twice_torchs_error(layer.weight.grad.numpy(), out[torch.float64][1],
                               out[torch.float32][1])
    if padding_idx is not None:
        assert not layer.weight.grad.numpy()[padding_idx % 12].any()


def test_embedding_initialisation_repr_and_freeze():
    e = cg.nn.Embedding(10, 4, padding_idx=2, rng=0)
    assert e.weight.shape == (10, 4) and e.weight.dtype == np.float32
    assert not e.weight.numpy()[2].any() and e.weight.numpy()[np.arange(10) != 2].std() > 0.5
    assert repr(e) == repr(torch.nn.Embedding(10, 4, padding_idx=2))
    frozen = cg.nn.Embedding.from_pretrained(np.ones((3, 2)))
    assert not frozen.weight.requires_grad and frozen.weight.dtype == np.float64
    assert repr(cg.nn.Embedding(5, 2, max_norm=1.5, norm_type=1.0)) == repr(
        torch.nn.Embedding(5, 2, max_norm=1.5, norm_type=1.0))


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalises_the_rows_looked_up_in_place(norm_type):
    w = (RNG.standard_normal((8, 3)) * 3).astype(np.float32)
    idx = np.array([[1, 4, 4], [6, 1, 0]])
    layer = cg.nn.Embedding.from_pretrained(w.copy(), freeze=False, max_norm=1.0,
                                            norm_type=norm_type)
    tl = torch.nn.Embedding.from_pretrained(torch.tensor(w), freeze=False, max_norm=1.0,
                                            norm_type=norm_type)
    y, ty = layer(idx), tl(torch.from_numpy(idx))
    np.testing.assert_allclose(layer.weight.numpy(), tl.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-6)
    untouched = [2, 3, 5, 7]
    np.testing.assert_array_equal(layer.weight.numpy()[untouched], w[untouched])


def test_embedding_bad_arguments():
    w = cg.tensor(np.ones((5, 2), np.float32))
    with pytest.raises(IndexError, match=r"embedding: index 5 is out of range for a table of "
                                         r"5 rows"):
        F.embedding(np.array([1, 5]), w)
    with pytest.raises(TypeError, match=r"embedding: input of dtype float32 holds values "
                                        r"that are not whole numbers"):
        F.embedding(np.array([1.5], np.float32), w)
    with pytest.raises(TypeError, match=r"embedding: input of dtype bool must hold integer"):
        F.embedding(np.array([True]), w)
    # cg.tensor of integers is float32 (as the class-index losses' targets): taken
    np.testing.assert_array_equal(F.embedding(cg.tensor([1, 4]), w).numpy(),
                                  F.embedding(np.array([1, 4]), w).numpy())
    with pytest.raises(ValueError, match=r"sparse=True .* not supported"):
        F.embedding(np.array([1]), w, sparse=True)
    with pytest.raises(ValueError, match=r"Embedding: padding_idx=7 must be in \[-5, 4\]"):
        cg.nn.Embedding(5, 2, padding_idx=7)
    with pytest.raises(ValueError, match=r"Embedding: scale_grad_by_freq=True"):
        cg.nn.Embedding(5, 2, scale_grad_by_freq=True)


# ----------------------------------------------------------------------------- distances
@pytest.mark.parametrize("shapes, dim", [(((6, 8), (6, 8)), 1), (((3, 5, 4), (1, 5, 4)), 1),
                                         (((3, 5, 4), (3, 5, 4)), -1)])
def test_cosine_similarity(shapes, dim):
    a, b = (RNG.standard_normal(s).astype(np.float32) for s in shapes)
    _check_pair(lambda x, y, lib: lib.cosine_similarity(x, y, dim), a, b)
    assert repr(cg.nn.CosineSimilarity(dim)) == repr(torch.nn.CosineSimilarity(dim))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance(p, keepdim):
    a, b = (RNG.standard_normal((7, 9)).astype(np.float32) for _ in range(2))
    _check_pair(lambda x, y, lib: lib.pairwise_distance(x, y, p, keepdim=keepdim), a, b)
    layer = cg.nn.PairwiseDistance(p, keepdim=keepdim)
    np.testing.assert_array_equal(layer(cg.tensor(a), cg.tensor(b)).numpy(),
                                  F.pairwise_distance(cg.tensor(a), cg.tensor(b), p,
                                                      keepdim=keepdim).numpy())


def _check_pair(f, a, b):
    """``f`` of float32 tensors (value, gradients of a weighted sum) within twice torch
    float32's error of torch float64's (where torch's float64 result is not NaN: there
    both must be NaN, or, for a gradient the caller's docstring names, finite)."""
    x, y = cg.tensor(a, requires_grad=True), cg.tensor(b, requires_grad=True)
    out = f(x, y, F)
    g = RNG.standard_normal(out.shape).astype(np.float32)
    (out * cg.tensor(g)).sum().backward()
    ref = {}
    for dtype in (torch.float64, torch.float32):
        tx = torch.tensor(a, dtype=dtype, requires_grad=True)
        ty = torch.tensor(b, dtype=dtype, requires_grad=True)
        to = f(tx, ty, torch.nn.functional)
        (to * torch.tensor(g, dtype=dtype)).sum().backward()
        ref[dtype] = [t.detach().double().numpy() for t in (to, tx.grad, ty.grad)]
    assert out.shape == tuple(ref[torch.float64][0].shape) and out.dtype == np.float32
    for ours, exact, theirs in zip((out.numpy(), x.grad.numpy(), y.grad.numpy()),
                                   ref[torch.float64], ref[torch.float32]):
        ok = ~np.isnan(exact)
        if not ok.all():
            assert np.isfinite(ours[~ok]).all()  # kl_div's target gradient at a 0 target
        _within_twice_torchs_error(ours[ok], exact[ok], theirs[ok])


def test_distance_bad_arguments():
    a = cg.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"cosine_similarity: the shapes \(2, 3\), \(4,\) do "
                                         r"not broadcast"):
        F.cosine_similarity(a, cg.tensor(np.ones(4, np.float32)))
    with pytest.raises(ValueError, match=r"cosine_similarity: dim=2 must be an int in"):
        F.cosine_similarity(a, a, 2)
    with pytest.raises(ValueError, match=r"pairwise_distance: p=-1.0 must be > 0"):
        F.pairwise_distance(a, a, -1.0)


# ----------------------------------------------------------------------------- reshaping
@pytest.mark.parametrize("dim, size", [(1, (2, 5)), (-1, (3, -1)), (1, (-1, 1, 2))])
def test_unflatten(dim, size):
    a = RNG.standard_normal((4, 10, 6)).astype(np.float32) if dim == 1 else \
        RNG.standard_normal((4, 12)).astype(np.float32)
    layer, tl = cg.nn.Unflatten(dim, size), torch.nn.Unflatten(dim, size)
    x = cg.tensor(a, requires_grad=True)
    y, ty = layer(x), tl(torch.from_numpy(a))
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones_like(a))
    assert repr(layer) == repr(tl)


def test_unflatten_bad_arguments():
    with pytest.raises(ValueError, match=r"Unflatten: unflattened_size=\(3, 3\) does not fit "
                                         r"dim 1 of size 10"):
        cg.nn.Unflatten(1, (3, 3))(cg.tensor(np.ones((2, 10), np.float32)))
    with pytest.raises(ValueError, match=r"at most one of them -1"):
        cg.nn.Unflatten(1, (-1, -1))
    with pytest.raises(TypeError, match=r"Unflatten: dim='a' must be an int"):
        cg.nn.Unflatten("a", (2, 5))


@pytest.mark.parametrize("name, kw", [("UpsamplingNearest2d", {"scale_factor": 2}),
                                      ("UpsamplingNearest2d", {"size": (7, 5)}),
                                      ("UpsamplingBilinear2d", {"scale_factor": 2}),
                                      ("UpsamplingBilinear2d", {"size": (7, 9)})])
def test_upsampling_layers(name, kw):
    """torch's older upsampling layers: nearest, and bilinear with its corners aligned."""
    a = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    layer, tl = getattr(cg.nn, name)(**kw), getattr(torch.nn, name)(**kw)
    x = cg.tensor(a, requires_grad=True)
    y = layer(x)
    g = RNG.standard_normal(y.shape).astype(np.float32)
    (y * cg.tensor(g)).sum().backward()
    ref = {}
    for dtype in (torch.float64, torch.float32):
        t = torch.tensor(a, dtype=dtype, requires_grad=True)
        ty = tl(t)
        (ty * torch.tensor(g, dtype=dtype)).sum().backward()
        ref[dtype] = (ty.detach().double().numpy(), t.grad.double().numpy())
    for ours, exact, theirs in zip((y.numpy(), x.grad.numpy()), ref[torch.float64],
                                   ref[torch.float32]):
        _within_twice_torchs_error(ours, exact, theirs)
    assert repr(layer) == repr(tl)


# ----------------------------------------------------------------------------- divergence
@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none", "mean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    """KLDivLoss of log-probabilities against probabilities (some exactly 0: their terms
    are 0) or log-probabilities; gradients to both.  The target's gradient where it is 0
    is -input, finite (torch's is NaN: its xlogy's 0 / 0)."""
    logits = RNG.standard_normal((6, 10)).astype(np.float32)
    inp = (logits - np.log(np.exp(logits).sum(1, keepdims=True))).astype(np.float32)
    p = RNG.random((6, 10)).astype(np.float32)
    p[:, :3] = 0
    p /= p.sum(1, keepdims=True)
    tgt = np.log(np.maximum(p, 1e-3)).astype(np.float32) if log_target else p

    def f(x, t, lib):
        if lib is F:
            layer = cg.nn.KLDivLoss(reduction=reduction, log_target=log_target)
        else:
            layer = torch.nn.KLDivLoss(reduction=reduction, log_target=log_target)
        return layer(x, t)

    if reduction == "mean":
        with pytest.warns(UserWarning, match="batchmean"):
            _check_pair(f, inp, tgt)
    else:
        _check_pair(f, inp, tgt)


def test_kl_div_bad_arguments():
    a = cg.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"kl_div: reduction='avg' must be one of"):
        F.kl_div(a, a, reduction="avg")
    with pytest.raises(TypeError, match=r"kl_div: log_target=1 must be a bool"):
        F.kl_div(a, a, log_target=1)


# ----------------------------------------------------------------------------- channels
@pytest.mark.parametrize("size, alpha, beta, k", [(5, 1e-4, 0.75, 1.0), (2, 0.5, 0.6, 2.0),
                                                  (1, 1.0, 1.0, 0.5), (9, 0.3, 0.75, 1.0)])
def test_local_response_norm(size, alpha, beta, k):
    """AlexNet's normalisation: even and odd windows, one wider than the channels."""
    a = (RNG.standard_normal((2, 7, 5, 4)) * 2).astype(np.float32)
    layer = cg.nn.LocalResponseNorm(size, alpha, beta, k)
    tl = torch.nn.LocalResponseNorm(size, alpha, beta, k)
    _check_pair(lambda x, y, lib: (layer if lib is F else tl)(x) * y, a,
                RNG.standard_normal(a.shape).astype(np.float32))
    assert repr(layer) == repr(tl)
    with pytest.raises(ValueError, match=r"local_response_norm: size=0 must be a positive"):
        cg.nn.LocalResponseNorm(0)


@pytest.mark.parametrize("groups", [1, 2, 3, 6])
def test_channel_shuffle(groups):
    a = RNG.standard_normal((2, 6, 3, 2)).astype(np.float32)
    x = cg.tensor(a, requires_grad=True)
    y = cg.nn.ChannelShuffle(groups)(x)
    np.testing.assert_array_equal(y.numpy(), torch.nn.ChannelShuffle(groups)(
        torch.from_numpy(a)).numpy())
    g = RNG.standard_normal(a.shape).astype(np.float32)
    (y * cg.tensor(g)).sum().backward()
    t = torch.tensor(a, requires_grad=True)
    (torch.nn.functional.channel_shuffle(t, groups) * torch.from_numpy(g)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    assert repr(cg.nn.ChannelShuffle(groups)) == repr(torch.nn.ChannelShuffle(groups))
    with pytest.raises(ValueError, match=r"channel_shuffle: input of shape \(2, 6, 3, 2\) "
                                         r"must be .* divisible by groups=4"):
        F.channel_shuffle(x, 4)


@pytest.mark.parametrize("shape, eps, affine", [((8,), None, True), ((5, 8), 1e-5, True),
                                                ((8,), 1e-3, False)])
def test_rms_norm(shape, eps, affine):
    a = (RNG.standard_normal((3, 4, 5, 8)) * 2 + 0.5).astype(np.float32)
    layer = cg.nn.RMSNorm(shape, eps=eps, elementwise_affine=affine)
    tl = torch.nn.RMSNorm(shape, eps=eps, elementwise_affine=affine)
    if affine:
        w = RNG.uniform(0.5, 1.5, shape).astype(np.float32)
        layer.weight.data[...] = w
        with torch.no_grad():
            tl.weight.copy_(torch.from_numpy(w))
    _check_pair(lambda x, y, lib: (layer if lib is F else tl)(x) * y, a,
                RNG.standard_normal(a.shape).astype(np.float32))
    assert repr(layer) == repr(tl)
    with pytest.raises(ValueError, match=r"rms_norm: normalized_shape=\(7,\) must equal"):
        F.rms_norm(cg.tensor(a), (7,))
