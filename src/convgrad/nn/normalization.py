"""Normalisation layers: ``BatchNorm1d/2d/3d``, ``InstanceNorm1d/2d/3d``, ``GroupNorm``,
``LayerNorm``.

Constructor arguments, parameters (``weight`` ones, ``bias`` zeros), buffers
(``running_mean``, ``running_var``, ``num_batches_tracked`` as int64), the train/eval
behaviour and ``repr`` follow ``torch.nn``; ``forward`` calls the functions of
:mod:`convgrad.functional.normalization`.  One keyword-only addition: ``dtype`` (float32
by default, or float64).
"""

from __future__ import annotations

import warnings
from numbers import Real
from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..devices import check_device
from ..functional import normalization as Fn
from ..functional.activation import leaky_relu
from ..functional.layer_input import layer_input
from ..functional.local_response_norm import local_response_norm
from ..ops import jit
from ..tensor import Tensor
from ..tensor.args import check_dtype, flag, number
from .conv import _positive_int
from .module import Module, Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "LocalResponseNorm", "RMSNorm"]


def _dtype(fn: str, dtype: Any) -> np.dtype:
    return get_default_dtype() if dtype is None else check_dtype(fn, dtype)


def _array(buffer: Any) -> np.ndarray:
    """The ndarray behind a buffer (a Tensor or an ndarray), to update in place."""
    return buffer.data if isinstance(buffer, Tensor) else buffer


