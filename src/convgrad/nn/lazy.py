"""Lazy layers, as torch's: ``LazyLinear``, ``LazyConv1d/2d/3d``,
``LazyConvTranspose1d/2d/3d``, ``LazyBatchNorm1d/2d/3d``, ``LazyInstanceNorm1d/2d/3d``
take their input size (``in_features``, ``in_channels``, ``num_features``) from their
first input.

Until then their parameters are :class:`UninitializedParameter` objects (empty; an
optimiser may already hold them) and their buffers empty arrays.  The first call builds
the layer they stand for (its ``__init__`` with the inferred size and the arguments
given, so its initialisation draws as that layer's would at that moment), fills the held
parameter objects in place (the optimiser's references stay valid) and turns the module
into that class (``cls_to_become``: a ``LazyLinear`` is then a ``Linear``).  Loading a
state dict into a module that has not run yet builds it from the saved shapes.  The
arguments are checked when the lazy layer is made, by building a throwaway layer of the
smallest valid size (its weights from a private generator, so the global stream is not
drawn).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..devices import check_device
from ..tensor.args import check_dtype
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .layers import Linear
from .module import Module, Parameter
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)

__all__ = ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d",
           "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear",
           "LazyModuleMixin", "UninitializedBuffer", "UninitializedParameter"]


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet: empty until :meth:`materialize`, which
    fills it in place and makes it a plain :class:`Parameter`."""

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        check_device("UninitializedParameter", device)
        dt = get_default_dtype() if dtype is None else check_dtype(
            "UninitializedParameter", dtype)
        super().__init__(np.empty(0, dt), requires_grad=requires_grad)

    def materialize(self, values: Any) -> None:
        """Take ``values`` (an ndarray of the parameter's dtype) as its data."""
        self.data = np.asarray(values, dtype=self.data.dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


class UninitializedBuffer:
    """torch's name for a lazy layer's buffer before its first call; here those buffers
    are empty arrays, and this class exists for ``isinstance`` checks only."""


class LazyModuleMixin:
    """What the lazy layers share; ``cls_to_become`` is the layer each stands for,
    ``_size_name`` its first constructor argument (the one inferred)."""

    cls_to_become: type
    _size_name: str
    # not fused with the activation after it in a Sequential until it has run (the fused
    # call bypasses __call__, where the layer is built)
    fuses_activation_after = None

    def _lazy_init(self, size_placeholder: int, kwargs: dict, param_names: tuple,
                   buffer_names: tuple = ()) -> None:
        """Check the arguments (a throwaway layer of ``size_placeholder``), then hold
        empty parameters and buffers until the first call."""
        probe_kwargs = dict(kwargs)
        if "rng" in probe_kwargs:
            probe_kwargs["rng"] = np.random.default_rng(0)
        probe = self.cls_to_become(size_placeholder, **probe_kwargs)
        Module.__init__(self)
        object.__setattr__(self, "_lazy_kwargs", kwargs)
        for name in param_names:
            if probe._parameters.get(name) is None:
                self.register_parameter(name, None)
            else:
                dt = probe._parameters[name].data.dtype
                self.register_parameter(name, UninitializedParameter(dtype=dt))
        for name in buffer_names:
            buf = probe._buffers.get(name)
            self.register_buffer(name, None if buf is None else np.empty(0, buf.dtype))
        for key, value in probe.__dict__.items():  # its plain attributes (out_features...)
            if not key.startswith("_") and key != "training":
                object.__setattr__(self, key, value)
        object.__setattr__(self, self._size_name, 0)

    def has_uninitialized_params(self) -> bool:
        """Whether the layer still waits for its first input."""
        return "_lazy_kwargs" in self.__dict__

    def initialize_parameters(self, input: Any, *args: Any, **kwargs: Any) -> None:  # noqa: A002
        """Build the layer from ``input``'s size (what the first call does)."""
        self._become(self._inferred_size(input))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.has_uninitialized_params() and args:
            self.initialize_parameters(*args, **kwargs)
        return Module.__call__(self, *args, **kwargs)

    def _inferred_size(self, input: Any) -> int:
        raise NotImplementedError

    def _size_from_state(self, entries: dict) -> int | None:
        """The size a state dict's entries (by own name) imply, or None."""
        raise NotImplementedError

    def materialize_from_state(self, entries: dict) -> None:
        """Build the layer from the shapes of a state dict's entries for it (by own name),
        where they tell its size (what ``load_state_dict`` does before it copies)."""
        size = self._size_from_state(entries)
        if size is not None:
            self._become(size)

    def _become(self, size: int) -> None:
        held = dict(self._parameters)
        training = self.training
        kwargs = self.__dict__.pop("_lazy_kwargs")
        target = self.cls_to_become
        target.__init__(self, size, **kwargs)
        for name, p in list(self._parameters.items()):
            old = held.get(name)
            if isinstance(old, UninitializedParameter) and p is not None:
                old.materialize(p.data)
                old.requires_grad_(p.requires_grad)
                self._parameters[name] = old
        self.training = training
        self.__class__ = target


def _shape_of(input: Any) -> tuple:
    shape = getattr(input, "shape", None)
    if shape is None:
        raise TypeError(f"lazy layer: its first input must be a Tensor, got "
                        f"{type(input).__name__}")
    return tuple(shape)


class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is its first input's last dim."""

    cls_to_become = Linear
    _size_name = "in_features"

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None, *, rng: Any = None) -> None:
        self._lazy_init(1, {"out_features": out_features, "bias": bias, "device": device,
                            "dtype": dtype, "rng": rng}, ("weight", "bias"))

    def _inferred_size(self, input: Any) -> int:
        shape = _shape_of(input)
        if not shape:
            raise ValueError("LazyLinear: a 0-d input has no features")
        return int(shape[-1])

    def _size_from_state(self, entries: dict) -> int | None:
        w = entries.get("weight")
        return None if w is None or np.ndim(w) != 2 else int(np.shape(w)[1])


