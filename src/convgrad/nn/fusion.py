"""Fusion: neighbouring layers of a ``Sequential`` that run as one kernel.

A convolution (``Conv1d/2d/3d``) followed by ``LeakyReLU`` (slope > 0) runs as one
oneDNN primitive with the activation as a post-op (``ConvReLU``): the activation costs
no pass over memory of its own, and its backward reads the one saved output.  Followed
by a plain ``ReLU`` it is a ``ConvReLU`` too, the ReLU applied by the compiled loop to
the convolution's result in place (oneDNN's ReLU post-op computes ``max(y, 0)``, which
turns a NaN into 0 where torch keeps it), and its backward takes the bias gradient in the
same pass as the ReLU's mask (one read of the gradient instead of two).
A ``BatchNorm1d/2d/3d`` normalising by the batch's statistics followed by ``ReLU`` runs
as one ``BatchNormReLU`` (oneDNN's fused ReLU; a NaN
anywhere in a channel makes its statistics, and so the whole channel, NaN either way).
A ``GroupNorm`` or ``InstanceNorm1d/2d/3d`` followed by ``ReLU`` or ``LeakyReLU`` (slope
> 0) runs as one ``GroupNormReLU``, followed by ``SiLU`` as one ``GroupNormSiLU``, where
the group norm kernels run (the activation applied as y is written; what its backward
needs kept per element instead of y: a byte, or SiLU's derivative).
A pair is fused only where nobody can tell: neither module has hooks, and neither class
overrides the ``forward`` the fusion stands for (a subclass's own ``forward`` runs as
written).  The fused result equals the unfused one bit for bit (SiLU: to float32's
rounding of the same formula, torch's).

Layers declare what they fuse by class attributes, so this module imports none of them:
a layer class sets ``fuses_activation_after = forward`` (the ``forward`` whose
``forward_activation(x, activation)`` is the fused equivalent) and answers
``accepts_activation(activation)``; an activation class sets ``activation_of = forward``
and answers ``fused_activation()``: 0.0, a ReLU; a float > 0, a leaky ReLU of that
slope; ``"silu"``; ``None``: none of them, ``LeakyReLU(0.0)`` included, whose -0 and NaN
gradient differ from a ReLU's.  A layer may name the compiled loops a fused activation
adds (``activation_kernels(activation)``): a ``Sequential`` asks for them as the pair is
appended, so they load in the background before the first step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..ops import jit

__all__ = ["run_sequence", "warm_up_pair"]

_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks")


def _plain(m: Any, marker: str) -> bool:
    """``m``'s class declares ``marker`` for the ``forward`` it runs, and ``m`` has no hooks."""
    cls = type(m)
    if getattr(cls, marker, None) is not cls.forward:
        return False
    d = m.__dict__
    return not any(d.get(h) for h in _HOOKS)


def _activation(layer: Any, act: Any) -> float | str | None:
    """The activation ``act`` applies after ``layer`` (``fused_activation()``'s), if the
    pair fuses."""
    if not (_plain(layer, "fuses_activation_after") and _plain(act, "activation_of")):
        return None
    activation = act.fused_activation()
    return activation if activation is not None and layer.accepts_activation(activation) \
        else None


def warm_up_pair(layer: Any, act: Any) -> None:
    """Ask for the compiled loops ``layer`` runs fused with ``act`` after it (its
    ``activation_kernels``, where it has that method), loaded in the background while the
    network is built (:func:`convgrad.ops.jit.warm_up`)."""
    activation = _activation(layer, act)
    kernels = getattr(layer, "activation_kernels", None)
    if activation is not None and kernels is not None:
        jit.warm_up(*kernels(activation))


def run_sequence(modules: Sequence[Any], x: Any) -> Any:
    """``x`` through ``modules`` in order, fused pairs as one call."""
    i, n = 0, len(modules)
    while i < n:
        m = modules[i]
        if i + 1 < n:
            activation = _activation(m, modules[i + 1])
            if activation is not None:
                x = m.forward_activation(x, activation)
                i += 2
                continue
        x = m(x)
        i += 1
    return x
