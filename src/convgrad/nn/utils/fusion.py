"""Folding an evaluation-mode batch norm into the convolution or linear layer before it
(torch's ``torch.nn.utils.fusion``): ``w' = w * gamma / sqrt(var + eps)`` and
``b' = (b - mean) * gamma / sqrt(var + eps) + beta``."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ...tensor import Tensor
from ..module import Module, Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _array(fn: str, what: str, value: Any) -> np.ndarray:
    if isinstance(value, Tensor):
        return value.data
    if isinstance(value, np.ndarray):
        return value
    raise TypeError(f"{fn}: {what} must be a Tensor or an ndarray, got {type(value).__name__}")


def _stats(fn: str, bn_rm: Any, bn_rv: Any, bn_w: Any, bn_b: Any
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rm = _array(fn, "bn_rm", bn_rm)
    rv = _array(fn, "bn_rv", bn_rv)
    w = np.ones_like(rm) if bn_w is None else _array(fn, "bn_w", bn_w)
    b = np.zeros_like(rm) if bn_b is None else _array(fn, "bn_b", bn_b)
    return rm, rv, w, b


def _requires_grad(value: Any) -> bool:
    return bool(getattr(value, "requires_grad", False))


def fuse_conv_bn_weights(conv_w: Any, conv_b: Any, bn_rm: Any, bn_rv: Any, bn_eps: float,
                         bn_w: Any, bn_b: Any, transpose: bool = False
                         ) -> tuple[Parameter, Parameter]:
    """The weight and bias of one convolution equal to ``conv`` then the batch norm in
    eval mode (the channel axis is 1 of the weight when ``transpose``); Parameters in the
    convolution's dtypes."""
    fn = "fuse_conv_bn_weights"
    w = _array(fn, "conv_w", conv_w)
    rm, rv, gamma, beta = _stats(fn, bn_rm, bn_rv, bn_w, bn_b)
    b = np.zeros_like(rm) if conv_b is None else _array(fn, "conv_b", conv_b)
    b_dtype = w.dtype if conv_b is None else b.dtype
    rsqrt = 1 / np.sqrt(rv + bn_eps)
    shape = [1] * w.ndim
    shape[1 if transpose else 0] = -1
    fused_w = (w * (gamma * rsqrt).reshape(shape)).astype(w.dtype)
    fused_b = ((b - rm) * rsqrt * gamma + beta).astype(b_dtype)
    return (Parameter(fused_w, requires_grad=_requires_grad(conv_w)),
            Parameter(fused_b, requires_grad=conv_b is None or _requires_grad(conv_b)))


def fuse_linear_bn_weights(linear_w: Any, linear_b: Any, bn_rm: Any, bn_rv: Any,
                           bn_eps: float, bn_w: Any, bn_b: Any) -> tuple[Parameter, Parameter]:
    """The weight and bias of one linear layer equal to ``linear`` then the batch norm in
    eval mode."""
    fn = "fuse_linear_bn_weights"
    w = _array(fn, "linear_w", linear_w)
    rm, rv, gamma, beta = _stats(fn, bn_rm, bn_rv, bn_w, bn_b)
    b = np.zeros_like(rm) if linear_b is None else _array(fn, "linear_b", linear_b)
    scale = gamma / np.sqrt(rv + bn_eps)
    fused_w = w * scale[:, None]
    fused_b = (b - rm) * scale + beta
    return (Parameter(fused_w.astype(w.dtype), requires_grad=_requires_grad(linear_w)),
            Parameter(fused_b.astype(b.dtype),
                      requires_grad=linear_b is None or _requires_grad(linear_b)))


def _check_eval(fn: str, layer: Any, bn: Any, what: str) -> None:
    for name, m in ((what, layer), ("bn", bn)):
        if not isinstance(m, Module):
            raise TypeError(f"{fn}: {name} must be a Module, got {type(m).__name__}")
    if layer.training or bn.training:
        raise ValueError(f"{fn}: fusion is for eval mode only ({what}.training="
                         f"{layer.training}, bn.training={bn.training})")
    if getattr(bn, "running_mean", None) is None or getattr(bn, "running_var", None) is None:
        raise ValueError(f"{fn}: bn must track running statistics "
                         "(track_running_stats=True)")


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of ``conv`` (eval mode) with ``bn`` (eval mode) folded into its weight and
    bias."""
    fn = "fuse_conv_bn_eval"
    _check_eval(fn, conv, bn, "conv")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of ``linear`` (eval mode) with ``bn`` (eval mode) folded into its weight and
    bias; ``bn.num_features`` must equal ``linear.out_features`` or be 1."""
    fn = "fuse_linear_bn_eval"
    _check_eval(fn, linear, bn, "linear")
    if bn.num_features not in (linear.out_features, 1):
        raise ValueError(f"{fn}: linear.out_features={linear.out_features} must equal "
                         f"bn.num_features={bn.num_features}, or bn.num_features must be 1")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused
