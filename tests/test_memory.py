"""Oracle: docs/API.md's memory bound (inputs + output + workspace + slack), max RSS, tracemalloc.

Each large case runs one kernel in a fresh subprocess with glibc told to return freed
blocks at once (``MALLOC_MMAP_THRESHOLD_=65536 MALLOC_TRIM_THRESHOLD_=0``).  After a
warm-up (a small problem, then the same call once: BLAS threads, JIT compiles) the peak
RSS is reset (``/proc/self/clear_refs``) and the call runs again.  It reports

* the peak RSS after the call (``VmHWM``) minus the RSS before the inputs were made:
  must be <= inputs + output + workspace limit + ``RSS_SLACK`` (so what the first call
  left alive counts too, and must itself stay under ``RSS_SLACK``);
* the peak RSS after minus before the call, by ``VmHWM`` and by ``ru_maxrss`` (the same
  kernel counter, except that a child's ``ru_maxrss`` starts at its parent's RSS, so it
  is used only when no inherited peak hides the call): <= output + workspace +
  ``RSS_SLACK``;
* the tracemalloc peak of the call (NumPy reports its buffers to tracemalloc):
  <= output + workspace + ``TRACED_SLACK``.

The cases are chosen so that a naive im2col patch matrix would need several GiB.
Smaller in-process cases check that a smaller ``cg.workspace_limit`` lowers the peak,
and that a request whose output cannot be allocated fails before any work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from math import prod
from pathlib import Path

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad.ops import (
    ConvSpec,
    conv_bias_grad,
    conv_forward,
    conv_input_grad,
    conv_weight_grad,
)

MiB = 2**20
RSS_SLACK = 32 * MiB      # BLAS buffers, allocator rounding, interpreter objects
TRACED_SLACK = 2 * MiB    # small per-chunk views and index arrays
SRC = str(Path(__file__).resolve().parents[1] / "src")

# name: (x shape, w shape, padding); float32, stride 1, "same" padding
LARGE = {
    "2d": ((1, 8, 1024, 1024), (8, 8, 9, 9), 4),
    "3d": ((1, 8, 64, 64, 64), (8, 8, 7, 7, 7), 3),
}

PROBE = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
import convgrad as cg
from convgrad.ops import ConvSpec, conv_forward, conv_input_grad, conv_weight_grad

def rss_now():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

def max_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux

def hwm():  # the peak RSS of this address space (what clear_refs resets)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM"))

kernel, x_shape, w_shape, pad = sys.argv[1], *map(json.loads, sys.argv[2:5])
x_shape, w_shape = tuple(x_shape), tuple(w_shape)
nd = len(x_shape) - 2
spec = ConvSpec(stride=(1,) * nd, padding=((pad, pad),) * nd, kernel_dilation=(1,) * nd,
                input_dilation=(1,) * nd)
y_shape = spec.output_shape(x_shape, w_shape)
small_x = np.ones((1, w_shape[1]) + (9,) * nd, np.float32)
small_w = np.ones(w_shape[:2] + (3,) * nd, np.float32)
small_y = conv_forward(small_x, small_w, spec)
conv_input_grad(small_y, small_w, small_x.shape, spec)
conv_weight_grad(small_x, small_y, small_w.shape, spec)
del small_x, small_w, small_y
from convgrad.ops import direct, dispatch, prefer
from convgrad.ops.onednn import cache_info as onednn_cache_info
direct.HAVE_NUMBA  # Numba loads on the first few-channel call: before the baseline
# A pass whose oneDNN arena would exceed the workspace even for one sample runs on the
# NumPy engine: load the engine's compiled loops for this kernel size before the
# baseline too (on AVX2 the 2-D case's gradients fall back; loading the weight-gradient
# loops then held ~60 MiB of compiled code inside the measured peak).
with prefer("numpy"), cg.profile() as warmed:
    mid_x = np.ones((1, w_shape[1]) + (16,) * nd, np.float32)
    mid_w = np.ones(w_shape, np.float32)
    mid_y = conv_forward(mid_x, mid_w, spec)
    conv_input_grad(mid_y, mid_w, mid_x.shape, spec)
    conv_weight_grad(mid_x, mid_y, mid_w.shape, spec)
del mid_x, mid_w, mid_y
base = rss_now()
rng = np.random.default_rng(0)
def normal(shape):  # float32 straight away: no float64 temporary
    return rng.standard_normal(shape, dtype=np.float32)
if kernel == "forward":
    a, b = normal(x_shape), normal(w_shape)
    call = lambda: conv_forward(a, b, spec)
elif kernel == "input_grad":
    a, b = normal(y_shape), normal(w_shape)
    call = lambda: conv_input_grad(a, b, x_shape, spec)
else:
    a, b = normal(x_shape), normal(y_shape)
    call = lambda: conv_weight_grad(a, b, w_shape, spec)
rss_inputs = rss_now()
warm = call()  # the same call once: JIT compiles and first-touch costs happen here
del warm
retained = rss_now() - rss_inputs  # what the first call left behind (compiled code, caches)
try:  # reset the peak, so that the warm-up cannot mask the call's
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    peak_reset = True
except OSError:
    peak_reset = False
before_max, before_now, before_hwm = max_rss(), rss_now(), hwm()
tracemalloc.start()
t0 = time.perf_counter()
with cg.profile() as measured:
    out = call()
seconds = time.perf_counter() - t0
traced_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
after_max, after_hwm = max_rss(), hwm()
print(json.dumps(dict(inputs=a.nbytes + b.nbytes, output=out.nbytes, base=base,
                      before_max=before_max, before_now=before_now, after_max=after_max,
                      traced_peak=traced_peak, seconds=seconds,
                      workspace=cg.get_workspace_limit(), finite=bool(np.isfinite(out).all()),
                      peak_reset=peak_reset, retained=retained, before_hwm=before_hwm,
                      after_hwm=after_hwm,
                      algorithm=[e.algorithm for e in measured.of("conv")][0],
                      arena=onednn_cache_info()["arena_bytes"],
                      warmed=sorted({e.algorithm for e in warmed.of("conv")}))))
"""


