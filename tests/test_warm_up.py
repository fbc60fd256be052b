"""The background warm-up of Numba's loops (:func:`convgrad.ops.jit.warm_up`): layers ask
for the kernel modules they call as they are built, and only those modules' exercises run
on the thread (a module no one asked for loads on its first call); a later layer's request
starts the thread again.  Each scenario runs in a fresh interpreter, whose warm-up state
is its own."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from convgrad.ops import jit

from .test_accuracy import assert_as_accurate

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="the warm-up loads Numba's loops")


def _run(code: str) -> dict:
    program = textwrap.dedent("""
        from convgrad.ops import jit

        def ran():
            jit.wait_for_warm_up(120)
            return sorted({r.kernel for r in jit._exercised})
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
    assert not conv & {"update.sgd", "update.adam", "normalization", "softmax", "gather",
                       "group_norm.plain", "group_norm.relu"}
    # SGD loads its own rule's loops, not Adam's
    assert set(got["optimiser"].split(",")) == conv | {"update.sgd"}
    assert set(got["more"].split(",")) == conv | {"update.sgd", "normalization", "softmax",
                                                   "gather"}
    # in the order a first step meets them: Winograd's forward before the sums
    assert got["requested"].split(",")[:5] == ["eltwise", "dispatch.winograd", "reduction",
                                               "copy_loops", "dispatch.winograd_weight"]
    assert "direct" not in got["requested"].split(",")  # a depthwise layer would ask


def test_a_depthwise_convolution_warms_the_direct_loops():
    got = _run("""
        import convgrad.nn as nn
        nn.Conv2d(4, 4, 5, groups=4)
        print("ran=" + ",".join(ran()))
    """)
    assert "direct" in got["ran"].split(",")


def test_group_norm_loads_its_relu_signature_only_where_a_sequential_fuses_the_pair():
    """A group norm layer asks for its plain passes (SiLU shares their machine code); the
    (leaky) ReLU's byte-mask signature is asked for only by a ``Sequential`` holding the
    pair (as it is appended), not by a GroupNorm + SiLU block."""
    got = _run("""
        import convgrad.nn as nn
        nn.Sequential(nn.GroupNorm(2, 4), nn.SiLU(), nn.InstanceNorm2d(4))
        print("silu=" + ",".join(ran()))
        nn.Sequential(nn.InstanceNorm2d(4)).append(nn.LeakyReLU(0.2))
        print("relu=" + ",".join(ran()))
    """)
    assert "group_norm.plain" in got["silu"].split(",")
    assert "group_norm.relu" not in got["silu"].split(",")
    assert "group_norm.relu" in got["relu"].split(",")


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
        a = 3 + 2 * np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        with cg.profile() as prof:
            y = F.group_norm(cg.tensor(a), 4)
        print("algorithm=" + prof.events[-1].algorithm)
        print("y=" + ",".join(repr(float(v)) for v in y.numpy().ravel()))
        print("x=" + ",".join(repr(float(v)) for v in a.ravel()))
    """)
    assert "group_norm" not in got["before"].split(",")
    assert got["algorithm"] == "numba"
    # the oracle: torch's group norm in float64, convgrad within twice its float32 error
    torch = pytest.importorskip("torch")
    x = np.array(got["x"].split(","), np.float32).reshape(2, 8, 16, 16)
    y = np.array(got["y"].split(","), np.float32).reshape(2, 8, 16, 16)
    x = torch.from_numpy(x).contiguous(memory_format=torch.channels_last)  # as convgrad's
    ref, t32 = (torch.nn.functional.group_norm(x.to(d), 4).double().numpy()
                for d in (torch.float64, torch.float32))
    assert_as_accurate("group norm loaded on its first call", y, t32, ref)


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
