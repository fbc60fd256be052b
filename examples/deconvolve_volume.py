"""Out-of-core deconvolution: deblur a 3-D volume larger than any worker's memory on a
dask.distributed cluster.

A synthetic volume (spheres and filaments, default 800^3 float32 = 1.9 GiB) is blurred by
a known Gaussian point-spread function (PSF) and corrupted by noise; we recover it by
gradient descent with momentum on the volume itself, minimising

    0.5 * ||psf * x - y||^2 + lam * sum sqrt(|grad x|^2 + eps^2)

(a data term through ``conv3d`` plus a smoothed total variation, whose finite
differences are a ``conv3d`` with a 2x2x2 difference kernel).  Every array is a dask
array chunked in 3-D; the loss and its gradient are one lazy dask graph per step, which
the cluster evaluates chunk by chunk (each task reads its chunk and the halo its taps
need); the new estimate is persisted on the workers, which spill to disk what does not
fit.  The default cluster is a ``LocalCluster`` of 4 workers with 768 MiB each: the volume
is 2.5 times one worker's limit, and the state of the descent (estimate,
velocity, observation: 5.7 GiB) is twice the cluster's 3 GiB.  A worker with NumPy,
dask, convgrad and Numba's compiled loops loaded takes about 250 MiB before any data,
and dask pauses a worker at 80 % of its limit, so limits much below 768 MiB leave
little room for the tasks.  ``--scheduler tcp://host:8786`` uses a running cluster.

Run ``python examples/deconvolve_volume.py --size 256 --steps 10`` for a quick look.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable

import numpy as np

import convgrad as cg
import convgrad.functional as F

PSF_SIGMA = 2.0  # voxels
NOISE = 0.02
TV_WEIGHT = 0.002
TV_EPS = 0.05
LR = 0.8
MOMENTUM = 0.9


# ----------------------------------------------------------------------------- the scene
def draw_scene(size: int, seed: int) -> dict:
    """Sphere centres/radii/intensities and filament segments, in voxel coordinates."""
    rng = np.random.default_rng(seed)
    scale = size / 100.0
    n_spheres = max(4, round(30 * scale**3))
    spheres = dict(
        centre=rng.uniform(0, size, (n_spheres, 3)),
        radius=rng.uniform(0.01, 0.035, n_spheres) * size + 1.5,
        value=rng.uniform(0.4, 1.0, n_spheres))
    n_filaments, n_steps = max(2, round(15 * scale**3)), 24
    # a filament: a chain of short segments whose direction turns a little at each step
    heading = rng.standard_normal((n_filaments, 1, 3)) + np.cumsum(
        0.3 * rng.standard_normal((n_filaments, n_steps, 3)), axis=1)
    heading /= np.linalg.norm(heading, axis=2, keepdims=True)
    start = rng.uniform(0, size, (n_filaments, 1, 3))
    points = np.concatenate([start, start + np.cumsum((0.012 * size + 1) * heading, axis=1)],
                            axis=1)
    return dict(spheres=spheres, a=points[:, :-1].reshape(-1, 3),
                b=points[:, 1:].reshape(-1, 3), thickness=0.004 * size + 1.0)


def render_block(scene: dict, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The volume over voxels [lo, hi) (3 ranges): the brightest object at each voxel,
    with a one-voxel soft edge."""
    out = np.zeros(tuple(hi - lo), np.float32)
    s = scene["spheres"]
    near = np.all((s["centre"] + s["radius"][:, None] > lo) &
                  (s["centre"] - s["radius"][:, None] < hi), axis=1)
    for c, r, v in zip(s["centre"][near], s["radius"][near], s["value"][near]):
        box0, box1 = np.maximum(np.floor(c - r), lo).astype(int), np.minimum(
            np.ceil(c + r) + 1, hi).astype(int)
        grid = np.ogrid[tuple(slice(a, b) for a, b in zip(box0, box1))]
        dist = np.sqrt(sum((g + 0.5 - ci) ** 2 for g, ci in zip(grid, c)))
        part = (v * np.clip(r - dist + 0.5, 0, 1)).astype(np.float32)
        view = out[tuple(slice(a - l0, b - l0) for a, b, l0 in zip(box0, box1, lo))]
        np.maximum(view, part, out=view)
    t = scene["thickness"]
    a, b = scene["a"], scene["b"]
    near = np.all((np.minimum(a, b) - t < hi) & (np.maximum(a, b) + t > lo), axis=1)
    for p, q in zip(a[near], b[near]):
        box0 = np.maximum(np.floor(np.minimum(p, q) - t), lo).astype(int)
        box1 = np.minimum(np.ceil(np.maximum(p, q) + t) + 1, hi).astype(int)
        if np.any(box1 <= box0):
            continue
        grid = np.stack(np.meshgrid(*(np.arange(x0, x1) + 0.5 for x0, x1 in zip(box0, box1)),
                                    indexing="ij"), axis=-1)
        d = q - p
        u = np.clip(((grid - p) @ d) / max(d @ d, 1e-12), 0, 1)
        dist = np.linalg.norm(grid - p - u[..., None] * d, axis=-1)
        part = (0.8 * np.clip(t - dist + 0.5, 0, 1)).astype(np.float32)
        view = out[tuple(slice(x0 - l0, x1 - l0) for x0, x1, l0 in zip(box0, box1, lo))]
        np.maximum(view, part, out=view)
    return out


