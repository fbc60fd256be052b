"""The reverse-mode autodiff engine: ``Function``, ``Context``, ``backward``, ``grad``, grad mode.

A :class:`Function` has a ``forward`` on raw ndarrays and a ``backward`` rule written with
Tensor operations.  ``Function.apply`` runs ``forward`` and, when some input requires grad
(and grad mode is on), records a :class:`Context`: the graph node, holding the input Tensors.
:func:`backward` sorts the nodes reachable from the outputs once (iteratively, consumers
before their inputs), then calls each node's rule with the summed gradient of its output.
Because the rules are Tensor code, running them with grad mode on (``create_graph=True``)
records the backward pass itself, which gives gradients of any order.  This module knows
nothing about any particular operation.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "Context",
    "Function",
    "backward",
    "enable_grad",
    "grad",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
]

_FREED = (
    "Trying to backward through the graph a second time, but its graph has been freed; "
    "pass retain_graph=True to the first backward() or grad() call if you need to do this"
)


# ----------------------------------------------------------------------------- grad mode
class _GradMode(threading.local):
    enabled = True


_mode = _GradMode()


def is_grad_enabled() -> bool:
    """Whether operations run now are recorded for differentiation (per thread)."""
    return _mode.enabled


class _GradModeSwitch:
    """Base of the grad-mode context managers; each one also works as a decorator."""

    mode: bool

    def __init__(self, fn: Callable | None = None) -> None:
        self._saved: list[bool] = []  # a stack, so one object can be re-entered

    def __enter__(self) -> None:
        self._saved.append(_mode.enabled)
        _mode.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        _mode.enabled = self._saved.pop()

    def __call__(self, fn: Callable) -> Callable:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with enable_grad() if mode else no_grad():  # fresh per call: thread-safe
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradModeSwitch):
    """``with no_grad():``, ``@no_grad()`` or ``@no_grad``: record nothing."""

    mode = False

    def __new__(cls, fn: Callable | None = None):
        self = super().__new__(cls)
        return self if fn is None else self(fn)  # bare decorator: no_grad(fn)


class enable_grad(_GradModeSwitch):
    """``with enable_grad():``, ``@enable_grad()`` or ``@enable_grad``: record again."""

    mode = True

    def __new__(cls, fn: Callable | None = None):
        self = super().__new__(cls)
        return self if fn is None else self(fn)


class set_grad_enabled(_GradModeSwitch):
    """Set grad mode at once, as torch does: a plain call, a context manager (restoring the
    previous mode on exit) or a decorator."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._saved = [_mode.enabled]
        _mode.enabled = self.mode

    def __enter__(self) -> None:  # the mode was set by __init__
        pass

    def __call__(self, fn: Callable) -> Callable:
        _mode.enabled = self._saved.pop()  # decorating must not change the mode now
        return super().__call__(fn)


# ----------------------------------------------------------------------------- graph nodes
class Context:
    """The graph node of one recorded call: its Function, inputs and saved values.

    ``inputs`` holds one entry per positional argument of ``apply`` (the original Tensor
    objects, so that rules run under ``create_graph`` record through them);
    ``needs_input_grad`` one bool per positional argument.  ``output`` is the output
    Tensor, available inside ``backward`` only (the engine sets it for the call, so the
    node holds no reference cycle).  Forward may set any other attribute.
    """

    __slots__ = ("fn", "inputs", "needs_input_grad", "saved", "output", "__dict__")

    def __init__(self, fn: type, inputs: tuple, needs_input_grad: tuple) -> None:
        self.fn = fn
        self.inputs = inputs
        self.needs_input_grad = needs_input_grad
        self.saved = ()
        self.output = None

    def save_for_backward(self, *values: Any) -> None:
        self.saved = values

    @property
    def saved_tensors(self) -> tuple:
        """The saved values; ndarrays come back as constant Tensors."""
        if self.inputs is None:
            raise RuntimeError(_FREED)
        return tuple(Tensor._wrap(v) if isinstance(v, np.ndarray) else v for v in self.saved)

    def _free(self) -> None:
        self.inputs = None
        self.saved = ()
        self.__dict__.clear()

    def __repr__(self) -> str:
        return f"<{self.fn.__name__}Backward>"


