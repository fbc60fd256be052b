"""``convgrad bench``: run the suite as the command's options ask."""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

__all__ = ["run_bench"]


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass

    def close(self) -> None:
        pass

    @staticmethod
    def write(s: str, file: Any = None) -> None:
        print(s, file=file or sys.stdout, flush=True)


def _progress(total: int) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    # disable=None: a bar on a terminal, none when stderr is a file or a pipe
    return tqdm(total=total, desc="bench", unit="round", file=sys.stderr, disable=None,
                dynamic_ncols=True, leave=False)


@dataclass
class _Session:
    """What the options asked for, with the implementations loaded (:func:`_load`)."""

    quick: bool
    tiny: bool
    runs: int
    warmup: int
    selected: list
    impls: list
    peers: list[str]
    versions: dict[str, str]
    skipped_peers: dict[str, str]
    notes: list[str]


@dataclass
class _Ran:
    """What :func:`_run` measured."""

    results: list = field(default_factory=list)
    skipped_workloads: dict[str, str] = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    peak: Any = None
    t_start: float = 0.0


def run_bench(args: Any) -> int:
    """Run the suite as the ``convgrad bench`` options in ``args`` ask; returns the exit code.

    0: every check passed; 1: convgrad disagreed with the reference peer or failed;
    2: bad options.  ``torch`` in ``--against`` brings ``torch_cl`` (torch with
    channels_last tensors, for the network workloads) and ``torch_compile`` (N3-N6) along;
    each may be named alone.
    """
    _build_loops()
    if getattr(args, "breakdown", None):
        from .breakdown import run_breakdown

        return run_breakdown(args)
    if getattr(args, "cold_start", None):
        from .cold import run_cold_start

        return run_cold_start(args)
    session = _load(args)
    if isinstance(session, int):
        return session
    return _report(args, session, _run(session))


def _build_loops() -> None:
    """The compiled loops built before anything is timed: a process that finds them
    unbuilt runs without them throughout (:mod:`convgrad.ops.jit_build`), and the cold-start
    children find them built."""
    from ...ops.jit_build import ensure_built

    took = ensure_built()
    if took > 1.0:
        print(f"convgrad bench: built the compiled loops first ({took:.0f} s)", file=sys.stderr)


def _load(args: Any) -> _Session | int:
    """Check the options and load convgrad and the peers (an exit code on bad options)."""
    from .peers import ConvgradImpl, make_impl
    from .workloads import THREADS, TINY_ENV, select, tiny_requested

    out = sys.stdout
    quick = bool(getattr(args, "quick", False))
    tiny = tiny_requested()
    known = ("torch", "torch_cl", "torch_compile", "jax", "mlx")
    family = ("torch", "torch_cl", "torch_compile")
    against = [s.strip().lower() for s in (getattr(args, "against", None) or "").split(",")
               if s.strip()]
    unknown = [p for p in against if p not in known]
    if unknown:
        print(f"convgrad bench: --against: unknown peer(s) {', '.join(unknown)}; "
              f"expected some of {', '.join(known)}", file=sys.stderr)
        return 2
    against = [q for p in against for q in (family if p == "torch" else (p,))]
    try:
        selected = select(getattr(args, "only", None))
    except ValueError as e:
        print(f"convgrad bench: {e}", file=sys.stderr)
        return 2
    runs = 3 if (quick or tiny) else 5
    warmup = 1 if (quick or tiny) else 2

    versions: dict[str, str] = {}
    cg_impl = ConvgradImpl()
    versions["convgrad"] = cg_impl.load()
    impls = [cg_impl]
    peers: list[str] = []
    skipped_peers: dict[str, str] = {}
    for name in dict.fromkeys(against):
        impl = make_impl(name, THREADS)
        try:
            version = impl.load()
            if name not in family[1:]:  # the same library as torch
                versions[name] = version
        except Exception as e:  # ImportError, or a broken install
            skipped_peers[name] = f"cannot import: {type(e).__name__}: {e}"
            print(f"skipping peer {name}: {skipped_peers[name]}", file=out, flush=True)
            continue
        impls.append(impl)
        peers.append(name)

    notes = []
    if quick:
        notes.append(f"--quick: {runs} timed runs, batch sizes shrunk to a quarter (at least 1; "
                     "a batch of 1 halves its image sides instead)")
    if tiny:
        notes.append(f"{TINY_ENV} is set: toy shapes (batch 1, small images) and a 512^3 "
                     "matmul - for testing the harness, not for numbers")
    for n in notes:
        print(f"note: {n}", file=out, flush=True)
    return _Session(quick, tiny, runs, warmup, selected, impls, peers, versions,
                    skipped_peers, notes)


