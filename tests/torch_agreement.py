"""Shared by the layer tests: run a convgrad function and its torch counterpart on the same
inputs and compare the forward, every gradient and (optionally) second-order gradients.

Errors are max-norm relative (``max |ours - torch| / max |torch|``) at 1e-10 in float64
and 1e-4 in float32.  With ``CONVGRAD_AGREEMENT_LOG=<path>`` set, each comparison appends
``name dtype what max_abs max_rel`` to that file (the figures quoted for the layers).
"""

from __future__ import annotations

import os

import numpy as np
import torch

import convgrad as cg

TOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10}
TORCH_DTYPE = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}


def _log(name: str, dtype, what: str, abs_err: float, rel_err: float) -> None:
    path = os.environ.get("CONVGRAD_AGREEMENT_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{name}\t{np.dtype(dtype).name}\t{what}\t{abs_err:.3e}\t{rel_err:.3e}\n")


def agree(name: str, ours, theirs, dtype, what: str = "forward") -> None:
    """Assert max-norm relative agreement of two arrays (a Tensor, ndarray or torch tensor)."""
    a = np.asarray(ours.data if isinstance(ours, cg.Tensor) else ours, dtype=np.float64)
    b = (theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else np.asarray(theirs))
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"{name} {what}: shape {a.shape} != torch's {b.shape}"
    if b.size == 0:
        return
    both_nan = np.isnan(a) & np.isnan(b)
    assert np.array_equal(np.isnan(a), np.isnan(b)), f"{name} {what}: NaNs differ"
    a, b = np.where(both_nan, 0, a), np.where(both_nan, 0, b)
    abs_err = float(np.abs(a - b).max())
    rel_err = abs_err / max(float(np.abs(b).max()), 1e-300)
    _log(name, dtype, what, abs_err, rel_err)
    tol = TOL[np.dtype(dtype)]
    assert rel_err <= tol, f"{name} {what} ({np.dtype(dtype).name}): relative error " \
                           f"{rel_err:.3e} > {tol:.0e}"


def check(name: str, ours_fn, torch_fn, arrays, dtype, *, double: bool = False,
          seed: int = 0, grads: bool = True) -> tuple:
    """Compare ``ours_fn(*tensors)`` with ``torch_fn(*torch_tensors)``: forward, the gradient
    of ``sum(y * v)`` for every input, and with ``double`` the gradient of
    ``sum(d/dx sum(y^2 v) * u)`` (second order).  Returns ``(ours_y, torch_y)``."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    xs = [cg.tensor(np.asarray(a, dtype), requires_grad=True) for a in arrays]
    ts = [torch.tensor(np.asarray(a, dtype), requires_grad=True) for a in arrays]
    y, yt = ours_fn(*xs), torch_fn(*ts)
    agree(name, y, yt, dtype)
    if not grads:
        return y, yt
    v = rng.standard_normal(y.shape).astype(dtype)
    gs = cg.grad((y * v).sum(), xs, retain_graph=True, allow_unused=True)
    gts = torch.autograd.grad((yt * torch.from_numpy(v)).sum(), ts, retain_graph=True,
                              allow_unused=True)
    for i, (g, gt) in enumerate(zip(gs, gts)):
        _check_grad(name, g, gt, xs[i], dtype, f"grad {i}")
    if double:
        us = [rng.standard_normal(np.shape(a)).astype(dtype) for a in arrays]
        gs = cg.grad((y * y * v).sum(), xs, create_graph=True, allow_unused=True)
        gts = torch.autograd.grad((yt * yt * torch.from_numpy(v)).sum(), ts, create_graph=True,
                                  allow_unused=True)
        pairs = [(g, gt, u) for g, gt, u in zip(gs, gts, us) if g is not None and gt is not None]
        hs = cg.grad(sum((g * u).sum() for g, _, u in pairs), xs, allow_unused=True)
        hts = torch.autograd.grad(sum((gt * torch.from_numpy(u)).sum() for _, gt, u in pairs),
                                  ts, allow_unused=True)
        for i, (h, ht) in enumerate(zip(hs, hts)):
            _check_grad(name, h, ht, xs[i], dtype, f"second-order grad {i}")
    return y, yt


def _check_grad(name, g, gt, x, dtype, what) -> None:
    if g is None or gt is None:  # no dependence: the other must be zero too
        assert g is None or not g.data.any(), f"{name} {what}: torch has none, ours nonzero"
        assert gt is None or not gt.any(), f"{name} {what}: ours has none, torch nonzero"
        return
    agree(name, g, gt, dtype, what)
    assert g.dtype == dtype and g.shape == x.shape
