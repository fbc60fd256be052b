"""Kernels on ndarrays, by family (see :mod:`.registry`): one general N-d convolution
and its split backward, elementwise operations, optimiser updates, ...

``conv_forward``, ``conv_input_grad``, ``conv_weight_grad`` and ``conv_bias_grad``
are the only places in convgrad that do convolution arithmetic.  Importing the package
declares every kernel family (``prefer`` checks names against them).
"""

from . import (  # noqa: F401 (each declares its kernel family)
    ctc,
    eltwise,
    gather,
    matmul,
    normalization,
    pooling,
    recurrence,
    resampling,
    similarity,
    softmax,
    update,
)
from .conv import conv_bias_grad, conv_forward, conv_input_grad, conv_weight_grad
from .fork import install as _install_fork_hooks
from .heap import decline_huge_pages, tune_malloc
from .jit_build import loops_usable as _loops_usable  # noqa: F401 (sets jit's build rule)
from .onednn import available as onednn_available
from .registry import prefer
from .spec import ConvSpec

tune_malloc()  # freed arrays stay in the heap between training steps (see .heap)
decline_huge_pages()  # a first step's fresh memory faults in 4 KiB pages, as torch's (.heap)
_install_fork_hooks()  # a forked child (a DataLoader worker) neither hangs nor dies (.fork)

__all__ = ["ConvSpec", "conv_forward", "conv_input_grad", "conv_weight_grad", "conv_bias_grad",
           "onednn_available", "prefer"]
