"""torch's fused matrix products as Tensor methods, composed of ``@`` and arithmetic (so
their gradients, of every order, are those of the parts): ``addmm``, ``addmv``, ``addr``,
``addbmm``, ``baddbmm`` (``beta * self + alpha * product``; ``beta=0`` ignores ``self``'s
values, NaN included, and gives it a zero gradient, as torch), ``vdot`` and ``ger``
(``outer``)."""

from __future__ import annotations

from numbers import Number
from typing import Any

import numpy as np

from ..autograd import tensor_type
from . import operands

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["ProductMethodsMixin"]


def _shape(t: Any) -> tuple:
    return tuple(getattr(t, "shape", np.shape(t)))


def _operand(fn: str, name: str, x: Any, ndim: int, like: Tensor) -> Tensor:
    """``x`` as a Tensor of ``ndim`` dims and ``like``'s dtype (a TypeError otherwise)."""
    T = tensor_type()
    if not isinstance(x, T):
        x = T(np.asarray(x, like.data.dtype))
    if x.ndim != ndim:
        raise ValueError(f"{fn}: {name} must be {ndim}-d, got shape {_shape(x)}")
    if x.data.dtype != like.data.dtype:
        raise TypeError(f"{fn}: {name} of dtype {x.data.dtype} must have the dtype "
                        f"{like.data.dtype} of the other operands")
    return x


def _number(fn: str, name: str, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, Number):
        raise TypeError(f"{fn}: {name}={value!r} must be a number")
    return value


def scaled_sum(fn: str, inp: Tensor, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    """``beta * inp + alpha * product``, ``inp`` broadcast to ``product``'s shape; with
    ``beta == 0`` the product alone (``inp``'s gradient zero)."""
    beta, alpha = _number(fn, "beta", beta), _number(fn, "alpha", alpha)
    out_shape = _shape(product)
    try:
        fits = np.broadcast_shapes(_shape(inp), out_shape) == out_shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{fn}: input of shape {_shape(inp)} does not broadcast to the "
                         f"product's shape {out_shape}")
    if inp.data.dtype != product.data.dtype:
        raise TypeError(f"{fn}: input of dtype {inp.data.dtype} must have the dtype "
                        f"{product.data.dtype} of the other operands")
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # the input's values are never read: a NaN there does not spread
        return operands.where(np.zeros(out_shape, bool), inp, product)
    return (inp if beta == 1 else inp * beta) + product


def fused(fn: str, inp: Tensor, operands_: list, product: Any, beta: Any, alpha: Any
          ) -> Tensor:
    """:func:`scaled_sum` of ``inp`` and ``product(*operands_)``.  float32 with a
    scaling other than 1 (and ``beta`` 0) is evaluated in float64 and rounded once: the
    separately rounded scalings reached 2.1x torch's float32 error (whose BLAS call
    folds them into the product)."""
    beta, alpha = _number(fn, "beta", beta), _number(fn, "alpha", alpha)
    if inp.data.dtype == np.float32 and (alpha != 1 or beta not in (0, 1)):
        wide = [t.double() for t in operands_]
        return scaled_sum(fn, inp.double(), product(*wide), beta, alpha).float()
    return scaled_sum(fn, inp, product(*operands_), beta, alpha)


class ProductMethodsMixin:
    """The methods listed in the module's docstring."""

    __slots__ = ()

    def addmm(self, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """``beta * self + alpha * (mat1 @ mat2)`` of matrices (n, m) and (m, p)."""
        a = _operand("addmm", "mat1", mat1, 2, self)
        b = _operand("addmm", "mat2", mat2, 2, self)
        if a.shape[1] != b.shape[0]:
            raise ValueError(f"addmm: mat1 of shape {_shape(a)} and mat2 of shape "
                             f"{_shape(b)} cannot be multiplied")
        return fused("addmm", self, [a, b], lambda x, y: x @ y, beta, alpha)

    def addmv(self, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """``beta * self + alpha * (mat @ vec)`` of a matrix (n, m) and a vector (m,)."""
        a = _operand("addmv", "mat", mat, 2, self)
        v = _operand("addmv", "vec", vec, 1, self)
        if a.shape[1] != v.shape[0]:
            raise ValueError(f"addmv: mat of shape {_shape(a)} and vec of shape "
                             f"{_shape(v)} cannot be multiplied")
        return fused("addmv", self, [a, v], lambda x, y: x @ y, beta, alpha)

    def addr(self, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """``beta * self + alpha * outer(vec1, vec2)``."""
        u = _operand("addr", "vec1", vec1, 1, self)
        v = _operand("addr", "vec2", vec2, 1, self)
        return fused("addr", self, [u, v], lambda x, y: x.unsqueeze(1) * y.unsqueeze(0),
                     beta, alpha)

    def addbmm(self, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """``beta * self + alpha * sum_b batch1[b] @ batch2[b]`` of (B, n, m) and (B, m, p),
        one product of (n, B m) by (B m, p)."""
        a = _operand("addbmm", "batch1", batch1, 3, self)
        b = _operand("addbmm", "batch2", batch2, 3, self)
        if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
            raise ValueError(f"addbmm: batch1 of shape {_shape(a)} and batch2 of shape "
                             f"{_shape(b)} must be (B, n, m) and (B, m, p)")
        nb, n, m = a.shape

        def product(x: Tensor, y: Tensor) -> Tensor:
            return x.permute(1, 0, 2).reshape(n, nb * m) @ y.reshape(nb * m, y.shape[2])

        return fused("addbmm", self, [a, b], product, beta, alpha)

    def baddbmm(self, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """``beta * self + alpha * (batch1 @ batch2)`` of (B, n, m) and (B, m, p)."""
        a = _operand("baddbmm", "batch1", batch1, 3, self)
        b = _operand("baddbmm", "batch2", batch2, 3, self)
        if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
            raise ValueError(f"baddbmm: batch1 of shape {_shape(a)} and batch2 of shape "
                             f"{_shape(b)} must be (B, n, m) and (B, m, p)")
        return fused("baddbmm", self, [a, b], lambda x, y: x @ y, beta, alpha)

    def vdot(self, other: Any) -> Tensor:
        """The dot product of two 1-d Tensors of one length (real: ``dot``)."""
        o = _operand("vdot", "other", other, 1, self)
        if self.ndim != 1 or self.shape[0] != o.shape[0]:
            raise ValueError(f"vdot: expects two 1-d Tensors of one length, got shapes "
                             f"{_shape(self)} and {_shape(o)}")
        return self @ o

    def ger(self, vec2: Any) -> Tensor:
        """``outer`` (torch's older name)."""
        return self.outer(vec2)