class _NormBase(Module):
    """What batch and instance normalisation share: parameters, buffers, ``repr``."""

    _accepted_dims: tuple[int, ...]
    _example: str
    _kernels: tuple[str, ...]  # the kernel modules whose loops the warm-up loads first

    def __init__(self, num_features: int, eps: float, momentum: float | None, affine: bool,
                 track_running_stats: bool, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        jit.warm_up(*self._kernels)  # a network is being built: its kernels load
        fn = type(self).__name__
        check_device(fn, device)
        self.num_features = _positive_int("num_features", num_features, fn)
        self.eps = number(fn, "eps", eps, low=0.0)
        if momentum is not None and (isinstance(momentum, bool) or not isinstance(
                momentum, Real) or not 0 <= momentum <= 1):
            raise ValueError(f"{fn}: momentum={momentum!r} must be a number in [0, 1] or None")
        self.momentum = momentum
        self.affine = flag(fn, "affine", affine)
        self.track_running_stats = flag(fn, "track_running_stats", track_running_stats)
        flag(fn, "bias", bias)
        dt = _dtype(fn, dtype)
        c = self.num_features
        if affine:
            self.weight = Parameter(np.ones(c, dt))
            if bias:
                self.bias = Parameter(np.zeros(c, dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(c, dt))
            self.register_buffer("running_var", np.ones(c, dt))
            self.register_buffer("num_batches_tracked", np.array(0, np.int64))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches seen."""
        if self.track_running_stats:
            _array(self.running_mean)[...] = 0
            _array(self.running_var)[...] = 1
            _array(self.num_batches_tracked)[...] = 0

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            self.weight.data[...] = 1
            if self.bias is not None:
                self.bias.data[...] = 0

    def _reference(self) -> Any:
        """What sets the input's dtype: the weight, else the running mean (as torch)."""
        return self.weight if self.weight is not None else (
            None if self.running_mean is None else Tensor._wrap(self.running_mean))

    def _check_input(self, x: Tensor) -> None:
        fn = type(self).__name__
        if x.ndim not in self._accepted_dims:
            raise ValueError(f"{fn}: expected {self._example} input, got input of shape "
                             f"{x.shape}")

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _kernels = ("normalization",)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input: Any) -> Tensor:
        return self._normalize(input, relu=False)

    def forward_activation(self, input: Any, activation: float) -> Tensor:
        """``leaky_relu(forward(input), activation)`` (a ReLU for 0), fused into one
        kernel each way when the batch statistics normalise (see
        :mod:`convgrad.nn.fusion`)."""
        return self._normalize(input, relu=True, slope=activation)

    fuses_activation_after = forward  # see convgrad.nn.fusion

    def accepts_activation(self, activation: float | str) -> bool:
        """A ReLU, or a leaky ReLU of positive slope (DCGAN's discriminator): the compiled
        loops fuse either, oneDNN a plain ReLU (where neither runs, the leaky ReLU is its
        own operation, as unfused)."""
        return isinstance(activation, float) and activation >= 0

    def _normalize(self, input: Any, relu: bool, slope: float = 0.0) -> Tensor:
        x = layer_input(type(self).__name__, input, self._reference())
        self._check_input(x)
        if x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: input of shape {x.shape} has "
                             f"{x.shape[1]} channels, expected num_features="
                             f"{self.num_features}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            count = _array(self.num_batches_tracked)
            count[...] += 1
            if self.momentum is None:  # a cumulative average of all batches seen
                factor = 1.0 / float(count)
        use_batch_stats = self.training or (self.running_mean is None
                                            and self.running_var is None)
        keep = not self.training or self.track_running_stats  # buffers read or updated
        rm, rv = (self.running_mean, self.running_var) if keep else (None, None)
        if relu and use_batch_stats:
            return Fn.batch_norm_relu(x, rm, rv, self.weight, self.bias, factor, self.eps,
                                      slope)
        y = Fn.batch_norm(x, rm, rv, self.weight, self.bias, use_batch_stats, factor, self.eps)
        if not relu:
            return y
        return y.relu() if slope == 0 else leaky_relu(y, slope)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` input, per channel."""

    _accepted_dims, _example = (2, 3), "(N, C) or (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` input, per channel."""

    _accepted_dims, _example = (4,), "(N, C, H, W)"


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of ``(N, C, D, H, W)`` input, per channel."""

    _accepted_dims, _example = (5,), "(N, C, D, H, W)"


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation of ``(N, C, *)`` input of any rank.  convgrad trains in one
    process (:mod:`convgrad.distributed` has no process group), where the batch's
    statistics are all there are: torch's ``SyncBatchNorm`` outside a process group.
    ``process_group`` is accepted and must be None."""

    _accepted_dims, _example = (2, 3, 4, 5, 6), "(N, C, *)"

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        if process_group is not None:
            raise ValueError(f"SyncBatchNorm: process_group={process_group!r}; convgrad "
                             "runs in one process (see convgrad.distributed): pass None")
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = None

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every ``BatchNorm1d/2d/3d`` in it replaced by a
        ``SyncBatchNorm`` holding the same parameters (the same objects) and buffers, as
        torch's; the module itself if it is one."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            dt = (module.weight.data.dtype if module.weight is not None
                  else module.running_mean.dtype if module.running_mean is not None else None)
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group, dtype=dt,
                      bias=module.bias is not None or not module.affine)
            for name, p in module._parameters.items():
                out._parameters[name] = p
            for name, b in module._buffers.items():
                out._buffers[name] = b
            out.training = module.training
        for name, child in module._modules.items():
            if child is not None:
                out._modules[name] = cls.convert_sync_batchnorm(child, process_group)
        return out


class _FusesActivation:
    """A group or instance normalisation layer, ``_normalize(input, activation)``: its
    ``forward`` (activation None), and ``forward_activation`` for a ReLU (0), a leaky
    ReLU (its slope) or SiLU (``"silu"``) after it, one kernel each way where the group
    norm kernels run (see :mod:`convgrad.nn.fusion`)."""

    def _normalize(self, input: Any, activation: float | str | None) -> Tensor:
        raise NotImplementedError

    def forward(self, input: Any) -> Tensor:
        return self._normalize(input, None)

    def forward_activation(self, input: Any, activation: float | str) -> Tensor:
        """``forward(input)`` through ``activation``."""
        return self._normalize(input, activation)

    fuses_activation_after = forward  # see convgrad.nn.fusion

    def accepts_activation(self, activation: float | str) -> bool:
        """The group norm kernels apply a ReLU (0), a leaky one of any slope > 0, and
        SiLU."""
        return activation == "silu" or (isinstance(activation, float) and activation >= 0)

    def activation_kernels(self, activation: float | str) -> tuple[str, ...]:
        """The compiled loops the fused ``activation`` adds to the layer's own (asked for
        in the background where a ``Sequential`` holds the pair): a (leaky) ReLU's byte
        mask is a signature of its own."""
        return () if activation == "silu" else ("group_norm.relu",)


class _InstanceNorm(_FusesActivation, _NormBase):
    _unbatched_dims: int
    _kernels = ("group_norm.plain",)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def _normalize(self, input: Any, activation: float | str | None) -> Tensor:
        x = layer_input(type(self).__name__, input, self._reference())
        self._check_input(x)
        fn = type(self).__name__
        feature_dim = x.ndim - self._unbatched_dims
        if x.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"{fn}: input of shape {x.shape} has {x.shape[feature_dim]} "
                                 f"channels (dim {feature_dim}), expected num_features="
                                 f"{self.num_features}")
            warnings.warn(f"{fn}: input of shape {x.shape} has {x.shape[feature_dim]} "
                          f"channels, not num_features={self.num_features} (unused, since "
                          "affine=False)", stacklevel=2)
        unbatched = x.ndim == self._unbatched_dims
        if unbatched:
            x = x.unsqueeze(0)
        args = (x, self.running_mean, self.running_var, self.weight, self.bias,
                self.training or not self.track_running_stats,
                0.0 if self.momentum is None else self.momentum, self.eps)
        y = (Fn.instance_norm(*args) if activation is None
             else Fn.instance_norm_activation(*args, activation))
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of ``(N, C, L)`` or ``(C, L)`` input."""

    _accepted_dims, _example, _unbatched_dims = (2, 3), "(N, C, L) or (C, L)", 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of ``(N, C, H, W)`` or ``(C, H, W)`` input."""

    _accepted_dims, _example, _unbatched_dims = (3, 4), "(N, C, H, W) or (C, H, W)", 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input."""

    _accepted_dims, _example, _unbatched_dims = (4, 5), "(N, C, D, H, W) or (C, D, H, W)", 4


