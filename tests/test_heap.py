"""Oracle: the kernel's count of minor page faults (getrusage) over repeated training
steps in a fresh interpreter, with the heap pad and without it."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap

import pytest

from convgrad.ops import heap

STEPS = textwrap.dedent("""
    import resource
    import convgrad as cg
    import convgrad.functional as F
    x = cg.randn(16, 32, 64, 64, rng=0)
    w = cg.randn(32, 32, 3, 3, rng=1, requires_grad=True)
    def step():
        y = F.conv2d(F.conv2d(x, w, padding=1).relu(), w, padding=1).relu()
        (y * y).mean().backward()
    for _ in range(3):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        step()
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
""")


def _faults_per_step(**env: str) -> float:
    clean = {k: v for k, v in os.environ.items()
             if not (k.startswith("MALLOC_") or k in ("GLIBC_TUNABLES", "CONVGRAD_HEAP_PAD"))}
    out = subprocess.run([sys.executable, "-c", STEPS], env={**clean, **env}, check=True,
                         capture_output=True, text=True, timeout=300)
    return float(out.stdout.split()[-1])


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="the pad is glibc's mallopt(M_TOP_PAD)")
def test_steps_stop_faulting_their_arrays_in_again():
    """Each step allocates ~20 MiB of activations and gradients and frees them: without
    the pad glibc returns them and the next step faults them in again (thousands of
    faults per step), with it they stay."""
    padded, unpadded = _faults_per_step(), _faults_per_step(CONVGRAD_HEAP_PAD="0")
    assert unpadded > 1000, unpadded
    assert padded < unpadded / 20, (padded, unpadded)


def test_environment_decides_the_pad(monkeypatch):
    for key in [k for k in os.environ if k.startswith("MALLOC_") or k == "GLIBC_TUNABLES"]:
        monkeypatch.delenv(key)
    monkeypatch.delenv("CONVGRAD_HEAP_PAD", raising=False)
    assert heap._pad_from_environment() == heap.DEFAULT_PAD
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # a dask worker's policy
    assert heap._pad_from_environment() is None
    monkeypatch.setenv("CONVGRAD_HEAP_PAD", "1048576")  # explicit wins
    assert heap._pad_from_environment() == 2**20
    monkeypatch.setenv("CONVGRAD_HEAP_PAD", "0")
    assert not heap._pad_from_environment()
    monkeypatch.setenv("CONVGRAD_HEAP_PAD", "lots")
    assert heap._pad_from_environment() is None
