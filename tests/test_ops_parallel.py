"""Oracle: threadpoolctl's report of BLAS threads, and serial results (bit-identical)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import convgrad.functional as F
from convgrad.ops import parallel


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_blas_threads_restored_after_concurrent_kernels():
    before = _blas_threads()
    x = np.random.default_rng(0).random((4, 16, 32, 32)).astype(np.float32)
    w = np.random.default_rng(1).random((16, 16, 3, 3)).astype(np.float32)
    errors = []

    def work():
        try:
            for _ in range(10):
                F.conv2d(x, w, padding=1)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert _blas_threads() == before


def test_inside_a_kernel_blas_is_single_threaded():
    with parallel.single_threaded_blas() as limited:
        if limited:
            assert set(_blas_threads()) == {1}


def test_worker_count_does_not_change_results(monkeypatch):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 8, 40, 40))
    w = rng.standard_normal((8, 8, 3, 3))
    results = []
    for n in ("1", "2", "3"):
        monkeypatch.setenv("CONVGRAD_NUM_THREADS", n)
        results.append(F.conv2d(x, w, padding=1).data)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


def test_thread_count_from_the_environment(monkeypatch):
    """CONVGRAD_NUM_THREADS first, then OMP_NUM_THREADS as it was at import (a dask
    worker is started with it set to 1), then the usable cores
    (``os.sched_getaffinity``); nonsense values are skipped."""
    import os

    cores = len(os.sched_getaffinity(0))
    monkeypatch.delenv("CONVGRAD_NUM_THREADS", raising=False)
    monkeypatch.setattr(parallel, "_OMP_AT_START", "")
    assert parallel.num_threads() == cores
    monkeypatch.setattr(parallel, "_OMP_AT_START", "1")
    assert parallel.num_threads() == 1
    monkeypatch.setenv("CONVGRAD_NUM_THREADS", "3")
    assert parallel.num_threads() == 3
    monkeypatch.setenv("CONVGRAD_NUM_THREADS", "zero")
    monkeypatch.setattr(parallel, "_OMP_AT_START", "0")
    assert parallel.num_threads() == cores


def test_omp_num_threads_is_read_once_at_start(monkeypatch):
    """As OpenMP and torch: a process started with OMP_NUM_THREADS=1 runs one thread; one
    whose environment gets it later (a dask nanny in this process sets it for the
    workers it spawns) keeps its thread count."""
    import os
    import subprocess
    import sys

    code = ("import os, convgrad; from convgrad.ops import parallel; "
            "a = parallel.num_threads(); os.environ['OMP_NUM_THREADS'] = '1'; "
            "print(a, parallel.num_threads())")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "CONVGRAD_NUM_THREADS")}
    cores = len(os.sched_getaffinity(0))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == [str(cores), str(cores)]
    out = subprocess.run([sys.executable, "-c", code], env={**env, "OMP_NUM_THREADS": "1"},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "1"]


def test_run_chunks_runs_every_task_once_on_the_caller_and_the_pool(monkeypatch):
    monkeypatch.setenv("CONVGRAD_NUM_THREADS", "2")
    ran: list[tuple[int, str]] = []

    def task(i: int):
        def run() -> int:
            ran.append((i, threading.current_thread().name))
            # a kernel inside a task runs its own chunks inline, on this thread
            assert parallel.run_chunks([lambda: 1, lambda: 2]) == 3
            return i
        return run

    assert parallel.run_chunks([task(i) for i in range(40)]) == sum(range(40))
    assert sorted(i for i, _ in ran) == list(range(40))
    assert len({name for _, name in ran}) <= 2


def test_run_chunks_raises_a_tasks_error_and_stops_taking_tasks(monkeypatch):
    monkeypatch.setenv("CONVGRAD_NUM_THREADS", "2")
    ran = []

    def task(i: int):
        def run() -> int:
            ran.append(i)
            if i == 3:
                raise KeyError("task 3")
            return 0
        return run

    try:
        parallel.run_chunks([task(i) for i in range(1000)])
    except KeyError as e:
        assert e.args == ("task 3",)
    else:  # pragma: no cover - the assertion below reports it
        raise AssertionError("the task's KeyError did not reach the caller")
    assert len(ran) < 1000
    # the pool is usable afterwards, and the caller is no longer marked as a worker
    assert parallel.run_chunks([lambda: 1] * 8) == 8
    assert not getattr(parallel._depth, "worker", False)


def test_set_num_threads_as_torch():
    """``cg.set_num_threads(n)`` sets every kernel's thread count and BLAS's, over the
    environment; ``cg.get_num_threads()`` reads it; bad counts are refused, naming n.
    A convolution on one thread and on two gives torch's result."""
    import convgrad as cg

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    torch = pytest.importorskip("torch")
    saved = dict(parallel._state)
    blas_before = [(lib, lib.num_threads) for lib in parallel._blas_controllers() or ()]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 8, 20, 20))
    w = rng.standard_normal((8, 8, 3, 3))
    try:
        cg.set_num_threads(1)
        assert cg.get_num_threads() == 1 and parallel.num_threads() == 1
        assert blas_threads() == {1}
        one = F.conv2d(x, w, padding=1).data
        with parallel.single_threaded_blas():
            cg.set_num_threads(2)  # while a kernel holds BLAS at one thread
            assert blas_threads() == {1}
        assert blas_threads() == {2}  # its exit restores the count set meanwhile
        assert cg.get_num_threads() == 2
        two = F.conv2d(x, w, padding=1).data
        for bad, err in ((0, ValueError), (-3, ValueError), (2.0, TypeError),
                         (True, TypeError), ("2", TypeError)):
            with pytest.raises(err, match=r"set_num_threads: n="):
                cg.set_num_threads(bad)
        assert cg.get_num_threads() == 2
    finally:
        parallel._state.pop("threads", None)
        parallel._state.update({k: v for k, v in saved.items() if k == "threads"})
        for lib, n in blas_before:
            lib.set_num_threads(n)
    ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)
    np.testing.assert_allclose(one, ref.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(one, two)
