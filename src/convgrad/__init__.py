"""convgrad: convolutional models with exact, conditional reverse-mode gradients on NumPy.

``import convgrad as cg`` and ``import convgrad.functional as F``.  The layers, each a
package: ``ops`` (convolution kernels on ndarrays, their algorithms, the profiler),
``autograd`` (the engine), ``tensor`` (``Tensor`` and its differentiable operations),
``functional``, ``nn``, ``optim``, ``utils`` (data loading), ``metrics``,
``serialization``, ``testing`` (finite-difference checks) and ``cli`` (the ``convgrad``
command); ``random`` holds the one seeded generator behind ``cg.manual_seed``.
"""

from __future__ import annotations

from . import accelerator, backends, cuda, functional, linalg, ops

# registers convgrad.autograd.functional (``from convgrad.autograd.functional import ...``)
from . import autograd_functional as _autograd_functional  # noqa: F401
from .autograd import (
    enable_grad,
    grad,
    inference_mode,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_anomaly_enabled,
    set_grad_enabled,
)
from .default_dtype import get_default_dtype, set_default_dtype, set_default_tensor_type
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
from .flags import (
    are_deterministic_algorithms_enabled,
    get_float32_matmul_precision,
    is_deterministic_algorithms_warn_only_enabled,
    set_float32_matmul_precision,
    use_deterministic_algorithms,
)
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
from .random import initial_seed, manual_seed, seed
from .rng_state import Generator, get_rng_state, set_rng_state
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
from .tensor.more_creation import empty_strided, logspace, randint_like, scalar_tensor
from .tensor.printing import set_printoptions
from .tensor.products import (
    addbmm,
    addmm,
    addmv,
    addr,
    baddbmm,
    block_diag,
    cartesian_prod,
    chain_matmul,
    combinations,
    ger,
    tensordot,
    vander,
    vdot,
)
from .tensor.sampling import bernoulli, normal, poisson
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
from .tensor.searching import bucketize, isin, searchsorted, unravel_index
from .tensor.shape_functions import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_shapes,
    broadcast_tensors,
    broadcast_to,
    can_cast,
    column_stack,
    dsplit,
    dstack,
    hsplit,
    moveaxis,
    promote_types,
    ravel,
    result_type,
    row_stack,
    rsub,
    split_with_sizes,
    unsafe_chunk,
    unsafe_split,
    vsplit,
)
from .tensor.statistics import cumulative_trapezoid, trapezoid, trapz
from .tensor.windows import (
    bartlett_window,
    blackman_window,
    hamming_window,
    hann_window,
    kaiser_window,
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
    "searchsorted", "bucketize", "isin", "unravel_index", "trapezoid", "trapz",
    "cumulative_trapezoid",
    "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
    "get_rng_state", "set_rng_state", "Generator", "initial_seed", "seed",
    "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
    "set_float32_matmul_precision", "get_float32_matmul_precision", "set_printoptions",
    "set_default_dtype", "get_default_dtype", "set_default_tensor_type",
    "special", "func",
    "linalg", "det", "logdet", "slogdet", "inverse", "cholesky", "qr", "svd", "pinverse",
    "matrix_power", "matrix_exp", "triangular_solve", "cholesky_solve", "lu_unpack",
    "broadcast_to", "broadcast_tensors", "broadcast_shapes", "atleast_1d", "atleast_2d",
    "atleast_3d", "moveaxis", "ravel", "dstack", "column_stack", "row_stack", "hsplit",
    "vsplit", "dsplit", "split_with_sizes", "unsafe_chunk", "unsafe_split", "rsub",
    "result_type", "promote_types", "can_cast", "tensordot", "addmm", "addmv", "addr",
    "addbmm", "baddbmm", "vdot", "ger", "chain_matmul", "block_diag", "cartesian_prod",
    "combinations", "vander", "scalar_tensor", "empty_strided", "logspace", "randint_like",
    "normal", "poisson", "bernoulli", "hann_window", "hamming_window", "blackman_window",
    "bartlett_window", "kaiser_window",
    "amp", "autocast", "cpu",
]


_LINALG_FORMS = ("det", "logdet", "slogdet", "inverse", "cholesky", "qr", "svd",
                 "pinverse", "matrix_power", "matrix_exp", "triangular_solve",
                 "cholesky_solve", "lu_unpack")


def __getattr__(name: str):
    # the heavier layers load on first use: cg.nn, cg.optim, cg.metrics, cg.utils,
    # cg.serialization, cg.distributed, cg.distributions, cg.multiprocessing, cg.save,
    # cg.load
    import importlib

    if name in ("nn", "optim", "metrics", "utils", "serialization", "distributed",
                "distributions", "multiprocessing", "special", "linalg", "amp", "cpu",
                "func"):
        return importlib.import_module(f".{name}", __name__)
    if name in ("save", "load"):
        return getattr(importlib.import_module(".serialization", __name__), name)
    if name == "autocast":  # torch.autocast: convgrad.amp's (a float32 region)
        return importlib.import_module(".amp", __name__).autocast
    if name in _LINALG_FORMS:  # torch.det and the like: convgrad.linalg.legacy's
        from .linalg import legacy

        return getattr(legacy, name)
    from .tensor.functions import METHOD_FORMS, method_form

    if name in METHOD_FORMS:  # torch.log1p(x) and the like: the Tensor method
        globals()[name] = method_form(name)  # made once: later lookups find it directly
        return globals()[name]
    if name == "polygamma":  # torch.polygamma(n, input): the order first
        return importlib.import_module(".special", __name__).polygamma
    if name in ("softmax", "log_softmax"):
        return getattr(functional, name)
    raise AttributeError(f"module 'convgrad' has no attribute {name!r}")
