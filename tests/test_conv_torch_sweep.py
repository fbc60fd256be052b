"""Oracle: torch.nn.functional convolutions and torch.autograd (torch 2.13 CPU)."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad.ops.profiler import profile

from .tolerances import assert_close

torch = pytest.importorskip("torch")
TF = pytest.importorskip("torch.nn.functional")

pytestmark = pytest.mark.usefixtures("backend")  # with oneDNN, then without

N_CONFIGS = 540
TORCH_CONV = {1: TF.conv1d, 2: TF.conv2d, 3: TF.conv3d}
TORCH_CONVT = {1: TF.conv_transpose1d, 2: TF.conv_transpose2d, 3: TF.conv_transpose3d}
OURS_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
OURS_CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _maybe_tuple(rng, values):
    """Either one int for every dim or a per-dim tuple."""
    return values[0] if rng.random() < 0.5 and len(set(values)) == 1 else tuple(values)


def _groups(rng):
    kind = rng.integers(3)
    if kind == 0:
        return 1, int(rng.integers(1, 4)), int(rng.integers(1, 4))
    g = int(rng.integers(2, 4))
    if kind == 1:  # several groups
        return g, g * int(rng.integers(1, 3)), g * int(rng.integers(1, 3))
    return g, g, g * int(rng.integers(1, 3))  # depthwise with channel multiplier


def make_config(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    nd = int(rng.choice([1, 2, 3], p=[0.35, 0.4, 0.25]))
    transposed = rng.random() < 0.4
    dtype = np.float64 if rng.random() < 0.5 else np.float32
    groups, c_in, c_out = _groups(rng)
    kmax = 5 if nd < 3 else 3
    kernel = [int(rng.integers(1, kmax + 1)) for _ in range(nd)]
    stride = [int(rng.integers(1, 4)) for _ in range(nd)]
    dilation = [int(rng.integers(1, 4)) for _ in range(nd)]
    batch = int(rng.integers(1, 4))
    cfg = dict(seed=seed, nd=nd, transposed=transposed, dtype=dtype, groups=groups,
               c_in=c_in, c_out=c_out, kernel=kernel, batch=batch, bias=rng.random() < 0.7)
    if transposed:
        pad = [int(rng.integers(0, dilation[d] * (kernel[d] - 1) + 3)) for d in range(nd)]
        opad = [int(rng.integers(0, max(stride[d], dilation[d]))) for d in range(nd)]
        smax = 7 if nd < 3 else 4
        size = [int(rng.integers(1, smax + 1)) for _ in range(nd)]
        # keep the output length >= 1
        for d in range(nd):
            while ((size[d] - 1) * stride[d] - 2 * pad[d] + dilation[d] * (kernel[d] - 1)
                   + opad[d] + 1) < 1:
                size[d] += 1
        cfg.update(stride=_maybe_tuple(rng, stride), padding=_maybe_tuple(rng, pad),
                   output_padding=_maybe_tuple(rng, opad), dilation=_maybe_tuple(rng, dilation),
                   size=size)
        return cfg
    mode = str(rng.choice(["zeros", "zeros", "reflect", "replicate", "circular"]))
    form = rng.integers(4)
    ext = [dilation[d] * (kernel[d] - 1) + 1 for d in range(nd)]
    if form == 0:  # 'same' (stride 1)
        padding, stride = "same", [1] * nd
        pads = [(dilation[d] * (kernel[d] - 1)) // 2 for d in range(nd)]
        pads = [max(p, dilation[d] * (kernel[d] - 1) - p) for d, p in enumerate(pads)]
    elif form == 1:
        padding, pads = "valid", [0] * nd
    else:
        pads = [int(rng.integers(0, 4)) for _ in range(nd)]
        padding = _maybe_tuple(rng, pads)
    smax = 9 if nd < 3 else 6
    size = [max(ext[d] - 2 * pads[d], 1) + int(rng.integers(0, smax)) for d in range(nd)]
    if mode in ("reflect", "circular"):  # torch needs padding < input size (circular: <=)
        size = [max(size[d], pads[d] + 1) for d in range(nd)]
    cfg.update(stride=_maybe_tuple(rng, stride), padding=padding, padding_mode=mode,
               dilation=_maybe_tuple(rng, dilation), size=size)
    return cfg


def torch_reference(cfg, x, w, b):
    nd = cfg["nd"]
    if cfg["transposed"]:
        return TORCH_CONVT[nd](x, w, b, stride=cfg["stride"], padding=cfg["padding"],
                               output_padding=cfg["output_padding"], groups=cfg["groups"],
                               dilation=cfg["dilation"])
    if cfg["padding_mode"] == "zeros":
        return TORCH_CONV[nd](x, w, b, stride=cfg["stride"], padding=cfg["padding"],
                              dilation=cfg["dilation"], groups=cfg["groups"])
    # torch.nn.ConvNd semantics: pad with the mode, then a convolution without padding
    layer = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}[nd](
        cfg["c_in"], cfg["c_out"], cfg["kernel"], stride=cfg["stride"], padding=cfg["padding"],
        dilation=cfg["dilation"], groups=cfg["groups"], bias=False,
        padding_mode=cfg["padding_mode"])
    pads = layer._reversed_padding_repeated_twice
    xp = TF.pad(x, pads, mode=cfg["padding_mode"])
    return TORCH_CONV[nd](xp, w, b, stride=cfg["stride"], dilation=cfg["dilation"],
                          groups=cfg["groups"])


def ours(cfg, x, w, b):
    nd = cfg["nd"]
    if cfg["transposed"]:
        return OURS_CONVT[nd](x, w, b, stride=cfg["stride"], padding=cfg["padding"],
                              output_padding=cfg["output_padding"], groups=cfg["groups"],
                              dilation=cfg["dilation"])
    return OURS_CONV[nd](x, w, b, stride=cfg["stride"], padding=cfg["padding"],
                         dilation=cfg["dilation"], groups=cfg["groups"],
                         padding_mode=cfg["padding_mode"])


@pytest.mark.parametrize("seed", range(N_CONFIGS))
def test_against_torch(seed):
    cfg = make_config(seed)
    rng = np.random.default_rng(10_000 + seed)
    dt, g = cfg["dtype"], cfg["groups"]
    if cfg["transposed"]:
        w_shape = (cfg["c_in"], cfg["c_out"] // g, *cfg["kernel"])
    else:
        w_shape = (cfg["c_out"], cfg["c_in"] // g, *cfg["kernel"])
    x = rng.standard_normal((cfg["batch"], cfg["c_in"], *cfg["size"])).astype(dt)
    w = rng.standard_normal(w_shape).astype(dt)
    c_out = w_shape[1] * g if cfg["transposed"] else w_shape[0]
    b = rng.standard_normal(c_out).astype(dt) if cfg["bias"] else None

    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True) if b is not None else None
    ty = torch_reference(cfg, tx, tw, tb)
    gy = rng.standard_normal(tuple(ty.shape)).astype(dt)
    ty.backward(torch.tensor(gy))

    cx, cw = cg.tensor(x, requires_grad=True), cg.tensor(w, requires_grad=True)
    cb = cg.tensor(b, requires_grad=True) if b is not None else None
    cy = ours(cfg, cx, cw, cb)
    assert cy.dtype == dt
    assert_close(cy.data, ty.detach().numpy(), dt, f"forward {cfg}")
    cy.backward(gy)
    assert_close(cx.grad.data, tx.grad.numpy(), dt, f"input grad {cfg}")
    assert_close(cw.grad.data, tw.grad.numpy(), dt, f"weight grad {cfg}")
    if b is not None:
        assert_close(cb.grad.data, tb.grad.numpy(), dt, f"bias grad {cfg}")


def test_sweep_covers_the_space():
    cfgs = [make_config(s) for s in range(N_CONFIGS)]
    assert {c["nd"] for c in cfgs} == {1, 2, 3}
    assert sum(c["transposed"] for c in cfgs) > 150
    conv = [c for c in cfgs if not c["transposed"]]
    assert {c["padding_mode"] for c in conv} == {"zeros", "reflect", "replicate", "circular"}
    assert any(c["padding"] == "same" for c in conv) and any(c["padding"] == "valid" for c in conv)
    assert any(c["groups"] > 1 and c["c_in"] == c["groups"] for c in cfgs)  # depthwise
    assert {c["dtype"] for c in cfgs} == {np.float32, np.float64}
    assert any(c["transposed"] and max(np.atleast_1d(c["output_padding"])) > 0 for c in cfgs)


def test_profiler_sees_the_kernels():
    x = cg.tensor(np.ones((1, 2, 5, 5)), requires_grad=True)
    w = cg.tensor(np.ones((3, 2, 3, 3)), requires_grad=True)
    with profile() as prof:
        F.conv2d(x, w).sum().backward()
    assert prof.count("conv_forward") == 1
    assert prof.count("conv_input_grad") == 1
    assert prof.count("conv_weight_grad") == 1
