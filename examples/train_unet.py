"""Train a small U-Net to denoise photographs, with checkpoints that resume exactly.

A PyTorch training script, written with convgrad: ``nn.Module`` layers (``Conv2d``,
``GroupNorm``, ``SiLU``, ``MaxPool2d``, bilinear ``Upsample``, skip connections joined
by ``cg.cat``), ``AdamW`` under a ``CosineAnnealingLR`` schedule, a ``Dataset`` of
random crops of the photographs bundled with scikit-image read through a shuffling
``DataLoader``, and ``cg.save`` / ``cg.load`` checkpoints of the model, the optimiser,
the scheduler, the counters and the random state.

The task: remove Gaussian noise of standard deviation ``--sigma`` from gray crops.
The network predicts the noise and subtracts it from its input (residual learning),
trained on the mean squared error.  ``camera`` is never trained on: at the end, a
noisy copy of it is denoised and scored (PSNR and MS-SSIM, before and after).

Every random draw (initial weights, the order of the crops, their positions, flips
and noise) comes from the library's generator, seeded by ``cg.manual_seed(--seed)``.
A checkpoint stores that generator's state at the start of the current epoch and the
step reached; ``--resume`` restores it and replays the epoch's first batches (they
are drawn again, not trained on), so a resumed run continues exactly as one that was
never interrupted.  ``--stop-at STEP`` ends a run early (after writing the
checkpoint), to split a long schedule over several sessions.

    python examples/train_unet.py                       # defaults: a few minutes on 2 cores
    python examples/train_unet.py --steps 40 --stop-at 20 --out runs/a
    python examples/train_unet.py --steps 40 --resume --out runs/a
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

import convgrad as cg
from convgrad import nn
from convgrad.cli.images import bundled_images, held_out_image
from convgrad.optim.lr_scheduler import CosineAnnealingLR
from convgrad.random import default_generator
from convgrad.utils.data import DataLoader, Dataset

GROUPS = 8  # GroupNorm groups in every block


# ----------------------------------------------------------------------------- the model
class DoubleConv(nn.Module):
    """(conv 3x3 -> GroupNorm -> SiLU) twice; the spatial size is kept."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False),
            nn.GroupNorm(GROUPS, out_channels), nn.SiLU(),
            nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False),
            nn.GroupNorm(GROUPS, out_channels), nn.SiLU(),
        )

    def forward(self, x):
        return self.block(x)


class Up(nn.Module):
    """Bilinear 2x upsampling, concatenation with the skip features, then a DoubleConv."""

    def __init__(self, in_channels: int, skip_channels: int, out_channels: int) -> None:
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.conv = DoubleConv(in_channels + skip_channels, out_channels)

    def forward(self, x, skip):
        return self.conv(cg.cat([self.up(x), skip], dim=1))


class UNet(nn.Module):
    """A U-Net of ``depth`` downsamplings: ``width * 2**k`` channels at 1/2**k resolution.

    The output is the input minus the predicted noise (the last convolution starts at
    zero, so training starts from the identity); image sides must be multiples of
    ``2**depth``.
    """

    def __init__(self, channels: int = 1, width: int = 16, depth: int = 2) -> None:
        super().__init__()
        if width % GROUPS:
            raise ValueError(f"UNet: width={width} must be a multiple of {GROUPS} (GroupNorm)")
        widths = [width * 2**k for k in range(depth + 1)]
        self.depth = depth
        self.inc = DoubleConv(channels, widths[0])
        self.pool = nn.MaxPool2d(2)
        self.down = nn.ModuleList(DoubleConv(widths[k], widths[k + 1]) for k in range(depth))
        self.up = nn.ModuleList(Up(widths[k + 1], widths[k], widths[k])
                                for k in reversed(range(depth)))
        self.head = nn.Conv2d(widths[0], channels, 1)
        nn.init.zeros_(self.head.weight)  # the untrained network is the identity
        nn.init.zeros_(self.head.bias)

    def forward(self, x):
        m = 2**self.depth
        if x.shape[-2] % m or x.shape[-1] % m:
            raise ValueError(f"UNet: image sides {tuple(x.shape[-2:])} must be multiples of {m}")
        h = self.inc(x)
        skips = []
        for down in self.down:
            skips.append(h)
            h = down(self.pool(h))
        for up, skip in zip(self.up, reversed(skips)):
            h = up(h, skip)
        return x - self.head(h)


