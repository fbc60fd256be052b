"""The background warm-up of Numba's loops (:func:`convgrad.ops.jit.warm_up`): layers ask
for the kernel modules they call as they are built, and only those modules' exercises run
on the thread (a module no one asked for loads on its first call); a later layer's request
starts the thread again.  Each scenario runs in a fresh interpreter, whose warm-up state
is its own."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from convgrad.ops import jit

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="the warm-up loads Numba's loops")


def _run(code: str) -> dict:
    program = textwrap.dedent("""
        from convgrad.ops import jit

        def ran():
            jit.wait_for_warm_up(120)
            return sorted({r.__module__.rsplit(".", 1)[-1] for r in jit._exercised})
    """) + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def test_layers_warm_up_the_modules_they_call_and_no_others():
    got = _run("""
        import convgrad.nn as nn
        from convgrad.optim import SGD
        conv = nn.Conv2d(3, 8, 3)
        print("conv=" + ",".join(ran()))
        SGD(conv.parameters(), lr=0.1)  # the thread ended: a new one serves the request
        print("optimiser=" + ",".join(ran()))
        nn.BatchNorm2d(8), nn.CrossEntropyLoss()
        print("more=" + ",".join(ran()))
        print("requested=" + ",".join(jit._requested))
    """)
    conv = set(got["conv"].split(","))
    assert {"eltwise", "reduction", "copy_loops"} <= conv
    assert not conv & {"update", "normalization", "softmax", "gather", "group_norm"}
    assert set(got["optimiser"].split(",")) == conv | {"update"}
    assert set(got["more"].split(",")) == conv | {"update", "normalization", "softmax",
                                                   "gather"}
    assert got["requested"].split(",")[:3] == ["eltwise", "reduction", "copy_loops"]
    assert "direct" not in got["requested"].split(",")  # a depthwise layer would ask


def test_a_depthwise_convolution_warms_the_direct_loops():
    got = _run("""
        import convgrad.nn as nn
        nn.Conv2d(4, 4, 5, groups=4)
        print("ran=" + ",".join(ran()))
    """)
    assert "direct" in got["ran"].split(",")


def test_an_unrequested_module_loads_on_its_first_call():
    # nothing warmed the group norm loops: the first call loads them, with the same result
    got = _run("""
        import numpy as np
        import convgrad as cg
        import convgrad.nn as nn
        import convgrad.functional as F
        nn.Conv2d(8, 8, 3)
        print("before=" + ",".join(ran()))
        a = np.random.default_rng(0).standard_normal((2, 8, 16, 16), dtype=np.float32)
        with cg.profile() as prof:
            y = F.group_norm(cg.tensor(a), 4)
        print("algorithm=" + prof.events[-1].algorithm)
        g = a.astype(np.float64).reshape(2, 4, -1)  # the float64 oracle
        ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
        print("error=" + repr(float(np.abs(y.numpy() - ref.reshape(a.shape)).max())))
    """)
    assert "group_norm" not in got["before"].split(",")
    assert got["algorithm"] == "numba"
    assert float(got["error"]) < 1e-6  # float32 outputs of magnitude <= 4


def test_a_failing_exercise_stops_the_warm_up_and_the_kernel_call_meets_it():
    got = _run("""
        def boom():
            raise RuntimeError("no compiler")
        boom.__module__ = "convgrad.ops.broken"
        jit.exercise(boom)
        jit.warm_up("broken", "eltwise")
        jit.wait_for_warm_up(120)
        print("failed=" + str(bool(jit._failed)))
        jit.warm_up("update")  # not started again
        print("worker=" + str(len(jit._worker)))
        print("ran=" + ",".join(r.__module__ for r in jit._exercised))
    """)
    assert got["failed"] == "True"
    assert got["worker"] == "0"
    assert got["ran"] == "convgrad.ops.broken"  # the thread stopped at the failure
