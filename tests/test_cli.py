"""Oracle: pyproject.toml's version, argparse's own parser objects, scikit-image's SSIM.

The ``convgrad`` command: ``--version``, defaults in every ``--help``, and ``msssim`` on
images too small for MS-SSIM and with ``--data-range`` / ``--win-size``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import convgrad
from convgrad import cli
from convgrad.metrics import ms_ssim, ssim

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _run(*argv: str, module: str = "convgrad") -> subprocess.CompletedProcess:
    """``python -m MODULE ARGV`` in a fresh interpreter that finds the package under test."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run([sys.executable, "-m", module, *argv], capture_output=True,
                          text=True, env=env, timeout=120)


# ----------------------------------------------------------------------------- --version
def test_version_is_the_projects():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    version = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    assert convgrad.__version__ == version
    result = _run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"convgrad {version}\n"


def test_version_through_main(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"convgrad {convgrad.__version__}\n"


# ----------------------------------------------------------------------------- --help
def _parsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    found = {"convgrad": parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update({f"convgrad {name}": p for name, p in action.choices.items()})
    return found


def test_every_command_is_in_the_parser():
    assert set(_parsers()) == {"convgrad", "convgrad demo", "convgrad msssim", "convgrad bench",
                               "convgrad gradcheck"}


@pytest.mark.parametrize("name", sorted(_parsers()))
def test_every_help_shows_the_defaults(name):
    parser = _parsers()[name]
    text = " ".join(parser.format_help().split())  # unwrapped
    options = [a for a in parser._actions if a.option_strings
               and not isinstance(a, argparse._HelpAction | argparse._VersionAction)]
    for action in options:
        help_text = " ".join(action.help.split())
        if "(default:" in help_text:  # said in words, e.g. "(default: all)"
            assert help_text in text
        else:
            assert f"{help_text} (default: {action.default})" in text, (name, action.dest)
    if name == "convgrad demo":  # the value train() uses when no --steps is given
        from convgrad.cli.demo.training import DEFAULT_STEPS
        assert f"(default: {DEFAULT_STEPS})" in text
    if name == "convgrad msssim":
        assert "--data-range DATA_RANGE span of the pixel values" in text
        assert "(default: 1.0)" in text and "(default: 11)" in text


def test_help_runs_for_every_command():
    for argv in ([], ["demo"], ["msssim"], ["bench"], ["gradcheck"]):
        result = _run(*argv, "--help")
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("usage: convgrad")
        if argv:
            assert "(default:" in result.stdout
    # the modules that also run on their own
    result = _run("--help", module="convgrad.cli.gradcheck")
    assert result.returncode == 0 and "(default: False)" in " ".join(result.stdout.split())
    result = _run("--help", module="convgrad.cli.bench.memory")
    text = " ".join(result.stdout.split())
    assert result.returncode == 0 and "workload id (default: W1)" in text
    assert "seconds per child (default: 600.0)" in text


# ----------------------------------------------------------------------------- msssim
@pytest.fixture
def photos():
    """(write, camera): writes a uint8 array as a PNG with Pillow; the 512 x 512 camera."""
    image = pytest.importorskip("PIL.Image")
    data = pytest.importorskip("skimage.data")

    def write(path, array):
        image.fromarray(array).save(path)
        return str(path)

    return write, data.camera()


def _skimage_ssim(a: np.ndarray, b: np.ndarray, data_range: float) -> float:
    metrics = pytest.importorskip("skimage.metrics")
    return metrics.structural_similarity(a, b, data_range=data_range, gaussian_weights=True,
                                         sigma=1.5, use_sample_covariance=False)


def _noisy(clean: np.ndarray, sigma: float = 15.0) -> np.ndarray:
    noise = np.random.default_rng(0).normal(0, sigma, clean.shape)
    return np.clip(clean + noise, 0, 255).astype(np.uint8)


def test_too_small_for_ms_ssim_prints_ssim_and_why(tmp_path, capsys, photos):
    write, camera = photos
    clean = camera[:150, :300]
    noisy = _noisy(clean)
    rc = cli.main(["msssim", write(tmp_path / "a.png", clean), write(tmp_path / "b.png", noisy)])
    captured = capsys.readouterr()
    assert rc == 0 and captured.err == ""
    first, second = captured.out.splitlines()
    assert first.startswith("SSIM: ")
    assert float(first.split()[1]) == pytest.approx(_skimage_ssim(clean, noisy, 255), abs=1e-9)
    assert second.startswith("MS-SSIM: not computed (the images are 300x150 gray")
    assert "need both sides > 160 pixels" in second
    # the suggestion is right: the largest odd window five scales allow on a side of 150
    suggested = int(re.search(r"--win-size (\d+) or smaller", second).group(1))
    assert suggested == 9 and (suggested - 1) * 16 < 150 <= (suggested + 1) * 16
    rc = cli.main(["msssim", str(tmp_path / "a.png"), str(tmp_path / "b.png"),
                   "--win-size", str(suggested)])
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0 and lines[1].startswith("MS-SSIM: 0.")


@pytest.mark.parametrize("data_range,win_size", [(2.0, 11), (1.0, 7), (0.5, 5)])
def test_data_range_and_win_size_options(tmp_path, capsys, photos, data_range, win_size):
    write, camera = photos
    clean = camera[100:300, 50:280]
    noisy = _noisy(clean)
    a, b = write(tmp_path / "a.png", clean), write(tmp_path / "b.png", noisy)
    rc = cli.main(["msssim", a, b, "--data-range", str(data_range), "--win-size", str(win_size)])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    s, ms = float(out[0].split()[1]), float(out[1].split()[1])
    x = clean[None, None].astype(np.float64) / 255
    y = noisy[None, None].astype(np.float64) / 255
    assert s == pytest.approx(ssim(x, y, data_range=data_range, win_size=win_size).item(),
                              abs=1e-9)
    assert ms == pytest.approx(ms_ssim(x, y, data_range=data_range, win_size=win_size).item(),
                               abs=1e-9)
    if win_size == 11:  # scikit-image's window for sigma 1.5; its range is in 8-bit units
        assert s == pytest.approx(_skimage_ssim(clean, noisy, 255 * data_range), abs=1e-9)


@pytest.mark.parametrize("argv,message", [
    (["--win-size", "4"], "argument --win-size: '4' is not a positive odd integer"),
    (["--win-size", "x"], "argument --win-size: 'x' is not a positive odd integer"),
    (["--data-range", "0"], "argument --data-range: '0' is not a positive number"),
    (["--data-range", "nan"], "argument --data-range: 'nan' is not a positive number"),
])
def test_bad_option_values_are_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["msssim", "a.png", "b.png", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: convgrad msssim") and message in err


def test_window_larger_than_the_images_is_an_error(tmp_path, capsys, photos):
    write, camera = photos
    a = write(tmp_path / "a.png", camera[:40, :60])
    rc = cli.main(["msssim", a, a, "--win-size", "41"])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    assert captured.err == ("convgrad msssim: error: the images are 60x40 gray: SSIM needs "
                            "both sides >= the window (--win-size 41)\n")