class _LazyConv(LazyModuleMixin):
    _size_name = "in_channels"
    _nd: int

    def _inferred_size(self, input: Any) -> int:
        shape = _shape_of(input)
        nd = self.cls_to_become._nd
        if len(shape) not in (nd + 1, nd + 2):
            raise ValueError(f"{type(self).__name__}: input of shape {shape} must be "
                             f"{nd + 2}-d (N, C, ...) or {nd + 1}-d unbatched")
        return int(shape[1] if len(shape) == nd + 2 else shape[0])

    def _size_from_state(self, entries: dict) -> int | None:
        w = entries.get("weight")
        if w is None or np.ndim(w) < 3:
            return None
        groups = self._lazy_kwargs.get("groups", 1)
        return int(np.shape(w)[0]) if self.cls_to_become.transposed else int(
            np.shape(w)[1]) * groups


def _conv_kwargs(out_channels: int, kernel_size: Any, stride: Any, padding: Any,
                 dilation: Any, groups: int, bias: bool, padding_mode: str, device: Any,
                 dtype: Any, rng: Any) -> dict:
    return {"out_channels": out_channels, "kernel_size": kernel_size, "stride": stride,
            "padding": padding, "dilation": dilation, "groups": groups, "bias": bias,
            "padding_mode": padding_mode, "device": device, "dtype": dtype, "rng": rng}


def _placeholder(groups: Any) -> int:
    """The smallest in_channels the probe accepts (groups must divide it)."""
    return groups if isinstance(groups, int) and not isinstance(groups, bool) and groups > 0 \
        else 1


def _lazy_conv(target: type) -> type:
    class LazyConv(_LazyConv, target):
        cls_to_become = target

        def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1,
                     padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                     padding_mode: str = "zeros", device: Any = None, dtype: Any = None, *,
                     rng: Any = None) -> None:
            self._lazy_init(_placeholder(groups), _conv_kwargs(
                out_channels, kernel_size, stride, padding, dilation, groups, bias,
                padding_mode, device, dtype, rng), ("weight", "bias"))

    LazyConv.__name__ = LazyConv.__qualname__ = f"Lazy{target.__name__}"
    LazyConv.__doc__ = f"``{target.__name__}`` whose ``in_channels`` is its first input's."
    return LazyConv


def _lazy_conv_transpose(target: type) -> type:
    class LazyConvTranspose(_LazyConv, target):
        cls_to_become = target

        def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros",
                     device: Any = None, dtype: Any = None, *, rng: Any = None) -> None:
            kwargs = _conv_kwargs(out_channels, kernel_size, stride, padding, dilation, groups,
                                  bias, padding_mode, device, dtype, rng)
            kwargs["output_padding"] = output_padding
            self._lazy_init(_placeholder(groups), kwargs, ("weight", "bias"))

    LazyConvTranspose.__name__ = LazyConvTranspose.__qualname__ = f"Lazy{target.__name__}"
    LazyConvTranspose.__doc__ = (f"``{target.__name__}`` whose ``in_channels`` is its first "
                                 "input's.")
    return LazyConvTranspose


LazyConv1d, LazyConv2d, LazyConv3d = (_lazy_conv(c) for c in (Conv1d, Conv2d, Conv3d))
LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d = (
    _lazy_conv_transpose(c) for c in (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))

_NORM_BUFFERS = ("running_mean", "running_var", "num_batches_tracked")


class _LazyNorm(LazyModuleMixin):
    _size_name = "num_features"

    def _inferred_size(self, input: Any) -> int:
        shape = _shape_of(input)
        if len(shape) < 2:
            raise ValueError(f"{type(self).__name__}: input of shape {shape} has no "
                             "feature dim")
        target = self.cls_to_become
        unbatched = getattr(target, "_unbatched_dims", None)
        # instance norm: (C, *S) unbatched, (N, C, *S) batched; batch norm: (N, C, *S)
        if unbatched is not None and len(shape) == unbatched:
            return int(shape[0])
        return int(shape[1])

    def _size_from_state(self, entries: dict) -> int | None:
        for name in ("weight", "bias", "running_mean", "running_var"):
            v = entries.get(name)
            if v is not None and np.ndim(v) == 1:
                return int(np.shape(v)[0])
        return None


def _lazy_norm(target: type) -> type:
    """A lazy ``target``; affine with running statistics by default (torch's lazy
    instance norms too, unlike ``InstanceNorm*d``)."""
    class LazyNorm(_LazyNorm, target):
        cls_to_become = target

        def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1,
                     affine: bool = True, track_running_stats: bool = True,
                     device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
            self._lazy_init(1, {"eps": eps, "momentum": momentum, "affine": affine,
                                "track_running_stats": track_running_stats,
                                "device": device, "dtype": dtype, "bias": bias},
                            ("weight", "bias"), _NORM_BUFFERS)

    LazyNorm.__name__ = LazyNorm.__qualname__ = f"Lazy{target.__name__}"
    LazyNorm.__doc__ = f"``{target.__name__}`` whose ``num_features`` is its first input's."
    return LazyNorm


LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d = (
    _lazy_norm(c) for c in (BatchNorm1d, BatchNorm2d, BatchNorm3d))
LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d = (
    _lazy_norm(c) for c in (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d))
