"""N6: DCGAN at 64x64 (the PyTorch example's generator and discriminator), one
discriminator step (real + fake) and one generator step, BCE, Adam.

The model is a container of the two networks, ``G`` and ``D``, so that one state dict
and one list of parameter names cover both.  A step is the PyTorch example's: the
generator draws ``fake`` once; D learns on real (label 1) and ``fake.detach()``
(label 0); G learns through D on ``fake`` (label 1); each network's gradients are
zeroed before its own step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["define", "init_weights", "gan_step", "optimizer"]


def define(nn: Any, cat: Any) -> Any:
    class Generator(nn.Module):
        def __init__(self, nz: int, ngf: int) -> None:
            super().__init__()
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8),
                nn.ReLU(),
                nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf * 4), nn.ReLU(),
                nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf * 2), nn.ReLU(),
                nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf),
                nn.ReLU(),
                nn.ConvTranspose2d(ngf, 3, 4, 2, 1, bias=False), nn.Tanh())

        def forward(self, z: Any) -> Any:
            return self.main(z)

    class Discriminator(nn.Module):
        def __init__(self, ndf: int) -> None:
            super().__init__()
            self.main = nn.Sequential(
                nn.Conv2d(3, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2),
                nn.LeakyReLU(0.2),
                nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4),
                nn.LeakyReLU(0.2),
                nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8),
                nn.LeakyReLU(0.2),
                nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid())

        def forward(self, x: Any) -> Any:
            return self.main(x).flatten()

    class DCGAN(nn.Module):
        def __init__(self, nz: int = 100, ngf: int = 64, ndf: int = 64, **_: Any) -> None:
            super().__init__()
            self.G = Generator(nz, ngf)
            self.D = Discriminator(ndf)

    return DCGAN


def init_weights(state: dict, rng: np.random.Generator) -> dict:
    """The example's ``weights_init``: convolutions N(0, 0.02), BatchNorm weight
    N(1, 0.02) and bias 0 (BatchNorm layers are the ones with a running mean)."""
    out = dict(state)
    bn = {k.rsplit(".", 1)[0] for k in state if k.endswith("running_mean")}
    for k, v in state.items():
        layer, leaf = k.rsplit(".", 1)
        if leaf == "weight":
            mean = 1.0 if layer in bn else 0.0
            out[k] = rng.normal(mean, 0.02, v.shape).astype(v.dtype)
        elif leaf == "bias" and layer in bn:
            out[k] = np.zeros_like(v)
    return out


def optimizer(lib: Any, params: Any, kw: dict) -> Any:
    return lib.optim.Adam(params, lr=kw["lr"], betas=tuple(kw["betas"]))


def gan_step(lib: Any, model: Any, real: Any, z: Any, kw: dict, wrap: Any) -> tuple:
    """(run, grads): ``run()`` takes one D and one G step and returns
    ``{"loss": errD, "loss_g": errG}``; ``grads()`` each parameter's gradient of its
    own network's step (D's from the D step, kept by the first run)."""
    G, D = wrap(model.G), wrap(model.D)
    opt_d = optimizer(lib, model.D.parameters(), kw)
    opt_g = optimizer(lib, model.G.parameters(), kw)
    bce = lib.nn.BCELoss()
    n = real.shape[0]
    ones, zeros = lib.ones(n), lib.zeros(n)
    d_named = list(model.D.named_parameters())
    kept: dict = {"on": True}

    def run() -> dict:
        opt_d.zero_grad()
        fake = G(z)
        err_d = bce(D(real), ones) + bce(D(fake.detach()), zeros)
        err_d.backward()
        if kept["on"]:  # the first run only: D's gradients before the G step adds to them
            kept["on"] = False
            kept["D"] = {f"D.{k}": lib.tensor(_np(p.grad)) for k, p in d_named}
        opt_d.step()
        opt_g.zero_grad()
        err_g = bce(D(fake), ones)
        err_g.backward()
        opt_g.step()
        return {"loss": err_d, "loss_g": err_g}

    def grads() -> dict:
        out = {f"G.{k}": p.grad for k, p in model.G.named_parameters()}
        out.update(kept.get("D", {}))
        return out

    return run, grads


def _np(t: Any) -> np.ndarray:
    return np.array(t.detach().numpy() if hasattr(t, "detach") else t.data)
