"""Normalisation: ``batch_norm``, ``instance_norm``, ``group_norm``, ``layer_norm``.

All four standardise ``x`` over some dims, ``(x - mean) / sqrt(var + eps)`` with the
biased variance, then scale and shift per channel (or per element, for ``layer_norm``).
The standardisation is one operation (:class:`Standardize`) with its gradient rule; the
running statistics of ``batch_norm`` and ``instance_norm`` are ndarrays (or constant
Tensors) updated in place, with the unbiased variance, as torch does.
"""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import numpy as np

from ..arraytypes import is_dask_array
from ..autograd import is_grad_enabled
from ..ops import group_norm as group_kernels
from ..ops import layer_norm as layer_kernels
from ..ops import normalization as kernels
from ..ops import reduction
from ..tensor import Tensor, as_tensor
from ..tensor.args import number as _number
from ..tensor.normalization import (
    BatchNorm,
    BatchNormEval,
    BatchNormReLU,
    ChannelAffine,
    GroupNorm,
    GroupNormReLU,
    GroupNormSiLU,
    LayerNorm,
    Standardize,
)
from ..tensor.normalization import moments as _moments
from ..tensor.operands import widened
from .activation import leaky_relu
from .smooth_activation import silu

__all__ = ["batch_norm", "batch_norm_relu", "group_norm", "group_norm_activation",
           "instance_norm", "instance_norm_activation", "layer_norm", "rms_norm"]


def _state(fn: str, name: str, value: Any, c: int) -> np.ndarray | None:
    """A running statistic as the ndarray to read and update in place (or None)."""
    if value is None:
        return None
    arr = value.data if isinstance(value, Tensor) else value
    if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":
        raise TypeError(f"{fn}: {name} must be a float ndarray or Tensor, got "
                        f"{type(value).__name__}")
    if arr.shape != (c,):
        raise ValueError(f"{fn}: {name} of shape {arr.shape} must have shape ({c},) "
                         f"(one entry per channel)")
    return arr


def _affine_arg(fn: str, name: str, value: Any, shape: tuple) -> Any:
    if value is None:
        return None
    t = value if isinstance(value, Tensor) else as_tensor(value)
    if t.shape != shape:
        raise ValueError(f"{fn}: {name} of shape {t.shape} must have shape {shape}")
    return t


def _affine(y: Tensor, weight: Any, bias: Any, shape: tuple) -> Tensor:
    """``y * weight + bias`` with the (C,) or normalised-shape parameters viewed as ``shape``
    (per-channel ones: one :class:`ChannelAffine` kernel)."""
    if (weight is not None or bias is not None) and shape[:2] == (1, y.shape[1]) and all(
            s == 1 for s in shape[2:]) and len(shape) == y.ndim and y.ndim > 1:
        return ChannelAffine.apply(y, weight, bias)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _channels_input(fn: str, input: Any) -> Tensor:
    x = as_tensor(input)
    if x.ndim < 2:
        raise ValueError(f"{fn}: input of shape {x.shape} must be (N, C, *) with at least "
                         "2 dims")
    return x


def _update(stat: np.ndarray | None, momentum: float, batch_value: np.ndarray) -> None:
    """``stat <- (1 - momentum) stat + momentum batch_value`` in place."""
    if stat is not None:
        stat[...] = (1.0 - momentum) * stat + momentum * batch_value


