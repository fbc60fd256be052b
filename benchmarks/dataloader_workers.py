"""DataLoader(num_workers=k) against num_workers=0 on a Pillow-decoding dataset.

256 JPEG photographs of 768 x 768 (scikit-image's bundled images, tiled and cropped),
each decoded, resized to 384 x 384 with Pillow and made a float32 (3, H, W) array;
batches of 16.  Each configuration runs one whole epoch, interleaved, ``--reps`` times;
the medians are printed.  Usage: ``python benchmarks/dataloader_workers.py [--reps 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
from PIL import Image

import convgrad as cg
from convgrad.utils.data import DataLoader, Dataset


def make_images(folder: str, n: int = 256, side: int = 768) -> list[str]:
    from skimage import data

    sources = [data.astronaut(), data.chelsea(), data.coffee(), data.rocket()]
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        src = sources[i % len(sources)]
        tiled = np.tile(src, (3, 3, 1))
        y, x = rng.integers(0, tiled.shape[0] - side), rng.integers(0, tiled.shape[1] - side)
        path = os.path.join(folder, f"{i:04d}.jpg")
        Image.fromarray(tiled[y:y + side, x:x + side]).save(path, quality=90)
        paths.append(path)
    return paths


class Photos(Dataset):
    def __init__(self, paths: list[str], side: int = 384) -> None:
        self.paths, self.side = paths, side

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        with Image.open(self.paths[i]) as im:
            im = im.convert("RGB").resize((self.side, self.side), Image.BILINEAR)
            a = np.asarray(im, dtype=np.float32).transpose(2, 0, 1) / 255.0
        return cg.tensor(a), i % 10


def epoch(loader: DataLoader) -> float:
    t = time.perf_counter()
    for x, _labels in loader:
        assert x.shape[1:] == (3, 384, 384)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        ds = Photos(make_images(folder))
        loaders = {k: DataLoader(ds, batch_size=16, num_workers=k) for k in (0, 2)}
        times = {k: [] for k in loaders}
        for loader in loaders.values():  # warm-up: the page cache, imports
            epoch(loader)
        for _ in range(args.reps):
            for k, loader in loaders.items():
                times[k].append(epoch(loader))
    for k, ts in times.items():
        print(f"num_workers={k}: median {statistics.median(ts):.2f} s per epoch "
              f"(runs: {', '.join(f'{t:.2f}' for t in ts)})")
    print(f"ratio workers=2 / workers=0: "
          f"{statistics.median(times[2]) / statistics.median(times[0]):.2f}")


if __name__ == "__main__":
    main()
