"""Oracle: torch.autograd double backward (float64) for the penalty; PSNR and kernel counts.

Deconvolution is checked by the PSNR it recovers and the profiler's kernel counts.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import convgrad as cg

from .tolerances import assert_close

pytest.importorskip("skimage")  # the examples' photograph

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def deconvolution():
    return _load("deconvolution")


@pytest.fixture(scope="module")
def gradient_penalty():
    return _load("gradient_penalty")


def test_deconvolution_sharpens_with_input_gradients_only(deconvolution):
    result = deconvolution.main(steps=25, verbose=False)
    assert result["psnr_restored"] > result["psnr_blurred"] + 2.0
    assert result["losses"][-1] < result["losses"][0]
    # the kernel is a constant: one input-gradient kernel per step, never a weight gradient
    assert result["conv_weight_grad"] == 0
    assert result["conv_input_grad"] == 1


def test_deconvolution_blur_and_its_adjoint_match_torch(deconvolution):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.random((1, 1, 20, 24))
    k = deconvolution.gaussian_kernel().astype(np.float64)
    xs = cg.tensor(x, requires_grad=True)
    y = deconvolution.blur(xs, k)
    g = rng.standard_normal(y.shape)
    y.backward(g)
    xt = torch.from_numpy(x).requires_grad_()
    pad = k.shape[-1] // 2
    yt = torch.nn.functional.conv2d(torch.nn.functional.pad(xt, (pad,) * 4, mode="reflect"),
                                    torch.from_numpy(k))
    yt.backward(torch.from_numpy(g))
    assert_close(y.data, yt.detach().numpy(), np.float64, "blur")
    assert_close(xs.grad.data, xt.grad.numpy(), np.float64, "blur adjoint")


def _torch_critic(torch, model):
    body = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.Tanh(),
        torch.nn.Conv2d(8, 8, 3, stride=2, padding=1), torch.nn.Tanh(),
        torch.nn.Conv2d(8, 1, 3, padding=1)).double()
    body.load_state_dict({k.removeprefix("body."): torch.from_numpy(v)
                          for k, v in model.state_dict().items()})
    return body


def test_gradient_penalty_and_its_weight_gradient_match_torch(gradient_penalty):
    torch = pytest.importorskip("torch")
    model = gradient_penalty.Critic(rng=0).double()
    body = _torch_critic(torch, model)
    x, t = gradient_penalty.make_batch(gradient_penalty.load_photo(), np.random.default_rng(1))
    x, t = x.astype(np.float64), t.astype(np.float64)

    penalty = gradient_penalty.gradient_penalty(model, x)
    loss = ((model(x) - t) ** 2).mean() + penalty
    loss.backward()

    xt = torch.from_numpy(x).requires_grad_()
    h = body(xt)
    out = (h * h).mean(dim=(1, 2, 3))
    (gx,) = torch.autograd.grad(out.sum(), xt, create_graph=True)
    tpenalty = (gx * gx).sum(dim=(1, 2, 3)).mean()
    tloss = ((out - torch.from_numpy(t)) ** 2).mean() + tpenalty
    tloss.backward()

    assert penalty.item() == pytest.approx(tpenalty.item(), rel=1e-10)
    assert penalty.item() > 0
    theirs = dict(body.named_parameters())
    for name, p in model.named_parameters():
        assert_close(p.grad.data, theirs[name.removeprefix("body.")].grad.numpy(), np.float64,
                     f"d loss / d {name}")


def test_gradient_penalty_training_runs(gradient_penalty):
    result = gradient_penalty.main(steps=4, verbose=False)
    assert len(result["fits"]) == len(result["penalties"]) == 4
    assert all(np.isfinite(result["fits"])) and all(np.isfinite(result["penalties"]))
    assert 0.0 <= result["accuracy"] <= 1.0
