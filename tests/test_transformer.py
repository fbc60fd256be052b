"""Attention and the transformer layers.  Oracle: torch's ``F.scaled_dot_product_attention``,
``nn.MultiheadAttention`` and ``nn.Transformer*`` with the same weights (torch's state dict
loaded): float64 outputs, attention weights and every gradient at 1e-10 (second order
too), float32 within twice torch's float32 error; torch's state-dict keys and reprs."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import convgrad as cg


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _np(t) -> np.ndarray:
    return np.asarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy(),
                      np.float64)


def _pair(name: str, args: tuple, kw: dict, dtype=torch.float64):
    """torch's layer and ours with its weights, both in eval mode (dropout off)."""
    theirs = getattr(torch.nn, name)(*args, **kw).to(dtype).eval()
    ours = getattr(cg.nn, name)(*args, **kw, dtype=cg.float64 if dtype == torch.float64
                                else cg.float32).eval()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return theirs, ours


def _run(lib, layer, inputs: list, masks: dict, dtype, pick=None) -> list:
    """[outputs..., input gradients..., parameter gradients...] as float64 arrays."""
    ts = [lib.tensor(a, dtype=dtype, requires_grad=True) for a in inputs]
    ms = {k: _mask(lib, v, dtype) for k, v in masks.items()}
    out = layer(*ts, **ms)
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None]
    r = [lib.tensor(_rng("r", tuple(o.shape)).standard_normal(tuple(o.shape)), dtype=dtype)
         for o in outs]
    params = [p for _, p in sorted(layer.named_parameters())]
    grads = lib.autograd.grad(sum((o * w).sum() for o, w in zip(outs, r)), ts + params,
                              allow_unused=True)
    return [_np(o) for o in outs] + [np.zeros(1) if g is None else _np(g) for g in grads]


def _mask(lib, v, dtype):
    """A mask for ``lib``: bool arrays as torch's bool tensors (convgrad takes the
    ndarray: its Tensors are numeric), float ones as Tensors of ``dtype``."""
    if not isinstance(v, np.ndarray):
        return v
    if v.dtype == bool:
        return torch.tensor(v) if lib is torch else v
    return lib.tensor(v, dtype=dtype)


MHA = [
    ({}, (5, 3, 8), (7, 3, 8), {}),
    ({"batch_first": True}, (3, 5, 8), (3, 7, 8), {"need_weights": False}),
    ({"kdim": 6, "vdim": 4}, (5, 2, 8), None, {"average_attn_weights": False}),
    ({}, (5, 8), (7, 8), {}),  # unbatched
    ({"bias": False}, (5, 3, 8), (5, 3, 8), {"attn_mask": "causal"}),
    ({}, (5, 3, 8), (7, 3, 8), {"attn_mask": "bool", "key_padding_mask": "bool"}),
    ({}, (5, 3, 8), (7, 3, 8), {"attn_mask": "float3d", "key_padding_mask": "float"}),
]


def _masks(spec: dict, q_shape: tuple, k_shape: tuple, heads: int, batch_first: bool) -> dict:
    length = q_shape[-2] if len(q_shape) == 3 and batch_first else q_shape[0]
    source = k_shape[-2] if len(k_shape) == 3 and batch_first else k_shape[0]
    batch = (q_shape[0] if batch_first else q_shape[1]) if len(q_shape) == 3 else 1
    rng = _rng("mask", q_shape, tuple(spec))
    out: dict = {}
    for k, v in spec.items():
        if v == "causal":
            out[k] = np.triu(np.full((length, source), -np.inf), 1)
        elif v == "bool" and k == "attn_mask":
            m = rng.random((length, source)) < 0.3
            m[:, 0] = False  # every query sees a key
            out[k] = m
        elif v == "bool":
            m = rng.random((batch, source)) < 0.3
            m[:, 0] = False
            out[k] = m
        elif v == "float3d":
            out[k] = rng.standard_normal((batch * heads, length, source))
        elif v == "float":
            out[k] = rng.standard_normal((batch, source))
        else:
            out[k] = v
    return out


