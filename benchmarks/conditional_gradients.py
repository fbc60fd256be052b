"""Issue-3 report: what conditional gradients save, and the engine's own overhead.

1. An MS-SSIM-shaped loss (11x11 Gaussian window, groups = channels, five scales,
   inputs (4, 3, 256, 256), float32) forward + backward with the window constant
   versus the same loss with the window requiring grad; the profiler table of each.
2. A chain of 1,000 tiny elementwise operations, forward + backward, against PyTorch
   eager.
Same process, interleaved runs, medians.  Run: ``python benchmarks/conditional_gradients.py``.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import convgrad as cg
import convgrad.functional as F


def gaussian_window(size: int = 11, sigma: float = 1.5) -> np.ndarray:
    g = np.exp(-((np.arange(size) - size // 2) ** 2) / (2 * sigma**2))
    g /= g.sum()
    return np.outer(g, g).astype(np.float32)


def msssim_shaped_loss(x, y, window) -> cg.Tensor:
    """Five scales of SSIM-style filtering with one (C, 1, 11, 11) window."""
    c = x.shape[1]
    total = None
    for scale in range(5):
        mu_x = F.conv2d(x, window, groups=c)
        mu_y = F.conv2d(y, window, groups=c)
        sxx = F.conv2d(x * x, window, groups=c) - mu_x * mu_x
        syy = F.conv2d(y * y, window, groups=c) - mu_y * mu_y
        sxy = F.conv2d(x * y, window, groups=c) - mu_x * mu_y
        cs = ((2 * sxy + 9e-4) / (sxx + syy + 9e-4)).mean()
        total = cs if total is None else total * cs
        if scale < 4:
            x, y = F.avg_pool2d(x, 2), F.avg_pool2d(y, 2)
    return 1 - total


def interleaved(fns: dict, runs: int = 7) -> dict:
    times = {k: [] for k in fns}
    for f in fns.values():
        f()  # warm-up
    for _ in range(runs):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def window_case() -> None:
    rng = np.random.default_rng(0)
    xs = rng.random((4, 3, 256, 256), dtype=np.float32)
    ys = rng.random((4, 3, 256, 256), dtype=np.float32)
    win = np.broadcast_to(gaussian_window(), (3, 1, 11, 11)).copy()

    def step(window_requires_grad: bool):
        x = cg.tensor(xs, requires_grad=True)
        w = cg.tensor(win, requires_grad=window_requires_grad)
        msssim_shaped_loss(x, cg.tensor(ys), w).backward()

    med = interleaved({"window constant": lambda: step(False),
                       "window requires grad": lambda: step(True)})
    for k, v in med.items():
        print(f"{k:<22} forward+backward median {v * 1e3:8.1f} ms")
    ratio = med["window requires grad"] / med["window constant"]
    print(f"ratio requires-grad / constant: {ratio:.2f}")
    for flag in (False, True):
        with cg.profile() as prof:
            step(flag)
        print(f"\nprofile, window requires_grad={flag}:\n{prof.summary()}")


def engine_case(n_ops: int = 1000) -> None:
    import torch

    torch.set_num_threads(2)
    a0 = np.linspace(0.5, 1.5, 8, dtype=np.float32)

    def ours():
        x = cg.tensor(a0, requires_grad=True)
        y = x
        for i in range(n_ops):
            y = y * 1.0001 if i % 2 else y + 0.001
        y.sum().backward()

    def theirs():
        x = torch.tensor(a0, requires_grad=True)
        y = x
        for i in range(n_ops):
            y = y * 1.0001 if i % 2 else y + 0.001
        y.sum().backward()

    med = interleaved({"convgrad": ours, "torch": theirs}, runs=15)
    print(f"\n{n_ops} tiny elementwise ops, forward + backward: convgrad "
          f"{med['convgrad'] * 1e3:.2f} ms, torch eager {med['torch'] * 1e3:.2f} ms, "
          f"ratio {med['convgrad'] / med['torch']:.2f}")


if __name__ == "__main__":
    window_case()
    engine_case()
