"""Oracle: the kernel's count of minor page faults (getrusage) over repeated training
steps in a fresh interpreter, with convgrad's malloc thresholds and without them."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap

import pytest

from convgrad.ops import heap

# a child's minor page faults per training step, after warm-up steps; {step} defines
# step(), then {warm} steps and {count} counted ones
_COUNT = textwrap.dedent("""
    import resource
    import convgrad as cg
    import convgrad.functional as F
    {step}
    for _ in range({warm}):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range({count}):
        step()
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / {count})
""")

STEPS = _COUNT.format(warm=3, count=10, step=textwrap.dedent("""
    x = cg.randn(16, 32, 64, 64, rng=0)
    w = cg.randn(32, 32, 3, 3, rng=1, requires_grad=True)
    def step():
        y = F.conv2d(F.conv2d(x, w, padding=1).relu(), w, padding=1).relu()
        (y * y).mean().backward()
""").strip())

# arrays above glibc's largest memory-map threshold (32 MiB): 40 MiB each, elementwise
BIG_STEPS = _COUNT.format(warm=2, count=5, step=textwrap.dedent("""
    x = cg.randn(10 * 2**20, rng=0, requires_grad=True)
    def step():
        y = (x * 1.5).relu()
        (y * y).mean().backward()
        x.grad = None
""").strip())


def _clean_environment() -> dict:
    return {k: v for k, v in os.environ.items()
            if not (k.startswith("MALLOC_") or k in ("GLIBC_TUNABLES", "CONVGRAD_MALLOC",
                                                     "NUMPY_MADVISE_HUGEPAGE"))}


def _faults_per_step(code: str = STEPS, **env: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], env={**_clean_environment(), **env},
                         check=True, capture_output=True, text=True, timeout=300)
    return float(out.stdout.split()[-1])


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="the thresholds are glibc's mallopt parameters")
def test_steps_stop_faulting_their_arrays_in_again():
    """Each step allocates ~20 MiB of activations and gradients and frees them: with
    glibc's initial thresholds the heap is trimmed and the next step faults its arrays
    in again (thousands of faults per step); with convgrad's they stay."""
    tuned, untuned = _faults_per_step(), _faults_per_step(CONVGRAD_MALLOC="0")
    assert untuned > 1000, untuned
    assert tuned < untuned / 20, (tuned, untuned)


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="the thresholds are glibc's mallopt parameters")
def test_arrays_above_the_memory_map_threshold_are_reused_too():
    """40 MiB arrays: glibc maps each afresh (and faults its pages in) whatever its
    thresholds; with no memory maps (``M_MMAP_MAX`` 0) they come from the heap too."""
    tuned, untuned = (_faults_per_step(BIG_STEPS),
                      _faults_per_step(BIG_STEPS, CONVGRAD_MALLOC="0"))
    assert untuned > 500, untuned
    assert tuned < untuned / 20, (tuned, untuned)


# a super-resolution net (pytorch/examples' layers) on a batch of 32: each step frees
# more than the 256 MiB trim threshold at once; the optimiser's step raises the
# threshold to the process's peak (``heap.follow_peak``) unless {off}
HUGE_STEPS = _COUNT.format(warm=2, count=3, step=textwrap.dedent("""
    from convgrad.ops import heap
    if {off}:
        heap.follow_peak = lambda: False
    x, t = cg.randn(32, 1, 85, 85, rng=0), cg.randn(32, 1, 255, 255, rng=1)
    net = cg.nn.Sequential(
        cg.nn.Conv2d(1, 64, 5, padding=2), cg.nn.ReLU(), cg.nn.Conv2d(64, 64, 3, padding=1),
        cg.nn.ReLU(), cg.nn.Conv2d(64, 32, 3, padding=1), cg.nn.ReLU(),
        cg.nn.Conv2d(32, 9, 3, padding=1), cg.nn.PixelShuffle(3))
    opt = cg.optim.SGD(net.parameters(), lr=0.0)
    def step():
        opt.zero_grad()
        F.mse_loss(net(x), t).backward()
        opt.step()
""").strip())


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="the thresholds are glibc's mallopt parameters")
def test_steps_freeing_more_than_the_trim_threshold_keep_their_memory():
    """Steps freeing more than 256 MiB at once (59 MB activations): trimmed at the 256
    MiB threshold and faulted in again every step (measured: 66,000 faults) unless the
    optimiser's step raised the threshold to the process's peak (measured: 2)."""
    kept = _faults_per_step(HUGE_STEPS.replace("{off}", "False"))
    trimmed = _faults_per_step(HUGE_STEPS.replace("{off}", "True"))
    assert trimmed > 5000, trimmed
    assert kept < trimmed / 10, (kept, trimmed)


