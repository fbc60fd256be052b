"""Graph nodes: ``Function`` (an operation with a forward and a backward rule) and ``Context``.

The engine knows no Tensor class: the tensor layer registers its class once with
:func:`register_tensor_type`; ``Function.apply`` recognises inputs of that class and wraps
outputs with its ``_wrap(data, node)`` constructor.  The dependency runs one way: the
tensor layer imports this package, never the reverse.

In-place modifications: a tensor's ``_version`` counts the in-place writes to its memory.
Each Function declares in ``reads`` which of its inputs (and whether its output) its
backward rule reads; the node records their versions and backward refuses to run a rule
whose values changed since (a RuntimeError, as torch), instead of computing a wrong
gradient.  Nodes link to the nodes of their inputs (``edges``) as they were when
recorded, so an in-place operation that gives a tensor a new history leaves the graphs
recorded before it intact.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..arraytypes import is_dask_array
from . import deferred
from .anomaly_mode import _mode as _anomaly
from .anomaly_mode import forward_stack
from .grad_mode import is_grad_enabled

__all__ = ["Context", "FREED_MESSAGE", "Function", "MODIFIED_MESSAGE", "OUTPUT",
           "mark_modified", "register_tensor_type"]

FREED_MESSAGE = (
    "Trying to backward through the graph a second time, but its graph has been freed; "
    "pass retain_graph=True to the first backward() or grad() call if you need to do this"
)


MODIFIED_MESSAGE = (
    "one of the variables needed for gradient computation has been modified by an inplace "
    "operation: {what} is at version {now}; expected version {then} instead"
)

OUTPUT = "output"  # in ``Function.reads``: the rule reads the output (``ctx.output``)


class _Registered:
    tensor_type: type = type(None)  # nothing is a Tensor until the tensor layer registers
    modified = False  # set at the first in-place write: until then every version is 0


_registered = _Registered()


def mark_modified() -> None:
    """Called by the tensor layer before its first in-place write (versions start to move)."""
    _registered.modified = True


def register_tensor_type(cls: type) -> None:
    """Called once by the tensor layer: ``cls`` has ``data``, ``grad``, ``grad_fn``,
    ``_requires_grad``, ``_version`` and a ``_wrap(data, grad_fn=None)`` constructor."""
    _registered.tensor_type = cls


def tensor_type() -> type:
    """The registered tensor class."""
    return _registered.tensor_type


def _wrap(data: np.ndarray, node: Any = None) -> Any:
    return _registered.tensor_type._wrap(data, node)


class Context:
    """The graph node of one recorded call: its Function, inputs and saved values.

    ``inputs`` holds one entry per positional argument of ``apply`` (the original Tensor
    objects, so that rules run under ``create_graph`` record through them);
    ``needs_input_grad`` one bool per positional argument; ``edges`` the node of each
    input when it was recorded (None for leaves and constants).  ``output`` is the output
    Tensor, available inside ``backward`` only (the engine sets it for the call, so the
    node holds no reference cycle).  Forward may set any other attribute.

    Versions (recorded only once some tensor was modified in place; 0 before):
    ``versions`` the version of each input the rule reads (in ``reads_for`` order),
    ``output_version`` the output's, ``output_ref`` a weak reference to the output
    Tensor when the rule reads it.
    """

    __slots__ = ("op", "inputs", "needs_input_grad", "edges", "saved", "_output",
                 "output_version", "__dict__")
    versions: tuple | None = None
    output_ref: Any = None

    def __init__(self, op: type, inputs: tuple, needs_input_grad: tuple) -> None:
        self.op = op
        self.inputs = inputs
        self.needs_input_grad = needs_input_grad
        self.saved = ()
        self._output = None  # (edges and output_version are set when the node is recorded)

    @property
    def output(self) -> Any:
        """The output Tensor, inside ``backward`` of a Function whose ``reads`` has OUTPUT."""
        if not self.op._reads_output:
            raise RuntimeError(
                f"{self.op.__name__}.backward reads ctx.output, but {self.op.__name__}.reads "
                f"does not declare OUTPUT: declare it, so that an in-place change of the "
                f"output is caught instead of giving a wrong gradient")
        return self._output

    def defers(self, i: int) -> bool:
        """Inside ``backward``: whether the rule may return input ``i``'s gradient as a
        :class:`.deferred.Deferred`, computed when the leaf's ``.grad`` is read."""
        return deferred.may_defer(self.inputs[i], self.edges[i])

    def save_for_backward(self, *values: Any) -> None:
        self.saved = values

    @property
    def saved_tensors(self) -> tuple:
        """The saved values; ndarrays come back as constant Tensors."""
        if self.inputs is None:
            raise RuntimeError(FREED_MESSAGE)
        return tuple(_wrap(v) if isinstance(v, np.ndarray) else v for v in self.saved)

    def _free(self) -> None:
        if self.op.view:  # a view holds no values of its own: it stays, and (as in torch) a
            return        # view kept across steps, of a parameter say, is differentiated again
        self.inputs = self.edges = None
        self.saved = ()
        self.__dict__.clear()

    def check_versions(self) -> None:
        """Raise if a value the rule reads was modified in place since it was recorded."""
        positions = self.op.reads_for(self.needs_input_grad)[0]
        for i, then in zip(positions, self.versions or (0,) * len(positions)):
            if not isinstance(self.inputs[i], _registered.tensor_type):
                continue
            now = self.inputs[i]._version
            if now != then:
                raise RuntimeError(MODIFIED_MESSAGE.format(
                    what=f"input {i} of {self.op.__name__}Backward", now=now, then=then))
        if self.output_ref is None:
            return
        out = self.output_ref()
        # (a dead output was given a new history in place: a live one keeps the node's)
        now = out._version if out is not None else f"> {self.output_version}"
        if now != self.output_version:
            raise RuntimeError(MODIFIED_MESSAGE.format(
                what=f"the output of {self.op.__name__}Backward", now=now,
                then=self.output_version))

    def __repr__(self) -> str:
        return f"<{self.op.__name__}Backward>"


