"""The network workloads (N1-N6): one training step, in convgrad and in torch.

N1 and N2 are defined here; N3-N6, the real networks, in :mod:`.nets` (one module per
network, written once for both libraries); the functions below hand those over.

A step is ``zero_grad``, the loss of one batch, ``backward`` and one Adam update.
Both implementations start from the same weights (:func:`initial_params`, drawn by
convgrad's own initialisation) and see the same batch.  The first step of each is
the agreement check (:func:`check_step`), on what :func:`result_keys` lists, copied
right after that step:

- ``loss`` (at the initial weights): relative error <= the bench's tolerance;
- ``grad/<name>``, every parameter's gradient: relative 2-norm error
  <= :data:`GRAD_TOLERANCE`.  Looser than the single-convolution checks on purpose:
  a pre-activation within float32 rounding of zero may land on either side of a
  ReLU in two correct implementations, and its whole row of the backward pass then
  differs (measured: up to 2e-3 in N1 and N2 at small batches; a wrong gradient
  rule is off by far more);
- ``param/<name>``, every updated parameter, against ``torch.optim.Adam`` applied
  to convgrad's own gradients from the same initial weights: relative max-norm
  error <= the bench's tolerance.  Not against torch's updated parameters: Adam's
  first step is about ``lr * sign(grad)``, so a gradient entry within rounding of
  zero would move by ``2 * lr`` and swamp the comparison; this way the optimiser is
  checked exactly and the gradients once, above.

- N1 (``train_classifier``): :class:`Classifier`, cross-entropy on integer labels.
- N2 (``train_autoencoder``): the demo's :class:`DenoisingAutoencoder` and its loss
  ``0.84 * (1 - MS-SSIM(out, clean, win_size=5)) + 0.16 * L1(out, clean)``; the torch
  twin computes MS-SSIM with ``pytorch_msssim.ms_ssim``.

torch's models have the same module names, so parameter names match one to one.
torch and pytorch_msssim are imported inside the functions only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import nn
from ...tensor import Tensor
from .errors import max_rel_error, rel_l2_error
from .workloads import Inputs, Workload

__all__ = ["Classifier", "GRAD_TOLERANCE", "initial_params", "param_names", "loss_keys",
           "result_keys",
           "convgrad_step", "torch_step", "rel_l2_error", "torch_adam_step", "check_step"]

#: gradients agree when ||ours - theirs||_2 / ||theirs||_2 <= GRAD_TOLERANCE (see above)
GRAD_TOLERANCE = 1e-2

#: N1's convolutions: (C_in, C_out, stride), each 3x3 with padding 1 and followed by ReLU
CLASSIFIER_CONVS = ((3, 32, 1), (32, 64, 2), (64, 64, 1), (64, 64, 1), (64, 128, 2))


class Classifier(nn.Module):
    """N1: five 3x3 convolutions with ReLU, the mean over H and W, a linear layer."""

    def __init__(self, classes: int = 10, rng: Any = None) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for c_in, c_out, stride in CLASSIFIER_CONVS:
            layers += [nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, rng=rng), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(CLASSIFIER_CONVS[-1][1], classes, rng=rng)

    def forward(self, x: Any) -> Tensor:
        return self.fc(self.features(x).mean((2, 3)))


def _convgrad_model(w: Workload, rng: Any = None) -> nn.Module:
    if w.is_real_net:
        from .nets import model_class

        return model_class(w.op, "convgrad")(**w.kwargs)
    if w.op == "train_classifier":
        return Classifier(w.kwargs["classes"], rng=rng)
    from ..demo.training import DenoisingAutoencoder

    return DenoisingAutoencoder(w.kwargs["channels"], rng=rng)


def initial_params(w: Workload, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The network's initial weights (convgrad's initialisation drawn from ``rng``)."""
    if w.is_real_net:
        from .nets import initial_state

        return initial_state(w, rng)
    return dict(_convgrad_model(w, rng).state_dict())


def param_names(w: Workload) -> list[str]:
    return [name for name, _ in _convgrad_model(w, np.random.default_rng(0)).named_parameters()]


def loss_keys(w: Workload) -> tuple[str, ...]:
    """The losses a step reports (DCGAN: the discriminator's and the generator's)."""
    return ("loss", "loss_g") if w.op == "train_dcgan" else ("loss",)