def test_follow_peak_raises_the_trim_threshold_to_the_peak_within_its_cap(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_trim", [lambda p, v: calls.append((p, v)) or 1,
                                        256 * 2**20, 2 * 2**30])
    usage = type("U", (), {"ru_maxrss": 300 * 2**10})  # KiB: 300 MiB
    monkeypatch.setattr(heap.resource, "getrusage", lambda who: usage)
    assert heap.follow_peak() and calls == [(heap.M_TRIM_THRESHOLD, 300 * 2**20)]
    assert not heap.follow_peak()  # no new peak: no call
    usage.ru_maxrss = 5 * 2**20  # 5 GiB: the cap
    assert heap.follow_peak() and calls[-1] == (heap.M_TRIM_THRESHOLD, 2 * 2**30)
    monkeypatch.setattr(heap, "_trim", [])  # the policy is the environment's
    assert not heap.follow_peak()


# the same steps, with the heap's free memory handed back before each counted step
RELEASED_STEPS = STEPS.replace("    step()\nprint(", "    heap.release_free()\n    step()\nprint(")
RELEASED_STEPS = RELEASED_STEPS.replace("import resource\n",
                                        "import resource\nfrom convgrad.ops import heap\n")


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="malloc_trim is glibc's")
def test_release_free_makes_the_next_step_fault_its_arrays_in_again():
    """``release_free`` (a benchmark's first step, which must not inherit an earlier
    run's memory): with convgrad's thresholds a step reuses the freed heap (few faults);
    after a release it faults its ~20 MiB in afresh, as a first step does."""
    assert "heap.release_free()" in RELEASED_STEPS
    kept, released = _faults_per_step(), _faults_per_step(RELEASED_STEPS)
    assert released > 1000 and kept < released / 20, (kept, released)


def test_environment_decides(monkeypatch):
    for key in list(os.environ):
        if key.startswith("MALLOC_") or key in ("GLIBC_TUNABLES", "CONVGRAD_MALLOC"):
            monkeypatch.delenv(key)
    assert heap.wanted()
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # a dask worker's policy
    assert not heap.wanted()
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0")
    assert not heap.wanted()
    monkeypatch.delenv("GLIBC_TUNABLES")
    monkeypatch.setenv("CONVGRAD_MALLOC", "0")
    assert not heap.wanted()


# NumPy's huge-page advice as a fresh interpreter leaves it, after the imports given
_ADVICE = textwrap.dedent("""
    import numpy
    {imports}
    from numpy._core.multiarray import _set_madvise_hugepage
    print(_set_madvise_hugepage(False))
""")


def _advice(imports: str, **env: str) -> str:
    out = subprocess.run([sys.executable, "-c", _ADVICE.format(imports=imports)],
                         env={**_clean_environment(), **env}, check=True,
                         capture_output=True, text=True, timeout=300)
    return out.stdout.split()[-1]


def test_numpy_huge_page_advice_is_declined_unless_the_environment_chose():
    numpy_default = _advice("")  # NumPy's own choice, from the kernel's version
    assert _advice("import convgrad") == "False"
    assert _advice("import convgrad", NUMPY_MADVISE_HUGEPAGE="1") == "True"
    assert _advice("import convgrad", CONVGRAD_MALLOC="0") == numpy_default


# minor page faults of filling a fresh 64 MiB array in a fresh interpreter
_FRESH_FAULTS = textwrap.dedent("""
    import resource
    import numpy as np
    import convgrad
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    np.empty(2**24, np.float32).fill(1.0)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


def _thp_mode() -> str:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            text = f.read()
    except OSError:
        return ""
    return text[text.find("[") + 1:text.find("]")]


@pytest.mark.skipif(_thp_mode() != "madvise",
                    reason="huge pages only where advised: the advice decides the page size")
def test_fresh_arrays_fault_in_small_pages_as_torchs_do():
    small = _faults_per_step(_FRESH_FAULTS)
    advised = _faults_per_step(_FRESH_FAULTS, NUMPY_MADVISE_HUGEPAGE="1")
    assert small >= 2**26 // 4096 // 2, small  # 4 KiB pages: at least half of 16384 faults
    assert advised < small, (advised, small)  # 2 MiB pages where the kernel had them
