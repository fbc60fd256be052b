"""Peak memory of one pass (default: W1 forward + backward), convgrad against its peers.

    python -m convgrad.cli.bench.memory [--workload W1] [--pass fwd+bwd]
                                    [--impl convgrad,torch] [--quick] [--json FILE]

Each implementation runs in a fresh subprocess with ``MALLOC_MMAP_THRESHOLD_=65536
MALLOC_TRIM_THRESHOLD_=0`` (so glibc returns freed blocks at once and the resident
set follows live memory) and 2 threads.  The child imports the library, builds the
inputs, then records the resident set size as the baseline; the peak is the
highest resident set size (Linux ``VmHWM``, reset through ``/proc/self/clear_refs``)
above that baseline while the pass runs, results included.  "first" is the first
run (JIT compilation, thread pools and lazy allocations included); "steady" the
largest of the next three.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence

__all__ = ["main", "measure", "run_children", "format_report", "MALLOC_ENV"]

MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}
MIB = 1024 * 1024


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_above(fn: Callable[[], object]) -> tuple[int, str, object]:
    """Run ``fn``; return (peak RSS bytes above the RSS just before, method, result)."""
    gc.collect()
    base = _status_kib("VmRSS")
    if base is not None and _reset_peak():
        out = fn()
        hwm = _status_kib("VmHWM")
        return max(0, (hwm - base) * 1024), "VmHWM", out
    if base is not None:  # no clear_refs: poll the resident set from a thread
        peak = [base]
        done = threading.Event()

        def poll() -> None:
            while not done.is_set():
                v = _status_kib("VmRSS")
                if v is not None and v > peak[0]:
                    peak[0] = v
                time.sleep(0.0005)

        th = threading.Thread(target=poll, daemon=True)
        th.start()
        try:
            out = fn()
        finally:
            done.set()
            th.join()
        return max(0, (peak[0] - base) * 1024), "polled VmRSS", out
    import resource  # last resort: the lifetime peak (may include import-time peaks)

    scale = 1 if sys.platform == "darwin" else 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    out = fn()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    return max(0, after - before), "ru_maxrss (lifetime peak, approximate)", out


def measure(impl_name: str, workload_id: str, pass_: str, quick: bool) -> dict:
    """In this process: peak memory of one pass of one implementation (run in a child)."""
    from .inputs import make_inputs
    from .peers import make_impl, result_keys
    from .workloads import THREADS, select, tiny_requested

    w = select(workload_id)[0].shrunk(quick, tiny_requested())
    impl = make_impl(impl_name, THREADS)
    version = impl.load()
    reason = impl.unsupported(w, pass_)
    if reason:
        return {"impl": impl_name, "skipped": reason}
    with impl.threads(THREADS):
        inp = make_inputs(w)
        fn = impl.prepare(w, pass_, inp)
        del inp  # the implementation holds its own copies now
        gc.collect()
        baseline = (_status_kib("VmRSS") or 0) * 1024
        first, method, out = _peak_above(fn)
        arrays = fn.to_numpy(out)
        out_bytes = sum(arrays[k].nbytes for k in result_keys(w, pass_) if k in arrays)
        del out, arrays
        steady = 0
        for _ in range(3):
            gc.collect()
            peak, method, out = _peak_above(fn)
            del out
            steady = max(steady, peak)
    return {"impl": impl_name, "version": version, "workload": w.id,
            "shape": w.shape_text(), "pass": pass_, "baseline_rss_bytes": baseline,
            "first_bytes": first, "steady_bytes": steady, "result_bytes": out_bytes,
            "method": method}


def _child_env() -> dict:
    env = dict(os.environ, **MALLOC_ENV)
    # the package's parent folder first, so a source checkout works without installing
    here = os.path.abspath(__file__)  # <root>/convgrad/cli/bench/memory.py
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(here))))
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _run_child(impl: str, workload: str, pass_: str, quick: bool, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "convgrad.cli.bench.memory", "--child", impl,
           "--workload", workload, "--pass", pass_] + (["--quick"] if quick else [])
    try:
        p = subprocess.run(cmd, env=_child_env(), capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"impl": impl, "error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return {"impl": impl, "error": f"exit {p.returncode}: {' | '.join(tail)}"}
    return json.loads(lines[-1])


def run_children(impls: Sequence[str], workload: str = "W1", pass_: str = "fwd+bwd",
                 quick: bool = False, timeout: float = 600.0) -> list[dict]:
    """Measure each implementation in its own fresh subprocess (see the module docstring)."""
    return [_run_child(i, workload, pass_, quick, timeout) for i in impls]


def _mib(b: float | None) -> str:
    return "-" if b is None else f"{b / MIB:.1f}"


def format_report(rows: Sequence[dict], workload: str, pass_: str) -> str:
    ok = [r for r in rows if "steady_bytes" in r]
    ref = next((r for r in ok if r["impl"] == "torch"), None)
    shape = ok[0]["shape"] if ok else ""
    lines = [f"Peak memory, {workload} {pass_} ({shape}): resident set above the baseline "
             "after allocating inputs",
             "fresh process per implementation, "
             + " ".join(f"{k}={v}" for k, v in MALLOC_ENV.items()) + ", 2 threads", ""]
    head = f"{'impl':<10} {'first MiB':>10} {'steady MiB':>11} {'results MiB':>12} {'vs torch':>9}"
    lines += [head, "-" * len(head)]
    for r in rows:
        if "steady_bytes" not in r:
            lines.append(f"{r['impl']:<10} {r.get('skipped') or r.get('error')}")
            continue
        vs = (f"{r['steady_bytes'] / ref['steady_bytes']:.2f}"
              if ref and ref["steady_bytes"] else "-")
        lines.append(f"{r['impl']:<10} {_mib(r['first_bytes']):>10} "
                     f"{_mib(r['steady_bytes']):>11} {_mib(r['result_bytes']):>12} {vs:>9}")
    lines.append("-" * len(head))
    lines.append("first: first run (compilation, pools); steady: largest of the next 3; "
                 "results: output + gradients, held at the end of the pass")
    if ok:
        lines.append(f"method: {ok[0]['method']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from ..help_format import DefaultsHelpFormatter

    ap = argparse.ArgumentParser(prog="python -m convgrad.cli.bench.memory",
                                 description="Peak memory of one benchmark pass, each "
                                 "implementation in a fresh subprocess.",
                                 formatter_class=DefaultsHelpFormatter)
    ap.add_argument("--workload", default="W1", help="workload id")
    ap.add_argument("--pass", dest="pass_", default="fwd+bwd",
                    help="fwd, fwd+bwd, fwd+bwd_input or fwd+bwd_weight; step for N1, N2")
    ap.add_argument("--impl", default="convgrad,torch",
                    help="implementations, comma separated (convgrad, torch, torch_cl, jax, "
                    "mlx)")
    ap.add_argument("--quick", action="store_true", help="a quarter of the batch")
    ap.add_argument("--json", default=None, help="write the results as JSON to this file")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per child")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        print(json.dumps(measure(args.child, args.workload, args.pass_, args.quick)), flush=True)
        return 0

    from .workloads import select

    try:
        w = select(args.workload)[0]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.pass_ not in w.passes:
        print(f"error: --pass {args.pass_!r}: expected one of {', '.join(w.passes)}",
              file=sys.stderr)
        return 2
    known = ("convgrad", "torch", "torch_cl", "jax", "mlx")
    impls = [s.strip().lower() for s in args.impl.split(",") if s.strip()]
    bad = [i for i in impls if i not in known]
    if bad:
        print(f"error: --impl: unknown {', '.join(bad)}; expected some of {', '.join(known)}",
              file=sys.stderr)
        return 2
    rows = run_children(impls, w.id, args.pass_, args.quick, args.timeout)
    print(format_report(rows, w.id, args.pass_))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"schema": "convgrad-bench-memory/1", "workload": w.id,
                       "pass": args.pass_, "malloc_env": MALLOC_ENV, "quick": args.quick,
                       "results": rows}, f, indent=2)
            f.write("\n")
        print(f"wrote {args.json}")
    return 1 if any("error" in r for r in rows if r["impl"] == "convgrad") else 0


if __name__ == "__main__":
    sys.exit(main())
