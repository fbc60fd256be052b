"""What the dask path costs on an array that fits in memory: the W6 3-D convolution
(x (2, 16, 32, 32, 32), w (16, 16, 3, 3, 3), padding 1) and a larger one in float32.

Each pass (forward, input gradient, weight gradient) runs on the in-memory kernels and
on a ``dask.array`` of the same data split into 4 and 16 chunks along the spatial dims
(``.compute()`` on dask's threaded scheduler, graph building included), interleaved in
one process; medians of ``--reps`` timed runs after one warm-up.  The results are
checked against the in-memory ones.  Run: ``python benchmarks/dask_overhead.py
[--reps 7] [--json F]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import dask
import dask.array as da
import numpy as np

from convgrad.ops import ConvSpec, conv_forward, conv_input_grad, conv_weight_grad

CASES = {  # name: (x shape, w shape)
    "W6": ((2, 16, 32, 32, 32), (16, 16, 3, 3, 3)),
    "W6x8": ((2, 16, 64, 64, 64), (16, 16, 3, 3, 3)),  # 8x the voxels
}
# spatial chunks: 4 = halves along D and H; 16 = halves along D, quarters along H, halves along W
SPLITS = {4: (2, 2, 1), 16: (2, 4, 2)}


def chunks(shape: tuple[int, ...], split: tuple[int, ...]) -> tuple:
    return (shape[0], shape[1], *(n // s for n, s in zip(shape[2:], split)))


def passes(x, w, gy, spec):
    """The three passes on ndarrays or dask arrays (computed)."""
    def done(a):
        return a.compute() if isinstance(a, da.Array) else a
    return {
        "forward": lambda: done(conv_forward(x, w, spec)),
        "input_grad": lambda: done(conv_input_grad(gy, w, x.shape, spec)),
        "weight_grad": lambda: done(conv_weight_grad(x, gy, w.shape, spec)),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--reps", type=int, default=7, help="timed runs per pass")
    p.add_argument("--json", default=None, help="write the medians to this file")
    a = p.parse_args()
    dask.config.set(scheduler="threads")
    rng = np.random.default_rng(0)
    out = {}
    for name, (x_shape, w_shape) in CASES.items():
        spec = ConvSpec((1, 1, 1), ((1, 1),) * 3, (1, 1, 1), (1, 1, 1))
        x = rng.standard_normal(x_shape, dtype=np.float32)
        w = rng.standard_normal(w_shape, dtype=np.float32)
        gy = rng.standard_normal(spec.output_shape(x.shape, w.shape, "bench"), dtype=np.float32)
        variants = {"memory": passes(x, w, gy, spec)}
        for n, split in SPLITS.items():
            xd = da.from_array(x, chunks=chunks(x.shape, split))
            gyd = da.from_array(gy, chunks=chunks(gy.shape, split))
            variants[f"dask {n} chunks"] = passes(xd, w, gyd, spec)
        for pass_name in ("forward", "input_grad", "weight_grad"):
            ref = variants["memory"][pass_name]()
            times: dict[str, list[float]] = {v: [] for v in variants}
            for v in variants:  # warm-up and agreement
                got = variants[v][pass_name]()
                err = np.abs(got - ref).max() / np.abs(ref).max()
                assert err < 1e-4, f"{name} {pass_name} {v}: relative error {err:.1e}"
            for _ in range(a.reps):
                for v in variants:
                    t0 = time.perf_counter()
                    variants[v][pass_name]()
                    times[v].append(time.perf_counter() - t0)
            med = {v: statistics.median(t) * 1e3 for v, t in times.items()}
            out[f"{name} {pass_name}"] = med
            row = "  ".join(f"{v} {m:7.2f} ms ({m / med['memory']:.2f}x)" for v, m in med.items())
            print(f"{name:5s} {pass_name:12s} {row}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
