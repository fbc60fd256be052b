"""The reverse-mode engine: ``backward`` and ``grad``.

:func:`backward` sorts the nodes reachable from the outputs once (iteratively, consumers
before their inputs), then calls each node's rule with the summed gradient of its output.
Because the rules are Tensor code, running them with grad mode on (``create_graph=True``)
records the backward pass itself, which gives gradients of any order.  This module knows
nothing about any particular operation, nor which class the tensors are (see
:func:`.function.register_tensor_type`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..arraytypes import is_dask_array, rechunk_like
from . import deferred, grad_mode
from .anomaly_mode import _mode as _anomaly
from .anomaly_mode import check_rule, warn_forward_trace
from .function import (
    FREED_MESSAGE,
    Context,
    _check_current,
    _float_array,
    _registered,
    _wrap,
    tensor_type,
)

__all__ = ["backward", "grad"]

Tensor = Any  # annotations only: the registered tensor class


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
    inputs = (inputs,) if isinstance(inputs, tensor_type()) else tuple(inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, tensor_type()):
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


def _seed(fn: str, tensors: Any, grads: Any) -> tuple[list[Tensor], list[Tensor]]:
    """Check the outputs and build their starting gradients (implicit ones for scalars)."""
    tensors = [tensors] if isinstance(tensors, tensor_type()) else list(tensors)
    if grads is None:
        grads = [None] * len(tensors)
    elif isinstance(grads, tensor_type() | np.ndarray):
        grads = [grads]
    else:
        grads = list(grads)
    if len(grads) != len(tensors):
        raise ValueError(f"{fn}: got {len(grads)} gradients for {len(tensors)} outputs")
    seeds = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if not isinstance(t, tensor_type()):
            raise TypeError(f"{fn}: outputs[{i}] must be a Tensor, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"{fn}: element {i} of the outputs does not require grad "
                               "and does not have a grad_fn")
        if _registered.modified:
            _check_current(fn, (t,))
        if g is None:
            if t.data.size != 1:
                raise RuntimeError(f"{fn}: grad can be implicitly created only for outputs "
                                   f"with one element, got shape {t.shape}")
            g = _wrap(np.ones_like(t.data))  # (a dask array for dask data: NumPy dispatches)
        elif not isinstance(g, tensor_type()):
            g = _wrap(rechunk_like(_float_array(g), t.data))  # a dask output: a dask seed
        if g.shape != t.shape:
            raise ValueError(f"{fn}: gradient {i} has shape {g.shape}, expected the output's "
                             f"shape {t.shape}")
        seeds.append(g if g.dtype == t.dtype else g.astype(t.dtype))
    return tensors, seeds


def _topological_order(roots: list[Tensor]) -> list[tuple[Context, Tensor | None]]:
    """(node, its output Tensor) for every node reachable from roots, consumers first.

    Nodes link through ``edges``, the inputs' nodes when recorded.  An input given a new
    history by an in-place operation since is no longer its old node's output: the pair
    then holds None (its rule can read no output: a changed one fails the version check).
    """
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
            raise RuntimeError(FREED_MESSAGE)
        seen.add(node)
        stack.append((node, out, True))
        for inp, edge, need in zip(node.inputs, node.edges, node.needs_input_grad):
            if need and edge is not None and edge not in seen:
                stack.append((edge, inp if inp.grad_fn is edge else None, False))
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
    hooked: dict[int, list] = {}  # leaves with hooks: [leaf, summed gradient]
    # arrays someone else may hold: the seeds, those a hook saw, those a leaf already
    # took; a leaf takes any other gradient array that owns its memory without a copy
    shared: set[int] = {id(g.data) for g in seeds}

    def deliver(leaf: Tensor, g: Tensor) -> None:
        if getattr(leaf, "_hooks", None):  # the hooks see the leaf's whole gradient
            entry = hooked.setdefault(id(leaf), [leaf, None])
            entry[1] = add(entry[1], g)
        else:
            _deliver(leaf, g, targets, create_graph, shared)

    for t, g in zip(roots, seeds):
        if t.grad_fn is None:
            deliver(t, g)
        else:
            pending[t.grad_fn] = add(pending.get(t.grad_fn), g)
    wanted = None if targets is None else _nodes_leading_to(targets, order)

    saved_mode = grad_mode.is_grad_enabled()
    grad_mode.set_mode(create_graph)  # rules record only when building a graph of the gradient
    # rules may leave a leaf's gradient to be computed when read (backward() only)
    call = deferred.running(targets is None and not create_graph and not _anomaly.enabled)
    call.__enter__()
    try:
        for node, out in order:
            g = pending.pop(node, None)
            if targets is not None and g is not None and out is not None and id(out) in targets:
                targets[id(out)] = add(targets[id(out)], g)  # a non-leaf target
            needs = node.needs_input_grad
            if wanted is not None:
                if node not in wanted:
                    continue
                needs = tuple([n and (id(i) in targets or e in wanted)
                               for i, e, n in zip(node.inputs, node.edges, needs)])
            if g is None:
                continue
            if "tensor_hooks" in node.__dict__:  # Tensor.register_hook on the node's output
                shared.add(id(g.data))
                g = _run_hooks(node.__dict__["tensor_hooks"], g)
                shared.add(id(g.data))
            if _registered.modified:
                node.check_versions()
            if _anomaly.enabled:
                grads = _call_rule_checked(node, out, g, needs)
            else:
                grads = _call_rule(node, out, g, needs)
            for i, inp in enumerate(node.inputs):
                gi = grads[i]
                if gi is None or not needs[i]:
                    continue
                if type(gi) is deferred.Deferred:  # (only to a leaf: see deferred.may_defer)
                    deferred.deliver(inp, gi)
                    continue
                if type(gi) is not tensor_type() or gi.data.shape != inp.data.shape or (
                        gi.data.dtype != inp.data.dtype) or (
                        type(inp.data) is not np.ndarray):  # else the common case: all fine
                    gi = _check_grad(node, i, inp, gi)
                parent = node.edges[i]
                if parent is None:
                    deliver(inp, gi)
                elif parent in pending:
                    pending[parent] = add(pending[parent], gi)
                else:
                    pending[parent] = gi
            if not retain_graph:
                node._free()
        for leaf, g in hooked.values():
            shared.add(id(g.data))
            g = _run_hooks(leaf._hooks, g)
            shared.add(id(g.data))
            _deliver(leaf, g, targets, create_graph, shared)
    finally:
        call.__exit__()
        grad_mode.set_mode(saved_mode)


def _run_hooks(hooks: dict, g: Tensor) -> Tensor:
    """Call each hook on the gradient in order; a hook's non-None result replaces it."""
    for hook in list(hooks.values()):
        out = hook(g)
        if out is not None:
            if not isinstance(out, tensor_type()) or out.shape != g.shape:
                raise RuntimeError(f"hook {hook!r} returned {type(out).__name__} "
                                   f"{getattr(out, 'shape', '')}; expected None or a Tensor "
                                   f"of the gradient's shape {g.shape}")
            g = out
    return g


