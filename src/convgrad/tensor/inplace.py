"""In-place operations: ``+= -= *= /=``, ``add_``, ``sub_``, ``mul_``, ``div_``, ``clamp_``,
``zero_``, ``fill_``, ``copy_``, ``t[index] = value``, and the in-place forms of other
methods (``relu_``, ``exp_``, ``addcmul_``, ``lerp_``, ``masked_fill_``, ``index_add_``,
...: :meth:`InPlaceMixin._apply_` runs the out-of-place method on a copy of the old
values when the write is recorded, so no rule inside it reads overwritten memory).

Each one computes the new values with the same Function as its out-of-place form, writes
them into the tensor's memory (so views and aliases see them) and counts one version of
that memory (:mod:`.version`).  Under grad mode with something requiring grad, the
operation is recorded: the tensor takes a new history, whose node reads the old values
through a stand-in for the tensor as it was (a copy of them, only when the rule reads
them, as for ``mul_`` by a tensor requiring grad).  As in torch, a leaf that requires
grad, or a view of one, is modified in place only under ``no_grad``; the result keeps the
tensor's dtype (a float result cannot go into an integer tensor) and shape.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..autograd import is_grad_enabled, tensor_type
from . import elementwise as _ew
from . import version as _versions
from .operands import no_bool, pair

__all__ = ["InPlaceMixin", "setitem"]

LEAF_MESSAGE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_MESSAGE = ("a view of a leaf Variable that requires grad is being used in an "
                        "in-place operation.")

Tensor = Any  # annotations: the tensor layer's Tensor


class InPlaceMixin:
    """The in-place methods of ``Tensor``; each returns the tensor itself."""

    __slots__ = ()

    def add_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        """``self += alpha * other``."""
        return _inplace(self, "add_", _ew.Add, _scaled("add_", other, alpha))

    def sub_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        """``self -= alpha * other``."""

        no_bool("sub_", self, other)
        return _inplace(self, "sub_", _ew.Sub, _scaled("sub_", other, alpha))

    def mul_(self, other: Any) -> Tensor:
        return _inplace(self, "mul_", _ew.Mul, other)

    def div_(self, other: Any) -> Tensor:
        return _inplace(self, "div_", _ew.Div, other, true_div=True)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:
        """Clamp to [min, max] in place (see ``clip``)."""
        if min is None and max is None:
            raise ValueError("clamp_: at least one of min and max must be given")
        return _inplace(self, "clamp_", _ew.Clip, None, lo=min, hi=max)

    clip_ = clamp_

    def zero_(self) -> Tensor:
        return _inplace(self, "zero_", _ew.Assign, 0)

    def fill_(self, value: Any) -> Tensor:
        """Set every element to ``value`` (a number or a 0-d tensor)."""
        if np.ndim(value) != 0:
            raise ValueError(f"fill_: value must be a number or a 0-d tensor, got shape "
                             f"{np.shape(value)}")
        return _inplace(self, "fill_", _ew.Assign, value)

    def copy_(self, src: Any) -> Tensor:
        """Copy ``src`` (broadcast to this shape, cast to this dtype) into this tensor."""
        try:
            fits = np.broadcast_shapes(np.shape(src), self.shape) == self.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"copy_: src of shape {np.shape(src)} does not broadcast to the "
                             f"tensor's shape {self.shape}")
        return _inplace(self, "copy_", _ew.Assign, src)

    def _apply_(self, fn: str, f: Any, *others: Any) -> Tensor:
        """``self = f(self)`` in place, ``f`` any composition of the differentiable
        operations, reading ``others`` too (whether the write is recorded depends on them
        as well); recorded, ``f`` reads a copy of the old values."""
        T = tensor_type()
        record = _recording(self, fn, None) or (is_grad_enabled() and any(
            isinstance(o, T) and o._requires_grad for o in others))
        if record:
            _recording(self, fn, next(o for o in (*others, self)
                                       if isinstance(o, T) and o._requires_grad))

        def compute(old: Tensor) -> Tensor:
            if record:  # the rules inside f may read the old values: they stay
                version = _versions.version(old.data)
                old.data = old.data.copy()
                _versions.set_version(old.data, version)
            return f(old)

        return _commit(self, fn, compute, record)

    def relu_(self) -> Tensor:
        return self._apply_("relu_", lambda t: t.relu())

    def sigmoid_(self) -> Tensor:
        return self._apply_("sigmoid_", lambda t: t.sigmoid())

    def tanh_(self) -> Tensor:
        return self._apply_("tanh_", lambda t: t.tanh())

    def exp_(self) -> Tensor:
        return self._apply_("exp_", lambda t: t.exp())

    def log_(self) -> Tensor:
        return self._apply_("log_", lambda t: t.log())

    def sqrt_(self) -> Tensor:
        return self._apply_("sqrt_", lambda t: t.sqrt())

    def square_(self) -> Tensor:
        return self._apply_("square_", lambda t: t.square())

    def abs_(self) -> Tensor:
        return self._apply_("abs_", lambda t: t.abs())

    def neg_(self) -> Tensor:
        return self._apply_("neg_", lambda t: -t)

    def pow_(self, exponent: Any) -> Tensor:
        return self._apply_("pow_", lambda t: t ** exponent, exponent)

    def addcmul_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        return self._apply_("addcmul_", lambda t: t.addcmul(tensor1, tensor2, value=value),
                            tensor1, tensor2)

    def addcdiv_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        return self._apply_("addcdiv_", lambda t: t.addcdiv(tensor1, tensor2, value=value),
                            tensor1, tensor2)

    def lerp_(self, end: Any, weight: Any) -> Tensor:
        return self._apply_("lerp_", lambda t: t.lerp(end, weight), end, weight)

    def masked_fill_(self, mask: Any, value: Any) -> Tensor:
        return self._apply_("masked_fill_", lambda t: t.masked_fill(mask, value), value)

    def scatter_(self, dim: int, index: Any, src: Any = None, *, value: Any = None) -> Tensor:
        return self._apply_("scatter_", lambda t: t.scatter(dim, index, src, value=value), src)

    def scatter_add_(self, dim: int, index: Any, src: Any) -> Tensor:
        return self._apply_("scatter_add_", lambda t: t.scatter_add(dim, index, src), src)

    def index_add_(self, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Tensor:
        return self._apply_("index_add_", lambda t: t.index_add(dim, index, source,
                                                                alpha=alpha), source)

    def nan_to_num_(self, nan: float = 0.0, posinf: float | None = None,
                    neginf: float | None = None) -> Tensor:
        return self._apply_("nan_to_num_", lambda t: t.nan_to_num(nan, posinf, neginf))

    def __iadd__(self, other: Any) -> Tensor:
        return self.add_(other)

    def __isub__(self, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self, other: Any) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self.div_(other)


def _scaled(fn: str, other: Any, alpha: Any) -> Any:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise TypeError(f"{fn}: alpha={alpha!r} must be a number")
    return other if alpha == 1 else other * alpha


def _inplace(t: Tensor, fn: str, op: type, other: Any, true_div: bool = False,
             **kwargs: Any) -> Tensor:
    """Compute ``op(t, other)`` and make it ``t``'s value (and, when recorded, history)."""
    Tensor = tensor_type()

    def compute(old: Tensor) -> Tensor:
        if op is _ew.Clip:
            return op.apply(old, **kwargs)
        if op is _ew.Assign:
            return op.apply(old, other if isinstance(other, Tensor) else np.asarray(other))
        return op.apply(*pair(old, other, true_div))

    return _commit(t, fn, compute, _recording(t, fn, other))


