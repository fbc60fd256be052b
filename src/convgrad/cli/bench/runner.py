"""Interleaved timing, medians, the agreement check, the matmul ceiling, the environment.

One pass of one workload (:func:`run_pass`): each implementation in turn is
prepared (inputs copied, functions jitted) outside the timed region and at once run
untimed (its first step; its results are kept for the agreement check; convgrad's run
is wrapped in ``convgrad.profile()`` to record which algorithm each kernel used) and
warmed up; then all are timed round-robin: convgrad, torch, jax, convgrad, torch, jax,
... so that a slow period of a shared machine hits every implementation alike.  The
reported time is the median.  A network workload's pass is a training step: each run continues
training from the last, and the first (from the shared initial weights) is the one
checked, key by key as :func:`.networks.check_step` says.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...ops import cpu, heap
from .errors import max_rel_error
from .peers import Impl, Prepared
from .workloads import Inputs, Workload

__all__ = ["TOLERANCE", "REFERENCE_ORDER", "max_rel_error", "check_agreement", "PassResult",
           "run_pass", "matmul_peak", "collect_environment"]

#: convgrad agrees with a peer when max|ours - theirs| / max|theirs| <= TOLERANCE (float32)
TOLERANCE = 1e-3
#: the agreement reference: the first of these that ran the pass (PyTorch is the oracle)
REFERENCE_ORDER = ("torch", "torch_cl", "jax", "mlx")
#: short names of the convgrad kernels, for the table
KERNEL_SHORT = {"conv_forward": "fwd", "conv_input_grad": "dx", "conv_weight_grad": "dw",
                "conv_bias_grad": "db"}


# ----------------------------------------------------------------------------- agreement


def _torch_spread(first: dict) -> dict | None:
    """Per gradient key, torch NCHW against torch channels-last (relative 2-norm): how
    far two float32 runs of the same step land apart (see ``networks.check_step``)."""
    a, b = first.get("torch"), first.get("torch_cl")
    if not a or not b:
        return None
    from .errors import rel_l2_error

    return {k: rel_l2_error(b[k], a[k]) for k in a
            if k.startswith("grad/") and a.get(k) is not None and b.get(k) is not None}


def check_agreement(ours: dict, ref: dict,
                    tol: float = TOLERANCE) -> tuple[bool, dict[str, float]]:
    """Compare every array of two results; a key missing on either side is a mismatch.

    Returns (all within ``tol``, {key: relative max-norm error}).
    """
    errors = {}
    for k in sorted(set(ours) | set(ref)):
        errors[k] = max_rel_error(ours[k], ref[k]) if k in ours and k in ref else math.inf
    return bool(errors) and all(e <= tol for e in errors.values()), errors


# ----------------------------------------------------------------------------- one pass


@dataclass
class PassResult:
    workload: Workload
    pass_: str
    times: dict[str, list[float]] = field(default_factory=dict)  # seconds, per implementation
    skipped: dict[str, str] = field(default_factory=dict)  # implementation -> why not run
    errors: dict[str, str] = field(default_factory=dict)  # implementation -> what failed
    reference: str | None = None  # the peer convgrad's results were checked against
    # peer -> {agree, max_rel_err}; network steps add per-key "tolerance" and "measure"
    checks: dict[str, dict] = field(default_factory=dict)
    algorithms: dict[str, list[str]] = field(default_factory=dict)  # convgrad kernel -> algos
    kernel_calls: dict[str, int] = field(default_factory=dict)
    # seconds of the very first run (plans, caches, compilation included), per implementation
    first: dict[str, float] = field(default_factory=dict)
    # a network step's convolutions, from one profiled warm step of convgrad: their FLOPs
    # and the fastest rate (FLOP/s) any of them ran at (see :func:`conv_bound_ms`)
    conv_flops: int = 0
    conv_best_rate: float = 0.0

    def median_ms(self, name: str) -> float | None:
        t = self.times.get(name)
        return statistics.median(t) * 1e3 if t else None

    def ratio(self, peer: str) -> float | None:
        ours, theirs = self.median_ms("convgrad"), self.median_ms(peer)
        return ours / theirs if ours and theirs else None

    def gflops(self, name: str) -> float | None:
        flops = self.workload.fwd_flops()
        ms = self.median_ms(name)
        return flops / (ms * 1e-3) / 1e9 if self.pass_ == "fwd" and flops and ms else None

    @property
    def agree(self) -> bool | None:
        """convgrad vs the reference peer; None when no reference ran."""
        if self.reference is None:
            return None
        return bool(self.checks[self.reference]["agree"])

    @property
    def failed(self) -> bool:
        return self.agree is False or "convgrad" in self.errors

    def algorithm_text(self) -> str:
        return " ".join(f"{KERNEL_SHORT.get(k, k)}:{','.join(v) or '?'}"
                        for k, v in self.algorithms.items() if k != "conv_bias_grad")


def _error_text(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) < 300 else text[:297] + "..."


def _timed(fn: Prepared) -> float:
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        t = time.perf_counter() - t0
    finally:
        gc.enable()
    del out
    return t


def run_pass(w: Workload, pass_: str, impls: Sequence[Impl], inp: Inputs, runs: int = 5,
             warmup: int = 1, tick: Callable[[], None] | None = None,
             tol: float = TOLERANCE) -> PassResult:
    """Prepare, check and time one pass for every implementation, interleaved.

    ``impls`` must hold an implementation named ``convgrad``; ``tick`` is called after
    each timed round (for a progress bar).
    """
    from ...ops.profiler import profile

    res = PassResult(w, pass_)
    prepared: dict[str, Prepared] = {}
    # each implementation is prepared right before its untimed first run (results kept
    # for the agreement check), then warmed up: a peer's preparation must not run into
    # another's first step (torch.compile's starts compile workers that kept both cores
    # busy: convgrad's first N3 step measured 344 ms after it, 277 ms without).  The
    # heap's free memory goes back to the system before each first run: every first step
    # page-faults its own arrays in, none inherits the memory an earlier one freed (the
    # first to run paid for the others: N3's first step, convgrad then torch, 15,100 and
    # 1,600 faults, 267 and 201 ms; torch first, 29,400 and 1,200, 221 and 224 ms)
    first: dict[str, dict] = {}
    for impl in impls:
        reason = impl.unsupported(w, pass_)
        if reason:
            res.skipped[impl.name] = reason
            continue
        name = impl.name
        try:
            fn = prepared[name] = impl.prepare(w, pass_, inp)
        except Exception as e:  # a peer that cannot express the pass must not stop the bench
            res.errors[name] = f"prepare failed: {_error_text(e)}"
            continue
        try:
            heap.release_free()
            if name == "convgrad":
                with profile() as prof:
                    t0 = time.perf_counter()
                    out = fn()
                    res.first[name] = time.perf_counter() - t0
                algos: dict[str, set] = {}
                for ev in prof.events:
                    algos.setdefault(ev.name, set()).add(ev.algorithm or "")
                    res.kernel_calls[ev.name] = res.kernel_calls.get(ev.name, 0) + 1
                res.algorithms = {k: sorted(a for a in v if a) for k, v in algos.items()}
            else:
                t0 = time.perf_counter()
                out = fn()
                res.first[name] = time.perf_counter() - t0
            first[name] = fn.to_numpy(out)
            del out
            for _ in range(max(0, warmup - 1)):
                fn()
            if name == "convgrad" and w.is_network:
                with profile() as prof:
                    fn()
                _conv_work(res, prof.events)
        except Exception as e:
            res.errors[name] = f"run failed: {_error_text(e)}"
            del prepared[name]

    if "convgrad" in first:
        spread = _torch_spread(first) if w.is_network else None
        for peer, theirs in first.items():
            if peer == "convgrad":
                continue
            if w.is_network:  # loss, gradients and the optimiser's update, per key
                from .networks import check_step

                res.checks[peer] = check_step(w, inp, first["convgrad"], theirs, tol, spread)
                continue
            ok, errs = check_agreement(first["convgrad"], theirs, tol)
            res.checks[peer] = {"agree": ok, "max_rel_err": errs}
        ran = [p for p in REFERENCE_ORDER if p in res.checks]
        others = [p for p in res.checks if p not in REFERENCE_ORDER]
        res.reference = (ran or others or [None])[0]
    first.clear()

    for name in prepared:
        res.times[name] = []
    for _ in range(runs):
        for name, fn in list(prepared.items()):
            try:
                res.times[name].append(_timed(fn))
            except Exception as e:
                res.errors[name] = f"timed run failed: {_error_text(e)}"
                del prepared[name]
                del res.times[name]
        if tick is not None:
            tick()
    return res


#: a convolution counts towards the fastest rate only with this much work (a short one's
#: timer resolution inflates its rate)
BOUND_MIN_FLOPS = 10**8
CONV_PASSES = ("conv_forward", "conv_input_grad", "conv_weight_grad")


def _conv_work(res: PassResult, events: Sequence[Any]) -> None:
    """A warm step's convolution FLOPs (the three passes; a bias gradient is a sum) and
    the fastest rate among its large convolutions."""
    conv = [e for e in events if e.name in CONV_PASSES and e.flops]
    res.conv_flops = sum(e.flops for e in conv)
    res.conv_best_rate = max((e.flops / e.seconds for e in conv
                              if e.flops >= BOUND_MIN_FLOPS and e.seconds > 0), default=0.0)


def conv_bound_ms(res: PassResult, ceiling_gflops: float) -> float | None:
    """The shortest a step can take with its convolutions as they are: their FLOPs at the
    faster of ``ceiling_gflops`` (the machine's matmul) and the fastest rate any of its
    own convolutions reached, with everything else free.  None without a profiled step."""
    rate = max(ceiling_gflops * 1e9, res.conv_best_rate)
    return res.conv_flops / rate * 1e3 if res.conv_flops and rate > 0 else None


# ----------------------------------------------------------------------------- machine


def matmul_peak(n: int = 2048, runs: int = 5) -> dict:
    """NumPy float32 ``(n, n) @ (n, n)`` GFLOP/s: the practical ceiling of this machine."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.empty((n, n), dtype=np.float32)
    np.matmul(a, b, out=c)  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        np.matmul(a, b, out=c)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    return {"n": n, "runs": runs, "median_ms": med * 1e3, "gflops": 2.0 * n ** 3 / med / 1e9}


def _dist_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


ENV_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
            "MKL_NUM_THREADS", "XLA_FLAGS")


def collect_environment(versions: dict[str, str], impls: Sequence[Impl] = ()) -> dict:
    """Versions, BLAS thread pools (as limited for the run), CPU, cores, relevant env vars."""
    import sys

    pools = []
    try:
        from threadpoolctl import threadpool_info

        for d in threadpool_info():
            pools.append({k: d.get(k) for k in ("user_api", "internal_api", "prefix", "version",
                                                 "architecture", "num_threads")})
    except ImportError:
        pools.append({"error": "threadpoolctl is not installed"})
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    threads: dict = {}
    for impl in impls:
        try:
            threads.update(impl.thread_info())
        except Exception as e:  # informational only
            threads[impl.name] = _error_text(e)
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": {"numpy": np.__version__, **versions,
                     "pytorch_msssim": _dist_version("pytorch-msssim"),
                     "threadpoolctl": _dist_version("threadpoolctl")},
        "threadpool_info": pools,
        "threads": threads,
        "cpu_model": cpu.model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "env": {k: os.environ.get(k) for k in ENV_VARS},
    }