def _call_rule(node: Context, out: Tensor, g: Tensor, needs: tuple) -> tuple:
    """Run the node's rule with ``ctx.output`` set and ``needs_input_grad`` = ``needs``."""
    recorded_needs = node.needs_input_grad
    node.needs_input_grad, node._output = needs, out
    try:
        grads = node.op.backward(node, g)
    finally:
        node.needs_input_grad, node._output = recorded_needs, None
    if not isinstance(grads, tuple | list):
        grads = (grads,)
    if len(grads) != len(node.inputs):
        raise RuntimeError(f"{node.op.__name__}.backward returned {len(grads)} gradients, "
                           f"expected {len(node.inputs)} (one per positional input)")
    return grads


def _call_rule_checked(node: Context, out: Tensor, g: Tensor, needs: tuple) -> tuple:
    """``_call_rule`` in anomaly mode: NaN in a gradient is a RuntimeError naming the rule,
    and a failing rule warns with the traceback of the forward call that made its node."""
    name = f"{node.op.__name__}Backward"
    try:
        grads = _call_rule(node, out, g, needs)
        check_rule(name, grads, _has_nan)
    except Exception:
        warn_forward_trace(name, node)
        raise
    return grads


def _has_nan(g: Any) -> bool:
    return bool(np.isnan(g.data if isinstance(g, tensor_type()) else np.asarray(g)).any())


