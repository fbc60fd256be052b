"""``torch.nn.parameter``'s names: ``Parameter`` and the lazy layers'
``UninitializedParameter`` and ``UninitializedBuffer``."""

from .lazy import UninitializedBuffer, UninitializedParameter
from .module import Parameter

__all__ = ["Parameter", "UninitializedBuffer", "UninitializedParameter"]
