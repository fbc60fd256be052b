"""Where the compiled loops come from (``ops/jit_build.py``): a process that finds them
unbuilt runs without them, exactly as with ``CONVGRAD_DISABLE_NUMBA=1``, while one builder
process compiles them; a stamp tells the next process they are built; ``inline`` compiles
in the process.  Oracles: the same program with Numba disabled (bit for bit), the
profiler's algorithms, the files the build leaves."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import pytest

numba = pytest.importorskip("numba")

from convgrad.ops import jit, jit_build, parallel  # noqa: E402

#: one training step of a small classifier whose layers call compiled loops when they are
#: usable (ReLU, the bias gradient's sums, the loss's log-softmax, Adam); prints what ran
STEP = """
import hashlib, json, sys
import numpy as np
import convgrad as cg
from convgrad import nn
from convgrad.ops import jit, jit_build
cg.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1),
                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
opt = cg.optim.Adam(model.parameters(), lr=1e-3)
rng = np.random.default_rng(0)
x = cg.tensor(rng.standard_normal((8, 3, 32, 32)).astype(np.float32))
y = cg.tensor(rng.integers(0, 10, 8))
with cg.profile() as prof:
    loss = cg.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
h = hashlib.sha256()
for p in model.parameters():
    h.update(np.ascontiguousarray(p.data).tobytes())
b = jit_build.builder()
from convgrad.ops import parallel
print(json.dumps({"enabled": jit.enabled(), "params": h.hexdigest(),
                  "threads": parallel.num_threads(),
                  "numba_ran": sorted({e.name for e in prof.events if e.algorithm == "numba"}),
                  "builder": b.pid if b else None}))
"""


def _run(cache_dir, **env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("CONVGRAD_JIT_BUILD",
                                                            "CONVGRAD_DISABLE_NUMBA")}
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    env.update(env_changes)
    done = subprocess.run([sys.executable, "-c", STEP], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _stop(pid):
    if pid is None:
        return
    for kill in (os.killpg, os.kill):  # its own process group, once it has made it
        try:
            kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_unbuilt_loops_run_as_numba_disabled_while_one_builder_compiles_them(tmp_path):
    cold = _run(tmp_path / "cache")
    try:
        assert cold["enabled"] is False and cold["numba_ran"] == []
        assert cold["builder"] is not None
        # exactly the kernels of a process with Numba off, on the threads it left itself
        # (one core fewer: the builder's): the same bits
        off = _run(tmp_path / "other", CONVGRAD_DISABLE_NUMBA="1",
                   CONVGRAD_NUM_THREADS=str(cold["threads"]))
        assert cold["params"] == off["params"]
        # a second process while the first builder works: none started
        again = _run(tmp_path / "cache")
        assert again["enabled"] is False and again["builder"] is None
        logs = list((tmp_path / "cache").rglob("convgrad-loops-*.log"))
        assert len(logs) == 1
    finally:
        _stop(cold["builder"])
    # the program calls loops where they are usable: compiled in the process (in the
    # suite's own cache), they run
    inline = _run(None, CONVGRAD_JIT_BUILD="inline")
    assert inline["enabled"] is True
    assert {"relu_forward", "relu_bias_backward", "adam"} <= set(inline["numba_ran"]), inline
    assert cold["threads"] == max(1, inline["threads"] - 1)  # a core left to the builder


@pytest.fixture
def files(tmp_path, monkeypatch):
    """The build's files in ``tmp_path`` and a fresh decision in this process."""
    p = {"dir": tmp_path, "stamp": tmp_path / "b.built", "failed": tmp_path / "b.failed",
         "lock": tmp_path / "convgrad-loops.lock", "log": tmp_path / "b.log"}
    monkeypatch.setattr(jit_build, "paths", lambda numba: p)
    monkeypatch.delenv("CONVGRAD_JIT_BUILD", raising=False)
    monkeypatch.setattr(jit_build, "_warned", [])
    started, watched = [], []
    monkeypatch.setattr(jit_build, "start_builder", lambda q, first=(): started.append(q) or "proc")
    monkeypatch.setattr(jit_build, "_watch", lambda q, proc: watched.append(proc))
    p["started"], p["watched"] = started, watched
    return p


def test_a_stamp_means_built(files):
    files["stamp"].write_text("{}")
    assert jit_build.loops_usable(numba) is True
    assert files["started"] == []


def test_no_stamp_starts_a_builder_and_runs_without_the_loops(files):
    assert jit_build.loops_usable(numba) is False
    assert len(files["started"]) == 1 and files["watched"] == ["proc"]


def test_a_failed_build_is_not_started_again_and_is_warned_once(files):
    files["failed"].write_text("Traceback ...")
    with pytest.warns(RuntimeWarning, match="b.failed"):
        assert jit_build.loops_usable(numba) is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jit_build.loops_usable(numba) is False
    assert files["started"] == []