def _standardize_rows(x: Tensor, rows: int, eps: float, dims: tuple) -> tuple:
    """``x`` standardised over ``dims`` (its trailing elements after the first ``rows``
    groups of memory order): batch normalization, without affine, of the view
    (1, rows, rest), whose "channels" are the rows (the norm family's kernels); returns y
    and the rows' (mean, biased variance).  An empty x takes :class:`Standardize`, and so
    does a dask array (lazily: the view would merge dims across its chunks)."""
    if x.data.size == 0 or is_dask_array(x.data):
        mu, var = _moments(x.data, dims)
        return Standardize.apply(x, dims=dims, eps=eps, mean=mu, var=var), (mu, var)
    stats: dict = {}
    y = BatchNorm.apply(x.reshape(1, rows, x.data.size // rows), None, None, eps=eps,
                        stats=stats)
    return y.reshape(x.shape), (stats["mean"], stats["var"])


# ----------------------------------------------------------------------------- functions
def batch_norm(input: Any, running_mean: Any, running_var: Any, weight: Any = None,
               bias: Any = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    """Normalise each channel of ``input`` (N, C, *) over the batch and spatial dims.

    With ``training`` the batch statistics normalise, and ``running_mean``/``running_var``
    (ndarrays or Tensors of shape (C,), or None) move towards the batch mean and the
    unbiased batch variance by ``momentum``, in place.  Otherwise the running statistics
    normalise.  ``weight`` and ``bias`` (C,) scale and shift the result.
    """
    fn = "batch_norm"
    x = _channels_input(fn, input)
    x._eager(fn)  # its kernels write into arrays they allocate: a dask array is refused
    c = x.shape[1]
    eps = _number(fn, "eps", eps, low=0.0)
    momentum = _number(fn, "momentum", momentum, low=0.0)
    rm, rv = (_state(fn, "running_mean", running_mean, c),
              _state(fn, "running_var", running_var, c))
    weight, bias = (_affine_arg(fn, "weight", weight, (c,)), _affine_arg(fn, "bias", bias, (c,)))
    shape = (1, c) + (1,) * (x.ndim - 2)
    if training and x.data.size == 0 and c:  # an empty batch: an empty result, stats kept
        return _affine(x * 1.0, weight, bias, shape)
    if training:
        count = x.data.size // c if c else 0
        if count <= 1:
            raise ValueError(f"{fn}: expected more than 1 value per channel when training, "
                             f"got input of shape {x.shape}")
        stats: dict = {}
        y = BatchNorm.apply(x, weight, bias, eps=eps, stats=stats)
        _update(rm, momentum, stats["mean"])
        _update(rv, momentum, stats["var"] * (count / (count - 1)))
        return y
    else:
        if rm is None or rv is None:
            raise ValueError(f"{fn}: running_mean and running_var are required when "
                             "training=False")
        params = [t for t in (x, weight, bias) if t is not None]
        if not (is_grad_enabled() and any(t.requires_grad for t in params)):
            # nothing to differentiate: one kernel (oneDNN's inference pass in float32)
            y, _ = kernels.batch_norm_forward(
                x.data, rm, rv, None if weight is None else weight.data,
                None if bias is None else bias.data, eps, training=False)
            return Tensor(y)
        # one channel-affine pass each way, where normalising, then scaling and shifting
        # took a pass per step ((8, 64, 64, 64) float32, forward and backward: 7.9 ->
        # 2.7 ms)
        return BatchNormEval.apply(x, weight, bias, mean=np.asarray(rm, np.float64),
                                   var=np.asarray(rv, np.float64), eps=eps)


def batch_norm_relu(input: Any, running_mean: Any, running_var: Any, weight: Any = None,
                    bias: Any = None, momentum: float = 0.1, eps: float = 1e-5,
                    slope: float = 0.0) -> Tensor:
    """``leaky_relu(batch_norm(input, ..., training=True), slope)`` (a ReLU for ``slope``
    0) as one fused kernel each way (an internal entry point for callers that fuse the
    pair; the result and gradients are those of the two calls).  A leaky ReLU is fused
    where the compiled loops normalise; elsewhere it runs as its own operation."""
    fn = "batch_norm_relu"
    x = _channels_input(fn, input)
    x._eager(fn)
    c = x.shape[1]
    eps = _number(fn, "eps", eps, low=0.0)
    momentum = _number(fn, "momentum", momentum, low=0.0)
    rm, rv = (_state(fn, "running_mean", running_mean, c),
              _state(fn, "running_var", running_var, c))
    weight, bias = (_affine_arg(fn, "weight", weight, (c,)), _affine_arg(fn, "bias", bias, (c,)))
    count = x.data.size // c if c else 0
    if count <= 1:
        raise ValueError(f"{fn}: expected more than 1 value per channel when training, "
                         f"got input of shape {x.shape}")
    if slope and not (isinstance(x.data, np.ndarray) and kernels.fuses_leaky_relu(x.data)):
        return _activation(batch_norm(x, rm, rv, weight, bias, True, momentum, eps), slope)
    stats: dict = {}
    y = BatchNormReLU.apply(x, weight, bias, eps=eps, stats=stats, slope=float(slope))
    _update(rm, momentum, stats["mean"])
    _update(rv, momentum, stats["var"] * (count / (count - 1)))
    return y


def instance_norm(input: Any, running_mean: Any = None, running_var: Any = None,
                  weight: Any = None, bias: Any = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample of ``input`` (N, C, *spatial) over its spatial
    dims.

    With ``use_input_stats`` the sample's own statistics normalise and the running
    statistics (if given) move towards their batch averages; otherwise the running
    statistics normalise, as in :func:`batch_norm` in evaluation mode.
    """
    return _instance_norm("instance_norm", input, running_mean, running_var, weight, bias,
                          use_input_stats, momentum, eps, None)


def instance_norm_activation(input: Any, running_mean: Any, running_var: Any, weight: Any,
                             bias: Any, use_input_stats: bool, momentum: float, eps: float,
                             activation: float | str) -> Tensor:
    """``instance_norm(...)`` through ``activation`` (:func:`_activation`'s), one kernel
    each way where the group norm kernels run: an internal entry point for callers that
    fuse the pair (:mod:`convgrad.nn.fusion`); the result and gradients are the two
    calls'."""
    return _instance_norm("instance_norm_activation", input, running_mean, running_var,
                          weight, bias, use_input_stats, momentum, eps, activation)


def _activation(y: Tensor, activation: float | str | None) -> Tensor:
    """``y`` through ``activation`` as its own operation: None, as it is; a float, the
    (leaky) ReLU of that slope (a ReLU for 0); ``"silu"``, SiLU."""
    if activation is None:
        return y
    if activation == "silu":
        return silu(y)
    return y.relu() if activation == 0 else leaky_relu(y, activation)


def _instance_norm(fn: str, input: Any, running_mean: Any, running_var: Any, weight: Any,
                   bias: Any, use_input_stats: bool, momentum: float, eps: float,
                   activation: float | str | None) -> Tensor:
    x = _channels_input(fn, input)
    n, c = x.shape[:2]
    eps = _number(fn, "eps", eps, low=0.0)
    momentum = _number(fn, "momentum", momentum, low=0.0)
    rm, rv = (_state(fn, "running_mean", running_mean, c),
              _state(fn, "running_var", running_var, c))
    weight, bias = (_affine_arg(fn, "weight", weight, (c,)), _affine_arg(fn, "bias", bias, (c,)))
    shape = (1, c) + (1,) * (x.ndim - 2)
    if not use_input_stats:
        return _activation(batch_norm(x, rm, rv, weight, bias, False, momentum, eps),
                           activation)
    count = int(np.prod(x.shape[2:]))
    if count <= 1:
        raise ValueError(f"{fn}: expected more than 1 spatial element when training, got "
                         f"input of shape {x.shape}")
    if group_kernels.available(x.data):  # one kernel each way, in x's layout
        stats: dict = {}
        y = _group_norm_function(activation).apply(x, weight, bias, groups=c, eps=eps,
                                                   stats=stats, activation=activation)
        mu, var = stats["mean"], stats["var"]
    else:
        y, (mu, var) = _standardize_rows(x, n * c, eps, tuple(range(2, x.ndim)))
        y = _activation(_affine(y, weight, bias, shape), activation)
    if n:
        _update(rm, momentum, reduction.mean(mu.reshape(n, c), axis=0))
        _update(rv, momentum, reduction.mean(var.reshape(n, c), axis=0) * (count / (count - 1)))
    return y


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Tensor:
    """Split the channels of ``input`` (N, C, *) into ``num_groups`` groups and normalise
    each group of each sample over its channels and spatial dims; ``weight`` and ``bias``
    (C,) then act per channel."""
    return _group_norm("group_norm", input, num_groups, weight, bias, eps, None)


def group_norm_activation(input: Any, num_groups: int, weight: Any, bias: Any, eps: float,
                          activation: float | str) -> Tensor:
    """``group_norm(...)`` through ``activation`` (:func:`_activation`'s), one kernel each
    way where the group norm kernels run: an internal entry point for callers that fuse
    the pair (:mod:`convgrad.nn.fusion`); the result and gradients are the two calls'."""
    return _group_norm("group_norm_activation", input, num_groups, weight, bias, eps,
                       activation)


def _group_norm_function(activation: float | str | None) -> type:
    if activation is None:
        return GroupNorm
    return GroupNormSiLU if activation == "silu" else GroupNormReLU


def _group_norm(fn: str, input: Any, num_groups: int, weight: Any, bias: Any, eps: float,
                activation: float | str | None) -> Tensor:
    x = _channels_input(fn, input)
    n, c = x.shape[:2]
    if isinstance(num_groups, bool) or not isinstance(num_groups, Integral) or num_groups < 1:
        raise ValueError(f"{fn}: num_groups={num_groups!r} must be a positive int")
    if c % num_groups:
        raise ValueError(f"{fn}: num_groups={num_groups} must divide the number of channels "
                         f"C={c} (input shape {x.shape})")
    eps = _number(fn, "eps", eps, low=0.0)
    weight, bias = (_affine_arg(fn, "weight", weight, (c,)), _affine_arg(fn, "bias", bias, (c,)))
    if group_kernels.available(x.data):  # one kernel each way, in x's layout
        return _group_norm_function(activation).apply(x, weight, bias, groups=int(num_groups),
                                                      eps=eps, activation=activation)
    groups = int(num_groups)
    if is_dask_array(x.data):  # split the channels only: dask cannot merge them with the
        grouped = x.reshape(n, groups, c // groups, *x.shape[2:])  # positions across chunks
        dims = tuple(range(2, grouped.ndim))
    else:
        grouped, dims = x.reshape(n, groups, x.data.size // max(n * groups, 1)), (2,)
    y = _standardize_rows(grouped, n * groups, eps, dims)[0].reshape(x.shape)
    return _activation(_affine(y, weight, bias, (1, c) + (1,) * (x.ndim - 2)), activation)


def _normalized_shape(fn: str, value: Any) -> tuple[int, ...]:
    shape = (value,) if isinstance(value, Integral) else value
    try:
        shape = tuple(shape)
    except TypeError:
        shape = None
    if not shape or not all(isinstance(s, Integral) and not isinstance(s, bool) and s >= 1
                            for s in shape):
        raise ValueError(f"{fn}: normalized_shape={value!r} must be a positive int or a "
                         "non-empty sequence of them")
    return tuple(int(s) for s in shape)


def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise ``input`` over its last ``len(normalized_shape)`` dims, which must equal
    ``normalized_shape``; ``weight`` and ``bias`` have that shape and act elementwise."""
    fn = "layer_norm"
    x = as_tensor(input)
    shape = _normalized_shape(fn, normalized_shape)
    k = len(shape)
    if x.shape[x.ndim - k:] != shape or x.ndim < k:
        raise ValueError(f"{fn}: normalized_shape={shape} must equal the last {k} dims of "
                         f"the input, whose shape is {x.shape}")
    eps = _number(fn, "eps", eps, low=0.0)
    weight, bias = (_affine_arg(fn, "weight", weight, shape),
                    _affine_arg(fn, "bias", bias, shape))
    size = math.prod(shape)
    if layer_kernels.available(x.data, size) and all(
            p is None or p.data.dtype == x.data.dtype for p in (weight, bias)):
        return LayerNorm.apply(x, weight, bias, k=size, eps=eps)  # one kernel each way
    dims = tuple(range(x.ndim - k, x.ndim))
    rows = math.prod(x.shape[:x.ndim - k])
    y = _standardize_rows(x, rows, eps, dims)[0]
    return _affine(y, weight, bias, shape)


def rms_norm(input: Any, normalized_shape: Any, weight: Any = None,  # noqa: A002
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last ``len(normalized_shape)`` dims,
    which must equal ``normalized_shape``; ``eps=None`` is the dtype's machine epsilon.
    float32 input is evaluated in float64 and rounded once."""
    fn = "rms_norm"
    x = as_tensor(input)._floating()
    shape = _normalized_shape(fn, normalized_shape)
    k = len(shape)
    if x.ndim < k or x.shape[x.ndim - k:] != shape:
        raise ValueError(f"{fn}: normalized_shape={shape} must equal the last {k} dims of "
                         f"the input, whose shape is {x.shape}")
    eps = float(np.finfo(x.dtype).eps) if eps is None else _number(fn, "eps", eps, low=0.0)
    w = _affine_arg(fn, "weight", weight, shape)
    (x64,), single = widened(x)
    dims = tuple(range(x.ndim - k, x.ndim))
    y = x64 * ((x64 * x64).mean(dims, keepdim=True) + eps) ** -0.5
    if w is not None:
        y = y * (w.double() if single else w)
    return y.float() if single else y