def run_probe(kernel: str, x_shape, w_shape, pad: int) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0",
               PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, kernel, json.dumps(x_shape), json.dumps(w_shape),
         json.dumps(pad)],
        env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def naive_im2col_bytes(x_shape, w_shape) -> int:
    """The patch matrix of a one-shot im2col (C_in * taps * output pixels, float32)."""
    return x_shape[1] * prod(w_shape[2:]) * prod(x_shape[2:]) * 4


@pytest.mark.parametrize("kernel", ["forward", "input_grad", "weight_grad"])
@pytest.mark.parametrize("case", sorted(LARGE))
def test_large_case_stays_within_the_bound(case, kernel):
    x_shape, w_shape, pad = LARGE[case]
    assert naive_im2col_bytes(x_shape, w_shape) > 2.5 * 2**30  # several GiB if done naively
    r = run_probe(kernel, x_shape, w_shape, pad)
    assert r["finite"]
    ws = r["workspace"]
    assert ws == 64 * MiB  # the default
    if not r["peak_reset"]:
        pytest.skip("cannot reset the peak RSS (/proc/self/clear_refs) after the warm-up")
    # ru_maxrss of a child starts at its parent's RSS (exec keeps the old address space's
    # peak), so it only measures the call when nothing larger came before
    rusage_valid = r["before_max"] <= r["before_now"] + 8 * MiB
    peak = r["after_hwm"] - r["base"]
    bound = r["inputs"] + r["output"] + ws + RSS_SLACK
    report = (f"{case} {kernel}: peak RSS {peak / MiB:.1f} MiB (bound {bound / MiB:.1f}: "
              f"inputs {r['inputs'] / MiB:.1f} + output {r['output'] / MiB:.1f} + workspace "
              f"{ws / MiB:.0f} + slack {RSS_SLACK / MiB:.0f}); call: +"
              f"{(r['after_hwm'] - r['before_hwm']) / MiB:.1f} MiB VmHWM, +"
              f"{(r['after_max'] - r['before_max']) / MiB:.1f} MiB ru_maxrss"
              f"{'' if rusage_valid else ' (inherited, not used)'}; traced peak "
              f"{r['traced_peak'] / MiB:.1f} MiB; {r['seconds']:.2f} s; algorithm "
              f"{r['algorithm']}, oneDNN arena {r['arena'] / MiB:.1f} MiB, first call retained "
              f"{r['retained'] / MiB:.1f} MiB")
    print(report)
    assert r["before_hwm"] <= r["before_now"] + 8 * MiB, report  # the reset worked
    # the NumPy engine's loops were loaded before the baseline (oneDNN's are not compiled
    # code that the call loads: its kernels are generated into the arena's plan)
    assert r["algorithm"].startswith("onednn") or r["algorithm"] in r["warmed"], r
    # a first call keeps nothing big alive but oneDNN's per-thread arena (reordered
    # operands and scratchpad), which is bounded by the workspace limit
    assert r["retained"] <= RSS_SLACK + ws, report
    assert peak <= bound, report
    assert r["after_hwm"] - r["before_hwm"] <= r["output"] + ws + RSS_SLACK, report
    if rusage_valid:
        assert r["after_max"] - r["before_max"] <= r["output"] + ws + RSS_SLACK, report
    assert r["traced_peak"] <= r["output"] + ws + TRACED_SLACK, report