@pytest.mark.parametrize("kw, q_shape, k_shape, call", MHA)
def test_multihead_attention_equals_torchs(kw, q_shape, k_shape, call):
    theirs, ours = _pair("MultiheadAttention", (8, 2), kw)
    k_shape = k_shape or (7, q_shape[1], 8)
    kdim, vdim = kw.get("kdim", 8), kw.get("vdim", 8)
    rng = _rng("mha", q_shape, tuple(kw))
    inputs = [rng.standard_normal(q_shape), rng.standard_normal(k_shape[:-1] + (kdim,)),
              rng.standard_normal(k_shape[:-1] + (vdim,))]
    masks = _masks(call, q_shape, k_shape, 2, kw.get("batch_first", False))
    theirs_r = _run(torch, theirs, inputs, masks, torch.float64)
    ours_r = _run(cg, ours, inputs, masks, cg.float64)
    assert len(ours_r) == len(theirs_r)
    for o, t in zip(ours_r, theirs_r):
        assert o.shape == t.shape
        np.testing.assert_allclose(o, t, rtol=1e-10, atol=1e-12)


TRANSFORMER = [
    {},
    {"norm_first": True, "activation": "gelu"},
    {"batch_first": True},
]


@pytest.mark.parametrize("kw", TRANSFORMER)
def test_transformer_equals_torchs(kw):
    args = ()
    kw = {"d_model": 8, "nhead": 2, "num_encoder_layers": 2, "num_decoder_layers": 2,
          "dim_feedforward": 16, **kw}
    theirs, ours = _pair("Transformer", args, kw)
    rng = _rng("transformer", tuple(kw))
    bf = kw.get("batch_first", False)
    src = rng.standard_normal((3, 6, 8) if bf else (6, 3, 8))
    tgt = rng.standard_normal((3, 5, 8) if bf else (5, 3, 8))
    pad = rng.random((3, 6)) < 0.3
    pad[:, 0] = False
    masks = {"tgt_mask": _np(torch.nn.Transformer.generate_square_subsequent_mask(5)),
             "src_key_padding_mask": pad, "memory_key_padding_mask": pad}
    np.testing.assert_array_equal(
        cg.nn.Transformer.generate_square_subsequent_mask(5).numpy(),
        torch.nn.Transformer.generate_square_subsequent_mask(5).numpy())
    theirs_r = _run(torch, theirs, [src, tgt], masks, torch.float64)
    ours_r = _run(cg, ours, [src, tgt], masks, cg.float64)
    for o, t in zip(ours_r, theirs_r):
        assert o.shape == t.shape
        np.testing.assert_allclose(o, t, rtol=1e-9, atol=1e-11)


def test_encoder_stack_float32_within_twice_torchs_error():
    kw = {"d_model": 32, "nhead": 4, "dim_feedforward": 64}
    exact_t, _ = _pair("TransformerEncoderLayer", (), kw)
    t32 = torch.nn.TransformerEncoderLayer(**kw).eval()
    t32.load_state_dict(exact_t.state_dict())
    o32 = cg.nn.TransformerEncoderLayer(**kw).eval()
    o32.load_state_dict({k: v.detach().float().numpy() for k, v in exact_t.state_dict().items()})
    theirs64 = torch.nn.TransformerEncoder(exact_t, 2, enable_nested_tensor=False).eval()
    theirs32 = torch.nn.TransformerEncoder(t32, 2, enable_nested_tensor=False).eval()
    ours32 = cg.nn.TransformerEncoder(o32, 2).eval()
    x = _rng("f32").standard_normal((12, 4, 32))
    mask = np.triu(np.full((12, 12), -np.inf), 1)
    exact = _run(torch, theirs64, [x], {"mask": mask}, torch.float64)
    theirs = _run(torch, theirs32, [x.astype(np.float32)], {"mask": mask.astype(np.float32)},
                  torch.float32)
    ours = _run(cg, ours32, [x.astype(np.float32)], {"mask": mask.astype(np.float32)},
                cg.float32)
    for o, t, e in zip(ours, theirs, exact):
        scale = max(float(np.linalg.norm(e)), 1e-30)
        err, torch_err = (float(np.linalg.norm(a - e)) / scale for a in (o, t))
        assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


