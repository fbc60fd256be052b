"""Oracle: torch 2.13 (the same U-Net, same weights, float64) and an uninterrupted run for resume.

The U-Net of ``examples/train_unet.py`` is rebuilt in torch and compared forward and
backward at the float64 tolerance.  The script itself runs in subprocesses on a tiny
configuration: its loss falls, it reports PSNR and MS-SSIM of the held-out photograph
(denoised better than noisy), and a run stopped at step 7 and resumed from its
checkpoint ends bit for bit where the uninterrupted run ends (weights, optimiser
moments, schedule, random state).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import convgrad as cg

from .tolerances import assert_close

pytest.importorskip("skimage")  # the bundled photographs

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "train_unet.py"
TINY = ["--steps", "20", "--batch-size", "4", "--crop", "32", "--width", "8",
        "--epoch-steps", "5", "--eval-size", "176", "--no-progress"]


def _load():
    spec = importlib.util.spec_from_file_location("example_train_unet", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------- the model
def _torch_unet(torch, width: int, depth: int):
    tnn = torch.nn
    groups = _load().GROUPS

    class DoubleConv(tnn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.block = tnn.Sequential(
                tnn.Conv2d(cin, cout, 3, padding=1, bias=False), tnn.GroupNorm(groups, cout),
                tnn.SiLU(), tnn.Conv2d(cout, cout, 3, padding=1, bias=False),
                tnn.GroupNorm(groups, cout), tnn.SiLU())

        def forward(self, x):
            return self.block(x)

    class Up(tnn.Module):
        def __init__(self, cin, cskip, cout):
            super().__init__()
            self.up = tnn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
            self.conv = DoubleConv(cin + cskip, cout)

        def forward(self, x, skip):
            return self.conv(torch.cat([self.up(x), skip], dim=1))

    class UNet(tnn.Module):
        def __init__(self):
            super().__init__()
            w = [width * 2**k for k in range(depth + 1)]
            self.inc = DoubleConv(1, w[0])
            self.pool = tnn.MaxPool2d(2)
            self.down = tnn.ModuleList(DoubleConv(w[k], w[k + 1]) for k in range(depth))
            self.up = tnn.ModuleList(Up(w[k + 1], w[k], w[k]) for k in reversed(range(depth)))
            self.head = tnn.Conv2d(w[0], 1, 1)

        def forward(self, x):
            h, skips = self.inc(x), []
            for down in self.down:
                skips.append(h)
                h = down(self.pool(h))
            for up, skip in zip(self.up, reversed(skips)):
                h = up(h, skip)
            return x - self.head(h)

    return UNet().double()


@pytest.mark.parametrize("depth", [1, 2])
def test_unet_forward_and_gradients_match_torch(depth):
    torch = pytest.importorskip("torch")
    example = _load()
    cg.manual_seed(3)
    model = example.UNet(width=8, depth=depth).double()
    rng = np.random.default_rng(depth)
    # random affine norms and head (the head starts at zero, which would hide the rest)
    state = {k: rng.standard_normal(v.shape) * (0.3 if k.startswith("head") else 1.0)
             if "block.1" in k or "block.4" in k or k.startswith("head") else v
             for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    theirs = _torch_unet(torch, 8, depth)
    theirs.load_state_dict({k: torch.from_numpy(np.asarray(v, np.float64))
                            for k, v in state.items()})
    assert set(theirs.state_dict()) == set(model.state_dict())

    x = rng.random((2, 1, 12, 20))
    target = rng.random(x.shape)
    xs = cg.tensor(x, requires_grad=True)
    out = model(xs)
    ((out - target) ** 2).mean().backward()
    xt = torch.from_numpy(x).requires_grad_()
    out_t = theirs(xt)
    ((out_t - torch.from_numpy(target)) ** 2).mean().backward()

    assert_close(out.data, out_t.detach().numpy(), np.float64, "U-Net output")
    assert_close(xs.grad.data, xt.grad.numpy(), np.float64, "d loss / d input")
    named = dict(theirs.named_parameters())
    for name, p in model.named_parameters():
        assert_close(p.grad.data, named[name].grad.numpy(), np.float64, f"d loss / d {name}")


def test_unet_starts_as_the_identity_and_checks_sides():
    example = _load()
    model = example.UNet(width=8, depth=2)
    x = np.random.default_rng(0).random((1, 1, 16, 24)).astype(np.float32)
    assert np.array_equal(model(x).data, x)
    with pytest.raises(ValueError, match="multiples of 4"):
        model(np.zeros((1, 1, 18, 24), np.float32))
    with pytest.raises(ValueError, match="width=12"):
        example.UNet(width=12)


# ----------------------------------------------------------------------------- the script
def _run(out: Path, *extra: str) -> subprocess.CompletedProcess:
    src = str(Path(__file__).resolve().parent.parent / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, *(p for p in sys.path if p)])}
    return subprocess.run([sys.executable, str(EXAMPLE), *TINY, "--out", str(out), *extra],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("unet")
    whole = _run(root / "whole")
    checkpoint = ["--checkpoint", str(root / "split.npz")]
    first = _run(root / "first", *checkpoint, "--stop-at", "7")  # inside epoch 1 (of 5 steps)
    second = _run(root / "second", *checkpoint, "--resume")
    return root, whole, first, second


def _ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_training_lowers_the_loss_and_reports_the_scores(runs):
    _, whole, _, _ = runs
    out = _ok(whole)
    epochs = [float(v) for v in re.findall(r"^epoch +\d+ +step +\d+/20 +loss ([\d.]+)", out,
                                           re.M)]
    assert len(epochs) == 4, out
    assert epochs[-1] < 0.8 * epochs[0], epochs
    assert re.search(r"time per step: [\d.]+ s", out), out
    scores = {kind: (float(p), float(m)) for kind, p, m in re.findall(
        r"held-out camera, (noisy|denoised): +PSNR ([\d.]+) dB +MS-SSIM ([\d.]+)", out)}
    assert set(scores) == {"noisy", "denoised"}, out
    # sigma 0.1 on [0, 1]: about 20 dB before (clipping helps a little)
    assert 19.5 < scores["noisy"][0] < 21.5
    assert scores["denoised"][0] > scores["noisy"][0]
    assert 0 < scores["noisy"][1] < 1 and 0 < scores["denoised"][1] < 1


def _assert_same(a, b, where="checkpoint"):
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), where
        for k in a:
            _assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, cg.Tensor | np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and np.array_equal(a, b), where
    else:
        assert a == b, where


def test_resume_continues_exactly_as_an_uninterrupted_run(runs):
    root, whole, first, second = runs
    _ok(whole)
    assert "step     7/20" in _ok(first)
    assert "resumed from" in _ok(second) and "at step 7 (epoch 1)" in second.stdout
    ours, theirs = cg.load(root / "second" / "unet.npz"), cg.load(root / "whole" / "unet.npz")
    assert list(ours) == list(theirs)
    for k in ours:
        assert np.array_equal(ours[k], theirs[k]), k  # bit for bit
    # the second run did the training: its weights are not those of step 7
    at_7 = cg.load(root / "first" / "unet.npz")
    assert not np.array_equal(at_7["head.weight"], ours["head.weight"])
    # and everything else the run carries: optimiser moments, schedule, random state
    end_split = cg.load(root / "split.npz")
    end_whole = cg.load(root / "whole" / "checkpoint.npz")
    assert end_whole["step"] == 20 and end_whole["epoch"] == 4
    _assert_same(end_split, end_whole)


def test_resume_refuses_other_arguments(runs):
    root, *_ = runs
    done = _run(root / "other", "--checkpoint", str(root / "split.npz"), "--resume",
                "--lr", "0.01")
    assert done.returncode != 0
    assert "--lr 0.002 (now 0.01)" in done.stderr
