"""``convgrad.backends``: the switches a PyTorch script sets on its backends
(``torch.backends.cudnn.benchmark = True``), accepted on the CPU where they change
nothing (:mod:`.cudnn`)."""

from . import cudnn

__all__ = ["cudnn"]
