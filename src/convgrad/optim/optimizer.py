"""The optimiser base class (parameter groups, state), and the rounding helpers of the updates.

Each update is written in the same order of floating-point operations as torch's
single-tensor CPU implementation, in the parameter's dtype with Python-float
hyper-parameters rounded to that dtype.  Where torch's vectorised CPU kernels fuse a
multiply-add (``add(..., alpha=)``, ``lerp``, ``addcmul``), :func:`_fma` rounds once
too (exactly, for float32, through float64).  On an AVX2/AVX512 machine SGD then
agrees with torch bit for bit in float32; Adam within an ulp or so (torch's float32
``sqrt`` is not correctly rounded there).  Parameters are updated in place
(``p.data``), so modules, graphs and state dicts keep referring to the same arrays; each
step counts one version of every parameter it updates, so a graph recorded before the
step refuses to backward through a saved parameter (as torch's in-place updates do).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Real
from typing import Any

import numpy as np

from ..tensor import Tensor
from ..tensor.version import bump as _bump_version

__all__ = ["Optimizer"]


class Optimizer:
    """Base class: parameter groups, per-parameter state, ``zero_grad`` and ``step``.

    ``params`` is an iterable of Tensors, or of dicts each holding ``"params"`` and any
    per-group hyper-parameters (PyTorch's parameter groups).
    """

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        who = type(self).__name__
        if isinstance(params, Tensor):
            raise TypeError(f"{who}: params must be an iterable of Tensors (e.g. "
                            "model.parameters()), got a single Tensor")
        groups = list(params) if isinstance(params, Iterable) else None
        if groups is None:
            raise TypeError(f"{who}: params must be an iterable of Tensors or of dicts, got "
                            f"{type(params).__name__}")
        if not groups:
            raise ValueError(f"{who}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[int, dict[str, Any]] = {}
        seen: set[int] = set()
        for g in groups:
            self.add_param_group(g, seen)

    def add_param_group(self, group: dict[str, Any], _seen: set[int] | None = None) -> None:
        who = type(self).__name__
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{who}: a parameter group must be a dict with a 'params' entry")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        seen = _seen if _seen is not None else {id(p) for g in self.param_groups
                                                 for p in g["params"]}
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"{who}: params[{i}] is a {type(p).__name__}, expected a Tensor")
            if not p.is_leaf:
                raise ValueError(f"{who}: params[{i}] is not a leaf Tensor (it was computed "
                                 "from others); optimise leaves only")
            if id(p) in seen:
                raise ValueError(f"{who}: params[{i}] appears in more than one place")
            seen.add(id(p))
        unknown = set(group) - set(self.defaults) - {"params"}
        if unknown:
            raise ValueError(f"{who}: unknown hyper-parameter(s) {sorted(unknown)}; expected "
                             f"{sorted(self.defaults)}")
        full = {**self.defaults, **group, "params": params}
        self._check_hyper(full)
        self.param_groups.append(full)

    def _check_hyper(self, group: dict[str, Any]) -> None:
        raise NotImplementedError

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop (or zero) the ``.grad`` of every parameter."""
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.grad = None if set_to_none else Tensor._wrap(np.zeros_like(p.data))

    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                if grad.shape != p.data.shape:
                    raise ValueError(f"{type(self).__name__}: a gradient of shape {grad.shape} "
                                     f"for a parameter of shape {p.data.shape}")
                self._update(p.data, grad.astype(p.data.dtype, copy=False),
                             self.state.setdefault(id(p), {}), g)
                _bump_version(p.data)  # as torch: a graph that saved p now refuses backward

    def _update(self, p: np.ndarray, grad: np.ndarray, state: dict, group: dict) -> None:
        raise NotImplementedError


def _fma(a: np.ndarray, b: Any, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` rounded once, like a fused multiply-add (``b`` may be a scalar).

    float32 operands are exact in float64, and so is their product; the sum is then
    rounded to float64 and float32 (a double rounding that differs from a true fused
    operation only when the float64 sum lands exactly on a float32 tie: never, in
    practice).  float64 is computed as ``a * b + c`` (two roundings).
    """
    if c.dtype == np.float32:
        return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + c).astype(np.float32)
    return a * b + c


def _number(who: str, name: str, value: Any, low: float = 0.0) -> None:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise TypeError(f"{who}: {name}={value!r} must be a finite number")
    if value < low:
        raise ValueError(f"{who}: {name}={value!r} must be >= {low}")
