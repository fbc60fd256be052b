"""Gradients of leaves computed when they are first read, not during ``backward``.

A rule may hand a leaf a :class:`Deferred` gradient instead of computing it (a
convolution's weight gradient, the largest kernel of a backward pass): the leaf keeps it
pending, ``leaf.grad`` computes it when read, and ``leaf.grad = None`` (``zero_grad``)
drops it uncomputed.  A GAN's generator step differentiates the discriminator's
parameters too (as torch does) and the next ``zero_grad`` throws that away: here it is
never computed.  The values are the same bits as computed during ``backward`` (the same
kernel on the same arrays, summed into ``.grad`` in the order they arrived).

When a rule may defer (:func:`may_defer`): during ``backward()`` (not ``grad()``), not
building a graph of the gradient, not in anomaly mode, for an input that is a leaf
without hooks and holds an ndarray.  The rule itself decides what is safe to keep: the
arrays it reads must not be the caller's (the convolution defers only where its input
was computed by the graph), and their versions are checked when the gradient is
computed (an in-place change since is a RuntimeError, never a wrong gradient).

Memory: a pending gradient keeps the arrays it reads alive, so what is held is bounded
twice.  All pending gradients together hold at most :data:`MAX_HELD_BYTES`; beyond it
a gradient is computed at once.  And a leaf that keeps accumulating over ``backward``
calls before its gradient is read (gradient accumulation: each call's pending
gradients are computed when the next call delivers, keeping one micro-batch's inputs
alive through the next one's forward) turns eager after
:data:`CARRIED_BEFORE_EAGER` such calls, unless a pending gradient of it was ever
dropped unread (the pattern deferral is for: pytorch/examples' DCGAN runs
``errD_real.backward()`` and ``errD_fake.backward()`` before the step that reads them,
then ``errG.backward()``, whose discriminator gradients the next ``zero_grad`` drops).
Gradients are summed into ``.grad`` in the order they arrived.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .grad_mode import no_grad

__all__ = ["Deferred", "Pending", "calls", "deliver", "drop", "has_grad", "may_defer", "pending",
           "set_accumulate", "settle"]

Tensor = Any  # the registered tensor class


def _enabled_by_environment() -> bool:
    value = os.environ.get("CONVGRAD_DEFERRED_GRADS", "1")
    if value not in ("0", "1"):
        raise ValueError(f"CONVGRAD_DEFERRED_GRADS={value!r}: expected 1 (weight gradients "
                         "computed when read, the default) or 0 (every gradient computed "
                         "during backward)")
    return value == "1"


#: False (``CONVGRAD_DEFERRED_GRADS=0``, read at import): every rule computes its
#: gradients during backward
ENABLED = _enabled_by_environment()
#: Bytes all pending gradients may hold (the activations and gradients they read):
#: DCGAN's discriminator at batch 64 holds about 60 MB between two backward calls
MAX_HELD_BYTES = 1 << 28
#: Backward calls whose pending gradients a leaf carries into the next one before it
#: turns eager, if none of its pending gradients was ever dropped (gradient accumulation)
CARRIED_BEFORE_EAGER = 2

_held = [0]  # bytes the live Deferred objects read
_settling = threading.Lock()

_state = threading.local()  # .call: the id of the backward() call running on this thread
calls = itertools.count(1)


class Deferred:
    """A gradient not yet computed: ``compute()`` returns it (a Tensor, recording nothing);
    ``reads`` are the Tensors it reads, whose versions must not move before it runs."""

    __slots__ = ("compute", "reads", "versions", "nbytes")

    def __init__(self, compute: Callable[[], Tensor], reads: tuple) -> None:
        self.compute, self.reads = compute, reads
        self.versions = tuple(t._version for t in reads)
        self.nbytes = sum(t.data.nbytes for t in reads)
        _held[0] += self.nbytes

    def __del__(self) -> None:
        try:
            _held[0] -= self.nbytes
        except TypeError:  # pragma: no cover - the module torn down at exit
            pass

    def value(self) -> Tensor:
        for t, then in zip(self.reads, self.versions):
            if t._version != then:
                raise RuntimeError(
                    "a gradient computed when first read (a convolution's weight gradient) "
                    f"reads a tensor of shape {tuple(t.shape)} that was modified in place "
                    f"after backward() (version {t._version}, expected {then}); read the "
                    "gradient (.grad) before modifying the tensors the forward used")
        with no_grad():
            return self.compute()


class Pending:
    """A leaf's gradients waiting to be computed: ``parts`` (in arrival order) from the
    backward call ``call``; ``carried``: how many times a later call found them pending;
    ``dropped``: one was ever dropped unread; ``eager``: the leaf is not deferred any
    more (it accumulates over calls and never dropped one)."""

    __slots__ = ("parts", "call", "carried", "dropped", "eager")

    def __init__(self) -> None:
        self.parts: list[Deferred] = []
        self.call = self.carried = 0
        self.dropped = self.eager = False

    def __reduce__(self) -> tuple:  # a copy or pickle of the leaf has settled it first
        return Pending, ()


class running:
    """Context of one ``backward()`` call on this thread: rules may defer inside it."""

    def __init__(self, allowed: bool) -> None:
        self.call = next(calls) if allowed and ENABLED else 0

    def __enter__(self) -> running:
        self.saved = getattr(_state, "call", 0)
        _state.call = self.call
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.call = self.saved


def may_defer(leaf: Any, edge: Any) -> bool:
    """Whether a rule running now may hand ``leaf`` (its input, recorded with ``edge``) a
    :class:`Deferred` gradient."""
    if not getattr(_state, "call", 0) or edge is not None or getattr(leaf, "_hooks", None):
        return False
    pend = getattr(leaf, "_pending", None)
    return (pend is None or not pend.eager) and type(leaf.data) is np.ndarray


def deliver(leaf: Tensor, d: Deferred) -> None:
    """Give ``leaf`` the pending gradient ``d`` (computed at once if the leaf accumulates
    over backward calls)."""
    call = getattr(_state, "call", 0)
    pend = getattr(leaf, "_pending", None)
    if pend is None:
        pend = leaf._pending = Pending()
    if pend.parts and pend.call != call:  # an earlier call's gradients, unread: computed now
        settle(leaf)
        pend.carried += 1
        pend.eager = pend.carried >= CARRIED_BEFORE_EAGER and not pend.dropped
    if pend.eager or _held[0] > MAX_HELD_BYTES:
        _add(leaf, d.value())
        return
    pend.call = call
    pend.parts.append(d)


def pending(leaf: Tensor) -> bool:
    """Whether ``leaf`` has gradients not computed yet."""
    pend = getattr(leaf, "_pending", None)
    return pend is not None and bool(pend.parts)


def has_grad(leaf: Tensor) -> bool:
    """Whether ``leaf.grad`` is not None, without computing a pending gradient."""
    return leaf._grad is not None or pending(leaf)


def settle(leaf: Tensor) -> None:
    """Compute ``leaf``'s pending gradients into its ``.grad``, in arrival order."""
    pend = leaf._pending
    with _settling:  # two threads reading one .grad: each part is summed once
        parts, pend.parts = pend.parts, []  # (setting .grad below then drops nothing)
    for d in parts:
        _add(leaf, d.value())


def drop(leaf: Tensor) -> None:
    """Forget ``leaf``'s pending gradients (its ``.grad`` was set)."""
    pend = getattr(leaf, "_pending", None)
    if pend is not None and pend.parts:
        pend.dropped = True
        pend.parts.clear()


def _add(leaf: Tensor, g: Tensor) -> None:
    """Sum ``g`` into ``leaf.grad`` as the engine sums a leaf's gradient (set by it at
    import: the engine imports this module, so this module cannot import it)."""
    raise RuntimeError("convgrad.autograd.engine was not imported")


def set_accumulate(fn: Callable[[Tensor, Tensor], None]) -> None:
    """Called once by the engine: how a computed gradient is summed into ``leaf.grad``."""
    global _add
    _add = fn
