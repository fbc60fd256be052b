"""The autodiff engine: graph nodes, ``backward``/``grad`` and grad mode.

It knows no operation and no Tensor class (the tensor layer registers its class with
:func:`register_tensor_type`).
"""

from __future__ import annotations

from .anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
    set_detect_anomaly,
)
from .engine import backward, grad
from .function import (
    OUTPUT,
    Context,
    Function,
    mark_modified,
    register_tensor_type,
    tensor_type,
)
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .variable import Variable

__all__ = [
    "OUTPUT",
    "Context",
    "Function",
    "tensor_type",
    "backward",
    "enable_grad",
    "grad",
    "is_grad_enabled",
    "mark_modified",
    "no_grad",
    "inference_mode",
    "register_tensor_type",
    "set_grad_enabled",
    "Variable",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
    "set_anomaly_enabled",
]


def __getattr__(name: str):
    # convgrad.autograd.functional builds Tensors, so it lives above the tensor layer
    # (convgrad.autograd_functional) and is loaded by name on first use
    if name == "functional":
        import importlib

        return importlib.import_module("convgrad.autograd_functional")
    raise AttributeError(f"module 'convgrad.autograd' has no attribute {name!r}")
