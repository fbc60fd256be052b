"""``torch.nn.modules.lazy``: the lazy layers' mixin."""

from ..lazy import LazyModuleMixin

__all__ = ["LazyModuleMixin"]