class Function:
    """An operation with a forward on ndarrays and a backward rule on Tensors.

    Subclasses define ``forward(ctx, *arrays, **kwargs) -> ndarray`` and
    ``backward(ctx, grad) -> one gradient (Tensor, ndarray or None) per positional arg``,
    and are called as ``Op.apply(*args, **kwargs)``.

    ``reads`` declares the values ``backward`` reads (not shapes or dtypes): a tuple of
    input positions and/or :data:`OUTPUT`, or a dict mapping an input position to what
    its gradient reads (``{0: (1,), 1: (0,)}`` for a product: each gradient reads the
    other factor).  Every Function declares it (a class without it is a TypeError when
    it is defined), and ``ctx.output`` is refused to a rule that did not declare
    :data:`OUTPUT`: a forgotten declaration fails loudly instead of letting an in-place
    change go unchecked.  ``view`` marks operations whose output may be a view of input
    0's memory.
    """

    reads: tuple | dict
    view = False  # True: the output may share the memory of input 0 (reshape, indexing, ...)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        reads = getattr(cls, "reads", None)
        if not isinstance(reads, tuple | dict) or not all(
                r == OUTPUT or isinstance(r, int)
                for r in (reads if isinstance(reads, tuple) else
                          [x for v in reads.values() for x in v])):
            raise TypeError(
                f"{cls.__name__}: a Function must declare reads, the values its backward "
                f"reads: a tuple of input positions and/or OUTPUT, or a dict from input "
                f"position to such a tuple (got {reads!r})")
        if isinstance(reads, dict):
            cls._reads_output = any(OUTPUT in r for r in reads.values())
        else:
            cls._reads_output = reads is not None and OUTPUT in reads
        cls._reads_cache = {}

    @classmethod
    def reads_for(cls, needs: tuple) -> tuple[tuple[int, ...], bool]:
        """What ``backward`` reads given ``needs_input_grad``: (input positions, the output?)."""
        found = cls._reads_cache.get(needs)
        if found is None:
            reads = cls.reads
            if isinstance(reads, dict):
                reads = {r for i, n in enumerate(needs) if n for r in reads.get(i, ())}
            found = (tuple(sorted(r for r in reads if r != OUTPUT)), OUTPUT in reads)
            cls._reads_cache[needs] = found
        return found

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        arrays, needs, edges = [], [], []  # (a plain loop is the fastest way to split the args)
        tensor_type = _registered.tensor_type
        for a in args:
            if isinstance(a, tensor_type):
                arrays.append(a.data)
                needs.append(a._requires_grad)
                edges.append(a.grad_fn)
            else:
                arrays.append(a)
                needs.append(False)
                edges.append(None)
        record = is_grad_enabled() and True in needs
        if record and _registered.modified:
            _check_current(cls.__name__, args, edges)
        ctx = Context(cls, args, tuple(needs) if record else (False,) * len(args))
        out = cls.forward(ctx, *arrays, **kwargs)
        if type(out) is not np.ndarray or out.dtype.char not in "fd":
            out = _tensor_array(out)
            if out.dtype.kind != "f":  # integer and bool results are not differentiable
                record = False
        if not record:
            return _wrap(out, None)
        ctx.edges = tuple(edges)
        if _anomaly.enabled:  # anomaly mode: where the node was made, for backward's errors
            ctx.metadata = {"traceback_": forward_stack()}
        result = _wrap(out, ctx)
        if cls._reads_output and cls.reads_for(ctx.needs_input_grad)[1]:
            ctx.output_ref = weakref.ref(result)
        if _registered.modified:
            ctx.versions = tuple([args[i]._version if isinstance(args[i], tensor_type) else 0
                                  for i in cls.reads_for(ctx.needs_input_grad)[0]])
            # a fresh array (not an input returned as it is) has never been modified
            fresh = getattr(out, "base", None) is None and not any(out is a for a in arrays)
            ctx.output_version = 0 if fresh else result._version
        else:
            ctx.output_version = 0
        return result


