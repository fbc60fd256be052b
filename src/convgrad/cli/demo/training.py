"""``convgrad demo``: a convolutional denoising autoencoder trained on real photographs.

The model (:class:`DenoisingAutoencoder`) has a strided ``Conv2d`` encoder (1/2, then
1/4 resolution) and a ``ConvTranspose2d`` decoder back to full resolution, with a skip
connection at 1/2 resolution; it predicts a correction that is added to the noisy
input (residual learning).  It trains on random gray crops of photographs bundled
with scikit-image (:data:`convgrad.cli.images.BUNDLED_TRAINING`; ``camera`` is held out),
with Gaussian noise of sigma :data:`NOISE_SIGMA`, on the loss
``0.84 * (1 - MS-SSIM) + 0.16 * L1`` (Zhao et al., "Loss Functions for Image
Restoration with Neural Networks"), with Adam and a cosine learning-rate decay.

Crop size and window: MS-SSIM's five scales need the smaller side to exceed
``(win_size - 1) * 16``: 160 pixels with the standard 11-tap window, which would make
every step about three times as expensive.  The training loss therefore uses
``win_size=5`` (sigma 1.5, the window pytorch-msssim also allows) on 96 x 96 crops
(96 > 64; the coarsest scale is 6 x 6).  The held-out evaluation uses the standard
11-tap MS-SSIM on the 512 x 512 image.

``train`` holds the whole computation and returns a :class:`DemoResult`;
:mod:`.command` adds the printing, the figure and the weights file.  Everything random
comes from one ``numpy.random.Generator`` seeded by ``seed``: a run is repeatable.

Threads: the demo's convolutions are small (a 96 x 96 crop at 32 channels), so a second
thread gains little, and when the cores are shared with other work the threads'
synchronisation makes every step many times slower (about 2 s instead of 0.1 s per
step, measured on a busy 2-core machine).  ``train`` therefore runs single-threaded:
BLAS and OpenMP through ``threadpoolctl`` and Numba's parallel loops through
``numba.set_num_threads``, each only when installed, restored afterwards.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import nn
from ...autograd import no_grad
from ...functional.loss import l1_loss
from ...metrics import ms_ssim, psnr
from ...ops.profiler import Profiler, profile
from ...optim import Adam
from ...tensor import Tensor, tensor

__all__ = ["DemoResult", "DenoisingAutoencoder", "DEFAULT_STEPS", "demo_loss", "evaluate",
           "make_batch", "train"]

DEFAULT_STEPS = 600
CROP = 96
BATCH = 8
WIN_SIZE = 5  # the training loss's MS-SSIM window (see the module docstring)
NOISE_SIGMA = 0.1
LEARNING_RATE = 2e-3
CHANNELS = 32


class DenoisingAutoencoder(nn.Module):
    """Strided-conv encoder, transposed-conv decoder, output = input + predicted correction.

    ``enc1``: 3x3 stride 2 (1 -> C), ``enc2``: 3x3 stride 2 (C -> 2C), ``dec1``: 4x4
    stride 2 transposed (2C -> C, added to ``enc1``'s features), ``dec2``: 4x4 stride 2
    transposed (C -> 1).  Image sides must be multiples of 4.
    """

    def __init__(self, channels: int = CHANNELS, rng: Any = None) -> None:
        super().__init__()
        c = channels
        self.enc1 = nn.Conv2d(1, c, 3, stride=2, padding=1, rng=rng)
        self.enc2 = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1, rng=rng)
        self.dec1 = nn.ConvTranspose2d(2 * c, c, 4, stride=2, padding=1, rng=rng)
        self.dec2 = nn.ConvTranspose2d(c, 1, 4, stride=2, padding=1, rng=rng)

    def forward(self, x: Any) -> Tensor:
        if x.shape[-1] % 4 or x.shape[-2] % 4:
            raise ValueError(f"DenoisingAutoencoder: image sides {x.shape[-2:]} must be "
                             "multiples of 4")
        h1 = self.enc1(x).relu()
        h2 = self.enc2(h1).relu()
        u = self.dec1(h2).relu() + h1
        return x + self.dec2(u)


def demo_loss(out: Tensor, clean: Any) -> Tensor:
    """``0.84 * (1 - MS-SSIM) + 0.16 * L1`` with the training window (``WIN_SIZE``)."""
    clean = tensor(clean) if not isinstance(clean, Tensor) else clean
    return 0.84 * (1 - ms_ssim(out, clean, data_range=1.0, win_size=WIN_SIZE)) \
        + 0.16 * l1_loss(out, clean)


def make_batch(images: Sequence[np.ndarray], rng: np.random.Generator, batch: int = BATCH,
               crop: int = CROP, sigma: float = NOISE_SIGMA) -> tuple[np.ndarray, np.ndarray]:
    """(clean, noisy) float32 arrays (batch, 1, crop, crop): random crops, random flips.

    ``noisy`` is ``clean`` plus Gaussian noise of std ``sigma`` (not clipped).
    """
    clean = np.empty((batch, 1, crop, crop), np.float32)
    for k in range(batch):
        img = images[rng.integers(len(images))]
        i = rng.integers(img.shape[0] - crop + 1)
        j = rng.integers(img.shape[1] - crop + 1)
        patch = img[i:i + crop, j:j + crop]
        clean[k, 0] = patch[:, ::-1] if rng.random() < 0.5 else patch
    noisy = clean + np.float32(sigma) * rng.standard_normal(clean.shape, dtype=np.float32)
    return clean, noisy


@dataclass
class DemoResult:
    """Everything one demo run produced (see :func:`train`)."""

    model: DenoisingAutoencoder
    losses: list[float]
    seconds: float
    clean: np.ndarray
    noisy: np.ndarray
    denoised: np.ndarray
    psnr_noisy: float
    psnr_denoised: float
    msssim_noisy: float
    msssim_denoised: float
    step_profile: Profiler = field(repr=False)
    trainable_conv_layers: int = 0
    image_names: list[str] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return len(self.losses)

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else float("inf")


def evaluate(model: nn.Module, clean: np.ndarray, rng: np.random.Generator,
             sigma: float = NOISE_SIGMA) -> dict[str, Any]:
    """Denoise ``clean`` + noise with ``model``; PSNR and MS-SSIM (win 11) before and after.

    The image is cropped to multiples of 4 (the model's stride).  The model sees the
    noisy image as in training (not clipped); the noisy image reported and scored is
    clipped to [0, 1], which only improves its scores, and so is the model's output.
    """
    h, w = clean.shape[0] // 4 * 4, clean.shape[1] // 4 * 4
    clean = clean[:h, :w][None, None]
    raw = clean + np.float32(sigma) * rng.standard_normal(clean.shape, dtype=np.float32)
    was_training = model.training
    model.eval()
    with no_grad():
        denoised = np.clip(model(tensor(raw)).data, 0, 1)
    model.train(was_training)
    noisy = np.clip(raw, 0, 1)
    return dict(clean=clean[0, 0], noisy=noisy[0, 0], denoised=denoised[0, 0],
                psnr_noisy=psnr(noisy, clean).item(), psnr_denoised=psnr(denoised, clean).item(),
                msssim_noisy=ms_ssim(noisy, clean).item(),
                msssim_denoised=ms_ssim(denoised, clean).item())


def _training_images(images: str | None) -> list[tuple[str, np.ndarray]]:
    from ..images import bundled_images, load_folder

    return bundled_images() if images is None else load_folder(images, CROP)


def train(steps: int | None = None, seed: int = 0, images: str | None = None,
          progress: bool = True, on_step: Callable[[int, float], None] | None = None
          ) -> DemoResult:
    """Train the autoencoder for ``steps`` Adam steps and evaluate it on ``camera``.

    ``images``: a folder of pictures to train on instead of the bundled photographs.
    ``progress``: show a tqdm bar (loss and steps/s) on stderr.  The last step runs
    inside ``cg.profile()``; its profile is ``result.step_profile``.
    """
    steps = DEFAULT_STEPS if steps is None else steps
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"train: steps={steps!r} must be a positive int")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"train: seed={seed!r} must be an int")
    named = _training_images(images)
    with _one_thread():
        return _train(steps, seed, named, progress, on_step)


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """One BLAS/OpenMP thread and one Numba thread (see the module docstring), if installed."""
    with contextlib.ExitStack() as stack:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - an optional dependency
            pass
        else:
            stack.enter_context(threadpool_limits(limits=1))
        try:
            import numba
        except ImportError:  # pragma: no cover - an optional dependency
            pass
        else:
            before = numba.get_num_threads()
            numba.set_num_threads(1)
            stack.callback(numba.set_num_threads, before)
        yield


def _train(steps: int, seed: int, named: list[tuple[str, np.ndarray]], progress: bool,
           on_step: Callable[[int, float], None] | None) -> DemoResult:
    from ..images import held_out_image

    pictures = [img for _, img in named]
    rng = np.random.default_rng(seed)
    model = DenoisingAutoencoder(rng=rng)
    optimizer = Adam(model.parameters(), lr=LEARNING_RATE)
    losses: list[float] = []
    bar = _progress_bar(steps, progress)
    prof = None
    start = time.perf_counter()
    try:
        for step in range(steps):
            for group in optimizer.param_groups:  # cosine decay: a calm last iterate
                group["lr"] = LEARNING_RATE * 0.5 * (1 + math.cos(math.pi * step / steps))
            clean, noisy = make_batch(pictures, rng)
            if step == steps - 1:
                with profile() as prof:
                    loss = _train_step(model, optimizer, clean, noisy)
            else:
                loss = _train_step(model, optimizer, clean, noisy)
            losses.append(loss)
            if bar is not None:
                bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
                bar.update(1)
            if on_step is not None:
                on_step(step, loss)
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - start
    metrics = evaluate(model, held_out_image(), np.random.default_rng([seed, 1]))
    convs = sum(1 for m in model.modules() if isinstance(m, nn.Conv2d | nn.ConvTranspose2d)
                and m.weight.requires_grad)
    return DemoResult(model=model, losses=losses, seconds=seconds, step_profile=prof,
                      trainable_conv_layers=convs, image_names=[n for n, _ in named], **metrics)


def _train_step(model: nn.Module, optimizer: Adam, clean: np.ndarray, noisy: np.ndarray
                ) -> float:
    loss = demo_loss(model(tensor(noisy)), clean)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def _progress_bar(steps: int, progress: bool) -> Any:
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=steps, desc="training", unit="step", file=sys.stderr, dynamic_ncols=True)