def _nodes_leading_to(targets: dict[int, Any], order: list[tuple[Context, Tensor]]) -> set:
    """The nodes from which some target tensor is reachable (walking towards the inputs)."""
    wanted: set[Context] = set()
    for node, _ in reversed(order):  # inputs before consumers
        for inp, edge, need in zip(node.inputs, node.edges, node.needs_input_grad):
            if need and (id(inp) in targets or edge in wanted):
                wanted.add(node)
                break
    return wanted


def _check_grad(node: Context, i: int, inp: Tensor, g: Any) -> Tensor:
    """Wrap an ndarray gradient, check its shape and cast it to the input's dtype."""
    if not isinstance(g, tensor_type()):
        g = _wrap(_float_array(g))
    if g.shape != inp.shape:
        raise RuntimeError(f"{node.op.__name__}.backward returned a gradient of shape "
                           f"{g.shape} for input {i} of shape {inp.shape}")
    if g.grad_fn is None and is_dask_array(inp.data):
        # a dask input's gradient takes its chunks, so that the gradients met by the
        # chunked kernels pair with their inputs (a recorded gradient, under
        # create_graph, keeps its own: rechunking is not a recorded operation)
        g = _wrap(rechunk_like(g.data, inp.data))
    return g if g.data.dtype == inp.data.dtype else g.astype(inp.dtype)


def _deliver(leaf: Tensor, g: Tensor, targets: dict | None, create_graph: bool,
             shared: set[int]) -> None:
    """Hand a finished gradient to a leaf: into ``targets`` (grad()) or ``leaf.grad``.

    ``.grad`` owns its buffer (an in-place update of one leaf's gradient must not reach
    another's): it takes ``g``'s array as it is when the array owns its memory, is not in
    ``shared`` (arrays others may hold; this one joins them) and lies in memory as the
    leaf's does, else a copy laid out as the leaf (torch's layout contract for ``.grad``:
    a Linear weight's gradient, the transpose of a product, reached its optimiser in
    Fortran order, whose elementwise updates then ran 7x slower on MNIST's 1.2M weights)."""
    add = _add_recorded if create_graph else _add_constant
    if targets is not None:
        if id(leaf) in targets:
            targets[id(leaf)] = add(targets[id(leaf)], g)
    elif leaf.grad is None:
        a, like = g.data, leaf.data
        if create_graph or is_dask_array(a):  # (a dask array is immutable: never copied)
            leaf.grad = g
        elif type(a) is not np.ndarray or type(like) is not np.ndarray or (
                a.shape != like.shape):
            leaf.grad = _wrap(np.array(a))
        elif _owns_whole(a, shared) and _same_order(a, like):
            shared.add(id(a) if a.base is None else id(a.base))
            leaf.grad = _wrap(a)
        else:
            out = np.empty_like(like, dtype=a.dtype)  # the leaf's memory order
            np.copyto(out, a)
            leaf.grad = _wrap(out)
    else:
        leaf.grad = add(leaf.grad, g)


deferred.set_accumulate(lambda leaf, g: _deliver(leaf, g, None, False, set()))


def _same_order(a: np.ndarray, like: np.ndarray) -> bool:
    """``a`` lies in memory as ``like`` (the strides of their size-1 dims aside)."""
    return all(s == t for s, t, n in zip(a.strides, like.strides, a.shape) if n > 1)


def _owns_whole(a: np.ndarray, shared: set[int]) -> bool:
    """``a`` owns its memory, or is a view of all of an array that does (the transpose of
    a product computed in its leaf's layout), and neither is in ``shared``."""
    owner = a if a.base is None else a.base
    return (type(owner) is np.ndarray and owner.base is None and owner.size == a.size
            and id(owner) not in shared and id(a) not in shared)


def _add_constant(a: Tensor | None, b: Tensor) -> Tensor:
    """``a + b``, recording nothing: the tensor layer's addition, on its kernel family
    (multi-threaded for large float32 arrays, a profiler event)."""
    if a is None:
        return b
    saved = grad_mode.is_grad_enabled()
    grad_mode.set_mode(False)
    try:
        return a + b
    finally:
        grad_mode.set_mode(saved)


def _add_recorded(a: Tensor | None, b: Tensor) -> Tensor:
    return b if a is None else a + b