def setitem(t: Tensor, index: tuple, value: Any) -> None:
    """``t[index] = value``: value broadcast to the indexed part, cast to ``t``'s dtype."""
    Tensor = tensor_type()

    if not _recording(t, "__setitem__", value):
        value = value.data if isinstance(value, Tensor) else value
        try:
            t.data[index] = value
        except ValueError as e:
            raise ValueError(f"__setitem__: cannot assign a value of shape {np.shape(value)} "
                             f"to the indexed part: {e}") from None
        _note_write(t, _versions.bump(t.data))
        return
    if not isinstance(value, Tensor):
        value = np.asarray(value)
    elif _is_view_at(value.data, t.data, index):
        # ``t[index] op= v``: Python modified the view ``t[index]`` in place (changing t's
        # memory behind its history) and now writes it back; the write-back records it
        _note_write(t, _versions.version(t.data))
    _commit(t, "__setitem__", lambda old: _ew.IndexPut.apply(old, value, index=index), True)


def _is_view_at(a: Any, data: Any, index: tuple) -> bool:
    """Whether ``a`` is the very view ``data[index]`` (same memory, shape and strides)."""
    if not isinstance(a, np.ndarray) or not isinstance(data, np.ndarray) or a.base is None:
        return False
    try:
        ref = data[index]
    except (IndexError, ValueError, TypeError):
        return False
    return (ref.base is not None and a.shape == ref.shape and a.strides == ref.strides
            and a.__array_interface__["data"][0] == ref.__array_interface__["data"][0])


