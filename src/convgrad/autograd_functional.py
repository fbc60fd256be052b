"""``convgrad.autograd.functional`` (torch's ``torch.autograd.functional``): ``vjp``,
``jvp``, ``jacobian``, ``hessian``, ``vhp`` and ``hvp`` of a function of Tensors.

It lives above the tensor layer (it builds zeros and stacks rows), so the engine package
reaches it lazily by name.  Every product is made of reverse-mode passes of
:func:`convgrad.autograd.grad`: ``jvp`` and ``hvp`` by the double-vjp trick, ``jacobian``
one output element at a time (``vectorize=True`` runs the same loop).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from . import autograd as _autograd_package
from .autograd import enable_grad, grad
from .tensor import Tensor, ones_like, stack, zeros, zeros_like
from .tensor.args import flag

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


def _as_tuple(fn: str, what: str, value: Any) -> tuple[bool, tuple]:
    """(was it a tuple, the Tensors as a tuple); anything but Tensors is a TypeError."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            where = f" at index {i}" if is_tuple else ""
            raise TypeError(f"{fn}: {what} must be a Tensor or a tuple of Tensors, got "
                            f"{type(t).__name__}{where}")
    return is_tuple, items


def _unpack(result: tuple, is_tuple: bool) -> Any:
    return result if is_tuple else result[0]


def _unpack2(result: tuple, outer: bool, inner: bool) -> Any:
    """torch's nesting of a Jacobian: [output][input], each level a tuple only if given one."""
    rows = tuple(row if inner else row[0] for row in result)
    return rows if outer else rows[0]


def _prepare(inputs: tuple, create_graph: bool) -> tuple:
    """Inputs to differentiate: an alias of one that already requires grad when the result
    must stay differentiable (so it links back to it), else a fresh detached leaf."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad
                 else t.detach().requires_grad_(True) for t in inputs)


def _finish(tensors: tuple, create_graph: bool) -> tuple:
    return tensors if create_graph else tuple(t.detach() for t in tensors)


def _grad(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None,
          create_graph: bool = False) -> tuple:
    """``grad`` over the outputs that have a history (None for an input none reaches)."""
    pairs = [(o, None if grad_outputs is None else grad_outputs[i])
             for i, o in enumerate(outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs = [o for o, _ in pairs]
    seeds = None if grad_outputs is None else [g for _, g in pairs]
    return grad(outs, inputs, seeds, retain_graph=True, create_graph=create_graph,
                allow_unused=True)


def _check_v(fn: str, v: tuple, like: tuple, like_name: str) -> None:
    if len(v) != len(like):
        raise ValueError(f"{fn}: v is a tuple of invalid length: should be {len(like)} (one "
                         f"per {like_name}) but got {len(v)}")
    for i, (a, b) in enumerate(zip(v, like)):
        if tuple(a.shape) != tuple(b.shape):
            raise ValueError(f"{fn}: entry {i} in v has invalid size: should be "
                             f"{tuple(b.shape)} (the {like_name}'s) but got {tuple(a.shape)}")


def _vector(fn: str, v: Any, like: tuple, like_name: str) -> tuple:
    """``v`` as a tuple checked against ``like``; None only for one single-element Tensor."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise ValueError(f"{fn}: v=None is allowed only when the {like_name} is a single "
                             "Tensor with a single element")
        return (ones_like(like[0]),)
    _, v = _as_tuple(fn, "v", v)
    _check_v(fn, v, like, like_name)
    return v


