"""``convgrad bench --cold-start N1,...``: a network's first training step as a script
meets it, in a fresh Python process per run.

The in-process "first ms" of the suite times the first step alone, with every library
already imported and, for convgrad, Numba's loops still loading on a background thread
(the model was built just before).  A user's script pays more than that: from its start,
the library's import, building the model and optimiser (torch imports more modules
lazily there), and the first step.  Each run here is a new interpreter that imports one
library (timed), reads the shared inputs from a file (not timed: NumPy only, so nothing
of convgrad starts early), builds the model and takes one step (timed), and reports the
step's loss, which the parent checks against its own first step's (the same
computation, not only the same time).  The median of ``runs`` processes per library.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .report import text_table

__all__ = ["CHILD", "LIBRARIES", "cold_start", "format_cold_start", "load_inputs",
           "save_inputs"]

#: the libraries a cold start is measured for: (name, module imported, torch layout)
LIBRARIES = (("convgrad", "convgrad", None), ("torch", "torch", False))

#: the child process's program: argv = library, workload id, threads, inputs file, and
#: the workload's shrinking (quick, tiny: "0" or "1" each)
CHILD = """
import json, sys, time
t0 = time.perf_counter()
lib, wid, threads, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
quick, tiny = sys.argv[5] == "1", sys.argv[6] == "1"
if lib == "torch":
    import torch
    torch.set_num_threads(threads)
else:
    import convgrad
    convgrad.set_num_threads(threads)
t_import = time.perf_counter() - t0
from convgrad.cli.bench import cold, networks
from convgrad.cli.bench.workloads import select
w = select(wid)[0].shrunk(quick, tiny)
inp = cold.load_inputs(path)
t1 = time.perf_counter()
if lib == "torch":
    run, _ = networks.torch_step(w, inp, channels_last=False)
else:
    run, _ = networks.convgrad_step(w, inp)
loss = run()
t_step = time.perf_counter() - t1
loss = loss["loss"] if isinstance(loss, dict) else loss  # the real nets: {"loss": ...}
print(json.dumps({"import": t_import, "step": t_step, "loss": float(loss.item())}))
"""


def save_inputs(inp: Any, path: str) -> None:
    """A workload's :class:`~.workloads.Inputs` (arrays and initial weights) to ``path``."""
    arrays = {k: v for k, v in vars(inp).items() if isinstance(v, np.ndarray)}
    arrays.update({f"param/{k}": v for k, v in (inp.params or {}).items()})
    np.savez(path, **arrays)


def load_inputs(path: str) -> Any:
    """What :func:`save_inputs` wrote, as :class:`~.workloads.Inputs` again."""
    from .workloads import Inputs

    with np.load(path) as f:
        params = {k[len("param/"):]: f[k] for k in f.files if k.startswith("param/")}
        rest = {k: f[k] for k in f.files if not k.startswith("param/")}
    return Inputs(**rest, params=params or None)


def _child(lib: str, wid: str, threads: int, path: str, shrunk: tuple = (False, False)
           ) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONSTARTUP", None)
    flags = ["1" if f else "0" for f in shrunk]
    done = subprocess.run([sys.executable, "-c", CHILD, lib, wid, str(threads), path, *flags],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"the {lib} child process failed (exit {done.returncode}): "
                           + " / ".join(tail))
    return json.loads(done.stdout.strip().splitlines()[-1])


def cold_start(w: Any, inp: Any, threads: int, runs: int = 3, shrunk: tuple = (False, False),
               libraries: tuple = LIBRARIES) -> dict[str, dict]:
    """``{library: {"import", "step", "total", "loss"}}`` (seconds; medians of ``runs``
    fresh processes, alternating the libraries; ``loss`` of the last run).  ``shrunk``:
    the (quick, tiny) that made ``w`` from its suite workload (the child makes it again)."""
    out: dict[str, list] = {name: [] for name, _, _ in libraries}
    with tempfile.TemporaryDirectory(prefix="convgrad-cold-") as tmp:
        path = str(Path(tmp) / "inputs.npz")
        save_inputs(inp, path)
        for _ in range(runs):
            for name, _, _ in libraries:
                out[name].append(_child(name, w.id, threads, path, shrunk))
    result = {}
    for name, rows in out.items():
        result[name] = {k: statistics.median(r[k] for r in rows) for k in ("import", "step")}
        result[name]["total"] = statistics.median(r["import"] + r["step"] for r in rows)
        result[name]["loss"] = rows[-1]["loss"]
    return result


def format_cold_start(rows: list[tuple[str, dict]]) -> str:
    """One line per workload: each library's import, build + first step and total (ms),
    and convgrad's total over torch's."""
    head = ["id", "convgrad import", "build+first", "total", "torch import", "build+first",
            "total", "cg/torch"]
    body = []
    for wid, r in rows:
        cg, t = r["convgrad"], r["torch"]
        body.append([f"{wid}:", *(f"{cg[k] * 1e3:.0f}" for k in ("import", "step", "total")),
                     *(f"{t[k] * 1e3:.0f}" for k in ("import", "step", "total")),
                     f"{cg['total'] / t['total']:.2f}"])
    lines = text_table(head, body)
    lines.append("cold start: a fresh process per run, ms (medians): the library's import, "
                 "then building the model and optimiser and the first training step; "
                 "torch eager NCHW")
    return "\n".join(lines)


def run_cold_start(args: Any) -> int:
    """``convgrad bench --cold-start ID[,ID]``: the table for these network workloads."""
    from .inputs import make_inputs
    from .workloads import THREADS, select_for, tiny_requested

    selected = select_for("cold-start", args.cold_start, lambda w: w.is_network,
                          "a network workload (N1-N6)")
    if selected is None:
        return 2
    try:
        import torch  # noqa: F401 (only whether it imports; the children use it)
    except ImportError as e:
        print(f"convgrad bench: --cold-start needs torch ({e})", file=sys.stderr)
        return 2
    quick, tiny = bool(getattr(args, "quick", False)), tiny_requested()
    rows = []
    for w in selected:
        w = w.shrunk(quick, tiny)
        inp = make_inputs(w)
        r = cold_start(w, inp, THREADS, runs=1 if quick else 3, shrunk=(quick, tiny))
        rows.append((w.id, r))
        print(f"{w.id}: convgrad {r['convgrad']['total'] * 1e3:.0f} ms, torch "
              f"{r['torch']['total'] * 1e3:.0f} ms (losses {r['convgrad']['loss']:.6g}, "
              f"{r['torch']['loss']:.6g})", file=sys.stderr, flush=True)
    print(format_cold_start(rows), flush=True)
    return 0
