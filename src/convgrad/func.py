"""``convgrad.func`` (torch's ``torch.func``): ``functional_call``, a module called with
other parameters and buffers, and the function transforms ``grad``, ``grad_and_value``,
``vjp``, ``jacrev``, ``jacfwd`` and ``hessian``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .autograd import enable_grad, is_grad_enabled
from .autograd import grad as _gradients
from .autograd_functional import jacobian
from .nn.utils.stateless import call_with, merge_dicts
from .tensor import Tensor, zeros_like
from .tensor.args import flag

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "vjp"]


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (a
    dict, or a sequence of dicts with distinct keys) in place of its own, as
    :func:`convgrad.nn.utils.stateless.functional_call`."""
    fn = "functional_call"
    return call_with(fn, module, merge_dicts(fn, parameter_and_buffer_dicts), args, kwargs,
                     tie_weights, strict)


# --- function transforms (torch.func's grad, vjp, jacrev, jacfwd, hessian), made of
# reverse-mode passes; a transform of a transform differentiates through the inner one


def _argnums(fn: str, argnums: Any, n: int) -> tuple[bool, tuple[int, ...]]:
    """(was it a tuple, the positions as non-negative ints below ``n``)."""
    is_tuple = isinstance(argnums, tuple)
    items = argnums if is_tuple else (argnums,)
    if not items or any(isinstance(a, bool) or not isinstance(a, int) for a in items):
        raise TypeError(f"{fn}: argnums must be an int or a non-empty tuple of ints, got "
                        f"{argnums!r}")
    out = []
    for a in items:
        if not -n <= a < n:
            raise ValueError(f"{fn}: argnums={argnums!r} is out of range for {n} positional "
                             "arguments")
        out.append(a % n)
    if len(set(out)) != len(out):
        raise ValueError(f"{fn}: argnums={argnums!r} names an argument twice")
    return is_tuple, tuple(out)


def _tracked(fn: str, args: tuple, argnums: Any) -> tuple[bool, tuple[int, ...], list, bool]:
    """(argnums a tuple, positions, args with the differentiated ones tracked, nested): a
    differentiated argument that already has a history (an outer transform's) is aliased so
    the result links back to it; any other is a fresh leaf."""
    is_tuple, pos = _argnums(fn, argnums, len(args))
    args = list(args)
    nested = False
    for p in pos:
        a = args[p]
        if not isinstance(a, Tensor):
            raise TypeError(f"{fn}: argument {p} (in argnums) must be a Tensor, got "
                            f"{type(a).__name__}")
        if a.requires_grad and is_grad_enabled():
            nested = True
            args[p] = a.view_as(a)
        else:
            args[p] = a.detach().requires_grad_(True)
    return is_tuple, pos, args, nested