# ------------------------------------------------------------------ the configurable limit
def _traced_extra(fn) -> tuple[int, int]:
    """(tracemalloc peak of fn() minus the size of its result, result nbytes)."""
    tracemalloc.start()
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - out.nbytes, out.nbytes


MEDIUM = [  # (x shape, w shape, spec keywords): ~50 MiB naive patch matrices
    ((1, 16, 128, 128), (16, 16, 5, 5), dict(padding=((2, 2), (2, 2)))),
    ((1, 8, 24, 24, 24), (8, 8, 3, 3, 3), dict(padding=((1, 1),) * 3)),
    ((1, 8, 48, 48), (8, 4, 4, 4), dict(padding=((3, 3), (3, 3)), input_dilation=(2, 2),
                                        groups=2, flip=True)),  # a transposed convolution
    ((1, 8, 320), (16, 8, 9), dict(stride=(2,), padding=((4, 4),), kernel_dilation=(3,))),
    ((4, 16, 64, 64), (16, 16, 5, 5), dict(padding=((2, 2), (2, 2)))),  # a batch
]
KERNELS = ("forward", "input_grad", "weight_grad")


def _medium(i: int):
    x_shape, w_shape, kw = MEDIUM[i]
    nd = len(x_shape) - 2
    spec = ConvSpec(**{"stride": (1,) * nd, "kernel_dilation": (1,) * nd,
                       "input_dilation": (1,) * nd, **kw})
    rng = np.random.default_rng(i)
    x = rng.standard_normal(x_shape, dtype=np.float32)
    w = rng.standard_normal(w_shape, dtype=np.float32)
    gy = rng.standard_normal(spec.output_shape(x_shape, w_shape), dtype=np.float32)
    return {"forward": lambda: conv_forward(x, w, spec),
            "input_grad": lambda: conv_input_grad(gy, w, x.shape, spec),
            "weight_grad": lambda: conv_weight_grad(x, gy, w.shape, spec)}