def _truth_block(scene: dict, block_info=None) -> np.ndarray:
    (lo, hi) = np.array(block_info[None]["array-location"][2:]).T
    return render_block(scene, lo, hi)[None, None]


def _noise_block(seed: int, block, block_info=None) -> np.ndarray:
    rng = np.random.default_rng((seed, *block_info[None]["chunk-location"]))
    return block + NOISE * rng.standard_normal(block.shape, dtype=np.float32)


def truth_volume(size: int, chunk: int, seed: int):
    """The clean volume as a lazy dask array (1, 1, size, size, size), rendered per chunk."""
    import dask.array as da

    scene = draw_scene(size, seed)
    return da.map_blocks(_truth_block, scene, dtype=np.float32,
                         meta=np.empty((0,) * 5, np.float32),
                         chunks=((1,), (1,)) + ((chunk,) * (size // chunk)
                                                + ((size % chunk,) if size % chunk else ()),) * 3)


# ----------------------------------------------------------------------------- the model
def psf_1d(sigma: float = PSF_SIGMA) -> np.ndarray:
    """The normalised 1-D Gaussian; the PSF is its outer product over three dims."""
    r = np.arange(-int(3 * sigma), int(3 * sigma) + 1)
    g = np.exp(-(r**2) / (2 * sigma**2))
    return (g / g.sum()).astype(np.float32)


def blur(x: cg.Tensor, g: np.ndarray) -> cg.Tensor:
    """The separable Gaussian PSF, one ``conv3d`` per dim, zero beyond the volume."""
    k = g.size
    for shape, pad in (((k, 1, 1), (k // 2, 0, 0)), ((1, k, 1), (0, k // 2, 0)),
                       ((1, 1, k), (0, 0, k // 2))):
        x = F.conv3d(x, g.astype(x.dtype).reshape(1, 1, *shape), padding=pad)
    return x


def differences_kernel(dtype=np.float32) -> np.ndarray:
    """(3, 1, 2, 2, 2): forward differences along d, h and w at the cell's corner."""
    w = np.zeros((3, 1, 2, 2, 2), dtype)
    for axis in range(3):
        w[(axis, 0, 0, 0, 0)] = -1.0
        w[(axis, 0, *(1 if i == axis else 0 for i in range(3)))] = 1.0
    return w


def total_variation(x: cg.Tensor, eps: float = TV_EPS) -> cg.Tensor:
    """sum sqrt(dx^2 + dy^2 + dz^2 + eps^2) over the (size - 1)^3 cells."""
    d = F.conv3d(x, differences_kernel(x.dtype))
    return ((d * d).sum(dim=1) + eps * eps).sqrt().sum()


def loss_fn(x: cg.Tensor, observed, g: np.ndarray, lam: float = TV_WEIGHT) -> cg.Tensor:
    residual = blur(x, g) - observed
    return 0.5 * (residual * residual).sum() + lam * total_variation(x)


def psnr(x, truth):
    """10 log10(1 / mean((x - truth)^2)) as a lazy dask scalar (the range is [0, 1])."""
    return 10 * np.log10(1.0 / ((x - truth) ** 2).mean())


# ----------------------------------------------------------------------------- running
class PeakMemory:
    """Polls the scheduler's view of every worker: peak process memory and spilled bytes."""

    def __init__(self, client, every: float = 0.5) -> None:
        self.client, self.every = client, every
        self.peak: dict[str, int] = {}
        self.spilled = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            for addr, w in self.client.scheduler_info()["workers"].items():
                m = w["metrics"]
                self.peak[addr] = max(self.peak.get(addr, 0), m["memory"])
                self.spilled = max(self.spilled, m.get("spilled_bytes", {}).get("disk", 0))

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def deconvolve(size: int, chunk: int, steps: int, seed: int,
               log: Callable[[str], None]) -> dict:
    """Blur, add noise, then run ``steps`` of gradient descent; returns the history and
    the central slices of the truth, the observation and the estimate."""
    import dask
    import dask.array as da
    from distributed import wait

    g = psf_1d()
    truth = truth_volume(size, chunk, seed)
    with cg.no_grad():
        blurred = blur(cg.tensor(truth), g).data
    observed = da.map_blocks(_noise_block, seed, blurred, dtype=np.float32,
                             meta=np.empty((0,) * 5, np.float32))
    observed = observed.persist()  # the data: kept by the workers (on disk if need be)
    wait(observed)
    x, v = observed, da.zeros_like(observed)
    start_psnr = float(psnr(observed, truth).compute())
    log(f"volume {size}^3 float32 ({observed.nbytes / 2**30:.2f} GiB), chunks {chunk}^3, "
        f"PSF sigma {PSF_SIGMA}, noise {NOISE}: PSNR of the observation {start_psnr:.2f} dB")
    history = []
    for step in range(steps):
        t0 = time.perf_counter()
        xt = cg.tensor(x + MOMENTUM * v, requires_grad=True)  # Nesterov's look-ahead point
        loss = loss_fn(xt, observed, g)
        loss.backward()  # lazy: the gradient is another part of the same dask graph
        v = MOMENTUM * v - LR * xt.grad.data
        x = da.clip(x + v, 0.0, 1.0)
        x, v, loss_value, quality = dask.persist(x, v, loss.data, psnr(x, truth))
        wait([x, v])
        history.append((float(loss_value.compute()) / observed.size,
                        float(quality.compute()), time.perf_counter() - t0))
        log(f"step {step + 1:3d}  loss/voxel {history[-1][0]:.6f}  "
            f"PSNR {history[-1][1]:.2f} dB  ({history[-1][2]:.1f} s)")
    mid = size // 2
    slices = {name: dask.compute(a[0, 0, mid], a[0, 0, :, mid], a[0, 0, :, :, mid])
              for name, a in (("truth", truth), ("observed", observed), ("restored", x))}
    return dict(psnr_observed=start_psnr, history=history, slices=slices)


def save_slices(slices: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 3, figsize=(9, 9))
    for row, (name, planes) in enumerate(slices.items()):
        for col, (plane, label) in enumerate(zip(planes, ("z = mid", "y = mid", "x = mid"))):
            ax = axes[row, col]
            ax.imshow(plane, cmap="gray", vmin=0, vmax=1)
            ax.set_title(f"{name}, {label}", fontsize=9)
            ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(size: int = 800, chunk: int = 100, steps: int = 10, workers: int = 4,
         memory_limit: str = "768MiB", scheduler: str | None = None, seed: int = 0,
         png: str | None = "deconvolve_volume.png", verbose: bool = True) -> dict:
    """Run on a fresh LocalCluster (or the cluster at ``scheduler``); returns the PSNRs,
    the history, the wall time and the peak memory of each worker."""
    from distributed import Client, LocalCluster

    log = print if verbose else (lambda s: None)
    cluster = None if scheduler else LocalCluster(
        n_workers=workers, threads_per_worker=1, memory_limit=memory_limit,
        dashboard_address=None)
    with Client(scheduler or cluster) as client:
        log(f"cluster: {len(client.scheduler_info()['workers'])} workers, "
            f"{memory_limit if cluster else 'remote'} each")
        t0 = time.perf_counter()
        with PeakMemory(client) as mem:
            result = deconvolve(size, chunk, steps, seed, log)
        result["wall_s"] = time.perf_counter() - t0
        result["peak_worker_bytes"] = max(mem.peak.values(), default=0)
        result["spilled_bytes"] = mem.spilled
    if cluster is not None:
        cluster.close()
    if png:
        save_slices(result["slices"], png)
    log(f"PSNR {result['psnr_observed']:.2f} dB -> {result['history'][-1][1]:.2f} dB in "
        f"{result['wall_s']:.0f} s; peak worker memory "
        f"{result['peak_worker_bytes'] / 2**20:.0f} MiB, most spilled to disk "
        f"{result['spilled_bytes'] / 2**20:.0f} MiB" + (f"; slices in {png}" if png else ""))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=800, help="side of the cube (voxels)")
    parser.add_argument("--chunk", type=int, default=100, help="side of a chunk (voxels)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--memory-limit", default="768MiB", help="per worker")
    parser.add_argument("--scheduler", default=None, help="address of a running cluster")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--png", default="deconvolve_volume.png")
    a = parser.parse_args()
    main(a.size, a.chunk, a.steps, a.workers, a.memory_limit, a.scheduler, a.seed, a.png)
