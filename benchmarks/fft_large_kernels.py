"""F1-F4: large kernels, forward and both gradients, convgrad against torch, SciPy and JAX.

| F1 | conv2d, one channel, "same" | x (1,1,2048,2048), w (1,1,63,63) |
| F2 | conv3d, one channel, "same" | x (1,1,160,160,160), w (1,1,31,31,31) |
| F3 | depthwise conv2d 31x31, "same" | x (8,64,64,64), w (64,1,31,31), groups 64 |
| F4 | conv1d, long filter | x (8,4,65536), w (4,4,1023), padding 511 |

float32, 2 threads everywhere.  convgrad: each pass by its kernel (``convgrad.ops``), the
algorithm the dispatch point chooses; best of ``--reps`` after one warm-up.  SciPy: the
same three convolutions by ``scipy.signal.fftconvolve`` and ``oaconvolve`` (``axes``
for the batch and channels, channel sums after), ``scipy.fft.set_workers(2)``, the
better of the two per pass.  JAX: ``jax.scipy.signal.fftconvolve`` of the same
expression, jit-compiled, the forward alone and the forward with ``jax.vjp`` (both
gradients); its gradient time is the difference.  torch: ``torch.nn.functional`` and
``torch.nn.grad`` (its direct kernels), one run per pass (F1's forward alone takes
~30 s; two, the faster counting, for passes under 20 s), skipped with ``--no-torch``,
limited with ``--torch-passes forward``.
Run: ``python benchmarks/fft_large_kernels.py [--only F1,F3] [--reps 3] [--json F]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true "
                      "intra_op_parallelism_threads=2")

import numpy as np  # noqa: E402
import scipy.fft  # noqa: E402
import scipy.signal  # noqa: E402

import convgrad as cg  # noqa: E402
from convgrad.ops import ConvSpec, conv_forward, conv_input_grad, conv_weight_grad  # noqa: E402

CASES = {  # x shape, w shape, groups, padding per side
    "F1": ((1, 1, 2048, 2048), (1, 1, 63, 63), 1, 31),
    "F2": ((1, 1, 160, 160, 160), (1, 1, 31, 31, 31), 1, 15),
    "F3": ((8, 64, 64, 64), (64, 1, 31, 31), 64, 15),
    "F4": ((8, 4, 65536), (4, 4, 1023), 1, 511),
}
PASSES = ("forward", "input_grad", "weight_grad")
# torch runs a pass a second time (the faster counts) when its first run, which includes
# its one-off setup, took less than this
TORCH_RERUN_S = 20.0


def best(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def inputs(case: str):
    xs, ws, groups, pad = CASES[case]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs, dtype=np.float32)
    w = (rng.uniform(-1, 1, ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
    nd = len(xs) - 2
    spec = ConvSpec((1,) * nd, ((pad, pad),) * nd, (1,) * nd, (1,) * nd, groups)
    gy = rng.standard_normal(spec.output_shape(xs, ws), dtype=np.float32)
    return x, w, gy, spec


def convgrad_passes(x, w, gy, spec, reps):
    fns = {"forward": lambda: conv_forward(x, w, spec),
           "input_grad": lambda: conv_input_grad(gy, w, x.shape, spec),
           "weight_grad": lambda: conv_weight_grad(x, gy, w.shape, spec)}
    out = {}
    for name, fn in fns.items():
        with cg.profile() as prof:
            fn()
        out[name] = (best(fn, reps), prof.events[0].algorithm)
    return out


def array_passes(x, w, gy, pad, groups, conv, xp):
    """The three passes as FFT convolutions of ``conv`` (fftconvolve-like, with axes) on
    module ``xp`` (numpy or jax.numpy): depthwise by broadcasting over channels, dense
    channels by broadcasting over (C_out, C_in) and summing."""
    nd = x.ndim - 2
    axes = tuple(range(-nd, 0))
    flip = (Ellipsis, *(slice(None, None, -1),) * nd)
    xpad = xp.pad(x, ((0, 0), (0, 0), *((pad, pad),) * nd))
    if groups == x.shape[1]:  # depthwise (and one channel)
        wd = w[:, 0][None]

        def fwd():
            return conv(xpad, wd[flip], "valid", axes)

        def gx():
            return conv(xp.pad(gy, ((0, 0), (0, 0), *((pad, pad),) * nd)), wd, "valid", axes)

        def gw():
            return conv(xpad, gy[flip], "valid", axes).sum(0)[:, None]
    else:
        def fwd():
            return conv(xpad[:, None], w[None][flip], "valid", axes).sum(2)

        def gx():
            g = xp.pad(gy, ((0, 0), (0, 0), *((pad, pad),) * nd))
            return conv(g[:, :, None], w[None], "valid", axes).sum(1)

        def gw():
            return conv(xpad[:, None], gy[:, :, None][flip], "valid", axes).sum(0)
    return fwd, gx, gw


def scipy_passes(x, w, gy, spec, reps):
    pad, groups = spec.padding[0][0], spec.groups
    out = {}
    for method in ("fftconvolve", "oaconvolve"):
        conv = getattr(scipy.signal, method)
        fns = array_passes(x, w, gy, pad, groups, conv, np)
        with scipy.fft.set_workers(2):
            for name, fn in zip(PASSES, fns):
                t = best(fn, reps)
                if name not in out or t < out[name][0]:
                    out[name] = (t, method)
    return out


def jax_passes(x, w, gy, spec, reps):
    import jax
    import jax.numpy as jnp
    from jax.scipy.signal import fftconvolve

    pad, groups = spec.padding[0][0], spec.groups

    def conv(a, b, mode, axes):  # JAX's fftconvolve does not broadcast the other axes
        nd = len(axes)
        batch = jnp.broadcast_shapes(a.shape[:-nd], b.shape[:-nd])
        return fftconvolve(jnp.broadcast_to(a, batch + a.shape[-nd:]),
                           jnp.broadcast_to(b, batch + b.shape[-nd:]), mode, axes)

    def f(xx, ww):
        fwd, _, _ = array_passes(xx, ww, None, pad, groups, conv, jnp)
        return fwd()

    fwd = jax.jit(f)
    vjp = jax.jit(lambda xx, ww, g: jax.vjp(f, xx, ww)[1](g))
    xj, wj, gj = jnp.asarray(x), jnp.asarray(w), jnp.asarray(gy)
    t_fwd = best(lambda: fwd(xj, wj).block_until_ready(), reps)
    t_vjp = best(lambda: jax.block_until_ready(vjp(xj, wj, gj)), reps)
    return {"forward": t_fwd, "both_grads": t_vjp}


def torch_passes(x, w, gy, spec, passes=PASSES):
    import torch

    torch.set_num_threads(2)
    nd = x.ndim - 2
    conv = getattr(torch.nn.functional, f"conv{nd}d")
    grad = torch.nn.grad
    pad, groups = spec.padding[0][0], spec.groups
    tx, tw, tg = (torch.from_numpy(a) for a in (x, w, gy))
    fns = {"forward": lambda: conv(tx, tw, padding=pad, groups=groups),
           "input_grad": lambda: getattr(grad, f"conv{nd}d_input")(
               tx.shape, tw, tg, padding=pad, groups=groups),
           "weight_grad": lambda: getattr(grad, f"conv{nd}d_weight")(
               tx, tw.shape, tg, padding=pad, groups=groups)}
    out = {}
    for name in passes:
        runs = []
        while not runs or (len(runs) < 2 and runs[0] < TORCH_RERUN_S):
            t0 = time.perf_counter()
            fns[name]()
            runs.append(time.perf_counter() - t0)
        out[name] = min(runs)
        print(f"  torch {name}: {[round(r, 2) for r in runs]} s", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(CASES))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--torch-passes", default=",".join(PASSES),
                        help="the passes torch runs (one run each; its 3-D gradients are slow)")
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--json", default=None)
    a = parser.parse_args()
    results = {}
    for case in a.only.split(","):
        x, w, gy, spec = inputs(case)
        r = {"convgrad": convgrad_passes(x, w, gy, spec, a.reps),
             "scipy": scipy_passes(x, w, gy, spec, a.reps)}
        if not a.no_jax:
            r["jax"] = jax_passes(x, w, gy, spec, a.reps)
        if not a.no_torch:
            r["torch"] = torch_passes(x, w, gy, spec, a.torch_passes.split(","))
        results[case] = r
        for name in PASSES:
            t, algo = r["convgrad"][name]
            s, method = r["scipy"][name]
            line = f"{case} {name:11s} convgrad {t * 1e3:8.1f} ms ({algo})  scipy {s * 1e3:8.1f} " \
                   f"({method})"
            if name in r.get("torch", {}):
                line += f"  torch {r['torch'][name] * 1e3:9.0f} (one run)"
            print(line, flush=True)
        if "jax" in r:
            j = r["jax"]
            both = r["convgrad"]["input_grad"][0] + r["convgrad"]["weight_grad"][0]
            print(f"{case} jax forward {j['forward'] * 1e3:.1f} ms, both grads "
                  f"{(j['both_grads'] - j['forward']) * 1e3:.1f} ms (vjp incl. forward "
                  f"{j['both_grads'] * 1e3:.1f}); convgrad both grads {both * 1e3:.1f}",
                  flush=True)
        if a.json:  # after every case, so an interrupted run keeps what it measured
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
