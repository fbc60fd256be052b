"""``convgrad bench --breakdown N3``: where one training step's time goes, convgrad
against torch eager (NCHW), per layer and per kind of operation.

One step of each (after warm-up steps, on the same weights and batch) is measured
twice over:

- per layer: the forward time of each top-level layer (the model's children,
  descending through ``Sequential``/``ModuleList`` containers and DCGAN's two
  networks), from forward pre-/post-hooks, and its backward time, approximately: the
  time between the full-backward hook of the layer and the one fired before it (so the
  glue between layers, e.g. a residual addition, lands in the layer after it in
  forward order).  A layer called several times in a step (DCGAN's D) sums its calls.
- per kind: convgrad's profiler events summed per kernel family (``conv``, ...); the
  rest of the step's wall time is "other (Python/NumPy)".  torch.profiler's self CPU
  time of each ``aten::`` operation, grouped into the same families by name (see
  :data:`TORCH_FAMILIES`); the rest (autograd engine, optimizer and Python) is "other".

torch and its profiler are imported inside the functions only.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from .report import text_table

__all__ = ["TORCH_FAMILIES", "torch_family", "layers", "breakdown", "format_breakdown",
           "run_breakdown"]

#: convgrad's kernel families -> the words in the names of the aten operations that do
#: the same work in torch (checked in this order: the first family matching wins)
TORCH_FAMILIES = (
    ("conv", ("conv",)),
    ("norm", ("batch_norm", "group_norm", "instance_norm", "layer_norm")),
    ("pool", ("pool", "upsample")),
    ("activation", ("relu", "threshold", "silu", "leaky", "sigmoid", "tanh", "elu")),
    ("loss", ("cross_entropy", "nll_loss", "log_softmax", "mse_loss",
              "binary_cross_entropy")),
    ("linear", ("addmm", "mm", "linear")),
    ("optim", ("_foreach", "lerp", "addcdiv", "addcmul")),
    ("elementwise", ("add", "sub", "mul", "div", "copy", "cat", "sqrt", "neg", "fill",
                     "zero", "ones", "sum", "mean", "clamp", "where", "exp")),
)

OTHER = "other"


def torch_family(name: str) -> str:
    """The family of an aten operation (``other`` for anything not aten)."""
    if not name.startswith("aten::"):
        return OTHER
    op = name[len("aten::"):]
    for fam, words in TORCH_FAMILIES:
        if any(word in op for word in words):
            return fam
    return OTHER


def layers(model: Any) -> list[tuple[str, Any]]:
    """The top-level layers of ``model``: its children, containers opened."""
    out: list[tuple[str, Any]] = []

    def walk(prefix: str, m: Any) -> None:
        for name, child in m.named_children():
            full = f"{prefix}{name}"
            kind = type(child).__name__
            if kind in ("Sequential", "ModuleList", "Generator", "Discriminator"):
                walk(full + ".", child)
            else:
                out.append((full, child))

    walk("", model)
    return out


class _LayerClock:
    """Forward and (approximate) backward seconds per layer, from module hooks."""

    def __init__(self, model: Any) -> None:
        self.fwd: dict[str, float] = defaultdict(float)
        self.bwd: dict[str, float] = defaultdict(float)
        self.order = [name for name, _ in layers(model)]
        self.last = 0.0
        self.handles = []
        self._start: dict[str, float] = {}
        for name, m in layers(model):
            self.handles.append(m.register_forward_pre_hook(self._pre(name)))
            self.handles.append(m.register_forward_hook(self._post(name)))
            self.handles.append(m.register_full_backward_hook(self._back(name)))

    def _pre(self, name: str) -> Any:
        def hook(module: Any, args: Any) -> None:
            self._start[name] = time.perf_counter()
        return hook

    def _post(self, name: str) -> Any:
        def hook(module: Any, args: Any, out: Any) -> None:
            now = time.perf_counter()
            self.fwd[name] += now - self._start.pop(name, now)
            self.last = now  # backward of a layer starts after the forward ends
        return hook

    def _back(self, name: str) -> Any:
        def hook(module: Any, grad_in: Any, grad_out: Any) -> None:
            now = time.perf_counter()
            self.bwd[name] += now - self.last
            self.last = now
        return hook

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def breakdown(w: Any, inp: Any, lib: str, warmup: int = 2, channels_last: bool = False
              ) -> dict:
    """One profiled training step of ``w`` in ``lib``: ``{"wall", "family", "fwd",
    "bwd", "layers"}`` (seconds); ``channels_last``: the model and batch in that memory
    format (the torch peer's second layout)."""
    import warnings

    from .nets import build

    model, run, _ = build(w, inp, lib, channels_last=channels_last)
    # torch warns when a layer's inputs need no gradient (DCGAN's D on real images)
    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    for _ in range(warmup):
        run()
    clock = _LayerClock(model)
    fam: dict[str, float] = defaultdict(float)
    try:
        if lib == "convgrad":
            from ...ops.profiler import profile

            with profile() as prof:
                t0 = time.perf_counter()
                out = run()
                clock.last = t0
                wall = time.perf_counter() - t0
            for e in prof.events:
                fam[e.family or OTHER] += e.seconds
        else:
            from torch.profiler import ProfilerActivity
            from torch.profiler import profile as tprofile

            with tprofile(activities=[ProfilerActivity.CPU]) as prof:
                t0 = time.perf_counter()
                out = run()
                wall = time.perf_counter() - t0
            for e in prof.key_averages():
                fam[torch_family(e.key)] += e.self_cpu_time_total * 1e-6
        del out
    finally:
        clock.remove()
    known = sum(v for k, v in fam.items() if k != OTHER)
    fam[OTHER] = max(0.0, wall - known)
    return {"wall": wall, "family": dict(fam), "fwd": dict(clock.fwd), "bwd": dict(clock.bwd),
            "layers": clock.order}


def format_breakdown(w: Any, ours: dict, theirs: dict | None, theirs_cl: dict | None = None
                     ) -> str:
    """The two tables (per layer, per kind) in ms, convgrad next to torch eager NCHW
    (``theirs``) and, when given, torch eager channels_last (``theirs_cl``)."""
    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v * 1e3:.1f}"

    none = {"wall": None, "family": {}, "fwd": {}, "bwd": {}}
    peers = [("torch", theirs or none)] + ([("torch_cl", theirs_cl)] if theirs_cl else [])
    lines = [f"{w.id} breakdown: one training step, {w.shape_text()}, ms (convgrad vs torch "
             f"eager NCHW{' and channels_last' if theirs_cl else ''})"]
    rows = [[name, ms(ours["fwd"].get(name)), *(ms(t["fwd"].get(name)) for _, t in peers),
             ms(ours["bwd"].get(name)), *(ms(t["bwd"].get(name)) for _, t in peers)]
            for name in ours["layers"]]
    lines += text_table(["layer", "convgrad fwd", *(f"{n} fwd" for n, _ in peers), "convgrad bwd~",
                    *(f"{n} bwd~" for n, _ in peers)], rows)
    lines.append("")
    fams = [f for f, _ in TORCH_FAMILIES]
    fams += [f for f in ours["family"] if f not in fams and f != OTHER]
    rows = [[f, ms(ours["family"].get(f)), *(ms(t["family"].get(f)) for _, t in peers)]
            for f in fams if f in ours["family"] or any(f in t["family"] for _, t in peers)]
    rows.append(["other (Python/NumPy; torch: engine, Python)", ms(ours["family"].get(OTHER)),
                 *(ms(t["family"].get(OTHER)) for _, t in peers)])
    rows.append(["step (wall)", ms(ours["wall"]), *(ms(t["wall"]) for _, t in peers)])
    lines += text_table(["kind", "convgrad", *(n for n, _ in peers)], rows)
    lines.append("bwd~: time since the previous layer's backward hook (approximate; "
                 "convgrad's weight gradients run where .grad is read, at the optimiser "
                 "step, not in it); kind: convgrad's kernel families from its profiler, "
                 "torch's aten ops' self CPU time grouped by name into the same families")
    return "\n".join(lines)


