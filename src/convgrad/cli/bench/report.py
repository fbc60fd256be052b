"""The printed table, the JSON file and the PNG chart of the ratios."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from .runner import TOLERANCE, PassResult, conv_bound_ms

__all__ = ["SCHEMA", "format_table", "format_first_steps", "format_peak", "format_environment",
           "mismatch_lines", "build_json", "text_table", "write_json", "write_plot"]

SCHEMA = "convgrad-bench/1"


def _f(v: float | None, fmt: str = ".2f") -> str:
    return "-" if v is None else format(v, fmt)


def _agree_text(r: PassResult) -> str:
    if "convgrad" in r.errors:
        return "ERROR"
    a = r.agree
    if a is None:
        return "-"
    text = "ok" if a else "FAIL"
    # a peer other than the reference disagreeing is flagged too (a warning)
    if any(not c["agree"] for p, c in r.checks.items() if p != r.reference):
        text += "*"
    return text


def format_table(results: Sequence[PassResult], peers: Sequence[str]) -> str:
    """One row per (workload, pass): ms per implementation, convgrad/peer ratios,
    forward GFLOP/s, agreement with the reference peer and convgrad's algorithms."""
    impls = ["convgrad", *peers]
    head = (["id", "pass"] + [f"{n} ms" for n in impls] + [f"cg/{p}" for p in peers]
            + ["fwd GFLOP/s (" + " / ".join("cg" if n == "convgrad" else n for n in impls) + ")",
               "agree", "convgrad algorithm"])
    rows = []
    for r in results:
        gf = ""
        if r.pass_ == "fwd" and r.workload.fwd_flops():
            gf = " / ".join(_f(r.gflops(n), ".1f") for n in impls)
        rows.append([r.workload.id, r.pass_] + [_f(r.median_ms(n)) for n in impls]
                    + [_f(r.ratio(p)) for p in peers] + [gf, _agree_text(r), r.algorithm_text()])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    right = set(range(2, 2 + len(impls) + len(peers)))

    def line(cells: list) -> str:
        out = [(str(c).rjust(wd) if i in right else str(c).ljust(wd))
               for i, (c, wd) in enumerate(zip(cells, widths))]
        return "  ".join(out).rstrip()

    sep = "-" * len(line(head))
    lines = [line(head), sep]
    prev = None
    for r, cells in zip(results, rows):
        if prev is not None and r.workload.id != prev:
            lines.append("")
        prev = r.workload.id
        lines.append(line(cells))
    lines.append(sep)
    lines.append("ms: median wall time of one pass; cg/<peer>: convgrad time / peer time "
                 "(below 1 = convgrad faster); agree: convgrad vs the reference peer "
                 f"(torch when it ran) at {TOLERANCE:g} relative max-norm (a network step: "
                 "its loss so, its gradients at a 2-norm tolerance, its update against "
                 "torch's Adam), * = another peer disagrees; step: forward, backward and "
                 "optimiser update of a network; algorithm: fwd/dx/dw = "
                 "conv_forward/input_grad/weight_grad")
    return "\n".join(lines)


