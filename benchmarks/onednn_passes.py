"""oneDNN plans against PyTorch, pass by pass, on the W1-W8 workloads.

Each pass of each workload (forward, input gradient, weight gradient with the bias
gradient) runs as a cached :mod:`convgrad.ops.onednn` plan and as PyTorch 2.13
(``torch.nn.functional`` forward, ``torch.ops.aten.convolution_backward``), with NCHW
and with channels-last activations, 2 threads each (``--threads``), in one process, interleaved;
medians of ``--reps`` timed runs.  Also the per-call time of a cached plan on a
tiny convolution.  Run: ``python benchmarks/onednn_passes.py [--reps 15] [--json F]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np
import torch

from convgrad.ops import ConvSpec, onednn

# id: (x shape, w shape (torch layout), stride, padding, dilation, groups, transposed)
WORKLOADS = {
    "W1": ((8, 64, 56, 56), (64, 64, 3, 3), 1, 1, 1, 1, False),
    "W2": ((8, 256, 28, 28), (64, 256, 1, 1), 1, 0, 1, 1, False),
    "W3": ((8, 3, 224, 224), (64, 3, 7, 7), 2, 3, 1, 1, False),
    "W4": ((8, 128, 56, 56), (128, 1, 3, 3), 1, 1, 1, 128, False),
    "W5": ((8, 64, 32, 32), (64, 32, 4, 4), 2, 1, 1, 1, True),
    "W6": ((2, 16, 32, 32, 32), (16, 16, 3, 3, 3), 1, 1, 1, 1, False),
    "W7": ((16, 64, 4096), (64, 64, 5), 1, 4, 2, 1, False),
    "W8": ((8, 128, 28, 28), (128, 16, 3, 3), 1, 1, 1, 8, False),
}
PASSES = ("forward", "input_grad", "weight_grad")


def _cl(a: np.ndarray) -> np.ndarray:
    perm = (0, *range(2, a.ndim), 1)
    return np.ascontiguousarray(a.transpose(perm)).transpose(np.argsort(perm))


def _torch_format(nd: int):
    return {1: torch.contiguous_format, 2: torch.channels_last,
            3: torch.channels_last_3d}[nd]


def cases(wid: str, cl: bool):
    """(pass, convgrad callable, torch callable, flops, plan) for one workload and layout."""
    x_shape, w_shape, s, p, d, g, transposed = WORKLOADS[wid]
    nd = len(x_shape) - 2
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    spec = ConvSpec((s,) * nd, ((p, p),) * nd, (d,) * nd, (1,) * nd, g)
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    if cl and nd > 1:
        tx = tx.contiguous(memory_format=_torch_format(nd))
    kw = dict(stride=s, padding=p, dilation=d, groups=g)
    conv = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d,
            3: torch.nn.functional.conv3d}[nd]
    if transposed:
        ty = torch.nn.functional.conv_transpose2d(tx, tw, **kw)
        out_c = w_shape[1] * g
    else:
        ty = conv(tx, tw, **kw)
        out_c = w_shape[0]
    gy = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    tgy = torch.from_numpy(gy)
    if cl and nd > 1:
        tgy = tgy.contiguous(memory_format=_torch_format(nd))
    lay = _cl if cl else (lambda a: a)
    xc, gyc = lay(x), lay(gy)
    flops = 2 * int(np.prod(gy.shape if not transposed else x.shape)) * int(np.prod(w_shape[1:]))

    def torch_bwd(mask):
        return lambda: torch.ops.aten.convolution_backward(
            tgy, tx, tw, [out_c], [s] * nd, [p] * nd, [d] * nd, transposed, [0] * nd, g, mask)

    torch_fwd = ((lambda: torch.nn.functional.conv_transpose2d(tx, tw, **kw)) if transposed
                 else (lambda: conv(tx, tw, **kw)))
    torch_calls = {"forward": torch_fwd, "input_grad": torch_bwd([True, False, False]),
                   "weight_grad": torch_bwd([False, True, not transposed])}
    # convgrad: a transposed convolution's passes are the forward convolution's, swapped
    if transposed:
        ours = {"forward": ("input_grad", xc, w, gy.shape, False),
                "input_grad": ("forward", gyc, w, x.shape, False),
                "weight_grad": ("weight_grad", gyc, xc, w.shape, False)}  # bias: a sum of gy
    else:
        ours = {"forward": ("forward", xc, w, gy.shape, False),
                "input_grad": ("input_grad", gyc, w, x.shape, False),
                "weight_grad": ("weight_grad", xc, gyc, w.shape, True)}
    for name in PASSES:
        op, lhs, rhs, out_shape, bias = ours[name]
        out = np.empty(out_shape, np.float32)
        if cl and op != "weight_grad":
            out = _cl(out)
        plan = onednn.plan_for(op, lhs, rhs, out, spec, bias=bias)
        if plan is None:
            raise RuntimeError(f"{wid} {name}: " + str(onednn.reason(
                op, lhs.shape, rhs.shape, out.shape, spec,
                strides=(lhs.strides, rhs.strides, out.strides), bias=bias)))
        gb = np.empty(out_c, np.float32) if bias else None
        yield (name, (lambda plan=plan, lhs=lhs, rhs=rhs, out=out, gb=gb:
                      plan.run(lhs, rhs, out, bias_grad_out=gb)),
               torch_calls[name], flops, plan)


def interleaved(a, b, reps: int, warmup: int = 2) -> tuple[float, float]:
    for _ in range(warmup):
        a()
        b()
    ta, tb = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        a()
        t1 = time.perf_counter()
        b()
        t2 = time.perf_counter()
        ta.append(t1 - t0)
        tb.append(t2 - t1)
    return statistics.median(ta), statistics.median(tb)


def overhead(reps: int = 2000) -> dict:
    """Per-call microseconds of a cached plan and of torch on a tiny convolution."""
    x = np.ones((1, 4, 8, 8), np.float32)
    w = np.ones((4, 4, 3, 3), np.float32)
    y = np.empty_like(x)
    spec = ConvSpec((1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1))
    plan = onednn.plan_for("forward", x, w, y, spec)
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    out = {}
    for name, f in (("plan.run", lambda: plan.run(x, w, y)),
                    ("plan_for+run", lambda: onednn.plan_for("forward", x, w, y, spec).run(
                        x, w, y)),
                    ("torch conv2d", lambda: torch.nn.functional.conv2d(tx, tw, padding=1))):
        for _ in range(100):
            f()
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(reps):
                f()
            best.append((time.perf_counter() - t0) / reps * 1e6)
        out[name] = min(best)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--json", default="")
    ap.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    args = ap.parse_args()
    os.environ["CONVGRAD_NUM_THREADS"] = str(args.threads)
    torch.set_num_threads(args.threads)
    print(f"load: {os.getloadavg()}, oneDNN {onednn.available()}, torch {torch.__version__}")
    rows = []
    for wid in args.only.split(","):
        for cl in (False, True):
            for name, ours, theirs, flops, plan in cases(wid, cl):
                a, b = interleaved(ours, theirs, args.reps)
                rows.append(dict(workload=wid, layout="channels_last" if cl else "nchw",
                                 pass_name=name, ms=a * 1e3, torch_ms=b * 1e3, ratio=a / b,
                                 gflops=flops / a / 1e9, impl=plan.name,
                                 reorders=list(plan.reorders)))
                r = rows[-1]
                print(f"{wid} {r['layout']:13s} {name:11s} {r['ms']:8.2f} ms  torch "
                      f"{r['torch_ms']:8.2f} ms  ratio {r['ratio']:5.2f}  "
                      f"{r['gflops']:6.1f} GFLOP/s  {plan.name} reorders={plan.reorders}",
                      flush=True)
    over = overhead()
    print("per call (us):", {k: round(v, 1) for k, v in over.items()})
    print(f"load: {os.getloadavg()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "overhead_us": over}, f, indent=1)


if __name__ == "__main__":
    main()
