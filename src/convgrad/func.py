"""``convgrad.func`` (torch's ``torch.func``): ``functional_call``, a module called with
other parameters and buffers."""

from __future__ import annotations

from typing import Any

from .nn.utils.stateless import call_with, merge_dicts

__all__ = ["functional_call"]


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (a
    dict, or a sequence of dicts with distinct keys) in place of its own, as
    :func:`convgrad.nn.utils.stateless.functional_call`."""
    fn = "functional_call"
    return call_with(fn, module, merge_dicts(fn, parameter_and_buffer_dicts), args, kwargs,
                     tie_weights, strict)
