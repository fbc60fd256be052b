"""``convgrad.nn.parallel``: one CPU device, so ``data_parallel`` and ``DataParallel``
run the module once on the whole batch (a script that splits a batch over GPUs with
``ngpu > 1`` gets the same result as on one), as torch's do without GPUs."""

from __future__ import annotations

from typing import Any

from .module import Module

__all__ = ["DataParallel", "data_parallel"]


def data_parallel(module: Any, inputs: Any, device_ids: Any = None, output_device: Any = None,
                  dim: int = 0, module_kwargs: Any = None) -> Any:
    """``module(inputs)`` (a tuple of inputs is unpacked), with ``module_kwargs``."""
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    return module(*args, **(module_kwargs or {}))


class DataParallel(Module):
    """The wrapped ``module`` (``self.module``: state-dict keys ``module.<name>``, as
    torch's), run once on the whole batch; ``device_ids`` is ``[]`` (no GPU)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be a convgrad.nn.Module, got "
                            f"{type(module).__name__}")
        self.module = module
        self.device_ids: list = []

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)
