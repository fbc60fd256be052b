"""Function forms of the Tensor methods (``cg.exp(x)`` is ``x.exp()``), for re-export.

Each accepts a Tensor or anything ``tensor()`` accepts (then a constant).  These names
shadow Python builtins (``sum``, ``max``, ``min``, ``abs``, ``pow``), so they live in a
module of their own.
"""

from __future__ import annotations

from typing import Any

from .special_methods import FORMS as _SPECIAL_FORMS
from .tensor import Tensor, as_tensor

__all__ = [
    "METHOD_FORMS", "abs", "clamp", "clip", "exp", "flatten", "log", "matmul", "max", "mean",
    "min", "method_form", "permute", "pow", "reshape", "sqrt", "squeeze", "sum", "transpose",
    "unsqueeze", "outer", "is_tensor",
]

#: torch's functions that are its Tensor methods with the tensor first
#: (``torch.log1p(x)`` is ``x.log1p()``), reached as ``cg.<name>`` (:func:`method_form`)
METHOD_FORMS = frozenset({
    "log1p", "expm1", "sin", "cos", "tan", "atan", "arctan", "sinh", "cosh", "erf", "floor",
    "ceil", "round", "trunc", "fix", "sign", "sgn", "maximum", "minimum", "isnan", "isinf",
    "isfinite", "mm", "bmm", "neg", "negative", "rsqrt", "square", "reciprocal", "norm",
    "argmax", "argmin", "std", "var", "cumsum", "chunk", "split", "narrow",
    "repeat_interleave", "roll", "flip", "gather", "topk", "sort", "argsort", "all", "any",
    "numel", "clone", "mul", "multiply", "add", "sub", "subtract", "div", "divide",
    "true_divide", "masked_fill", "t", "amax", "amin", "unbind", "movedim", "logical_not",
    "eq", "ne", "lt", "le", "gt", "ge", "index_select", "scatter", "equal", "tril", "triu",
    "log2", "log10", "logsumexp", "isclose", "allclose",
    "prod", "cumprod", "dot", "mv", "addcmul", "addcdiv", "lerp", "remainder", "fmod",
    "nan_to_num", "logical_and", "logical_or", "logical_xor", "tile", "swapaxes", "swapdims",
    "unflatten", "masked_select", "nonzero", "diag", "diagonal", "trace", "scatter_add",
    "index_add", "unique", "multinomial", "is_floating_point", "logaddexp", "xlogy", "logit",
    "frac", "deg2rad", "rad2deg", "nansum", "nanmean", "median", "count_nonzero", "fliplr",
    "flipud", "rot90", "diff", "take", "take_along_dim", "tensor_split", "select", "inner",
    "kron", "cross", "clamp_min", "clamp_max", "argwhere",
    "cummax", "cummin", "logcumsumexp", "kthvalue", "mode", "nanmedian", "quantile",
    "nanquantile", "aminmax", "msort", "unique_consecutive", "histc", "histogram", "cov",
    "corrcoef", "dist", "renorm", "index_copy", "index_fill", "index_put", "index_put_",
    "masked_scatter", "scatter_reduce", "index_reduce", "diag_embed", "diagflat",
    "select_scatter", "slice_scatter", "diagonal_scatter",
}) | _SPECIAL_FORMS


def sum(x: Any, dim: Any = None, keepdim: bool | None = None, **aliases: Any) -> Tensor:
    return as_tensor(x).sum(dim, keepdim, **aliases)


def mean(x: Any, dim: Any = None, keepdim: bool | None = None, **aliases: Any) -> Tensor:
    return as_tensor(x).mean(dim, keepdim, **aliases)


def max(x: Any, dim: Any = None, keepdim: bool | None = None, **aliases: Any) -> Tensor:
    """The max, or along an int ``dim`` ``(values, indices)``; see :meth:`Tensor.max`."""
    return as_tensor(x).max(dim, keepdim, **aliases)


def min(x: Any, dim: Any = None, keepdim: bool | None = None, **aliases: Any) -> Tensor:
    return as_tensor(x).min(dim, keepdim, **aliases)


def reshape(x: Any, *shape: Any) -> Tensor:
    return as_tensor(x).reshape(*shape)


def transpose(x: Any, dim0: int, dim1: int) -> Tensor:
    return as_tensor(x).transpose(dim0, dim1)


def permute(x: Any, *dims: Any) -> Tensor:
    return as_tensor(x).permute(*dims)


def flatten(x: Any, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    return as_tensor(x).flatten(start_dim, end_dim)


def squeeze(x: Any, dim: Any = None) -> Tensor:
    return as_tensor(x).squeeze(dim)


def unsqueeze(x: Any, dim: int) -> Tensor:
    return as_tensor(x).unsqueeze(dim)


def exp(x: Any) -> Tensor:
    return as_tensor(x).exp()


def log(x: Any) -> Tensor:
    return as_tensor(x).log()


def sqrt(x: Any) -> Tensor:
    return as_tensor(x).sqrt()


def abs(x: Any) -> Tensor:
    return as_tensor(x).abs()


def clip(x: Any, min: Any = None, max: Any = None) -> Tensor:
    return as_tensor(x).clip(min, max)


clamp = clip


def pow(x: Any, exponent: Any) -> Tensor:
    return as_tensor(x).pow(exponent)


def matmul(a: Any, b: Any) -> Tensor:
    return as_tensor(a) @ b


def outer(a: Any, b: Any) -> Tensor:
    """``a[i] b[j]`` of two 1-d tensors (torch's ``outer``)."""
    a, b = as_tensor(a), as_tensor(b)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer: expected two 1-d tensors, got shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    return a.reshape(-1, 1) * b.reshape(1, -1)


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is a convgrad Tensor."""
    return isinstance(obj, Tensor)



def method_form(name: str) -> Any:
    """``cg.<name>(x, *args, **kwargs)``: ``x.<name>(*args, **kwargs)`` for a name of
    :data:`METHOD_FORMS` (``x`` a Tensor or anything ``tensor()`` accepts)."""
    if name not in METHOD_FORMS:
        raise AttributeError(name)

    def function(x: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(as_tensor(x), name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``{name}(x, ...)`` is ``x.{name}(...)`` (torch's function form)."
    return function