def _check_limit(call, limit: int, what: str) -> None:
    want = call()
    with cg.workspace_limit(limit):
        assert cg.get_workspace_limit() == limit
        call()  # the algorithm for this limit may differ: compile its loops before tracing
        extra, _ = _traced_extra(call)
        assert extra <= limit + TRACED_SLACK // 4, (
            f"{what}: {extra / MiB:.2f} MiB of scratch with a {limit / MiB:.0f} MiB limit")
        np.testing.assert_allclose(call(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    assert cg.get_workspace_limit() == 64 * MiB  # the context manager restores it


@pytest.mark.parametrize("limit", [MiB, 4 * MiB])
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("i", range(len(MEDIUM)))
def test_smaller_workspace_limit_lowers_the_peak(i, kernel, limit):
    _check_limit(_medium(i)[kernel], limit, f"case {i} {kernel}")


def test_batched_weight_gradient_scratch():
    _check_limit(_medium(len(MEDIUM) - 1)["weight_grad"], MiB, "batched weight_grad")


def test_workspace_limit_arguments():
    with pytest.raises(TypeError, match="nbytes"):
        cg.set_workspace_limit(2.5e6)
    with pytest.raises(ValueError, match="nbytes"):
        cg.set_workspace_limit(1024)
    with pytest.raises(ValueError), cg.workspace_limit(10):
        pass
    assert cg.get_workspace_limit() == 64 * MiB


def test_huge_input_dilation_runs_in_tiny_memory():
    """docs/API.md: input dilation is never materialised (10**6 on a tiny input)."""
    x = cg.tensor(np.arange(1.0, 4.0).reshape(1, 1, 3), requires_grad=True)
    w = cg.tensor(np.array([[[2.0, 5.0]]]), requires_grad=True)
    tracemalloc.start()
    t = time.perf_counter()
    try:
        y = F.conv_general(x, w, input_dilation=10**6, padding=((1, 1),))
        y.sum().backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t < 5
    # the output itself is 2*10**6 + 2 float64 (16 MB); scratch stays small
    assert y.shape == (1, 1, 2 * 10**6 + 2)
    assert peak <= 3 * y.data.nbytes + 4 * MiB, peak
    # y[p] = w0 * xd[p - 1] + w1 * xd[p] over the dilated, padded input
    nz = np.flatnonzero(y.data[0, 0])
    np.testing.assert_array_equal(nz, [0, 1, 10**6, 10**6 + 1, 2 * 10**6, 2 * 10**6 + 1])
    np.testing.assert_array_equal(y.data[0, 0, nz], [5, 2, 10, 4, 15, 6])
    np.testing.assert_array_equal(x.grad.data, [[[7.0, 7.0, 7.0]]])
    np.testing.assert_array_equal(w.grad.data, [[[6.0, 6.0]]])


# ------------------------------------------------------------- outputs that cannot exist
TOO_BIG = [
    ("conv_transpose1d", lambda: F.conv_transpose1d(
        np.ones((1, 1, 2**20), np.float32), np.ones((1, 1, 1), np.float32), stride=2**26)),
    ("conv_general", lambda: F.conv_general(
        np.ones((1, 1, 2**20), np.float32), np.ones((1, 1, 1), np.float32),
        input_dilation=2**26)),
    ("conv_general", lambda: F.conv_general(
        np.ones((4, 3, 5, 5), np.float32), np.ones((2**20, 3, 1, 1), np.float32),
        padding=2**20)),
    ("conv2d", lambda: F.conv2d(
        np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 1, 1), np.float32), padding=2**40)),
    ("conv3d", lambda: F.conv3d(
        np.ones((1, 1, 2, 2, 2), np.float32), np.ones((1, 1, 1, 1, 1), np.float32),
        padding=(2**21, 2**21, 2**21))),
]


@pytest.mark.parametrize("i", range(len(TOO_BIG)))
def test_output_that_cannot_be_allocated_fails_before_any_work(i):
    name, call = TOO_BIG[i]
    t = time.perf_counter()
    with pytest.raises((MemoryError, ValueError)) as info:
        call()
    assert time.perf_counter() - t < 2, "work started before the allocation failed"
    msg = str(info.value)
    assert "shape" in msg or "bytes" in msg or "TiB" in msg, msg


def test_bias_gradient_needs_no_scratch():
    gy = np.random.default_rng(0).standard_normal((16, 32, 128, 128), dtype=np.float32)
    for view in (gy, gy.transpose(0, 1, 3, 2), gy[:, :, ::2]):  # 32 MiB or 16 MiB
        extra, nbytes = _traced_extra(lambda v=view: conv_bias_grad(v))
        assert nbytes == 32 * 4
        assert extra <= TRACED_SLACK // 4, f"{extra / MiB:.2f} MiB of scratch"