def run_breakdown(args: Any) -> int:
    """``convgrad bench --breakdown ID[,ID]``: the tables of each network workload."""
    from .inputs import make_inputs
    from .peers import ConvgradImpl, TorchImpl
    from .workloads import THREADS, select_for, tiny_requested

    selected = select_for("breakdown", args.breakdown, lambda w: w.is_real_net,
                          "a real network (N3-N6)")
    if selected is None:
        return 2
    quick = bool(getattr(args, "quick", False))
    torch_impl = TorchImpl()
    try:
        torch_impl.load()
    except Exception as e:  # torch missing: convgrad's columns alone
        print(f"note: torch cannot be imported ({type(e).__name__}: {e})")
        torch_impl = None
    cg_impl = ConvgradImpl()
    for w in selected:
        w = w.shrunk(quick, tiny_requested())
        inp = make_inputs(w)
        with cg_impl.threads(THREADS):
            ours = breakdown(w, inp, "convgrad")
        theirs = theirs_cl = None
        if torch_impl is not None:
            with torch_impl.threads(THREADS):
                theirs = breakdown(w, inp, "torch")
                theirs_cl = breakdown(w, inp, "torch", channels_last=True)
        print(format_breakdown(w, ours, theirs, theirs_cl), flush=True)
        print()
    return 0
