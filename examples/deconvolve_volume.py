"""Out-of-core deconvolution: deblur a 3-D volume larger than any worker's memory on a
dask.distributed cluster.

A synthetic volume (spheres and filaments, default 800^3 float32 = 1.9 GiB) is blurred by
a known point-spread function (PSF) and corrupted by noise.  Two PSFs: ``widefield``
(the default), a non-separable model of a widefield microscope whose lateral Gaussian
spread grows with defocus, ``sigma(z) = sigma0 * sqrt(1 + (z / z_R)^2)`` over a 21 x 31 x
31 support, each plane carrying the same light; and ``gaussian``, a separable Gaussian
(three 1-D ``conv3d``).  The widefield PSF is one ``conv3d`` with a 20k-tap kernel,
which the dispatch point runs by FFT on every chunk (``convgrad.ops.fft``).

Two methods: gradient descent with momentum (``gd``) on the volume itself, minimising

    0.5 * ||psf * x - y||^2 + lam * sum sqrt(|grad x|^2 + eps^2)

(a data term through ``conv3d`` plus a smoothed total variation, whose finite
differences are a ``conv3d`` with a 2x2x2 difference kernel), and Richardson-Lucy
(``rl``): ``x <- x * psf^T (y / (psf * x))``, the maximum-likelihood iteration for
Poisson noise, whose transpose is the correlation with the flipped PSF.  Every array
is a dask array chunked in 3-D; each step is one lazy dask graph (for ``gd`` the loss
and its gradient), which the cluster evaluates chunk by chunk (each task reads its
chunk and the halo its taps need); the new estimate is persisted on the workers, which
spill to disk what does not fit.  Each step reports the bytes the workers spilled to
disk and read back, and the time that I/O takes at the disk's bandwidth (measured at
the start), the bound an out-of-core step cannot beat.  The default cluster is a
``LocalCluster`` of 4 workers with 768 MiB each: the volume is 2.5 times one worker's
limit, and the state of the descent (estimate, velocity, observation: 5.7 GiB) is twice
the cluster's 3 GiB.  A worker with NumPy, dask, convgrad and Numba's compiled loops
loaded takes about 250 MiB before any data, and dask pauses a worker at 80 % of its
limit, so limits much below 768 MiB leave little room for the tasks.  ``--scheduler
tcp://host:8786`` uses a running cluster.

Run ``python examples/deconvolve_volume.py --size 256 --steps 10`` for a quick look,
``--method rl`` for Richardson-Lucy, ``--psf gaussian`` for the separable PSF.
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
# the widefield PSF: in-focus lateral sigma, defocus at which it grows by sqrt(2), support
WIDEFIELD_SIGMA0 = 1.2  # voxels
WIDEFIELD_ZR = 3.0  # voxels
WIDEFIELD_SHAPE = (21, 31, 31)
RL_EPS = 1e-6  # Richardson-Lucy: the smallest blurred estimate divided by
RL_START = 1e-3  # added to the observation to start Richardson-Lucy: no voxel at zero,
# where the multiplicative update would keep it
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


def widefield_psf(shape: tuple = WIDEFIELD_SHAPE, sigma0: float = WIDEFIELD_SIGMA0,
                  z_r: float = WIDEFIELD_ZR) -> np.ndarray:
    """A non-separable widefield PSF (D, H, W): in each plane at defocus ``z`` a lateral
    Gaussian of sigma ``sigma0 * sqrt(1 + (z / z_r)^2)``, every plane holding the same
    light (so defocused planes are wider and dimmer); the whole sums to 1."""
    z, y, x = (np.arange(n) - n // 2 for n in shape)
    sigma = sigma0 * np.sqrt(1 + (z / z_r) ** 2)[:, None, None]
    r2 = (y[:, None] ** 2 + x[None, :] ** 2)[None]
    planes = np.exp(-r2 / (2 * sigma**2))
    planes /= planes.sum(axis=(1, 2), keepdims=True)
    return (planes / planes.sum()).astype(np.float32)


def blur(x: cg.Tensor, g: np.ndarray) -> cg.Tensor:
    """The PSF applied, zero beyond the volume: a 3-D ``g`` as one ``conv3d`` (FFT for
    large supports), a 1-D ``g`` as the separable Gaussian, one ``conv3d`` per dim."""
    if g.ndim == 3:
        return F.conv3d(x, g.astype(x.dtype)[None, None], padding=tuple(n // 2 for n in g.shape))
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


def blur_transposed(r: cg.Tensor, g: np.ndarray) -> cg.Tensor:
    """The transpose of :func:`blur` (odd supports): the correlation with the flipped PSF."""
    return blur(r, g[::-1, ::-1, ::-1].copy() if g.ndim == 3 else g[::-1].copy())


def richardson_lucy_step(x, observed, g: np.ndarray):
    """``x * psf^T (y / (psf * x))`` on arrays (dask or NumPy); ``observed`` >= 0."""
    with cg.no_grad():
        estimate = blur(cg.tensor(x), g).data
        ratio = observed / np.maximum(estimate, RL_EPS)
        return x * blur_transposed(cg.tensor(ratio), g).data


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


def disk_bandwidth(directory: str | None = None, nbytes: int = 256 * 2**20) -> tuple:
    """(write, read) bytes per second of the disk under ``directory`` (the temporary
    directory, where LocalCluster workers spill): a file written and fsync-ed, then read
    back after dropping it from the page cache."""
    import os
    import tempfile

    block = np.random.default_rng(0).bytes(16 * 2**20)
    fd, path = tempfile.mkstemp(dir=directory)
    try:
        t0 = time.perf_counter()
        for _ in range(nbytes // len(block)):
            os.write(fd, block)
        os.fsync(fd)
        write = nbytes / (time.perf_counter() - t0)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        t0 = time.perf_counter()
        with open(path, "rb", buffering=0) as f:
            while f.read(len(block)):
                pass
        read = nbytes / (time.perf_counter() - t0)
    finally:
        os.remove(path)
    return write, read


def _spill_counters(dask_worker) -> tuple:
    data = getattr(dask_worker, "data", None)
    m = getattr(data, "cumulative_metrics", {})
    return m.get(("disk-write", "bytes"), 0.0), m.get(("disk-read", "bytes"), 0.0)


def spilled(client) -> tuple:
    """(bytes written to disk, bytes read back) by every worker so far."""
    counts = client.run(_spill_counters).values()
    return sum(c[0] for c in counts), sum(c[1] for c in counts)


def deconvolve(size: int, chunk: int, steps: int, seed: int,
               log: Callable[[str], None], psf: str = "widefield", method: str = "gd",
               client=None) -> dict:
    """Blur, add noise, then run ``steps`` of gradient descent (``gd``) or
    Richardson-Lucy (``rl``); returns the history (loss per voxel or None, PSNR,
    seconds, bytes spilled and read back, their time at the disk's bandwidth), and the
    central slices of the truth, the observation and the estimate."""
    import dask
    import dask.array as da
    from distributed import wait

    if psf not in ("widefield", "gaussian"):
        raise ValueError(f"deconvolve: psf={psf!r} must be 'widefield' or 'gaussian'")
    if method not in ("gd", "rl"):
        raise ValueError(f"deconvolve: method={method!r} must be 'gd' or 'rl'")
    g = widefield_psf() if psf == "widefield" else psf_1d()
    truth = truth_volume(size, chunk, seed)
    with cg.no_grad():
        blurred = blur(cg.tensor(truth), g).data
    observed = da.map_blocks(_noise_block, seed, blurred, dtype=np.float32,
                             meta=np.empty((0,) * 5, np.float32))
    if method == "rl":  # Poisson's likelihood needs a non-negative observation
        observed = da.maximum(observed, 0)
    observed = observed.persist()  # the data: kept by the workers (on disk if need be)
    wait(observed)
    write_bw, read_bw = disk_bandwidth()
    x, v = observed, da.zeros_like(observed)
    if method == "rl":
        x = observed + RL_START
    start_psnr = float(psnr(observed, truth).compute())
    log(f"volume {size}^3 float32 ({observed.nbytes / 2**30:.2f} GiB), chunks {chunk}^3, "
        f"{psf} PSF {g.shape}, noise {NOISE}, {method}: PSNR of the observation "
        f"{start_psnr:.2f} dB; disk: write {write_bw / 2**20:.0f} MiB/s, read "
        f"{read_bw / 2**20:.0f} MiB/s")
    history = []
    for step in range(steps):
        before = spilled(client) if client is not None else (0.0, 0.0)
        t0 = time.perf_counter()
        if method == "gd":
            xt = cg.tensor(x + MOMENTUM * v, requires_grad=True)  # Nesterov's look-ahead
            loss = loss_fn(xt, observed, g)
            loss.backward()  # lazy: the gradient is another part of the same dask graph
            v = MOMENTUM * v - LR * xt.grad.data
            x = da.clip(x + v, 0.0, 1.0)
            x, v, loss_value, quality = dask.persist(x, v, loss.data, psnr(x, truth))
            wait([x, v])
            loss_value = float(loss_value.compute()) / observed.size
        else:
            x = richardson_lucy_step(x, observed, g)
            x, quality = dask.persist(x, psnr(x, truth))
            wait(x)
            loss_value = None
        quality = float(quality.compute())
        seconds = time.perf_counter() - t0
        after = spilled(client) if client is not None else (0.0, 0.0)
        wrote, read = after[0] - before[0], after[1] - before[1]
        io_s = wrote / write_bw + read / read_bw
        history.append((loss_value, quality, seconds, wrote, read, io_s))
        loss_text = "" if loss_value is None else f"loss/voxel {loss_value:.6f}  "
        log(f"step {step + 1:3d}  {loss_text}PSNR {quality:.2f} dB  ({seconds:.1f} s; "
            f"spilled {wrote / 2**20:.0f} MiB, read back {read / 2**20:.0f} MiB: "
            f"{io_s:.1f} s at the disk's bandwidth)")
    mid = size // 2
    slices = {name: dask.compute(a[0, 0, mid], a[0, 0, :, mid], a[0, 0, :, :, mid])
              for name, a in (("truth", truth), ("observed", observed), ("restored", x))}
    return dict(psnr_observed=start_psnr, history=history, slices=slices,
                disk_bandwidth=(write_bw, read_bw))


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
         png: str | None = "deconvolve_volume.png", verbose: bool = True,
         psf: str = "widefield", method: str = "gd") -> dict:
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
            result = deconvolve(size, chunk, steps, seed, log, psf, method, client)
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
    parser.add_argument("--psf", choices=("widefield", "gaussian"), default="widefield")
    parser.add_argument("--method", choices=("gd", "rl"), default="gd",
                        help="gradient descent or Richardson-Lucy")
    a = parser.parse_args()
    main(a.size, a.chunk, a.steps, a.workers, a.memory_limit, a.scheduler, a.seed, a.png,
         psf=a.psf, method=a.method)