# ----------------------------------------------------------------------------- the data
class NoisyCrops(Dataset):
    """``length`` random ``crop x crop`` patches of ``images``: (noisy, clean), (1, H, W) each.

    Sample ``i`` comes from image ``i % len(images)`` at a random position, flipped left to
    right half of the time, with Gaussian noise of std ``sigma`` (clipped to [0, 1], as a
    stored photograph would be).  The randomness is the library's generator.
    """

    def __init__(self, images, crop: int, sigma: float, length: int) -> None:
        small = [img.shape for img in images if min(img.shape) < crop]
        if small:
            raise ValueError(f"NoisyCrops: crop={crop} is larger than images of shape {small}")
        self.images, self.crop, self.sigma, self.length = images, crop, sigma, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int):
        rng = default_generator()
        img = self.images[i % len(self.images)]
        top = rng.integers(img.shape[0] - self.crop + 1)
        left = rng.integers(img.shape[1] - self.crop + 1)
        clean = img[top:top + self.crop, left:left + self.crop]
        if rng.random() < 0.5:
            clean = clean[:, ::-1]
        clean = np.ascontiguousarray(clean)[None]
        noise = rng.standard_normal(clean.shape, dtype=np.float32)
        noisy = np.clip(clean + np.float32(self.sigma) * noise, 0, 1)
        return noisy, clean


# ----------------------------------------------------------------------------- training
def evaluate(model: nn.Module, sigma: float, seed: int, size: int = 512) -> dict:
    """PSNR and MS-SSIM of the noisy and the denoised held-out ``camera``: its central
    ``size x size`` crop (512: the whole image)."""
    photo = held_out_image()
    top, left = (photo.shape[0] - size) // 2, (photo.shape[1] - size) // 2
    clean = photo[top:top + size, left:left + size][None, None]
    rng = np.random.default_rng(seed)  # its own stream: evaluating draws nothing in training
    noisy = np.clip(clean + np.float32(sigma) * rng.standard_normal(clean.shape,
                                                                     dtype=np.float32), 0, 1)
    model.eval()
    with cg.no_grad():
        denoised = model(cg.tensor(noisy)).clamp(0, 1).numpy()
    model.train()
    return dict(psnr_noisy=cg.metrics.psnr(noisy, clean).item(),
                psnr_denoised=cg.metrics.psnr(denoised, clean).item(),
                msssim_noisy=cg.metrics.ms_ssim(noisy, clean).item(),
                msssim_denoised=cg.metrics.ms_ssim(denoised, clean).item(),
                noisy=noisy[0, 0], denoised=denoised[0, 0], clean=clean[0, 0])


# the arguments that define a run: a checkpoint resumes only under the same ones
RUN_ARGS = ("steps", "batch_size", "crop", "epoch_steps", "lr", "weight_decay", "sigma",
            "width", "depth", "seed")


def save_checkpoint(path, model, optimizer, scheduler, step, epoch, rng_state, args) -> None:
    tmp = path + ".tmp"
    cg.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "scheduler": scheduler.state_dict(), "step": step, "epoch": epoch,
             "rng": rng_state, "args": {k: getattr(args, k) for k in RUN_ARGS}}, tmp)
    os.replace(tmp, path)  # a run killed while saving leaves the previous checkpoint intact


def check_run_args(state: dict, args, path: str) -> None:
    saved = state.get("args", {})
    changed = [f"--{k.replace('_', '-')} {saved[k]} (now {getattr(args, k)})"
               for k in RUN_ARGS if k in saved and saved[k] != getattr(args, k)]
    if changed:
        raise SystemExit(f"--resume: {path} was written with {', '.join(changed)}; resume with "
                         "the arguments of the interrupted run")


def progress_bar(loader, epoch: int, enabled: bool):
    if enabled:
        try:
            from tqdm import tqdm
        except ImportError:
            return loader
        return tqdm(loader, desc=f"epoch {epoch}", unit="step", leave=False, file=sys.stderr)
    return loader