def _recording(t: Tensor, fn: str, other: Any) -> bool:
    """Check that ``t`` may be written; whether the write is recorded in the graph."""
    Tensor = tensor_type()

    data = t.data
    if isinstance(data, np.ndarray) and not data.flags.writeable:
        raise ValueError(f"{fn}: the tensor's memory is read-only (an expanded or broadcast "
                         "tensor has several elements in one memory location); clone() it "
                         "first")
    record = is_grad_enabled() and (
        t._requires_grad or isinstance(other, Tensor) and other._requires_grad)
    if record and t.grad_fn is None and t._requires_grad:
        raise RuntimeError(LEAF_MESSAGE)
    if record and t.grad_fn is not None and _versions.leaf_owner(data) is not None:
        raise RuntimeError(VIEW_OF_LEAF_MESSAGE)
    return record


def _commit(t: Tensor, fn: str, compute: Any, record: bool) -> Tensor:
    """Write ``compute(old)`` into ``t``'s memory; ``old`` stands for ``t`` as it was."""
    Tensor = tensor_type()

    data = t.data
    old = Tensor._wrap(data, t.grad_fn) if record else t
    new = compute(old)
    if new.data.shape != data.shape:
        raise ValueError(f"{fn}: the result has shape {new.data.shape}, which does not match "
                         f"the tensor's shape {data.shape} (the other operand must broadcast "
                         "to it)")
    if new.data.dtype != data.dtype:
        if not np.can_cast(new.data.dtype, data.dtype, "same_kind"):
            raise TypeError(f"{fn}: the result type {new.data.dtype} can't be cast to the "
                            f"tensor's dtype {data.dtype}")
    node = new.grad_fn
    if node is not None and old.data is data and node.inputs[0] is old and (
            0 in node.op.reads_for(node.needs_input_grad)[0]):
        old.data = data.copy()  # the rule reads the old values: keep them
        _versions.set_version(old.data, _versions.version(data))
    if new.data.dtype != data.dtype:
        new = new.to(data.dtype)
    data[...] = new.data
    version = _versions.bump(data)
    if new.grad_fn is not None:
        t.grad_fn, t._requires_grad = new.grad_fn, True
        t.grad_fn.output_version = version
        if t.grad_fn.output_ref is not None:
            t.grad_fn.output_ref = weakref.ref(t)
    else:
        _note_write(t, version)
    return t


def _note_write(t: Tensor, version: int) -> None:
    if t.grad_fn is not None:  # modified outside the graph (no_grad): its history stays
        t.grad_fn.output_version = version
