"""Oracle: the same Richardson-Lucy step computed in memory (NumPy arrays, the same
kernels), and the same step on the cluster without a fault.

One step of the example's Richardson-Lucy deconvolution with its non-separable widefield
PSF (an FFT convolution per chunk) runs on a LocalCluster of two single-threaded
workers; in the middle of the step (some of its output chunks done, others not) one
worker is killed (SIGKILL).  Dask recomputes what was lost on the surviving (or
restarted) worker and the step completes with the result of the undisturbed run, bit for
bit, which equals the in-memory result.  Every wait has a timeout and the cluster is
closed in ``finally``, so the test cannot hang or leave processes behind.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TIMEOUT_S = 120  # every wait on the cluster


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("example_deconvolve_volume_faults",
                                                  EXAMPLES / "deconvolve_volume.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _step(example, x, observed, g):
    return example.richardson_lucy_step(x, observed, g)


@pytest.mark.timeout(300)
def test_killing_a_worker_mid_step_gives_the_same_result(example):
    rng = np.random.default_rng(0)
    size, chunk = 96, 24
    g = example.widefield_psf()
    truth = example.render_block(example.draw_scene(size, 3), np.zeros(3, int),
                                 np.full(3, size))[None, None]
    observed = np.maximum(truth + 0.02 * rng.standard_normal(truth.shape), 0).astype(np.float32)
    x0 = np.full_like(observed, 0.5)
    expected = _step(example, x0, observed, g)  # in memory

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       memory_limit="1GiB", dashboard_address=None)
    try:
        with distributed.Client(cluster, timeout=TIMEOUT_S) as client:
            def lazy(a):
                return da.from_array(a, chunks=(1, 1, chunk, chunk, chunk))

            undisturbed = _step(example, lazy(x0), lazy(observed), g).compute()

            step = _step(example, lazy(x0), lazy(observed), g).persist()
            futures = distributed.futures_of(step)
            deadline = time.monotonic() + TIMEOUT_S
            while not any(f.done() for f in futures):
                assert time.monotonic() < deadline, "no chunk of the step finished"
                time.sleep(0.005)
            done_at_kill = sum(f.done() for f in futures)
            holders = client.who_has([f for f in futures if f.done()])
            victim = next(iter(next(iter(holders.values()))))
            pid = client.run(os.getpid, workers=[victim])[victim]
            os.kill(pid, signal.SIGKILL)
            result = step.compute(timeout=TIMEOUT_S)
            workers_after = set(client.scheduler_info()["workers"])
    finally:
        cluster.close(timeout=30)
    assert done_at_kill < len(futures), "the step had finished before the kill"
    assert victim not in workers_after  # the worker really was lost
    assert np.array_equal(result, undisturbed)
    assert np.abs(result - expected).max() <= 1e-5 * np.abs(expected).max()