def test_inline_compiles_here(files, monkeypatch):
    monkeypatch.setenv("CONVGRAD_JIT_BUILD", "inline")
    assert jit_build.loops_usable(numba) is True
    assert files["started"] == []


def test_an_unknown_mode_names_the_variable(files, monkeypatch):
    monkeypatch.setenv("CONVGRAD_JIT_BUILD", "later")
    with pytest.raises(ValueError, match=r"CONVGRAD_JIT_BUILD='later'.*background, inline"):
        jit_build.loops_usable(numba)


def test_the_decision_is_made_once_per_process(monkeypatch):
    assert jit._build_rule[0] == (jit_build.loops_usable, jit_build.note_requests)
    calls = []
    monkeypatch.setattr(jit, "_usable", [])
    monkeypatch.setattr(jit, "_build_rule", [(lambda nb: calls.append(1) or False,
                                              lambda kernels: None)])
    assert jit.enabled() is False and jit.enabled() is False
    assert calls == [1]
    jit.compile_here()  # what the builder and ensure_built do
    assert jit.enabled() is True


def _exercises(monkeypatch, *runs):
    monkeypatch.setattr(jit, "_loaders", [])
    monkeypatch.setattr(jit, "_exercises", list(runs))
    monkeypatch.setattr(jit, "_usable", [])
    monkeypatch.setattr(jit_build, "_import_all", lambda: None)


def test_build_runs_every_exercise_then_writes_the_stamp(tmp_path, monkeypatch):
    ran = []

    def a():
        ran.append("a")

    def b():
        ran.append("b")

    a.kernel, b.kernel = "a", "b"
    _exercises(monkeypatch, a, b)
    stamp = tmp_path / "convgrad-loops-x.built"
    assert jit_build.build(stamp) is True
    assert ran == ["a", "b"]
    assert json.loads(stamp.read_text())["exercises"] == 2
    assert jit.enabled() is True  # the builder runs what it built
    assert jit_build.build(stamp) is True and ran == ["a", "b"]  # built: nothing again


def test_compiling_on_this_thread_leaves_the_warm_up_thread_nothing(monkeypatch):
    # the test suite's first step (conftest): Numba's compiler swaps the process's warning
    # filters, so it must not compile beside a test's pytest.warns on another thread
    threads = []

    def a():
        threads.append(threading.current_thread())

    a.kernel = "a"
    _exercises(monkeypatch, a)
    for name in ("_exercised", "_requested", "_worker", "_failed"):
        monkeypatch.setattr(jit, name, [])
    monkeypatch.setattr(jit, "_loaded", [True])
    jit_build.compile_on_this_thread()
    assert threads == [threading.current_thread()]
    jit.warm_up("a")
    jit.wait_for_warm_up(10)
    assert threads == [threading.current_thread()]  # not run again, on no other thread


def test_a_kernel_is_still_loading_until_its_exercise_ends(monkeypatch):
    go, started = threading.Event(), threading.Event()

    def slow():
        started.set()
        go.wait(10)

    slow.kernel = "mod.slow"
    _exercises(monkeypatch, slow)
    for name in ("_exercised", "_finished", "_requested", "_worker", "_failed", "_waits"):
        monkeypatch.setattr(jit, name, [])
    monkeypatch.setattr(jit, "_loaded", [True])
    monkeypatch.setattr(jit, "_usable", [True])
    assert not jit.still_loading("mod")  # not requested: no thread loads it
    jit.warm_up("mod.slow")
    assert started.wait(10)
    assert jit.still_loading("mod.slow") and jit.still_loading("mod")
    assert not jit.still_loading("other")
    jit.wait_for_loops(True)  # reproducible runs wait for the loops instead
    assert not jit.still_loading("mod.slow")
    jit.wait_for_loops(False)
    go.set()
    jit.wait_for_warm_up(10)
    assert not jit.still_loading("mod.slow")


def test_a_failing_build_leaves_its_traceback_and_no_stamp(tmp_path, monkeypatch):
    def broken():
        raise ZeroDivisionError("loop does not compile")

    _exercises(monkeypatch, broken)
    stamp = tmp_path / "convgrad-loops-x.built"
    with pytest.raises(ZeroDivisionError):
        jit_build.build(stamp)
    assert not stamp.exists()
    assert "loop does not compile" in (tmp_path / "convgrad-loops-x.failed").read_text()


def test_one_builder_at_a_time(tmp_path, monkeypatch):
    ran = []
    _exercises(monkeypatch, lambda: ran.append("a"))
    held = jit_build._locked(tmp_path / "convgrad-loops.lock")
    try:  # flock locks are per open file: a second open in this process is refused too
        assert jit_build.build(tmp_path / "convgrad-loops-x.built") is False
    finally:
        held.close()
    assert ran == [] and not (tmp_path / "convgrad-loops-x.built").exists()