class Function:
    """An operation with a forward on ndarrays and a backward rule on Tensors.

    Subclasses define ``forward(ctx, *arrays, **kwargs) -> ndarray`` and
    ``backward(ctx, grad) -> one gradient (Tensor, ndarray or None) per positional arg``,
    and are called as ``Op.apply(*args, **kwargs)``.
    """

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Tensor:
        arrays, needs = [], []  # (a plain loop is the fastest way to split the args)
        for a in args:
            if isinstance(a, Tensor):
                arrays.append(a.data)
                needs.append(a._requires_grad)
            else:
                arrays.append(a)
                needs.append(False)
        record = _mode.enabled and True in needs
        ctx = Context(cls, args, tuple(needs) if record else (False,) * len(args))
        out = cls.forward(ctx, *arrays, **kwargs)
        if type(out) is not np.ndarray or out.dtype.char not in "fd":
            out = _float_array(out)
        return Tensor._wrap(out, ctx if record else None)


def _float_array(value: Any) -> np.ndarray:
    out = np.asarray(value)
    return out if out.dtype.char in "fd" else out.astype(np.float32)


# ----------------------------------------------------------------------------- the engine
def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
) -> None:
    """Accumulate d(sum_i <tensors[i], grad_tensors[i]>)/d(leaf) into ``leaf.grad``."""
    roots, seeds = _seed("backward", tensors, grad_tensors)
    _run(roots, seeds, create_graph if retain_graph is None else retain_graph, create_graph)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple:
    """Return the gradients of ``outputs`` w.r.t. ``inputs`` as a tuple, like torch."""
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad: inputs[{i}] must be a Tensor, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"grad: inputs[{i}] (one of the differentiated Tensors) "
                               "does not require grad")
    roots, seeds = _seed("grad", outputs, grad_outputs)
    targets = {id(t): None for t in inputs}
    _run(roots, seeds, create_graph if retain_graph is None else retain_graph, create_graph,
         targets)
    result = tuple(targets[id(t)] for t in inputs)
    if not allow_unused and any(g is None for g in result):
        raise RuntimeError("grad: one of the differentiated Tensors appears to not have been "
                           "used in the graph; set allow_unused=True if this is intended")
    return result