def train(args) -> dict:
    os.makedirs(args.out, exist_ok=True)
    checkpoint = args.checkpoint or os.path.join(args.out, "checkpoint.npz")
    cg.manual_seed(args.seed)

    model = UNet(width=args.width, depth=args.depth)
    optimizer = cg.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scheduler = CosineAnnealingLR(optimizer, T_max=args.steps)
    criterion = nn.MSELoss()
    images = [img for _, img in bundled_images()]
    dataset = NoisyCrops(images, args.crop, args.sigma, args.epoch_steps * args.batch_size)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, drop_last=True)

    step, epoch = 0, 0
    if args.resume:
        state = cg.load(checkpoint)
        check_run_args(state, args, checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step, epoch = state["step"], state["epoch"]
        default_generator().bit_generator.state = state["rng"]
        print(f"resumed from {checkpoint} at step {step} (epoch {epoch})")
    n_params = sum(p.numel() for p in model.parameters())
    print(f"UNet(width={args.width}, depth={args.depth}): {n_params} parameters; "
          f"{len(images)} training photographs, {len(loader)} steps per epoch")

    stop = min(args.steps, args.stop_at or args.steps)
    losses, seconds = [], 0.0
    while step < stop:
        rng_state = default_generator().bit_generator.state  # the epoch's draws start here
        done = step - epoch * len(loader)  # batches of this epoch trained before a resume
        epoch_loss, n = 0.0, 0
        tic = time.perf_counter()
        bar = progress_bar(loader, epoch, not args.no_progress)
        for i, (noisy, clean) in enumerate(bar):
            if i < done:
                continue  # drawn again so the random stream advances as it did the first time
            t0 = time.perf_counter()
            loss = criterion(model(noisy), clean)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            seconds += time.perf_counter() - t0
            step += 1
            losses.append(loss.item())
            epoch_loss, n = epoch_loss + losses[-1], n + 1
            if bar is not loader:
                bar.set_postfix(loss=f"{loss:.5f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
            if step == stop:
                break
        if bar is not loader:
            bar.close()
        print(f"epoch {epoch:3d}  step {step:5d}/{args.steps}  "
              f"loss {epoch_loss / max(n, 1):.6f}  lr {scheduler.get_last_lr()[0]:.2e}  "
              f"{(time.perf_counter() - tic) / max(n, 1):.3f} s/step")
        if step - epoch * len(loader) == len(loader):  # the epoch is complete
            epoch += 1
            rng_state = default_generator().bit_generator.state
        save_checkpoint(checkpoint, model, optimizer, scheduler, step, epoch, rng_state, args)

    after = evaluate(model, args.sigma, args.seed + 1, args.eval_size)
    cg.save(model.state_dict(), os.path.join(args.out, "unet.npz"))
    per_step = seconds / len(losses) if losses else math.nan
    print(f"time per step: {per_step:.3f} s (forward, backward, update; {len(losses)} steps "
          f"this run, batch "
          f"{args.batch_size} x {args.crop}x{args.crop})")
    print(f"held-out camera, noisy:    PSNR {after['psnr_noisy']:.2f} dB  "
          f"MS-SSIM {after['msssim_noisy']:.4f}")
    print(f"held-out camera, denoised: PSNR {after['psnr_denoised']:.2f} dB  "
          f"MS-SSIM {after['msssim_denoised']:.4f}")
    return dict(model=model, losses=losses, seconds_per_step=per_step, step=step,
                checkpoint=checkpoint, **after)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--steps", type=int, default=300, help="optimiser steps of the schedule")
    p.add_argument("--batch-size", type=int, default=8, help="crops per step")
    p.add_argument("--crop", type=int, default=64, help="side of the training crops")
    p.add_argument("--epoch-steps", type=int, default=25, help="steps per epoch")
    p.add_argument("--lr", type=float, default=2e-3, help="initial learning rate")
    p.add_argument("--weight-decay", type=float, default=1e-4, help="AdamW's decoupled decay")
    p.add_argument("--sigma", type=float, default=0.1, help="noise std (images in [0, 1])")
    p.add_argument("--width", type=int, default=16, help="channels at full resolution")
    p.add_argument("--depth", type=int, default=2, help="downsamplings")
    p.add_argument("--eval-size", type=int, default=512,
                   help="side of the central crop of camera scored at the end (> 160)")
    p.add_argument("--seed", type=int, default=0, help="cg.manual_seed for the whole run")
    p.add_argument("--out", default="unet_denoising",
                   help="folder for the trained weights (unet.npz) and the checkpoint")
    p.add_argument("--checkpoint", metavar="PATH", default=None,
                   help="checkpoint written after each epoch; None: OUT/checkpoint.npz")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    p.add_argument("--stop-at", type=int, default=None,
                   help="end this run at this step, after writing the checkpoint")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    return p


def main(argv=None) -> dict:
    args = parser().parse_args(argv)
    for name in ("steps", "batch_size", "crop", "epoch_steps", "width", "depth"):
        if getattr(args, name) < 1:
            parser().error(f"--{name.replace('_', '-')}={getattr(args, name)} must be >= 1")
    if args.crop % 2**args.depth:
        parser().error(f"--crop={args.crop} must be a multiple of 2**depth = {2**args.depth}")
    if args.stop_at is not None and args.stop_at < 1:
        parser().error(f"--stop-at={args.stop_at} must be >= 1")
    if not 160 < args.eval_size <= 512 or args.eval_size % 2**args.depth:
        parser().error(f"--eval-size={args.eval_size} must be in 161..512 (MS-SSIM's five "
                       f"scales) and a multiple of 2**depth = {2**args.depth}")
    return train(args)


if __name__ == "__main__":
    main()
