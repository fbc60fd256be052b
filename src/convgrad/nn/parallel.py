"""``convgrad.nn.parallel``: one CPU device, so ``data_parallel`` runs the module once on
the whole batch (a script that splits a batch over GPUs with ``ngpu > 1`` gets the
same result as on one), as torch's ``data_parallel`` does with a single device."""

from __future__ import annotations

from typing import Any

__all__ = ["data_parallel"]


def data_parallel(module: Any, inputs: Any, device_ids: Any = None, output_device: Any = None,
                  dim: int = 0, module_kwargs: Any = None) -> Any:
    """``module(inputs)`` (a tuple of inputs is unpacked), with ``module_kwargs``."""
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    return module(*args, **(module_kwargs or {}))