def _run(s: _Session) -> _Ran:
    """Time every selected workload's passes, each implementation in turn."""
    from .inputs import make_inputs
    from .report import mismatch_lines
    from .runner import collect_environment, matmul_peak, run_pass
    from .workloads import THREADS

    out = sys.stdout
    ran = _Ran(t_start=time.time())
    cg_impl = s.impls[0]
    with ExitStack() as stack:
        for impl in s.impls:
            stack.enter_context(impl.threads(THREADS))
        ran.env = collect_environment(s.versions, s.impls)
        ran.peak = matmul_peak(512 if s.tiny else 2048, s.runs)
        work = [w.shrunk(s.quick, s.tiny) for w in s.selected]
        bar = _progress(sum(len(w.passes) for w in work) * s.runs)
        try:
            for w in work:
                reason = cg_impl.unsupported(w, w.passes[0])
                if reason:
                    ran.skipped_workloads[w.id] = reason
                    bar.write(f"skipping {w.id}: {reason}", file=out)
                    bar.update(len(w.passes) * s.runs)
                    continue
                inp = make_inputs(w)
                for p in w.passes:
                    bar.set_postfix_str(f"{w.id} {p}")
                    r = run_pass(w, p, s.impls, inp, runs=s.runs, warmup=s.warmup,
                                 tick=lambda: bar.update(1))
                    ran.results.append(r)
                    fails, warns = mismatch_lines([r])
                    for m in fails:
                        bar.write(f"!!! MISMATCH {m}", file=out)
                    for m in warns:
                        bar.write(f"warning: {m}", file=out)
                    for name, err in r.errors.items():
                        if name != "convgrad":
                            bar.write(f"warning: {w.id} {p}: {name} failed: {err}", file=out)
                del inp
        finally:
            bar.close()
    return ran


def _report(args: Any, s: _Session, ran: _Ran) -> int:
    """Print the tables, write the files asked for; the exit code of the agreement."""
    from .report import (
        build_json,
        format_bounds,
        format_environment,
        format_first_steps,
        format_peak,
        format_table,
        mismatch_lines,
        write_json,
        write_plot,
    )
    from .workloads import THREADS

    out, results, peers = sys.stdout, ran.results, s.peers
    print(file=out)
    print(format_table(results, peers), file=out)
    first = format_first_steps(results, peers)
    if first:
        print(file=out)
        print(first, file=out)
    print(file=out)
    print(format_peak(ran.peak, results, peers), file=out)
    bounds = format_bounds(results, ran.peak)
    if bounds:
        print(bounds, file=out)
    print(format_environment(ran.env), file=out)
    for wid, reason in ran.skipped_workloads.items():
        print(f"skipped {wid}: {reason}", file=out)
    for name, reason in s.skipped_peers.items():
        print(f"skipped peer {name}: {reason}", file=out)
    for n in s.notes:
        print(f"note: {n}", file=out)

    meta = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(ran.t_start)),
        "wall_s": time.time() - ran.t_start,
        "quick": s.quick, "tiny": s.tiny, "runs": s.runs, "warmup": s.warmup,
        "threads": THREADS,
        "notes": s.notes,
        "implementations": ["convgrad", *peers],
        "skipped_peers": s.skipped_peers,
        "skipped_workloads": ran.skipped_workloads,
        "environment": ran.env,
        "matmul_peak": ran.peak,
    }
    data = build_json(results, peers, meta)
    if getattr(args, "memory", False):  # `convgrad bench --memory`, if cli.py offers it
        from .memory import format_report, run_children

        rows = run_children(["convgrad", *peers], "W1", "fwd+bwd", s.quick)
        print(file=out)
        print(format_report(rows, "W1", "fwd+bwd"), file=out)
        data["memory"] = {"workload": "W1", "pass": "fwd+bwd", "results": rows}
    if getattr(args, "json", None):
        write_json(data, args.json)
        print(f"wrote {args.json}", file=out)
    if getattr(args, "plot", None):
        try:
            write_plot(results, peers, args.plot,
                       title=f"convgrad {s.versions['convgrad']}, {THREADS} threads, median "
                             f"of {s.runs}{' (quick)' if s.quick else ''}")
            print(f"wrote {args.plot}", file=out)
        except ImportError as e:
            print(f"cannot write the chart: {e} (pip install matplotlib)", file=out)

    fails, _ = mismatch_lines(results)
    if fails:
        print(file=out)
        print("!" * 78, file=out)
        print(f"!!! AGREEMENT FAILED in {len(fails)} pass(es):", file=out)
        for m in fails:
            print(f"!!!   {m}", file=out)
        print("!" * 78, file=out)
        return 1
    if not data["agreement_checked"]:
        print("note: no peer ran, so nothing was checked for agreement", file=out)
    return 0