def _require_grad(fn: str, tensors: tuple, kind: str, strict: bool) -> None:
    """In strict mode, every Tensor of ``tensors`` must have a history."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None or not t.requires_grad:
            raise RuntimeError(f"{fn}: {kind} {i} does not depend on the inputs "
                               "(strict=True forbids that)")


def _zeros_for_none(fn: str, grads: tuple, refs: tuple, strict: bool, create_graph: bool,
                    what: str) -> tuple:
    """Zeros where no gradient reached; strict mode raises instead."""
    out = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None or (strict and create_graph and not g.requires_grad):
            if strict:
                raise RuntimeError(f"{fn}: {what} is independent of input {i} "
                                   "(strict=True forbids that)")
            g = zeros_like(ref)
        out.append(g)
    return tuple(out)


def _flags(fn: str, create_graph: Any, strict: Any) -> tuple[bool, bool]:
    return flag(fn, "create_graph", create_graph), flag(fn, "strict", strict)


def _call(fn: str, func: Callable, inputs: tuple) -> tuple[bool, tuple]:
    if not callable(func):
        raise TypeError(f"{fn}: func must be callable, got {type(func).__name__}")
    return _as_tuple(fn, "the outputs of the user-provided function", func(*inputs))


def _single_output(fn: str, outputs: tuple, is_tuple: bool) -> None:
    if is_tuple:
        raise ValueError(f"{fn}: the function should return a single Tensor, got a tuple of "
                         f"{len(outputs)}")
    if outputs[0].numel() != 1:
        raise ValueError(f"{fn}: the Tensor returned by the function should contain a single "
                         f"element, got shape {tuple(outputs[0].shape)}")


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(*inputs), v^T J)``: the vector-Jacobian product, ``v`` shaped as the outputs
    (None for a single-element output), the product shaped as the inputs."""
    fn = "vjp"
    create_graph, strict = _flags(fn, create_graph, strict)
    with enable_grad():
        in_tuple, inputs = _as_tuple(fn, "inputs", inputs)
        inputs = _prepare(inputs, create_graph)
        out_tuple, outputs = _call(fn, func, inputs)
        _require_grad(fn, outputs, "output", strict)
        v = _vector(fn, v, outputs, "outputs")
        res = _grad(outputs, inputs, v, create_graph)
        res = _zeros_for_none(fn, res, inputs, strict, create_graph, "the output")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(*inputs), J v)``: the Jacobian-vector product, ``v`` shaped as the inputs
    (None for a single-element input), by the double-vjp trick: ``u -> u^T J`` is linear in
    ``u``, and its gradient with respect to ``u`` along ``v`` is ``J v``."""
    fn = "jvp"
    create_graph, strict = _flags(fn, create_graph, strict)
    with enable_grad():
        in_tuple, inputs, v, out_tuple, outputs = _along(fn, func, inputs, v, create_graph,
                                                         strict)
        dummies = tuple(zeros_like(o).requires_grad_(True) for o in outputs)
        back = _grad(outputs, inputs, dummies, create_graph=True)
        _require_grad(fn, back, "the gradient with respect to input", strict)
        res = _grad(back, dummies, v, create_graph)
        res = _zeros_for_none(fn, res, outputs, strict, create_graph,
                              "the gradient (double-vjp trick)")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), out_tuple))


def _check_strategy(fn: str, name: str, strategy: Any, vectorize: bool) -> None:
    if strategy not in _STRATEGIES:
        raise ValueError(f"{fn}: {name}={strategy!r} is not supported; expected "
                         "'forward-mode' or 'reverse-mode'")
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError(f"{fn}: {name}='forward-mode' needs vectorize=True")


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``: entry ``[i][j]`` of shape
    ``outputs[i].shape + inputs[j].shape`` (a level is a tuple only where the outputs or
    inputs are one).  Built row by row, one reverse pass per output element; ``vectorize``
    and ``strategy='forward-mode'`` give the same values through the same loop."""
    fn = "jacobian"
    create_graph, strict = _flags(fn, create_graph, strict)
    vectorize = flag(fn, "vectorize", vectorize)
    _check_strategy(fn, "strategy", strategy, vectorize)
    if strict and vectorize:
        raise ValueError(f"{fn}: strict=True and vectorize=True are not supported together "
                         "(as in torch); set one of them to False")
    with enable_grad():
        in_tuple, inputs = _as_tuple(fn, "inputs", inputs)
        inputs = _prepare(inputs, create_graph)
        out_tuple, outputs = _call(fn, func, inputs)
        _require_grad(fn, outputs, "output", strict)
        result = []
        for i, out in enumerate(outputs):
            flat = out.reshape(-1)
            rows: list[list[Tensor]] = [[] for _ in inputs]
            for k in range(flat.numel()):
                grads = _grad((flat[k],), inputs, None, create_graph)
                for j, g in enumerate(grads):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"{fn}: output {i} of the user-provided "
                                               f"function is independent of input {j} "
                                               "(strict=True forbids that)")
                        g = zeros_like(inputs[j])
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(f"{fn}: the jacobian is independent of input {j} "
                                           "(strict=True with create_graph=True forbids that)")
                    rows[j].append(g)
            result.append(tuple(
                (stack(r).reshape(tuple(out.shape) + tuple(x.shape)) if r else
                 zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype))
                for r, x in zip(rows, inputs)))
    result = [_finish(row, create_graph) for row in result]
    return _unpack2(tuple(result), out_tuple, in_tuple)


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a single-element ``func`` at ``inputs``: entry ``[i][j]`` of shape
    ``inputs[i].shape + inputs[j].shape`` (the Jacobian of its gradient)."""
    fn = "hessian"
    create_graph, strict = _flags(fn, create_graph, strict)
    vectorize = flag(fn, "vectorize", vectorize)
    _check_strategy(fn, "outer_jacobian_strategy", outer_jacobian_strategy, vectorize)
    in_tuple, inputs = _as_tuple(fn, "inputs", inputs)

    def scalar(*inp: Tensor) -> Tensor:
        out_tuple, outputs = _call(fn, func, inp)
        _require_grad(fn, outputs, "output", strict)
        _single_output(fn, outputs, out_tuple)
        return outputs[0].squeeze()

    def gradient(*inp: Tensor) -> tuple:
        jac = jacobian(scalar, inp, create_graph=True)
        _require_grad(fn, jac, "the jacobian with respect to input", strict)
        return jac

    res = jacobian(gradient, inputs, create_graph, strict, vectorize,
                   outer_jacobian_strategy)
    return _unpack2(res, in_tuple, in_tuple)


def _along(fn: str, func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool,
           single_output: bool = False) -> tuple:
    """A product along ``v`` in the inputs' space, set up (under ``enable_grad``): the
    inputs checked and prepared, ``v`` checked against them, ``func`` called and its
    outputs checked; ``(in_tuple, inputs, v, out_tuple, outputs)``."""
    in_tuple, inputs = _as_tuple(fn, "inputs", inputs)
    inputs = _prepare(inputs, create_graph)
    v = _vector(fn, v, inputs, "inputs")
    out_tuple, outputs = _call(fn, func, inputs)
    if single_output:
        _single_output(fn, outputs, out_tuple)
    _require_grad(fn, outputs, "output", strict)
    return in_tuple, inputs, v, out_tuple, outputs


def _second_order(fn: str, func: Callable, inputs: Any, v: Any, create_graph: Any,
                  strict: Any, trick: bool) -> tuple:
    create_graph, strict = _flags(fn, create_graph, strict)
    with enable_grad():
        in_tuple, inputs, v, out_tuple, outputs = _along(fn, func, inputs, v, create_graph,
                                                         strict, single_output=True)
        jac = _grad(outputs, inputs, None, create_graph=True)
        _require_grad(fn, jac, "the jacobian with respect to input", strict)
        if trick:  # H v as the gradient, along v, of u -> u^T H (linear in u)
            dummies = tuple(zeros_like(x).requires_grad_(True) for x in inputs)
            back = _grad(jac, inputs, dummies, create_graph=True)
            res = _grad(back, dummies, v, create_graph)
        else:
            res = _grad(jac, inputs, v, create_graph)
        res = _zeros_for_none(fn, res, inputs, strict, create_graph, "the jacobian")
    return (_finish(outputs, create_graph)[0], _unpack(_finish(res, create_graph), in_tuple))


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(*inputs), v^T H)`` for a single-element ``func``, ``v`` shaped as the inputs
    (None for a single-element input)."""
    return _second_order("vhp", func, inputs, v, create_graph, strict, trick=False)


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(*inputs), H v)`` for a single-element ``func``, by the double-vjp trick."""
    return _second_order("hvp", func, inputs, v, create_graph, strict, trick=True)


# reachable as convgrad.autograd.functional (the engine package names it lazily)
_autograd_package.functional = sys.modules[__name__]
sys.modules.setdefault("convgrad.autograd.functional", sys.modules[__name__])
