"""Per-parameter scalar state of an optimiser kept as torch keeps it: one number (NAdam's
``mu_product``, ASGD's ``eta`` and ``mu``) held in the default dtype (float32 unless
``set_default_dtype``) however the parameter is typed, as torch's 0-d tensors are, and
cast to the parameter's dtype when a state dict is loaded (as torch's
``load_state_dict`` casts them).
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer

__all__ = ["ScalarStateOptimizer"]


class ScalarStateOptimizer(Optimizer):
    """An optimiser whose state entries named in ``_scalar_state`` are NumPy scalars
    (of the default dtype when created; the parameter's dtype after ``load_state_dict``)."""

    _scalar_state: tuple[str, ...] = ()

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict` (this library's or torch's, whose
        scalar state are 0-d tensors or arrays); the scalar entries become numbers of
        their parameter's dtype."""
        fn = f"{type(self).__name__}.load_state_dict"
        saved = state_dict.get("state") if isinstance(state_dict, Mapping) else None
        if isinstance(saved, Mapping):
            state = {}
            for k, s in saved.items():
                if isinstance(s, Mapping):
                    s = {name: (_number(value, f"{fn}: state[{k!r}][{name!r}]")
                                if name in self._scalar_state else value)
                         for name, value in s.items()}
                state[k] = s
            state_dict = {**state_dict, "state": state}
        super().load_state_dict(state_dict)
        for p, s in self.state.items():
            for name in self._scalar_state:
                if name in s:
                    s[name] = p.data.dtype.type(s[name])


def _number(value: Any, where: str) -> float:
    """A saved scalar state entry (a number, a one-element array or Tensor) as a float."""
    if isinstance(value, Tensor):
        value = value.data
    if isinstance(value, np.ndarray):
        if value.size != 1 or value.dtype.kind not in "iuf":
            raise TypeError(f"{where} must be one number, got an array of shape {value.shape} "
                            f"and dtype {value.dtype}")
        value = value.reshape(())[()]
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{where}={value!r} must be a number")
    return float(value)