def text_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a plain-text table: the first column left-aligned, the others right."""
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    return ["  ".join(str(c).rjust(wd) if i else str(c).ljust(wd)
                      for i, (c, wd) in enumerate(zip(line, widths))).rstrip()
            for line in (head, *rows)]


def format_first_steps(results: Sequence[PassResult], peers: Sequence[str]) -> str:
    """The very first step of each network workload, per implementation (plan creation,
    caches and compilation included), in ms; empty when no network ran."""
    impls = ["convgrad", *peers]
    rows = [r for r in results if r.workload.is_network and r.first]
    if not rows:
        return ""
    shown = [n for n in impls if any(n in r.first for r in rows)]
    head = ["id", *(f"{n} first ms" for n in shown)]
    cells = [[f"{r.workload.id}:", *(_f(r.first[n] * 1e3, ".0f") if n in r.first else "-"
                               for n in shown)] for r in rows]
    lines = text_table(head, cells)
    lines.append("first ms: the very first training step (plan creation, caches, "
                 "torch.compile's compilation included), not in the medians above")
    return "\n".join(lines)


def format_bounds(results: Sequence[PassResult], peak: dict, target: float = 0.8) -> str:
    """Per network: the step's convolution work and the shortest step it allows (its
    FLOPs at the machine's ceiling, everything else free), against torch eager's step;
    empty when no network step was profiled."""
    rows = []
    for r in results:
        bound = conv_bound_ms(r, peak["gflops"])
        if not r.workload.is_network or bound is None:
            continue
        rate = max(peak["gflops"], r.conv_best_rate / 1e9)
        ours, theirs = r.median_ms("convgrad"), r.median_ms("torch")
        conv_s = f"{r.conv_flops / 1e9:.2f} GFLOP at {rate:.0f} GFLOP/s: >= {bound:.1f} ms"
        if theirs:
            # an ideal (every convolution at the step's fastest rate): it can rule a
            # target out, never promise it
            verdict = "not ruled out" if bound <= target * theirs else "ruled out"
            conv_s += (f" = {bound / theirs:.2f}x torch eager ({theirs:.1f} ms); {target}x "
                       f"{verdict}")
        if ours:
            conv_s += f"; convgrad's step {ours:.1f} ms"
        rows.append(f"  {r.workload.id}: {conv_s}")
    if not rows:
        return ""
    return "\n".join(["convolution bound: a step's convolution FLOPs at the faster of the "
                      "matmul ceiling and its own fastest convolution, all else free:", *rows])


def format_peak(peak: dict, results: Sequence[PassResult], peers: Sequence[str],
                ids: Sequence[str] = ("W1", "W2")) -> str:
    lines = [f"NumPy float32 matmul {peak['n']}^3: {peak['gflops']:.1f} GFLOP/s "
             f"(median of {peak['runs']}, {peak['median_ms']:.1f} ms) - the practical ceiling"]
    for r in results:
        if r.workload.id in ids and r.pass_ == "fwd":
            parts = []
            for n in ["convgrad", *peers]:
                g = r.gflops(n)
                if g is not None:
                    parts.append(f"{n} {g:.1f} GFLOP/s ({100 * g / peak['gflops']:.0f}%)")
            lines.append(f"  {r.workload.id} fwd: " + ", ".join(parts))
    return "\n".join(lines)


def format_environment(env: dict) -> str:
    v = env["versions"]
    vers = ", ".join(f"{k} {x}" for k, x in v.items() if x)
    pools = "; ".join(f"{p.get('internal_api')} {p.get('version') or ''} "
                      f"{p.get('architecture') or ''} x{p.get('num_threads')}".replace("  ", " ")
                      for p in env["threadpool_info"])
    e = env["env"]
    return "\n".join([
        f"versions: {vers}",
        f"thread pools: {pools}",
        f"threads: {env['threads']}",
        f"CPU: {env['cpu_model']}; cores: {env['cpu_count']} ({env['cpus_usable']} usable); "
        f"OPENBLAS_CORETYPE={e.get('OPENBLAS_CORETYPE')} "
        f"OPENBLAS_L2_SIZE={e.get('OPENBLAS_L2_SIZE')}",
    ])


def mismatch_lines(results: Sequence[PassResult], tol: float = TOLERANCE) -> tuple[list, list]:
    """(failures, warnings): convgrad errors or disagreement with the reference peer; a
    non-reference peer disagreeing."""
    fails, warns = [], []
    for r in results:
        tag = f"{r.workload.id} {r.pass_}"
        if "convgrad" in r.errors:
            fails.append(f"{tag}: convgrad failed: {r.errors['convgrad']}")
        for peer, c in r.checks.items():
            if c["agree"]:
                continue
            tols = c.get("tolerance", {})
            if tols:  # per-key tolerances and measures (network steps)
                bad = ", ".join(f"{k}={e:.2e} ({c['measure'][k]}, tolerance {tols[k]:g})"
                                for k, e in c["max_rel_err"].items() if not e <= tols[k])
                msg = f"{tag}: convgrad vs {peer}: error {bad}"
            else:
                bad = ", ".join(f"{k}={e:.2e}" for k, e in c["max_rel_err"].items()
                                if not e <= tol)
                msg = (f"{tag}: convgrad vs {peer}: relative max-norm error {bad} "
                       f"(tolerance {tol:g})")
            (fails if peer == r.reference else warns).append(msg)
    return fails, warns


def _num(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else v


def pass_json(r: PassResult, peers: Sequence[str]) -> dict:
    impls = ["convgrad", *peers]
    return {
        "times_ms": {n: [t * 1e3 for t in r.times[n]] for n in impls if n in r.times},
        "median_ms": {n: r.median_ms(n) for n in impls if n in r.times},
        "ratio": {p: r.ratio(p) for p in peers if r.ratio(p) is not None},
        "gflops": ({n: r.gflops(n) for n in impls if r.gflops(n) is not None}
                   if r.pass_ == "fwd" else {}),
        "reference": r.reference,
        "agree": r.agree,
        "checks": {p: {"agree": c["agree"],
                       "max_rel_err": {k: (e if math.isfinite(e) else None)
                                       for k, e in c["max_rel_err"].items()},
                       **{k: c[k] for k in ("tolerance", "measure") if k in c}}
                   for p, c in r.checks.items()},
        "algorithms": r.algorithms,
        "kernel_calls": r.kernel_calls,
        "first_step_ms": ({n: t * 1e3 for n, t in r.first.items()}
                          if r.workload.is_network else {}),
        "conv_gflop": r.conv_flops / 1e9 if r.conv_flops else None,
        "conv_best_gflops": r.conv_best_rate / 1e9 if r.conv_best_rate else None,
        "skipped": r.skipped,
        "errors": r.errors,
    }


def build_json(results: Sequence[PassResult], peers: Sequence[str], meta: dict) -> dict:
    """The whole report as JSON-ready data (schema ``convgrad-bench/1``)."""
    workloads: dict[str, dict] = {}
    for r in results:
        entry = workloads.setdefault(r.workload.id, {**r.workload.to_json(), "passes": {}})
        entry["passes"][r.pass_] = pass_json(r, peers)
    peak = meta.get("matmul_peak")
    vs_peak = {}
    if peak:
        for r in results:
            if r.workload.id in ("W1", "W2") and r.pass_ == "fwd":
                vs_peak[r.workload.id] = {
                    n: {"gflops": g, "fraction_of_matmul": g / peak["gflops"]}
                    for n in ["convgrad", *peers] if (g := r.gflops(n)) is not None}
    checked = [r.agree for r in results if r.agree is not None]
    fails, warns = mismatch_lines(results)
    return {
        "schema": SCHEMA,
        **meta,
        "tolerance": TOLERANCE,
        "agreement": all(checked) and not any("convgrad" in r.errors for r in results),
        "agreement_checked": len(checked),
        "failures": fails,
        "warnings": warns,
        "gflops_vs_matmul": vs_peak,
        "workloads": list(workloads.values()),
    }


def write_json(data: dict, path: str) -> None:
    def clean(o):
        if isinstance(o, float):
            return _num(o)
        if isinstance(o, dict):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, list | tuple):
            return [clean(v) for v in o]
        return o

    with open(path, "w", encoding="utf-8") as f:
        json.dump(clean(data), f, indent=2)
        f.write("\n")


def write_plot(results: Sequence[PassResult], peers: Sequence[str], path: str,
               title: str = "") -> None:
    """Bar chart of convgrad time / peer time: one panel per peer, one group per
    workload the peer ran, one bar per pass (the group centred on its workload; one
    colour per pass across panels), log scale, a line at 1.0."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    passes = list(dict.fromkeys(r.pass_ for r in results))
    panels = [p for p in peers if any(r.ratio(p) for r in results)] or list(peers[:1]) or ["-"]
    n_ids = len(dict.fromkeys(r.workload.id for r in results))
    fig = Figure(figsize=(max(7.0, 1.1 * n_ids + 2), 3.4 * len(panels)))
    FigureCanvasAgg(fig)
    colours = {p: f"C{j % 10}" for j, p in enumerate(passes)}
    for i, peer in enumerate(panels):
        ax = fig.add_subplot(len(panels), 1, i + 1)
        groups: dict[str, list[tuple[str, float]]] = {}
        for r in results:
            v = r.ratio(peer)
            if v:
                groups.setdefault(r.workload.id, []).append((r.pass_, v))
        labelled = set()
        for k, bars in enumerate(groups.values()):
            width = min(0.8 / len(bars), 0.3)
            for j, (p, v) in enumerate(bars):
                ax.bar(k - 0.4 + width * (j + 0.5), v, width, color=colours[p],
                       label=None if p in labelled else p)
                labelled.add(p)
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_yscale("log")
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(list(groups))
        ax.set_ylabel(f"convgrad / {peer}")
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.set_title(f"time ratio convgrad / {peer} (below 1 = convgrad faster)", fontsize=10)
        if labelled:
            ax.legend(fontsize=8, ncol=len(labelled))
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
