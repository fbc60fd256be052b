"""Gradient penalty: a double-backward penalty through convolutions.

A small convolutional critic ``f`` is trained to tell noisy photograph patches (target
1) from clean ones (target 0) while keeping its input gradient small:

    loss = mean((f(x) - t)^2) + lam * mean_i ||d f(x_i) / d x_i||^2

The penalty's gradient with respect to the weights needs the derivative of a
derivative: ``cg.grad(f(x).sum(), x, create_graph=True)`` records the backward pass
(itself made of convolutions), and ``loss.backward()`` differentiates through it.  The
activations are ``tanh`` (a ReLU's second derivative is zero almost everywhere, which
would make the penalty's weight gradient trivial).

Run ``python examples/gradient_penalty.py --steps 100`` (or call ``main(steps=...)``).
"""

from __future__ import annotations

import argparse

import numpy as np

import convgrad as cg
from convgrad import nn

PATCH = 24
BATCH = 16
PENALTY_WEIGHT = 1.0
NOISE = 0.2
LEARNING_RATE = 1e-2


class Critic(nn.Module):
    """conv 3x3 -> tanh -> conv 3x3 stride 2 -> tanh -> conv 3x3 -> mean of squares: (N,).

    The mean of squared features is an energy: a natural detector of added noise.
    """

    def __init__(self, channels: int = 8, rng=None) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1, rng=rng), nn.Tanh(),
            nn.Conv2d(channels, channels, 3, stride=2, padding=1, rng=rng), nn.Tanh(),
            nn.Conv2d(channels, 1, 3, padding=1, rng=rng),
        )

    def forward(self, x):
        h = self.body(x)
        return (h * h).mean(dim=(1, 2, 3))


def gradient_penalty(model: nn.Module, x) -> cg.Tensor:
    """``mean_i ||d model(x)_i / d x_i||^2``, differentiable w.r.t. the model's weights."""
    x = cg.tensor(np.asarray(x), requires_grad=True) if not isinstance(x, cg.Tensor) else x
    if not x.requires_grad:
        x = x.detach().requires_grad_(True)
    (g,) = cg.grad(model(x).sum(), x, create_graph=True)  # samples are independent
    return (g * g).sum(dim=(1, 2, 3)).mean()


def make_batch(photo: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Half clean zero-mean patches (target 0), half the same with noise (target 1)."""
    h, w = photo.shape
    half = BATCH // 2
    ii, jj = rng.integers(0, h - PATCH, half), rng.integers(0, w - PATCH, half)
    clean = np.stack([photo[i:i + PATCH, j:j + PATCH] for i, j in zip(ii, jj)])[:, None]
    clean = clean - clean.mean(axis=(2, 3), keepdims=True)  # zero-mean patches
    noisy = clean + NOISE * rng.standard_normal(clean.shape).astype(np.float32)
    x = np.concatenate([clean, noisy]).astype(np.float32)
    t = np.concatenate([np.zeros(half), np.ones(half)]).astype(np.float32)
    return x, t


def load_photo() -> np.ndarray:
    from skimage import data

    return data.camera().astype(np.float32) / 255.0


def main(steps: int = 100, seed: int = 0, verbose: bool = True) -> dict:
    """Train the critic with the penalty; returns the fit and penalty histories."""
    rng = np.random.default_rng(seed)
    photo = load_photo()
    model = Critic(rng=rng)
    opt = cg.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    fits, penalties = [], []
    for step in range(steps):
        x, t = make_batch(photo, rng)
        pred = model(x)
        fit = ((pred - t) ** 2).mean()
        penalty = gradient_penalty(model, x)
        loss = fit + PENALTY_WEIGHT * penalty
        opt.zero_grad()
        loss.backward()
        opt.step()
        fits.append(fit.item())
        penalties.append(penalty.item())
        if verbose and (step % 20 == 0 or step == steps - 1):
            print(f"step {step:4d}  fit {fits[-1]:.4f}  penalty {penalties[-1]:.5f}")
    x, t = make_batch(photo, np.random.default_rng([seed, 1]))  # patches not trained on
    with cg.no_grad():
        accuracy = float(np.mean((model(x).data > 0.5) == (t > 0.5)))
    if verbose:
        print(f"held-out accuracy (noisy vs clean): {accuracy:.2f}")
    return dict(fits=fits, penalties=penalties, accuracy=accuracy, model=model)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args()
    main(steps=a.steps, seed=a.seed)
