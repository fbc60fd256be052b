"""The optimiser base class (parameter groups, state, saving and resuming), and the checks
of the hyper-parameters.

Each update rule lives in :mod:`convgrad.ops.update` (which runs it in cache-sized chunks
on the thread pool), written in the same order of floating-point operations as torch's
single-tensor CPU implementation, in the parameter's dtype with Python-float
hyper-parameters rounded to that dtype.  Where torch's vectorised CPU kernels fuse a
multiply-add (``add(..., alpha=)``, ``lerp``, ``addcmul``), the rule rounds once
too (exactly, for float32, through float64).  On an AVX2/AVX512 machine SGD then
agrees with torch bit for bit in float32; Adam and RMSprop within an ulp or so (torch's
float32 ``sqrt`` on CPU is not correctly rounded).  Parameters are updated in place
(``p.data``), so modules, graphs and state dicts keep referring to the same arrays; each
step counts one version of every parameter it updates, so a graph recorded before the
step refuses to backward through a saved parameter (as torch's in-place updates do).

``state_dict()`` has torch's layout: ``{"state": {index: {...}}, "param_groups": [{...,
"params": [indices]}]}``, parameters numbered in group order; ``load_state_dict`` copies
it back, so an optimiser saved after step ``k`` and loaded into a fresh one continues
exactly as the original would have.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..autograd import enable_grad
from ..autograd.deferred import has_grad
from ..ops import heap, jit
from ..tensor import Tensor
from ..tensor.args import number
from ..tensor.version import bump as _bump_version

__all__ = ["Optimizer"]


class Optimizer:
    """Base class: parameter groups, per-parameter state, ``zero_grad``, ``step`` and the
    state dict.

    ``params`` is an iterable of Tensors, or of dicts each holding ``"params"`` and any
    per-group hyper-parameters (PyTorch's parameter groups); ``defaults`` fills in what a
    group leaves out.  ``state`` maps each parameter to its dict of state.
    """

    #: the compiled update loops this optimiser runs (:func:`convgrad.ops.jit.warm_up`'s
    #: names): loaded in the background as it is built, training being about to start
    _kernels: tuple[str, ...] = ()

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        jit.warm_up(*self._kernels)
        fn = type(self).__name__
        if isinstance(params, Tensor):
            raise TypeError(f"{fn}: params must be an iterable of Tensors (e.g. "
                            "model.parameters()), got a single Tensor")
        if isinstance(params, set | frozenset):
            raise TypeError(f"{fn}: params must be an ordered iterable (a list), got a set, "
                            "whose order changes between runs")
        groups = list(params) if isinstance(params, Iterable) else None
        if groups is None:
            raise TypeError(f"{fn}: params must be an iterable of Tensors or of dicts, got "
                            f"{type(params).__name__}")
        if not groups:
            raise ValueError(f"{fn}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[Tensor, dict[str, Any]] = {}
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyper-parameters (defaults for the rest)."""
        fn = type(self).__name__
        if not isinstance(param_group, dict) or "params" not in param_group:
            raise TypeError(f"{fn}: a parameter group must be a dict with a 'params' entry, "
                            f"got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, set | frozenset):
            raise TypeError(f"{fn}: a group's params must be ordered (a list), got a set")
        params = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"{fn}: params[{i}] is a {type(p).__name__}, expected a Tensor")
            if not p.is_leaf:
                raise ValueError(f"{fn}: params[{i}] is not a leaf Tensor (it was computed "
                                 "from others); optimise leaves only")
            if id(p) in seen:
                raise ValueError(f"{fn}: params[{i}] appears in more than one place")
            seen.add(id(p))
        unknown = set(param_group) - set(self.defaults) - {"params"}
        if unknown:
            raise ValueError(f"{fn}: unknown hyper-parameter(s) {sorted(unknown)}; expected "
                             f"{sorted(self.defaults)}")
        full = {**self.defaults, **param_group, "params": params}
        self._check_hyper(full)
        self.param_groups.append(full)

    def _check_hyper(self, group: dict[str, Any]) -> None:
        raise NotImplementedError

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop (or zero) the ``.grad`` of every parameter."""
        for g in self.param_groups:
            for p in g["params"]:
                if has_grad(p):  # (a pending gradient is dropped uncomputed)
                    p.grad = None if set_to_none else Tensor._wrap(np.zeros_like(p.data))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient.

        ``closure``, if given, recomputes and returns the loss (called with gradients
        enabled, before the update); its value is returned.
        """
        loss = None
        if closure is not None:
            if not callable(closure):
                raise TypeError(f"{type(self).__name__}.step: closure={closure!r} must be "
                                "callable")
            with enable_grad():
                loss = closure()
        for g in self.param_groups:
            params, grads, states = [], [], []
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                if grad.shape != p.data.shape:
                    raise ValueError(f"{type(self).__name__}: a gradient of shape {grad.shape} "
                                     f"for a parameter of shape {p.data.shape}")
                grad = grad.astype(p.data.dtype, copy=False)
                if g.get("maximize", False):
                    grad = -grad
                params.append(p.data)
                grads.append(grad)
                states.append(self.state.setdefault(p, {}))
            if params:
                self._update(params, grads, states, g)
            for p in params:
                _bump_version(p)  # as torch: a graph that saved p now refuses backward
        heap.follow_peak()  # a step's freed arrays stay for the next (ops.heap)
        return loss

    def _update(self, params: list[np.ndarray], grads: list[np.ndarray], states: list[dict],
                group: dict) -> None:
        """Update the parameters of one group in place (one :func:`convgrad.ops.update.step`
        for all of them)."""
        raise NotImplementedError

    # -- saving and resuming
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {name: value}}, "param_groups": [...]}`` as torch lays it out.

        Parameters are numbered 0, 1, ... in group order; each group lists its
        hyper-parameters and the indices of its parameters.  Arrays are copies.
        """
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in g.items() if k != "params"}
            for p in g["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in g["params"]]
            groups.append(packed)
        state = {index[id(p)]: {k: _copy_value(v) for k, v in s.items()}
                 for g in self.param_groups for p in g["params"]
                 if (s := self.state.get(p))}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore hyper-parameters and state saved by :meth:`state_dict`.

        The optimiser must hold the same number of groups with the same number of
        parameters as the one saved; floating state is cast to its parameter's dtype.
        Everything is checked before anything changes.
        """
        fn = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, Mapping) or not {"state", "param_groups"} <= set(state_dict):
            raise TypeError(f"{fn}: expected a mapping with 'state' and 'param_groups' entries "
                            f"(from state_dict()), got {_describe(state_dict)}")
        saved_groups = state_dict["param_groups"]
        saved_state = state_dict["state"]
        if not isinstance(saved_groups, list | tuple) or not all(
                isinstance(g, Mapping) and "params" in g for g in saved_groups):
            raise TypeError(f"{fn}: 'param_groups' must be a list of dicts with 'params'")
        if not isinstance(saved_state, Mapping):
            raise TypeError(f"{fn}: 'state' must be a mapping of parameter index to state, got "
                            f"{type(saved_state).__name__}")
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{fn}: the state dict has {len(saved_groups)} parameter groups, "
                             f"the optimiser {len(self.param_groups)}")
        id_map: dict[Any, Tensor] = {}
        new_groups = []
        for i, (g, saved) in enumerate(zip(self.param_groups, saved_groups)):
            indices = list(saved["params"])
            if len(indices) != len(g["params"]):
                raise ValueError(f"{fn}: parameter group {i} holds {len(indices)} parameters "
                                 f"in the state dict, {len(g['params'])} in the optimiser")
            for k, p in zip(indices, g["params"]):
                id_map[_index_key(k, fn)] = p
            group = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            group["params"] = g["params"]
            missing = set(self.defaults) - set(group)
            if missing:
                raise ValueError(f"{fn}: parameter group {i} lacks {sorted(missing)}")
            if "betas" in group and isinstance(group["betas"], list):
                group["betas"] = tuple(group["betas"])
            self._check_hyper(group)
            new_groups.append(group)
        new_state: dict[Tensor, dict[str, Any]] = {}
        for k, s in saved_state.items():
            key = _index_key(k, fn)
            if key not in id_map:
                raise ValueError(f"{fn}: state for parameter index {k!r}, which no group lists")
            if not isinstance(s, Mapping):
                raise TypeError(f"{fn}: state of parameter {k!r} must be a dict, got "
                                f"{type(s).__name__}")
            p = id_map[key]
            new_state[p] = {name: _cast_state(value, p, f"{fn}: state[{k!r}][{name!r}]",
                                              name) for name, value in s.items()}
        self.param_groups = new_groups
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params")
        return "\n".join(lines + [")"])


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        return f"a mapping with keys {sorted(map(str, value))}"
    return f"a {type(value).__name__}"


