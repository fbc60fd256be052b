"""``einsum``: torch's Einstein summation, contracted two operands at a time from the
left (each step keeping the indices a later operand or the output still needs), each
step one node.

Derivation: for ``C = einsum(A, B)`` (a sum of products, linear in each operand),
``dA = einsum(dC, B)`` onto A's indices, summed over what only B and C share and
broadcast over what only A has (an index A sums alone); likewise ``dB``.  The rule calls
the same node on Tensors, so it is differentiable to any order.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from ..autograd import Context, Function
from .tensor import Tensor, as_tensor

__all__ = ["einsum"]

_LETTERS = string.ascii_letters


def _contract(spec: str, a: Any, b: Any) -> Any:
    """``np.einsum(spec, a, b)`` (or of ``a`` alone when ``b`` is None) on arrays."""
    return np.einsum(spec, a, optimize=True) if b is None else np.einsum(
        spec, a, b, optimize=True)


def _adjoint(g: Tensor, g_sub: str, other: Any, o_sub: str, sub: str, shape: tuple
             ) -> Tensor:
    """The gradient of the operand with indices ``sub`` (its shape ``shape``): ``g``
    (indices ``g_sub``) contracted with ``other`` (``o_sub``; None for a single operand)
    onto the indices of ``sub`` they hold, then broadcast over the rest."""
    have = set(g_sub) | set(o_sub)
    kept = "".join(c for c in sub if c in have)
    spec = f"{g_sub},{o_sub}->{kept}" if other is not None else f"{g_sub}->{kept}"
    out = Einsum.apply(g, other, spec=spec)
    if kept == sub:
        return out
    view = [shape[i] if c in kept else 1 for i, c in enumerate(sub)]
    return out.reshape(view).expand(*shape)


class Einsum(Function):
    """One contraction ``spec`` of one or two operands (``"ij,jk->ik"``; a single
    operand's second input is None)."""

    reads = {0: (1,), 1: (0,)}

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: Any, *, spec: str) -> np.ndarray:
        ctx.spec = spec
        return np.asarray(_contract(spec, a, b))

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        ins, out = ctx.spec.split("->")
        subs = ins.split(",")
        inputs = ctx.inputs
        need = ctx.needs_input_grad
        if len(subs) == 1:
            return _adjoint(grad, out, None, "", subs[0], inputs[0].shape), None
        a, b = inputs
        ga = _adjoint(grad, out, b, subs[1], subs[0], a.shape) if need[0] else None
        gb = _adjoint(grad, out, a, subs[0], subs[1], b.shape) if need[1] else None
        return ga, gb


def _parse(fn: str, equation: str, operands: list) -> tuple[list[str], str]:
    """The operands' index strings and the output's, with ``...`` spelt out as letters
    (the dims it stands for must agree in size across operands: no broadcasting)."""
    eq = equation.replace(" ", "")
    ins, arrow, out = eq.partition("->")
    subs = ins.split(",")
    if len(subs) != len(operands):
        raise ValueError(f"{fn}: equation {equation!r} names {len(subs)} operands, "
                         f"{len(operands)} given")
    used = set(eq) - set(".,->")
    free = [c for c in _LETTERS if c not in used]
    ell: tuple | None = None
    for k, (s, t) in enumerate(zip(subs, operands)):
        if s.count("...") > 1 or ("." in s.replace("...", "")):
            raise ValueError(f"{fn}: operand {k}'s subscripts {s!r} are malformed")
        if "..." in s:
            n = t.ndim - (len(s) - 3)
            if n < 0:
                raise ValueError(f"{fn}: operand {k} of shape {tuple(t.shape)} has fewer "
                                 f"dims than its subscripts {s!r}")
            lead = s.index("...")
            dims = tuple(t.shape[lead:lead + n])
            if ell is not None and ell != dims:
                raise ValueError(f"{fn}: the dims '...' stands for differ between operands "
                                 f"({ell} and {dims}); broadcasting them is not supported")
            ell = dims
    names = "".join(free[:len(ell)]) if ell is not None else ""
    subs = [s.replace("...", names) for s in subs]
    for k, (s, t) in enumerate(zip(subs, operands)):
        if not s.isalpha() and s:
            raise ValueError(f"{fn}: operand {k}'s subscripts {s!r} must be letters")
        if len(s) != t.ndim:
            raise ValueError(f"{fn}: operand {k} of shape {tuple(t.shape)} has {t.ndim} "
                             f"dims, its subscripts {s!r} name {len(s)}")
        if len(set(s)) != len(s):
            raise ValueError(f"{fn}: operand {k}'s subscripts {s!r} repeat an index (a "
                             "diagonal), which is not supported")
    sizes: dict = {}
    for k, (s, t) in enumerate(zip(subs, operands)):
        for c, n in zip(s, t.shape):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"{fn}: index {c!r} has size {sizes[c]} and {n} (operand "
                                 f"{k}); broadcasting is not supported")
    if arrow:
        out = out.replace("...", names)
        if len(set(out)) != len(out) or not set(out) <= set(sizes):
            raise ValueError(f"{fn}: output subscripts {out!r} must name distinct indices "
                             "of the operands")
    else:  # implicit output: the indices seen once, in alphabetical order (numpy's rule)
        counts = {c: "".join(subs).count(c) for c in sizes}
        out = names + "".join(sorted(c for c in sizes if counts[c] == 1 and c not in names))
    return subs, out


def einsum(equation: str, *operands: Any) -> Tensor:
    """``torch.einsum(equation, *operands)`` (operands also as one list), differentiable;
    indices repeated within an operand (diagonals) and broadcast dims are a ValueError."""
    fn = "einsum"
    if not isinstance(equation, str):
        raise TypeError(f"{fn}: equation must be a str, got {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError(f"{fn}: expected at least one operand")
    ts = [as_tensor(t) for t in operands]
    subs, out = _parse(fn, equation, ts)
    acc, acc_sub = ts[0], subs[0]
    for k in range(1, len(ts)):
        later = set(out).union(*subs[k + 1:])
        keep = "".join(c for c in dict.fromkeys(acc_sub + subs[k]) if c in later)
        acc = Einsum.apply(acc, ts[k], spec=f"{acc_sub},{subs[k]}->{keep}")
        acc_sub = keep
    if acc_sub != out or len(ts) == 1:
        acc = Einsum.apply(acc, None, spec=f"{acc_sub}->{out}")
    return acc