class GroupNorm(_FusesActivation, Module):
    """Group normalisation: ``num_channels`` split into ``num_groups`` groups, each
    normalised per sample; ``weight`` and ``bias`` act per channel."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        jit.warm_up("group_norm.plain")  # a network is being built: its kernels load
        fn = "GroupNorm"
        check_device(fn, device)
        self.num_groups = _positive_int("num_groups", num_groups, fn)
        self.num_channels = _positive_int("num_channels", num_channels, fn)
        if num_channels % num_groups:
            raise ValueError(f"{fn}: num_groups={num_groups} must divide "
                             f"num_channels={num_channels}")
        self.eps = number(fn, "eps", eps, low=0.0)
        self.affine = flag(fn, "affine", affine)
        flag(fn, "bias", bias)
        dt = _dtype(fn, dtype)
        if affine:
            self.weight = Parameter(np.ones(num_channels, dt))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(np.zeros(num_channels, dt))
        else:
            self.register_parameter("bias", None)

    def _normalize(self, input: Any, activation: float | str | None) -> Tensor:
        x = layer_input("GroupNorm", input, self.weight)
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: input of shape {x.shape} must be (N, C, *) with "
                             f"C = num_channels={self.num_channels}")
        if activation is None:
            return Fn.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)
        return Fn.group_norm_activation(x, self.num_groups, self.weight, self.bias, self.eps,
                                        activation)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class LayerNorm(Module):
    """Layer normalisation over the last dims, which must equal ``normalized_shape``;
    ``weight`` and ``bias`` of that shape act elementwise."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        fn = "LayerNorm"
        check_device(fn, device)
        self.normalized_shape = Fn._normalized_shape(fn, normalized_shape)
        self.eps = number(fn, "eps", eps, low=0.0)
        self.elementwise_affine = flag(fn, "elementwise_affine", elementwise_affine)
        flag(fn, "bias", bias)
        dt = _dtype(fn, dtype)
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dt))
        else:
            self.register_parameter("weight", None)
        if elementwise_affine and bias:
            self.bias = Parameter(np.zeros(self.normalized_shape, dt))
        else:
            self.register_parameter("bias", None)
        jit.warm_up("layer_norm")  # a network is being built: its kernels load

    def forward(self, input: Any) -> Tensor:
        input = layer_input("LayerNorm", input, self.weight)
        return Fn.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """Root-mean-square normalisation over the last dims, which must equal
    ``normalized_shape``; ``weight`` of that shape acts elementwise (no bias); ``eps=None``
    is the input dtype's machine epsilon, as torch."""

    def __init__(self, normalized_shape: Any, eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        fn = "RMSNorm"
        check_device(fn, device)
        self.normalized_shape = Fn._normalized_shape(fn, normalized_shape)
        self.eps = None if eps is None else number(fn, "eps", eps, low=0.0)
        self.elementwise_affine = flag(fn, "elementwise_affine", elementwise_affine)
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, _dtype(fn, dtype)))
        else:
            self.register_parameter("weight", None)

    def forward(self, input: Any) -> Tensor:
        input = layer_input("RMSNorm", input, self.weight)
        return Fn.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Each channel divided by a power of its neighbourhood's mean square (see
    :func:`convgrad.functional.local_response_norm`)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        local_response_norm(np.zeros((1, 1, 1), np.float32), size, alpha, beta, k)  # checks
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Any) -> Tensor:
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
