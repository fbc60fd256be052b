"""convgrad: convolutional models with exact, conditional reverse-mode gradients on NumPy.

``import convgrad as cg`` and ``import convgrad.functional as F``.  The layers, each a
package: ``ops`` (convolution kernels on ndarrays, their algorithms, the profiler),
``autograd`` (the engine), ``tensor`` (``Tensor`` and its differentiable operations),
``functional``, ``nn``, ``optim``, ``utils`` (data loading), ``metrics``,
``serialization``, ``testing`` (finite-difference checks) and ``cli`` (the ``convgrad``
command); ``random`` holds the one seeded generator behind ``cg.manual_seed``.
"""

from __future__ import annotations

from . import accelerator, backends, cuda, functional, ops
from .autograd import (
    enable_grad,
    grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .devices import device
from .dtypes import bool as bool  # (torch's names; not in __all__: they shadow builtins)
from .dtypes import (
    double,
    float16,
    float32,
    float64,
    half,
    int32,
    int64,
    long,
    uint8,
)
from .dtypes import float as float
from .dtypes import int as int
from .functional.activation import relu, sigmoid, tanh
from .functional.conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_general,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from .ops.profiler import profile
from .ops.workspace import get_workspace_limit, set_workspace_limit, workspace_limit
from .random import manual_seed
from .tensor import (
    Tensor,
    arange,
    as_tensor,
    cat,
    concatenate,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    stack,
    tensor,
    where,
    zeros,
    zeros_like,
)
from .tensor.einsum import einsum
from .tensor.functions import (
    abs,
    clamp,
    clip,
    exp,
    flatten,
    is_tensor,
    log,
    matmul,
    max,
    mean,
    min,
    outer,
    permute,
    pow,
    reshape,
    sqrt,
    squeeze,
    sum,
    transpose,
    unsqueeze,
)
from .tensor.lazy import compute
from .tensor.memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)
from .tensor.script_functions import (
    BoolTensor,
    DoubleTensor,
    FloatTensor,
    IntTensor,
    LongTensor,
    bincount,
    cdist,
    finfo,
    hstack,
    iinfo,
    meshgrid,
    std_mean,
    tril_indices,
    triu_indices,
    var_mean,
    vstack,
)
from .threads import get_num_threads, set_num_threads

__version__ = "0.1.0"

__all__ = [
    "Tensor", "tensor", "zeros", "ones", "randn", "from_numpy", "concatenate", "stack",
    "where", "grad", "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled",
    "profile", "functional", "ops", "conv_general", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "workspace_limit",
    "get_workspace_limit", "set_workspace_limit", "cat", "as_tensor",
    "abs", "clamp", "clip", "exp", "flatten", "log", "matmul", "max", "mean", "min", "permute",
    "pow", "relu", "reshape", "sigmoid", "sqrt", "squeeze", "sum", "tanh", "transpose",
    "unsqueeze", "nn", "optim", "metrics", "save", "load", "manual_seed", "set_num_threads",
    "get_num_threads", "utils", "compute",
    "device", "cuda", "backends", "accelerator", "float32", "float64", "float16", "half",
    "double", "int32",
    "int64", "long", "uint8", "full", "empty", "zeros_like", "ones_like", "full_like",
    "empty_like", "rand", "rand_like", "randn_like", "randint", "randperm", "arange", "linspace",
    "eye", "from_dlpack", "memory_format", "contiguous_format", "channels_last",
    "channels_last_3d", "preserve_format", "einsum", "inference_mode", "is_tensor", "outer",
    "bincount", "cdist", "hstack", "meshgrid", "tril_indices", "triu_indices", "vstack",
    "finfo", "iinfo", "std_mean", "var_mean", "FloatTensor", "DoubleTensor", "LongTensor",
    "IntTensor", "BoolTensor",
]


def __getattr__(name: str):
    # the heavier layers load on first use: cg.nn, cg.optim, cg.metrics, cg.utils,
    # cg.serialization, cg.distributed, cg.distributions, cg.multiprocessing, cg.save,
    # cg.load
    import importlib

    if name in ("nn", "optim", "metrics", "utils", "serialization", "distributed",
                "distributions", "multiprocessing"):
        return importlib.import_module(f".{name}", __name__)
    if name in ("save", "load"):
        return getattr(importlib.import_module(".serialization", __name__), name)
    from .tensor.functions import METHOD_FORMS, method_form

    if name in METHOD_FORMS:  # torch.log1p(x) and the like: the Tensor method
        globals()[name] = method_form(name)  # made once: later lookups find it directly
        return globals()[name]
    if name in ("softmax", "log_softmax"):
        return getattr(functional, name)
    raise AttributeError(f"module 'convgrad' has no attribute {name!r}")