def test_the_builders_program_runs_without_the_optional_libraries(tmp_path):
    """The builder's own program, in a process where dask cannot be imported (the demo's
    install has none): it imports every module that registers loops, and no other."""
    done = subprocess.run([sys.executable, "-c", jit_build.BUILDER], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and "usage" in done.stderr
    code = ("import sys; sys.modules['dask'] = None; sys.modules['dask.array'] = None\n"
            "from convgrad.ops import jit, jit_build\n"
            "jit_build._import_all()\n"
            "print(sorted({r.__module__ for r in jit._exercises}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    modules = eval(out.stdout.strip().splitlines()[-1])
    assert {"convgrad.ops.eltwise", "convgrad.ops.normalization", "convgrad.ops.update",
            "convgrad.ops.softmax", "convgrad.ops.dispatch"} <= set(modules)


def test_ensure_built_waits_for_the_builder_then_runs_the_loops(tmp_path, monkeypatch):
    p = {"dir": tmp_path, "stamp": tmp_path / "convgrad-loops-x.built",
         "failed": tmp_path / "convgrad-loops-x.failed", "lock": tmp_path / "convgrad-loops.lock",
         "log": tmp_path / "x.log"}
    monkeypatch.setattr(jit_build, "paths", lambda numba: p)
    monkeypatch.delenv("CONVGRAD_JIT_BUILD", raising=False)
    ran = []
    _exercises(monkeypatch, lambda: ran.append("a"))
    held = jit_build._locked(p["lock"])  # a builder at work ...

    def finish():
        time.sleep(0.5)
        p["stamp"].write_text("{}")  # ... which finishes
        held.close()

    t = threading.Thread(target=finish)
    t.start()
    took = jit_build.ensure_built()
    t.join()
    assert took >= 0.4 and ran == []  # waited, built nothing itself
    assert jit.enabled() is True


class _Builder:
    """A stand-in for the builder process: running until ``end``."""

    def __init__(self):
        self.ended = False

    def poll(self):
        return 0 if self.ended else None


@pytest.fixture
def watching(tmp_path, monkeypatch):
    """A process without the loops that asked for kernel ``k``, its switch recorded."""
    p = {"stamp": tmp_path / "b.built", "progress": tmp_path / "b.progress",
         "lock": tmp_path / "convgrad-loops.lock"}
    monkeypatch.setattr(jit_build, "POLL_S", 0.01)
    monkeypatch.setattr(jit, "_requested", ["k"])
    run = lambda: None  # noqa: E731
    run.kernel = "k.part"
    monkeypatch.setattr(jit, "_exercises", [run])
    switched = []
    monkeypatch.setattr(jit, "loops_built", lambda: switched.append(True))
    monkeypatch.setattr(jit_build, "_watchers", [])
    monkeypatch.setattr(parallel, "_reserved", [0])
    p["switched"] = switched
    return p


def test_a_waiting_process_leaves_the_builder_a_core_and_switches_when_its_kernels_are_built(
        watching):
    proc = _Builder()
    jit_build._watch(watching, proc)
    try:
        assert parallel._reserved == [1]
        jit_build._write(watching["progress"], json.dumps(["other"]))
        time.sleep(0.1)
        assert watching["switched"] == [] and parallel._reserved == [1]
        jit_build._write(watching["progress"], json.dumps(["other", "k.part"]))
        jit_build.wait_for_builder(5)
    finally:
        proc.ended = True
        jit_build.wait_for_builder(5)
    assert watching["switched"] == [True] and parallel._reserved == [0]
    assert json.loads(watching["progress"].with_suffix(".wanted").read_text()) == ["k"]


def test_a_builder_that_ends_without_a_stamp_leaves_the_process_as_it_was(watching):
    proc = _Builder()
    jit_build._watch(watching, proc)
    proc.ended = True
    jit_build.wait_for_builder(5)
    assert watching["switched"] == [] and parallel._reserved == [0]


def test_the_builder_builds_the_waiting_process_kernels_first(tmp_path, monkeypatch):
    ran = []

    def ex(kernel):
        def run():
            ran.append(kernel)
        run.kernel = kernel
        return run

    _exercises(monkeypatch, ex("a"), ex("b"), ex("c.x"), ex("c.y"))
    (tmp_path / "convgrad-loops-x.wanted").write_text(json.dumps(["c"]))
    assert jit_build.build(tmp_path / "convgrad-loops-x.built", first=("b",)) is True
    assert ran == ["b", "c.x", "c.y", "a"]
    assert json.loads((tmp_path / "convgrad-loops-x.progress").read_text()) == ran


def test_deterministic_algorithms_compile_here_rather_than_switch(files, monkeypatch):
    import convgrad as cg

    monkeypatch.setattr(jit_build, "_reproducible", [])
    cg.use_deterministic_algorithms(True)
    try:
        assert jit_build.loops_usable(numba) is True
        assert files["started"] == []
    finally:
        cg.use_deterministic_algorithms(False)
    assert jit_build.loops_usable(numba) is False and len(files["started"]) == 1