def test_second_order_gradients_equal_torchs():
    theirs, ours = _pair("TransformerEncoderLayer", (8, 2), {"dim_feedforward": 16,
                                                             "activation": "gelu"})
    x = _rng("second").standard_normal((4, 2, 8))
    results = []
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for lib, layer in ((torch, theirs), (cg, ours)):
        xt = lib.tensor(x, requires_grad=True)
        with sdpa_kernel(SDPBackend.MATH):  # (torch's fused kernels have no second order)
            (g,) = lib.autograd.grad(layer(xt).tanh().sum(), xt, create_graph=True)
            (g * g).sum().backward()
        results.append([_np(g), _np(xt.grad), _np(layer.linear1.weight.grad)])
    for o, t in zip(results[1], results[0]):
        np.testing.assert_allclose(o, t, rtol=1e-9, atol=1e-12)


SDPA = [((2, 3, 5, 4), (2, 3, 7, 4), {}),
        ((2, 5, 4), (2, 5, 4), {"is_causal": True}),
        ((2, 5, 4), (2, 7, 4), {"attn_mask": "bool", "scale": 0.3}),
        ((2, 5, 4), (2, 7, 4), {"attn_mask": "float"})]


@pytest.mark.parametrize("q_shape, k_shape, kw", SDPA)
def test_scaled_dot_product_attention_equals_torchs(q_shape, k_shape, kw):
    rng = _rng("sdpa", q_shape, tuple(kw))
    arrays = [rng.standard_normal(q_shape), rng.standard_normal(k_shape),
              rng.standard_normal(k_shape[:-1] + (3,))]
    kw = dict(kw)
    if kw.get("attn_mask") == "bool":
        m = rng.random((q_shape[-2], k_shape[-2])) < 0.6
        m[:, 0] = True
        kw["attn_mask"] = m
    elif kw.get("attn_mask") == "float":
        kw["attn_mask"] = rng.standard_normal((q_shape[-2], k_shape[-2]))
    results = []
    for lib in (torch, cg):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        k2 = {k: _mask(lib, v, lib.float64) for k, v in kw.items()}
        y = lib.nn.functional.scaled_dot_product_attention(*ts, **k2)
        y.tanh().sum().backward()
        results.append([_np(y)] + [_np(t.grad) for t in ts])
    for o, t in zip(results[1], results[0]):
        np.testing.assert_allclose(o, t, rtol=1e-10, atol=1e-12)


def test_dropout_acts_in_training_only():
    layer = cg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = cg.randn(5, 2, 8, rng=0)
    layer.eval()
    a, b = layer(x).numpy(), layer(x).numpy()
    np.testing.assert_array_equal(a, b)
    layer.train()
    assert not np.allclose(layer(x).numpy(), a)


def test_reprs_are_torchs():
    for name, args in (("MultiheadAttention", (8, 2)), ("TransformerEncoderLayer", (8, 2, 16)),
                       ("TransformerDecoderLayer", (8, 2, 16))):
        assert repr(getattr(cg.nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))


def test_wrong_arguments_name_themselves():
    with pytest.raises(ValueError, match="embed_dim=10 must be divisible by num_heads=3"):
        cg.nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="activation='tanh' must be 'relu', 'gelu'"):
        cg.nn.TransformerEncoderLayer(8, 2, activation="tanh")
    mha = cg.nn.MultiheadAttention(8, 2)
    x = cg.randn(5, 3, 8, rng=0)
    with pytest.raises(ValueError, match="is_causal=True is a hint"):
        mha(x, x, x, is_causal=True)
    with pytest.raises(ValueError, match=r"attn_mask of shape \(4, 5\) must be \(5, 5\)"):
        mha(x, x, x, attn_mask=cg.zeros(4, 5))
    with pytest.raises(ValueError, match="key_padding_mask of shape"):
        mha(x, x, x, key_padding_mask=np.zeros((2, 5), bool))
    with pytest.raises(ValueError, match="query of shape .* must end with 8 features"):
        mha(cg.randn(5, 3, 6, rng=0), x, x)
    with pytest.raises(ValueError, match="must all be 3-d"):
        mha(cg.randn(3, 8, rng=0), x, x)
    with pytest.raises(ValueError, match="dropout_p=2"):
        cg.nn.functional.scaled_dot_product_attention(x, x, x, dropout_p=2)