def result_keys(w: Workload) -> tuple[str, ...]:
    names = param_names(w)
    return (*loss_keys(w), *(f"grad/{n}" for n in names), *(f"param/{n}" for n in names))


def convgrad_step(w: Workload, inp: Inputs) -> tuple[Any, Any]:
    """(run, to_numpy): ``run()`` takes one training step and returns the loss."""
    if w.is_real_net:
        from .nets import build_step

        return build_step(w, inp, "convgrad")
    import convgrad as cg
    from convgrad.functional import cross_entropy
    from convgrad.optim import Adam

    model = _convgrad_model(w)
    model.load_state_dict(inp.params)
    opt = Adam(model.parameters(), lr=w.kwargs["lr"])
    x = cg.tensor(inp.x)
    if w.op == "train_classifier":
        labels = inp.y_target

        def loss_fn(out: Tensor) -> Tensor:
            return cross_entropy(out, labels)
    else:
        from ..demo.training import demo_loss

        clean = cg.tensor(inp.y_target)

        def loss_fn(out: Tensor) -> Tensor:
            return demo_loss(out, clean)

    def run() -> Tensor:
        opt.zero_grad()
        loss = loss_fn(model(x))
        loss.backward()
        opt.step()
        return loss

    named = list(model.named_parameters())

    def to_numpy(loss: Tensor) -> dict:
        out = {"loss": np.array(loss.data)}
        out.update({f"grad/{n}": np.array(p.grad.data) for n, p in named})
        out.update({f"param/{n}": np.array(p.data) for n, p in named})
        return out

    return run, to_numpy


