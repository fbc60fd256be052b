"""The real networks (N3-N6), each defined once against the drop-in API.

Each module's ``define(nn, cat)`` takes ``convgrad.nn`` or ``torch.nn`` (and the
library's ``cat``) and returns the model class, so convgrad and its peers run the same
code with the same parameter names; ``loss`` and ``optimizer`` take the library too.
This module builds a training step of either library from a workload
(:func:`build_step`), the networks' inputs (:func:`make_net_inputs`), their initial
weights (convgrad's initialisation, :func:`initial_state`) and the reference update
of the agreement check (:func:`reference_update`).

- N3 ``train_resnet18``  (:mod:`.resnet`): ResNet-18, cross-entropy, SGD;
- N4 ``train_unet``      (:mod:`.unet`): the example's 2-D U-Net, MSE, AdamW;
- N5 ``train_unet3d``    (:mod:`.unet3d`): a 3-D U-Net, voxel-wise cross-entropy, Adam;
- N6 ``train_dcgan``     (:mod:`.dcgan`): DCGAN, a D step and a G step, BCE, Adam.

torch is imported inside the functions only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["NET_MODULES", "is_net", "net_module", "model_class", "initial_state",
           "make_net_inputs", "build", "build_step", "reference_update", "shrink"]

#: workload op -> the module defining the network
NET_MODULES = {"train_resnet18": "resnet", "train_unet": "unet", "train_unet3d": "unet3d",
               "train_dcgan": "dcgan"}


def is_net(op: str) -> bool:
    return op in NET_MODULES


def net_module(op: str) -> Any:
    return importlib.import_module(f".{NET_MODULES[op]}", __name__)


def _lib(name: str) -> Any:
    return importlib.import_module("convgrad" if name == "convgrad" else "torch")


def model_class(op: str, lib: str) -> type:
    L = _lib(lib)
    return net_module(op).define(L.nn, L.cat)


def initial_state(w: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The initial weights: convgrad's default initialisation, seeded from ``rng``
    (DCGAN: then its own N(0, 0.02) scheme)."""
    import convgrad as cg

    cg.manual_seed(int(rng.integers(2**31)))
    state = {k: np.array(v) for k, v in model_class(w.op, "convgrad")(**w.kwargs)
             .state_dict().items()}
    if w.op == "train_dcgan":
        state = net_module(w.op).init_weights(state, rng)
    return state


def make_net_inputs(w: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(x, target): N3 normal images and labels; N4 noisy (clipped) and clean crops;
    N5 a normal volume and voxel labels; N6 real images in [-1, 1] and the noise z."""
    f32 = np.float32
    kw = w.kwargs
    if w.op == "train_unet":
        clean = rng.random(w.x_shape, dtype=f32)
        noise = rng.standard_normal(w.x_shape, dtype=f32)
        return np.clip(clean + f32(kw["sigma"]) * noise, 0, 1).astype(f32), clean
    if w.op == "train_dcgan":
        real = rng.uniform(-1, 1, w.x_shape).astype(f32)
        z = rng.standard_normal((w.x_shape[0], kw["nz"], 1, 1), dtype=f32)
        return real, z
    x = rng.standard_normal(w.x_shape, dtype=f32)
    if w.op == "train_unet3d":
        labels = rng.integers(0, kw["classes"], (w.x_shape[0], *w.x_shape[2:]))
    else:
        labels = rng.integers(0, kw["classes"], w.x_shape[0])
    return x, labels.astype(np.int64)


def _to_numpy(t: Any) -> np.ndarray:
    return np.array(t.detach().numpy())


def build_step(w: Any, inp: Any, lib: str, channels_last: bool = False,
               compiled: bool = False) -> tuple[Callable[[], Any], Callable[[Any], dict]]:
    """(run, to_numpy) of :func:`build`."""
    return build(w, inp, lib, channels_last, compiled)[1:]


def build(w: Any, inp: Any, lib: str, channels_last: bool = False,
          compiled: bool = False) -> tuple[Any, Callable[[], Any], Callable[[Any], dict]]:
    """(model, run, to_numpy) of one training step of ``w`` in ``lib`` (``convgrad`` or
    ``torch``): the model loaded with ``inp.params``; ``channels_last``: the model and
    the batch in the channels-last memory format of their rank; ``compiled``: every
    network under ``torch.compile`` (torch only).  ``run()`` returns the losses (a
    dict); ``to_numpy`` the losses, every gradient and every updated parameter."""
    L = _lib(lib)
    mod = net_module(w.op)
    model = model_class(w.op, lib)(**w.kwargs)
    model.load_state_dict({k: L.tensor(np.array(v)) for k, v in inp.params.items()})
    x, target = L.tensor(np.array(inp.x)), L.tensor(np.array(inp.y_target))
    if channels_last:
        fmt = L.channels_last if x.ndim == 4 else L.channels_last_3d
        model.to(memory_format=fmt)
        x = x.contiguous(memory_format=fmt)
    wrap: Callable[[Any], Any] = L.compile if compiled else (lambda m: m)
    named = list(model.named_parameters())

    if w.op == "train_dcgan":
        run, grads = mod.gan_step(L, model, x, target, w.kwargs, wrap)
    else:
        forward = wrap(model)
        opt = mod.optimizer(L, model.parameters(), w.kwargs)

        def run() -> dict:
            opt.zero_grad()
            loss = mod.loss(L, forward(x), target)
            loss.backward()
            opt.step()
            return {"loss": loss}

        def grads() -> dict:
            return {n: p.grad for n, p in named}

    def to_numpy(losses: dict) -> dict:
        out = {k: _to_numpy(v) for k, v in losses.items()}
        out.update({f"grad/{n}": (None if g is None else _to_numpy(g))
                    for n, g in grads().items()})
        out.update({f"param/{n}": _to_numpy(p) for n, p in named})
        return {k: v for k, v in out.items() if v is not None}

    return model, run, to_numpy


def reference_update(w: Any, params: dict[str, np.ndarray],
                     grads: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The network's torch optimizer, one step from ``params`` with ``grads`` (its
    state is per parameter, so one optimizer over both of DCGAN's networks is the same
    as one each)."""
    import torch

    ts = {}
    for n, g in grads.items():
        t = torch.from_numpy(np.array(params[n], dtype=np.float32)).requires_grad_()
        t.grad = torch.from_numpy(np.array(g, dtype=np.float32))
        ts[n] = t
    net_module(w.op).optimizer(torch, list(ts.values()), w.kwargs).step()
    return {n: t.detach().numpy() for n, t in ts.items()}


def shrink(w: Any, quick: bool, tiny: bool) -> Any:
    """``quick``: a quarter of the batch (at least 2: batch norm needs two values per
    channel); ``tiny``: the toy sizes of each network (for the test suite)."""
    from dataclasses import replace

    n, c, *sp = w.x_shape
    if tiny:
        # ResNet: layer4 at 2x2 (at 1x1 batch norm of two values per channel amplifies
        # rounding: measured 7e-3 gradient error against torch, near the tolerance)
        small = {"train_resnet18": ((2, c, 64, 64), {}),
                 "train_unet": ((1, c, 16, 16), {}),
                 "train_unet3d": ((1, c, 16, 16, 16), {}),
                 "train_dcgan": ((2, c, 64, 64), {"ngf": 8, "ndf": 8, "nz": 16})}[w.op]
        return replace(w, x_shape=small[0], kwargs={**w.kwargs, **small[1]})
    if quick:
        return replace(w, x_shape=(max(2, n // 4), c, *sp))
    return w