def _split_aux(fn: str, result: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return result, None
    if not isinstance(result, tuple) or len(result) != 2:
        raise ValueError(f"{fn}: with has_aux=True the function must return a pair "
                         f"(output, aux), got {type(result).__name__}")
    return result


def _keep(x: Any, nested: bool) -> Any:
    """Results leave a transform detached unless an outer transform differentiates them."""
    if nested or not isinstance(x, Tensor):
        return x
    return x.detach()


def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """``func`` -> a function returning ``(gradient, value)`` (``(gradient, (value, aux))``
    with ``has_aux``): the gradient of the single-element output with respect to the
    arguments at ``argnums`` (a tuple of gradients where ``argnums`` is a tuple)."""
    fn = "grad_and_value"
    if not callable(func):
        raise TypeError(f"{fn}: func must be callable, got {type(func).__name__}")
    has_aux = flag(fn, "has_aux", has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> tuple:
        with enable_grad():
            is_tuple, pos, args, nested = _tracked(fn, args, argnums)
            out, aux = _split_aux(fn, func(*args, **kwargs), has_aux)
            if not isinstance(out, Tensor) or out.numel() != 1:
                got = type(out).__name__ if not isinstance(out, Tensor) else tuple(out.shape)
                raise ValueError(f"{fn}: the function must return a single-element Tensor "
                                 f"(use vjp or jacrev otherwise), got {got}")
            inputs = [args[p] for p in pos]
            grads = (_gradients(out, inputs, create_graph=nested, allow_unused=True)
                     if out.requires_grad else (None,) * len(inputs))
            grads = tuple(_keep(zeros_like(x) if g is None else g, nested)
                          for g, x in zip(grads, inputs))
        g = grads if is_tuple else grads[0]
        value = _keep(out, nested)
        return (g, (value, aux)) if has_aux else (g, value)

    return wrapper


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """``func`` -> its gradient function (torch.func.grad): as :func:`grad_and_value`
    without the value (``(gradient, aux)`` with ``has_aux``)."""
    inner = grad_and_value(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = inner(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)`` (``(output, vjp_fn, aux)`` with ``has_aux``):
    ``vjp_fn(cotangents)``, cotangents shaped as the output, returns a tuple with the
    vector-Jacobian product for each primal."""
    fn = "vjp"
    if not callable(func):
        raise TypeError(f"{fn}: func must be callable, got {type(func).__name__}")
    has_aux = flag(fn, "has_aux", has_aux)
    if not primals:
        raise ValueError(f"{fn}: expected at least one primal Tensor")
    with enable_grad():
        _, pos, args, nested = _tracked(fn, primals, tuple(range(len(primals))))
        out, aux = _split_aux(fn, func(*args), has_aux)
    outs = out if isinstance(out, tuple) else (out,)
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            raise TypeError(f"{fn}: the function must return a Tensor or a tuple of Tensors, "
                            f"got {type(o).__name__} at index {i}")

    def vjp_fn(cotangents: Any) -> tuple:
        cots = cotangents if isinstance(cotangents, tuple) else (cotangents,)
        if len(cots) != len(outs) or isinstance(cotangents, tuple) != isinstance(out, tuple):
            raise ValueError(f"vjp_fn: cotangents must have the structure of the output "
                             f"({len(outs)} Tensor(s)), got {len(cots)}")
        for i, (c, o) in enumerate(zip(cots, outs)):
            if not isinstance(c, Tensor) or tuple(c.shape) != tuple(o.shape):
                got = tuple(c.shape) if isinstance(c, Tensor) else type(c).__name__
                raise ValueError(f"vjp_fn: cotangent {i} must be a Tensor of shape "
                                 f"{tuple(o.shape)}, got {got}")
        pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
        with enable_grad():
            grads = (_gradients([o for o, _ in pairs], args, [c for _, c in pairs],
                          retain_graph=True, create_graph=nested, allow_unused=True)
                     if pairs else (None,) * len(args))
        return tuple(_keep(zeros_like(x) if g is None else g, nested)
                     for g, x in zip(grads, args))

    result = tuple(_keep(o, nested) for o in outs)
    result = result if isinstance(out, tuple) else result[0]
    return (result, vjp_fn, aux) if has_aux else (result, vjp_fn)


def jacrev(func: Callable, argnums: Any = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """``func`` -> its Jacobian function (torch.func.jacrev): entry shapes
    ``output.shape + argument.shape``, a tuple level where the output or ``argnums`` is a
    tuple; ``(jacobian, aux)`` with ``has_aux``.  One reverse pass per output element
    (``chunk_size`` changes nothing)."""
    return _jacobian_transform("jacrev", func, argnums, has_aux, chunk_size)


def jacfwd(func: Callable, argnums: Any = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """``func`` -> its Jacobian function (torch.func.jacfwd): the same values as
    :func:`jacrev`, computed by reverse-mode passes (there is no forward mode)."""
    if randomness not in ("error", "different", "same"):
        raise ValueError(f"jacfwd: randomness={randomness!r} is not supported; expected "
                         "'error', 'different' or 'same'")
    return _jacobian_transform("jacfwd", func, argnums, has_aux, None)


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """``func`` -> its Hessian function (torch.func.hessian): the Jacobian of the Jacobian
    with respect to the arguments at ``argnums``."""
    return jacfwd(jacrev(func, argnums), argnums)


def _jacobian_transform(fn: str, func: Callable, argnums: Any, has_aux: Any,
                        chunk_size: Any) -> Callable:
    if not callable(func):
        raise TypeError(f"{fn}: func must be callable, got {type(func).__name__}")
    has_aux = flag(fn, "has_aux", has_aux)
    if chunk_size is not None and (isinstance(chunk_size, bool) or
                                   not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"{fn}: chunk_size={chunk_size!r} must be None or a positive int")

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        is_tuple, pos, _, nested = _tracked(fn, args, argnums)
        aux_box = []

        def partial(*diff: Tensor) -> Any:
            full = list(args)
            for p, d in zip(pos, diff):
                full[p] = d
            out, aux = _split_aux(fn, func(*full, **kwargs), has_aux)
            aux_box.append(aux)
            return out

        diff = tuple(args[p] for p in pos)
        jac = jacobian(partial, diff if is_tuple else diff[0], create_graph=nested)
        return (jac, aux_box[0]) if has_aux else jac

    return wrapper