def _index_key(k: Any, fn: str) -> int:
    if isinstance(k, Integral) and not isinstance(k, bool):
        return int(k)
    if isinstance(k, str) and k.isdigit():
        return int(k)
    raise TypeError(f"{fn}: parameter index {k!r} must be an int")


def _copy_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    return copy.deepcopy(value)


def _cast_state(value: Any, p: Tensor, where: str, name: str) -> Any:
    """One saved state entry as the optimiser keeps it: ``step`` an int, arrays shaped and
    typed as the parameter (a copy), ``None`` as is."""
    if isinstance(value, Tensor):
        value = value.data
    if name == "step":
        arr = np.asarray(value)
        if arr.shape not in ((), (1,)) or arr.dtype.kind not in "iuf":
            raise TypeError(f"{where} must be a step count, got {value!r}")
        n = float(arr.reshape(()))
        if not (n >= 0 and n == int(n)):
            raise ValueError(f"{where}={n} must be a whole number >= 0")
        return int(n)
    if value is None or isinstance(value, bool | Real):
        return value
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{where} is a {type(value).__name__}; expected an array")
    if value.dtype.kind not in "biuf":
        raise TypeError(f"{where} has dtype {value.dtype}; expected numbers")
    if value.dtype.kind == "f" and value.shape != p.shape:
        raise ValueError(f"{where} has shape {value.shape}, its parameter {p.shape}")
    return value.astype(p.dtype) if value.dtype.kind == "f" else value.copy()


def _number(fn: str, name: str, value: Any, low: float = 0.0) -> float:
    """An optimiser's hyper-parameter: a finite number, >= 0 unless ``low`` says."""
    return number(fn, name, value, low)


def _betas(fn: str, betas: Any) -> None:
    if not isinstance(betas, tuple | list) or len(betas) != 2:
        raise TypeError(f"{fn}: betas={betas!r} must be a pair of numbers")
    for i, b in enumerate(betas):
        _number(fn, f"betas[{i}]", b)
        if not b < 1.0:
            raise ValueError(f"{fn}: betas[{i}]={b!r} must be in [0, 1)")
