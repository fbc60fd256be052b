"""Graph nodes: ``Function`` (an operation with a forward and a backward rule) and ``Context``.

The engine knows no Tensor class: the tensor layer registers its class once with
:func:`register_tensor_type`; ``Function.apply`` recognises inputs of that class and wraps
outputs with its ``_wrap(data, node)`` constructor.  The dependency runs one way: the
tensor layer imports this package, never the reverse.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops.dask import is_dask_array
from .grad_mode import is_grad_enabled

__all__ = ["Context", "Function", "register_tensor_type", "FREED_MESSAGE"]

FREED_MESSAGE = (
    "Trying to backward through the graph a second time, but its graph has been freed; "
    "pass retain_graph=True to the first backward() or grad() call if you need to do this"
)


class _Registered:
    tensor_type: type = type(None)  # nothing is a Tensor until the tensor layer registers


_registered = _Registered()


def register_tensor_type(cls: type) -> None:
    """Called once by the tensor layer: ``cls`` has ``data``, ``grad``, ``grad_fn``,
    ``_requires_grad`` and a ``_wrap(data, grad_fn=None)`` constructor."""
    _registered.tensor_type = cls


def tensor_type() -> type:
    """The registered tensor class."""
    return _registered.tensor_type


def _wrap(data: np.ndarray, node: Any = None) -> Any:
    return _registered.tensor_type._wrap(data, node)


class Context:
    """The graph node of one recorded call: its Function, inputs and saved values.

    ``inputs`` holds one entry per positional argument of ``apply`` (the original Tensor
    objects, so that rules run under ``create_graph`` record through them);
    ``needs_input_grad`` one bool per positional argument.  ``output`` is the output
    Tensor, available inside ``backward`` only (the engine sets it for the call, so the
    node holds no reference cycle).  Forward may set any other attribute.
    """

    __slots__ = ("fn", "inputs", "needs_input_grad", "saved", "output", "__dict__")

    def __init__(self, fn: type, inputs: tuple, needs_input_grad: tuple) -> None:
        self.fn = fn
        self.inputs = inputs
        self.needs_input_grad = needs_input_grad
        self.saved = ()
        self.output = None

    def save_for_backward(self, *values: Any) -> None:
        self.saved = values

    @property
    def saved_tensors(self) -> tuple:
        """The saved values; ndarrays come back as constant Tensors."""
        if self.inputs is None:
            raise RuntimeError(FREED_MESSAGE)
        return tuple(_wrap(v) if isinstance(v, np.ndarray) else v for v in self.saved)

    def _free(self) -> None:
        self.inputs = None
        self.saved = ()
        self.__dict__.clear()

    def __repr__(self) -> str:
        return f"<{self.fn.__name__}Backward>"


class Function:
    """An operation with a forward on ndarrays and a backward rule on Tensors.

    Subclasses define ``forward(ctx, *arrays, **kwargs) -> ndarray`` and
    ``backward(ctx, grad) -> one gradient (Tensor, ndarray or None) per positional arg``,
    and are called as ``Op.apply(*args, **kwargs)``.
    """

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        arrays, needs = [], []  # (a plain loop is the fastest way to split the args)
        tensor_type = _registered.tensor_type
        for a in args:
            if isinstance(a, tensor_type):
                arrays.append(a.data)
                needs.append(a._requires_grad)
            else:
                arrays.append(a)
                needs.append(False)
        record = is_grad_enabled() and True in needs
        ctx = Context(cls, args, tuple(needs) if record else (False,) * len(args))
        out = cls.forward(ctx, *arrays, **kwargs)
        if type(out) is not np.ndarray or out.dtype.char not in "fd":
            out = _float_array(out)
        return _wrap(out, ctx if record else None)


def _float_array(value: Any) -> np.ndarray:
    if is_dask_array(value):  # lazy data stays lazy: np.asarray would compute it
        return value if value.dtype.char in "fd" else value.astype(np.float32)
    out = np.asarray(value)
    return out if out.dtype.char in "fd" else out.astype(np.float32)
