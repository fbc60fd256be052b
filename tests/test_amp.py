"""Oracle: torch.amp.GradScaler('cpu') on the same model, losses and gradients (including
an inf), compared step by step; autocast's warning and no-op behaviour."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import convgrad as cg
from convgrad.amp import autocast_mode


def _run_scaler(lib, scaler, steps, clip):
    torch.manual_seed(0)
    w0 = np.random.default_rng(0).standard_normal((3, 4))
    if lib is torch:
        w = torch.nn.Parameter(torch.from_numpy(w0.copy()))
        opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
    else:
        w = cg.nn.Parameter(w0.copy())
        opt = cg.optim.SGD([w], lr=0.1, momentum=0.9)
    out = []
    for i, x in enumerate(steps):
        opt.zero_grad()
        xt = lib.tensor(x)
        loss = (w * xt).sum() * (float("inf") if i in (3, 6) else 1.0)
        scaled = scaler.scale(loss)
        scaled.backward()
        if clip:
            scaler.unscale_(opt)
        r = scaler.step(opt)
        scaler.update(64.0 if i == 7 else None)
        out.append((scaler.get_scale(), scaler._get_growth_tracker(), r,
                    np.array(w.detach().numpy())))
    return out, scaler.state_dict()


@pytest.mark.parametrize("clip", [False, True])
def test_grad_scaler_matches_torch(clip):
    rng = np.random.default_rng(1)
    steps = [rng.standard_normal((3, 4)) for _ in range(10)]
    kw = dict(init_scale=8.0, growth_interval=2, growth_factor=4.0, backoff_factor=0.25)
    got, sd_c = _run_scaler(cg, cg.amp.GradScaler("cpu", **kw), steps, clip)
    want, sd_t = _run_scaler(torch, torch.amp.GradScaler("cpu", **kw), steps, clip)
    assert sd_c == sd_t
    for (sc, tc, rc, wc), (st, tt, rt, wt) in zip(got, want):
        assert (sc, tc, rc) == (st, tt, rt)
        np.testing.assert_allclose(wc, wt, rtol=1e-15, atol=0)
    # the state dict loads into a fresh scaler and continues identically
    fresh = cg.amp.GradScaler("cpu")
    fresh.load_state_dict(sd_t)
    assert fresh.state_dict() == sd_t


def test_scale_iterables_and_step_return():
    s = cg.amp.GradScaler("cpu", init_scale=4.0)
    a, b = cg.tensor(1.0), cg.tensor([2.0], dtype=cg.float64)
    out = s.scale([a, (b,)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    assert out[0].item() == 4.0 and out[1][0].dtype == cg.float64
    p = cg.nn.Parameter(np.ones(2, np.float32))
    opt = cg.optim.SGD([p], lr=1.0)
    (s.scale((p * 3).sum())).backward()
    with pytest.raises(RuntimeError, match="Closure"):
        s.step(opt, closure=None)
    assert s.step(opt) is None  # SGD.step returns None (the loss of no closure)
    with pytest.raises(RuntimeError, match="already been called"):
        s.step(opt)
    s.update()
    np.testing.assert_array_equal(p.detach().numpy(), [-2.0, -2.0])


def test_disabled_is_pass_through_and_cuda_warns():
    with pytest.warns(UserWarning, match="not available"):
        s = cg.amp.GradScaler()
    assert not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}
    with pytest.warns(FutureWarning, match="deprecated"):
        s2 = cg.cuda.amp.GradScaler(enabled=False)
    loss = cg.tensor(3.0)
    assert s2.scale(loss) is loss
    p = cg.nn.Parameter(np.ones(1, np.float32))
    p.grad = cg.tensor([1.0])
    opt = cg.optim.SGD([p], lr=0.5)
    s2.step(opt)
    s2.update()
    assert p.item() == 0.5


def test_scaler_errors():
    with pytest.raises(ValueError, match="growth_factor=0.5"):
        cg.amp.GradScaler("cpu", growth_factor=0.5)
    with pytest.raises(ValueError, match="backoff_factor=2"):
        cg.amp.GradScaler("cpu", backoff_factor=2)
    with pytest.raises(ValueError, match="growth_interval=0"):
        cg.amp.GradScaler("cpu", growth_interval=0)
    with pytest.raises(ValueError, match="device='gpu'"):
        cg.amp.GradScaler("gpu")
    s = cg.amp.GradScaler("cpu")
    with pytest.raises(ValueError, match="iterable of Tensors"):
        s.scale(3.0)
    with pytest.raises(RuntimeError, match="No inf checks"):
        s.scale(cg.tensor(1.0))
        s.update()
    with pytest.raises(RuntimeError, match="empty"):
        s.load_state_dict({})


def test_autocast_warns_once_and_keeps_float32(monkeypatch):
    monkeypatch.setattr(autocast_mode, "_warned", [False])
    x = cg.randn(3, 3)
    with pytest.warns(UserWarning, match="computes in float32"):
        with cg.autocast("cuda"):
            y = x @ x
    assert y.dtype == cg.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with cg.autocast("cpu", dtype=cg.float16):  # already warned: silent
            assert cg.amp.is_autocast_enabled("cpu")
        with cg.autocast("cpu", enabled=False):
            assert not cg.amp.is_autocast_enabled("cpu")
    with pytest.warns(FutureWarning):
        ctx = cg.cpu.amp.autocast()
    assert ctx.fast_dtype == "bfloat16"

    @cg.amp.autocast("cpu", dtype=torch.bfloat16)
    def f(t):
        return cg.amp.is_autocast_enabled("cpu"), t * 2

    on, out = f(x)
    assert on and out.dtype == cg.float32
    with pytest.warns(UserWarning, match="disabled"):
        assert not cg.autocast("cpu", dtype=cg.float64)._enabled


def test_autocast_errors():
    with pytest.raises(TypeError, match="device_type=3"):
        cg.autocast(3)
    with pytest.raises(ValueError, match="device_type='gpu'"):
        cg.autocast("gpu")
    with pytest.raises(TypeError, match="enabled='yes'"):
        cg.autocast("cpu", enabled="yes")
    with pytest.raises(TypeError, match="dtype=3.5"):
        cg.autocast("cpu", dtype=3.5)


def test_training_loop_torch_style():
    model = cg.nn.Sequential(cg.nn.Linear(4, 8), cg.nn.ReLU(), cg.nn.Linear(8, 1))
    opt = cg.optim.Adam(model.parameters(), lr=1e-2)
    scaler = cg.amp.GradScaler("cpu")
    rng = np.random.default_rng(0)
    x = cg.tensor(rng.standard_normal((32, 4)).astype(np.float32))
    y = (x.sum(1, keepdim=True) * 0.5)
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(40):
            opt.zero_grad()
            with cg.autocast(device_type="cpu", dtype=cg.float16):
                loss = ((model(x) - y) ** 2).mean()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            cg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
    assert loss.dtype == cg.float32 and losses[-1] < 0.3 * losses[0]