def _torch_model(w: Workload) -> Any:
    import torch
    from torch import nn as tnn

    if w.op == "train_classifier":
        class TorchClassifier(tnn.Module):
            def __init__(self, classes: int) -> None:
                super().__init__()
                layers: list[tnn.Module] = []
                for c_in, c_out, stride in CLASSIFIER_CONVS:
                    layers += [tnn.Conv2d(c_in, c_out, 3, stride=stride, padding=1), tnn.ReLU()]
                self.features = tnn.Sequential(*layers)
                self.fc = tnn.Linear(CLASSIFIER_CONVS[-1][1], classes)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.fc(self.features(x).mean((2, 3)))

        return TorchClassifier(w.kwargs["classes"])

    class TorchAutoencoder(tnn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.enc1 = tnn.Conv2d(1, c, 3, stride=2, padding=1)
            self.enc2 = tnn.Conv2d(c, 2 * c, 3, stride=2, padding=1)
            self.dec1 = tnn.ConvTranspose2d(2 * c, c, 4, stride=2, padding=1)
            self.dec2 = tnn.ConvTranspose2d(c, 1, 4, stride=2, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h1 = torch.relu(self.enc1(x))
            h2 = torch.relu(self.enc2(h1))
            u = torch.relu(self.dec1(h2)) + h1
            return x + self.dec2(u)

    return TorchAutoencoder(w.kwargs["channels"])


def torch_step(w: Workload, inp: Inputs, channels_last: bool) -> tuple[Any, Any]:
    """(run, to_numpy) as :func:`convgrad_step`, in torch eager; ``channels_last``: the
    model and the batch in ``torch.channels_last`` memory format."""
    if w.is_real_net:
        from .nets import build_step

        return build_step(w, inp, "torch", channels_last=channels_last)
    import torch
    import torch.nn.functional as F

    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = _torch_model(w)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(inp.params[name]))
    model = model.to(memory_format=fmt)
    opt = torch.optim.Adam(model.parameters(), lr=w.kwargs["lr"])
    x = torch.from_numpy(np.array(inp.x)).contiguous(memory_format=fmt)
    if w.op == "train_classifier":
        labels = torch.from_numpy(np.array(inp.y_target))

        def loss_fn(out: torch.Tensor) -> torch.Tensor:
            return F.cross_entropy(out, labels)
    else:
        from pytorch_msssim import ms_ssim

        clean = torch.from_numpy(np.array(inp.y_target)).contiguous(memory_format=fmt)
        win_size = w.kwargs["win_size"]

        def loss_fn(out: torch.Tensor) -> torch.Tensor:
            ms = ms_ssim(out, clean, data_range=1.0, size_average=True, win_size=win_size)
            return 0.84 * (1 - ms) + 0.16 * F.l1_loss(out, clean)

    def run() -> torch.Tensor:
        opt.zero_grad()
        loss = loss_fn(model(x))
        loss.backward()
        opt.step()
        return loss

    named = list(model.named_parameters())

    def to_numpy(loss: torch.Tensor) -> dict:
        out = {"loss": loss.detach().numpy().copy()}
        out.update({f"grad/{n}": p.grad.detach().numpy().copy() for n, p in named})
        out.update({f"param/{n}": p.detach().numpy().copy() for n, p in named})
        return out

    return run, to_numpy


# ----------------------------------------------------------------------------- agreement


def torch_adam_step(w: Workload, params: dict[str, np.ndarray],
                    grads: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One ``torch.optim.Adam`` step (the workload's ``lr``) from ``params`` with ``grads``."""
    import torch

    ts = {}
    for n, p in params.items():
        t = torch.from_numpy(np.array(p, dtype=np.float32)).requires_grad_()
        t.grad = torch.from_numpy(np.array(grads[n], dtype=np.float32))
        ts[n] = t
    torch.optim.Adam(list(ts.values()), lr=w.kwargs["lr"]).step()
    return {n: t.detach().numpy() for n, t in ts.items()}


def check_step(w: Workload, inp: Inputs, ours: dict, theirs: dict, tol: float,
               spread: dict | None = None) -> dict:
    """convgrad's first step against a peer's (see the module docstring).

    ``spread``: per gradient key, torch's own difference between two float32 runs of the
    step (NCHW against channels-last); a gradient agrees within twice that when it is
    above :data:`GRAD_TOLERANCE`.  DCGAN's generator gradients need it: the G step runs
    through D after D's Adam step, whose first update is about ``lr * sign(grad)``, so
    a D gradient within rounding of zero moves D by ``2 lr`` (measured: torch NCHW
    against torch channels-last 1.2e-2 on G's gradients, convgrad against torch NCHW the
    same 1.2e-2, each against torch float64 8e-6 and 1.2e-2).

    Returns ``{"agree", "max_rel_err", "tolerance", "measure"}``: per key the error,
    the tolerance it is held to and how it is measured (``max_rel_err`` keeps the
    name the other workloads' checks use).
    """
    names = param_names(w)
    opt_name = ({"train_resnet18": "torch.optim.SGD", "train_unet": "torch.optim.AdamW"}
                .get(w.op, "torch.optim.Adam"))
    errors: dict[str, float] = {}
    tols: dict[str, float] = {}
    measure: dict[str, str] = {}

    def put(key: str, err: float, t: float, how: str) -> None:
        errors[key], tols[key], measure[key] = err, t, how

    def have(d: dict, key: str) -> bool:
        return key in d and d[key] is not None

    for k in loss_keys(w):
        put(k, max_rel_error(ours[k], theirs[k])
            if have(ours, k) and have(theirs, k) else math.inf, tol, "relative max-norm")
    for n in names:
        k = f"grad/{n}"
        bound = max(GRAD_TOLERANCE, 2 * (spread or {}).get(k, 0.0))
        put(k, rel_l2_error(ours[k], theirs[k]) if have(ours, k) and have(theirs, k)
            else math.inf, bound, "relative 2-norm" + (
                " (within twice torch's own NCHW/channels-last spread)"
                if bound > GRAD_TOLERANCE else ""))
    grads_ok = all(have(ours, f"grad/{n}") for n in names)
    step = torch_adam_step
    if w.is_real_net:
        from .nets import reference_update as step
    adam = step(w, inp.params, {n: ours[f"grad/{n}"] for n in names}) if grads_ok else {}
    for n in names:
        k = f"param/{n}"
        put(k, max_rel_error(ours[k], adam[n]) if have(ours, k) and n in adam else math.inf,
            tol, f"relative max-norm vs {opt_name} on convgrad's gradients")
    agree = all(errors[k] <= tols[k] for k in errors)
    return {"agree": agree, "max_rel_err": errors, "tolerance": tols, "measure": measure}