def _seed(who: str, tensors: Any, grads: Any) -> tuple[list[Tensor], list[Tensor]]:
    """Check the outputs and build their starting gradients (implicit ones for scalars)."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grads is None:
        grads = [None] * len(tensors)
    elif isinstance(grads, Tensor | np.ndarray):
        grads = [grads]
    else:
        grads = list(grads)
    if len(grads) != len(tensors):
        raise ValueError(f"{who}: got {len(grads)} gradients for {len(tensors)} outputs")
    seeds = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{who}: outputs[{i}] must be a Tensor, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"{who}: element {i} of the outputs does not require grad "
                               "and does not have a grad_fn")
        if g is None:
            if t.data.size != 1:
                raise RuntimeError(f"{who}: grad can be implicitly created only for outputs "
                                   f"with one element, got shape {t.shape}")
            g = Tensor._wrap(np.ones_like(t.data))
        elif not isinstance(g, Tensor):
            g = Tensor._wrap(_float_array(g))
        if g.shape != t.shape:
            raise ValueError(f"{who}: gradient {i} has shape {g.shape}, expected the output's "
                             f"shape {t.shape}")
        seeds.append(g if g.dtype == t.dtype else g.astype(t.dtype))
    return tensors, seeds


def _topological_order(roots: list[Tensor]) -> list[tuple[Context, Tensor]]:
    """(node, its output Tensor) for every node reachable from roots, consumers first."""
    order: list[tuple[Context, Tensor]] = []
    seen: set[Context] = set()
    stack = [(t.grad_fn, t, False) for t in roots if t.grad_fn is not None]
    while stack:  # iterative depth-first post-order: a node is emitted after its inputs
        node, out, expanded = stack.pop()
        if expanded:
            order.append((node, out))
            continue
        if node in seen:
            continue
        if node.inputs is None:
            raise RuntimeError(_FREED)
        seen.add(node)
        stack.append((node, out, True))
        for inp, need in zip(node.inputs, node.needs_input_grad):
            if need and inp.grad_fn is not None and inp.grad_fn not in seen:
                stack.append((inp.grad_fn, inp, False))
    order.reverse()
    return order


def _run(roots: list[Tensor], seeds: list[Tensor], retain_graph: bool, create_graph: bool,
         targets: dict[int, Tensor | None] | None = None) -> None:
    """Propagate seeds back through the graph.

    With ``targets`` (``grad()``): fill ``targets[id(t)]`` with the gradient of each target
    instead of touching ``.grad``, and skip every node that leads to no target.
    """
    order = _topological_order(roots)
    pending: dict[Context, Tensor] = {}  # node -> gradient of its output, summed so far
    add = _add_recorded if create_graph else _add_constant
    for t, g in zip(roots, seeds):
        if t.grad_fn is None:
            _deliver(t, g, targets, create_graph)
        else:
            pending[t.grad_fn] = add(pending.get(t.grad_fn), g)
    wanted = None if targets is None else _nodes_leading_to(targets, order)

    saved_mode = _mode.enabled
    _mode.enabled = create_graph  # rules record only when building a graph of the gradient
    try:
        for node, out in order:
            g = pending.pop(node, None)
            if targets is not None and g is not None and id(out) in targets:
                targets[id(out)] = add(targets[id(out)], g)  # a non-leaf target
            needs = node.needs_input_grad
            if wanted is not None:
                if node not in wanted:
                    continue
                needs = tuple([n and (id(i) in targets or i.grad_fn in wanted)
                               for i, n in zip(node.inputs, needs)])
            if g is None:
                continue
            grads = _call_rule(node, out, g, needs)
            for i, inp in enumerate(node.inputs):
                gi = grads[i]
                if gi is None or not needs[i]:
                    continue
                if type(gi) is not Tensor or gi.data.shape != inp.data.shape or (
                        gi.data.dtype != inp.data.dtype):  # else the common case: all fine
                    gi = _check_grad(node, i, inp, gi)
                parent = inp.grad_fn
                if parent is None:
                    _deliver(inp, gi, targets, create_graph)
                elif parent in pending:
                    pending[parent] = add(pending[parent], gi)
                else:
                    pending[parent] = gi
            if not retain_graph:
                node._free()
    finally:
        _mode.enabled = saved_mode


def _call_rule(node: Context, out: Tensor, g: Tensor, needs: tuple) -> tuple:
    """Run the node's rule with ``ctx.output`` set and ``needs_input_grad`` = ``needs``."""
    recorded_needs = node.needs_input_grad
    node.needs_input_grad, node.output = needs, out
    try:
        grads = node.fn.backward(node, g)
    finally:
        node.needs_input_grad, node.output = recorded_needs, None
    if not isinstance(grads, tuple | list):
        grads = (grads,)
    if len(grads) != len(node.inputs):
        raise RuntimeError(f"{node.fn.__name__}.backward returned {len(grads)} gradients, "
                           f"expected {len(node.inputs)} (one per positional input)")
    return grads


def _nodes_leading_to(targets: dict[int, Any], order: list[tuple[Context, Tensor]]) -> set:
    """The nodes from which some target tensor is reachable (walking towards the inputs)."""
    wanted: set[Context] = set()
    for node, _ in reversed(order):  # inputs before consumers
        for inp, need in zip(node.inputs, node.needs_input_grad):
            if need and (id(inp) in targets or inp.grad_fn in wanted):
                wanted.add(node)
                break
    return wanted


def _check_grad(node: Context, i: int, inp: Tensor, g: Any) -> Tensor:
    """Wrap an ndarray gradient, check its shape and cast it to the input's dtype."""
    if not isinstance(g, Tensor):
        g = Tensor._wrap(_float_array(g))
    if g.shape != inp.shape:
        raise RuntimeError(f"{node.fn.__name__}.backward returned a gradient of shape "
                           f"{g.shape} for input {i} of shape {inp.shape}")
    return g if g.data.dtype == inp.data.dtype else g.astype(inp.dtype)


def _deliver(leaf: Tensor, g: Tensor, targets: dict | None, create_graph: bool) -> None:
    """Hand a finished gradient to a leaf: into ``targets`` (grad()) or ``leaf.grad``."""
    add = _add_recorded if create_graph else _add_constant
    if targets is not None:
        if id(leaf) in targets:
            targets[id(leaf)] = add(targets[id(leaf)], g)
    elif leaf.grad is None:  # own the buffer: the same array may reach several leaves
        leaf.grad = g if create_graph else Tensor._wrap(np.array(g.data))
    else:
        leaf.grad = add(leaf.grad, g)


def _add_constant(a: Tensor | None, b: Tensor) -> Tensor:
    return b if a is None else Tensor._wrap(a.data + b.data)


def _add_recorded(a: Tensor | None, b: Tensor) -> Tensor:
    return b if a is None else a + b


from convgrad.tensor import Tensor  # noqa: E402  (tensor.py imports this module too)
