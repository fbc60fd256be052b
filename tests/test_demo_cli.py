"""Oracle: pytorch_msssim (float64 window) and the library for `msssim`; PNG and Pillow; the loss.

The demo command runs end to end with few steps; its loss history must go down.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import convgrad as cg
from convgrad import cli
from convgrad.cli import demo
from convgrad.cli.images import read_image
from convgrad.metrics import ms_ssim, ssim

Image = pytest.importorskip("PIL.Image")  # the demo extra: Pillow reads and writes the files
data = pytest.importorskip("skimage.data")  # and scikit-image bundles the photographs

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------- demo
def test_demo_command_end_to_end(tmp_path, capsys):
    pytest.importorskip("matplotlib")  # the figure
    out = tmp_path / "out"
    rc = cli.main(["demo", "--steps", "3", "--seed", "0", "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    text = captured.out
    assert "trained 3 steps" in text and "steps/s" in text
    assert "noisy" in text and "denoised" in text and "PSNR" in text and "MS-SSIM" in text
    assert "conv_weight_grad ran 4 times = 4 trainable conv layers (as expected)" in text
    assert "conv_forward" in text and "GFLOP/s" in text  # the profiler's summary table
    figure = out / "demo.png"
    assert figure.read_bytes()[:8] == PNG_SIGNATURE
    with Image.open(figure) as img:
        img.verify()
    with Image.open(figure) as img:
        assert img.format == "PNG" and img.size[0] > 600 and img.size[1] > 150
    model = demo.DenoisingAutoencoder()
    model.load_state_dict(cg.load(out / "weights.npz"))


def test_training_reduces_the_loss_and_is_deterministic():
    result = demo.train(steps=25, seed=0, progress=False)
    losses = np.array(result.losses)
    assert np.isfinite(losses).all() and len(losses) == 25
    assert losses[-8:].mean() < 0.8 * losses[:5].mean()
    assert result.step_profile.count("conv_weight_grad") == result.trainable_conv_layers == 4
    assert result.step_profile.count("conv_input_grad") > 0
    first = demo.train(steps=3, seed=0, progress=False)
    again = demo.train(steps=3, seed=0, progress=False)
    assert again.losses == first.losses
    for key, value in first.model.state_dict().items():
        np.testing.assert_array_equal(again.model.state_dict()[key], value)
    np.testing.assert_array_equal(again.denoised, first.denoised)
    other = demo.train(steps=3, seed=1, progress=False)
    assert other.losses != again.losses


def test_frozen_layer_changes_the_weight_gradient_count():
    model = demo.DenoisingAutoencoder(rng=0)
    model.enc2.requires_grad_(False)
    clean, noisy = demo.make_batch([data.camera() / 255.0], np.random.default_rng(0))
    with cg.profile() as prof:
        demo.demo_loss(model(cg.tensor(noisy)), clean).backward()
        grads = [p.grad for p in model.parameters()]  # (computed when read: deferred)
    assert prof.count("conv_weight_grad") == 3 and sum(g is not None for g in grads) > 3
    assert model.enc2.weight.grad is None


def test_demo_trains_on_a_folder_of_images(tmp_path, capsys):
    folder = tmp_path / "pics"
    folder.mkdir()
    Image.fromarray(data.astronaut()[:200, :180]).save(folder / "a.png")
    Image.fromarray(data.coffee()[100:300, :250]).convert("L").save(folder / "b.jpg")
    Image.fromarray(data.camera()[:50, :50]).save(folder / "tiny.png")  # skipped: too small
    (folder / "notes.txt").write_text("not an image")
    result = demo.train(steps=2, seed=0, images=str(folder), progress=False)
    assert result.image_names == ["a.png", "b.jpg"]
    empty = tmp_path / "empty"
    empty.mkdir()
    rc = cli.main(["demo", "--steps", "1", "--images", str(empty), "--out",
                   str(tmp_path / "o"), "--no-progress"])
    assert rc == 2
    assert "no usable image" in capsys.readouterr().err


def test_demo_rejects_bad_steps(capsys, tmp_path):
    assert cli.main(["demo", "--steps", "0", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "steps=0" in capsys.readouterr().err


# ----------------------------------------------------------------------------- msssim
def _write(path, array, mode=None):
    img = Image.fromarray(array)
    if mode:
        img = img.convert(mode)
    img.save(path)
    return str(path)


def _parse(out: str) -> tuple[float, float]:
    lines = out.strip().splitlines()
    assert lines[0].startswith("SSIM: ") and lines[1].startswith("MS-SSIM: ")
    return float(lines[0].split()[1]), float(lines[1].split()[1])


@pytest.mark.parametrize("colour", [False, True])
def test_msssim_command_matches_the_library_and_pytorch_msssim(tmp_path, capsys, colour):
    torch = pytest.importorskip("torch")
    pm = pytest.importorskip("pytorch_msssim")
    rng = np.random.default_rng(0)
    clean = (data.astronaut() if colour else data.camera())[:200, :230]
    noisy = np.clip(clean + rng.normal(0, 20, clean.shape), 0, 255).astype(np.uint8)
    a, b = _write(tmp_path / "a.png", clean), _write(tmp_path / "b.png", noisy)
    assert cli.main(["msssim", a, b]) == 0
    s, ms = _parse(capsys.readouterr().out)
    x = (clean.astype(np.float64) / 255)
    y = (noisy.astype(np.float64) / 255)
    x = x.transpose(2, 0, 1)[None] if colour else x[None, None]
    y = y.transpose(2, 0, 1)[None] if colour else y[None, None]
    assert x.shape[1] == (3 if colour else 1)
    assert s == pytest.approx(ssim(x, y).item(), abs=1e-9)
    assert ms == pytest.approx(ms_ssim(x, y).item(), abs=1e-9)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    coords = torch.arange(11, dtype=torch.float64) - 5  # pytorch-msssim's window, in float64
    win = torch.exp(-(coords**2) / (2 * 1.5**2))
    win = (win / win.sum()).reshape(1, 1, 1, 11).repeat(x.shape[1], 1, 1, 1)
    assert s == pytest.approx(pm.ssim(tx, ty, data_range=1.0, win=win).item(), abs=1e-9)
    assert ms == pytest.approx(pm.ms_ssim(tx, ty, data_range=1.0, win=win).item(), abs=1e-9)


def test_rgba_is_read_as_rgb_and_gray_as_one_channel(tmp_path):
    rgb = data.astronaut()[:170, :180]
    rgba = np.concatenate([rgb, np.full(rgb.shape[:2] + (1,), 77, np.uint8)], axis=-1)
    a = read_image(_write(tmp_path / "rgba.png", rgba))
    b = read_image(_write(tmp_path / "rgb.png", rgb))
    assert a.shape == (3, 170, 180)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[:, 5, 7], rgb[5, 7] / 255.0)
    g = read_image(_write(tmp_path / "g.png", data.camera()[:170, :180]))
    assert g.shape == (1, 170, 180) and g.max() <= 1.0


@pytest.mark.parametrize("case", ["size", "tiny", "channels", "missing", "not_image"])
def test_msssim_command_errors_are_messages_not_tracebacks(tmp_path, capsys, case):
    cam = data.camera()
    a = _write(tmp_path / "a.png", cam[:200, :200])
    b = {
        "size": lambda: _write(tmp_path / "b.png", cam[:200, :210]),
        "tiny": lambda: a,
        "channels": lambda: _write(tmp_path / "b.png", cam[:200, :200], "RGB"),
        "missing": lambda: str(tmp_path / "nope.png"),
        "not_image": lambda: (tmp_path / "b.png").write_text("hello") and str(tmp_path / "b.png"),
    }[case]()
    if case == "tiny":  # smaller than the window, so no SSIM (too small for MS-SSIM alone
        a = b = _write(tmp_path / "s.png", cam[:9, :30])  # is not an error: test_cli.py)
    rc = cli.main(["msssim", a, b])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    assert captured.err.startswith("convgrad msssim: error:") and "Traceback" not in captured.err
    expected = {"size": "differ in size", "tiny": "30x9 gray: SSIM needs both sides >= the "
                "window (--win-size 11)", "channels": "gray",
                "missing": "nope.png", "not_image": "cannot read"}[case]
    assert expected in captured.err


def test_importing_convgrad_does_not_import_the_demo_dependencies():
    import subprocess
    import sys

    code = ("import sys, convgrad, convgrad.nn, convgrad.metrics, convgrad.optim; "
            "heavy = {'skimage', 'PIL', 'tqdm', 'matplotlib', 'torch'} & set(sys.modules); "
            "print(sorted(heavy))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert out.strip() == "[]"
