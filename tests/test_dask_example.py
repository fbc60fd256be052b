"""Oracle: the same loss and gradient on NumPy arrays, and the PSNR the restoration gains.

``examples/deconvolve_volume.py`` on dask (chunked) must compute the loss and gradient
that the in-memory engine computes (float64, max-norm relative 1e-12), and a short run
on a small LocalCluster must raise the PSNR and write its PNG.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
pytest.importorskip("distributed")

import convgrad as cg  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("example_deconvolve_volume",
                                                  EXAMPLES / "deconvolve_volume.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("psf", ["gaussian", "widefield"])
def test_loss_and_gradient_on_dask_equal_numpy(example, psf):
    size = 40
    truth = example.render_block(example.draw_scene(size, 1), np.zeros(3, int),
                                 np.full(3, size))[None, None].astype(np.float64)
    rng = np.random.default_rng(0)
    observed = truth + 0.05 * rng.standard_normal(truth.shape)
    estimate = np.clip(observed + 0.1 * rng.standard_normal(truth.shape), 0, 1)
    g = example.psf_1d() if psf == "gaussian" else example.widefield_psf()
    results = []
    with dask.config.set(scheduler="synchronous"):
        for lazy in (False, True):
            wrap = (lambda a: da.from_array(a, chunks=(1, 1, 13, 16, 11))) if lazy else (
                lambda a: a)
            x = cg.tensor(wrap(estimate), requires_grad=True)
            loss = example.loss_fn(x, wrap(observed), g)
            loss.backward()
            results.append(cg.compute(loss, x.grad))
    for got, want, what in zip(results[1], results[0], ("loss", "gradient")):
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err <= 1e-12, f"{what}: max relative error {err:.2e}"


def test_short_run_on_a_local_cluster_sharpens(example, tmp_path):
    png = tmp_path / "slices.png"
    result = example.main(size=48, chunk=24, steps=4, workers=2, memory_limit="768MiB",
                          png=str(png), verbose=False, psf="gaussian")
    psnrs = [h[1] for h in result["history"]]
    assert psnrs[-1] > result["psnr_observed"] + 1.0
    losses = [h[0] for h in result["history"]]
    assert losses[-1] < losses[0]
    assert png.stat().st_size > 10_000
    assert 0 < result["peak_worker_bytes"] < 768 * 2**20
    assert {k: [p.shape for p in v] for k, v in result["slices"].items()} == {
        name: [(48, 48)] * 3 for name in ("truth", "observed", "restored")}


def test_widefield_psf_is_non_separable_and_richardson_lucy_sharpens(example):
    """In memory: the PSF's planes widen with defocus (so it is no outer product), and
    Richardson-Lucy steps raise the PSNR of a blurred, noisy volume."""
    g = example.widefield_psf()
    assert abs(g.sum() - 1) < 1e-5 and g.shape == example.WIDEFIELD_SHAPE
    assert np.linalg.matrix_rank(g.reshape(g.shape[0], -1).astype(np.float64), tol=1e-9) > 1
    size = 40
    truth = example.render_block(example.draw_scene(size, 2), np.zeros(3, int),
                                 np.full(3, size))[None, None]
    with cg.no_grad():
        blurred = example.blur(cg.tensor(truth), g).data
    observed = np.maximum(blurred + 0.01 * np.random.default_rng(1).standard_normal(
        truth.shape), 0).astype(np.float32)
    x = observed + example.RL_START
    with cg.profile() as prof:
        for _ in range(5):
            x = example.richardson_lucy_step(x, observed, g)
    assert {e.algorithm for e in prof.of("conv")} == {"fft"}  # the cost model's choice

    def psnr(a):
        return 10 * np.log10(1 / np.mean((a - truth) ** 2))

    assert psnr(x) > psnr(observed) + 1.0