def _check_current(fn: str, args: tuple, edges: list | None = None) -> None:
    """Refuse an input whose memory was modified in place behind its history's back.

    A tensor's values changed through another tensor sharing its memory (a view, or the
    base of a view) while its own history stayed: recording on top would differentiate
    the old values.  (Torch rebases the history of views instead; convgrad refuses.)
    A view (``Function.view``) whose base's history is current is current too: its values
    are the base's, wherever they were written (a parameter updated by an optimiser).
    """
    for i, node in enumerate(edges if edges is not None else [a.grad_fn for a in args]):
        if node is not None and args[i]._version != node.output_version and not (
                _view_of_current(args[i], node)):
            raise RuntimeError(
                f"{fn}: input {i} was modified in place through another tensor that "
                f"shares its memory (a view or the base of a view), after it was computed; "
                "its recorded history no longer matches its values. clone() it before "
                "modifying a view of it in place")


def _view_of_current(t: Any, node: Context) -> bool:
    """Whether ``t`` (output of ``node``) is a chain of views of a tensor whose history is
    current (a leaf, or a tensor not written behind its history); if so, note it current."""
    top, base = node, t
    while node is not None and base._version != node.output_version:
        if not node.op.view:
            return False
        base, node = node.inputs[0], node.edges[0]
        if base.grad_fn is not node:  # the base was given a new history in place since
            return False
    top.output_version = t._version
    return True


def _float_array(value: Any) -> np.ndarray:
    """A gradient as a float ndarray (float32 unless it is float32 or float64)."""
    if is_dask_array(value):  # lazy data stays lazy: np.asarray would compute it
        return value if value.dtype.char in "fd" else value.astype(np.float32)
    out = np.asarray(value)
    return out if out.dtype.char in "fd" else out.astype(np.float32)


_KEPT = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_))


def _tensor_array(value: Any) -> np.ndarray:
    """An op's result as a Tensor's array: float32/float64, int32/int64 or bool."""
    if is_dask_array(value):  # lazy data stays lazy: np.asarray would compute it
        return value if value.dtype in _KEPT else value.astype(
            np.int64 if value.dtype.kind in "iu" else np.float32)
    out = np.asarray(value)
    if out.dtype in _KEPT:
        return out
    return out.astype(np.int64 if out.dtype.kind in "iu" else np.float32)
