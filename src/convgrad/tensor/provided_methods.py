"""Tensor methods whose operations live in a layer above this one: torch's linear-algebra
methods (``det``, ``inverse``, ``cholesky``, ``qr``, ``svd``, ...), which
:mod:`convgrad.linalg` computes.  That layer hands its functions over when it loads
(:func:`provide`), and ``import convgrad`` loads it, so the methods work wherever a Tensor
exists; the tensor layer imports nothing above it (as the engine learns the Tensor class
by registration)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ProvidedMethodsMixin", "provide"]

_PROVIDED: dict[str, Callable[..., Any]] = {}


def provide(**functions: Callable[..., Any]) -> None:
    """Register the functions behind the methods of :class:`ProvidedMethodsMixin`, by the
    method's name (called by :mod:`convgrad.linalg` when it loads)."""
    _PROVIDED.update(functions)


def _call(name: str, *args: Any, **kwargs: Any) -> Any:
    fn = _PROVIDED.get(name)
    if fn is None:
        raise RuntimeError(f"Tensor.{name}: convgrad.linalg, which computes it, is not "
                           "loaded (import convgrad loads it)")
    return fn(*args, **kwargs)


class ProvidedMethodsMixin:
    """torch's linear-algebra Tensor methods, each the ``torch.<name>`` function of
    :mod:`convgrad.linalg.legacy` with the Tensor as its first argument."""

    __slots__ = ()

    def det(self) -> Any:
        return _call("det", self)

    def logdet(self) -> Any:
        return _call("logdet", self)

    def slogdet(self) -> Any:
        return _call("slogdet", self)

    def inverse(self) -> Any:
        return _call("inverse", self)

    def cholesky(self, upper: bool = False) -> Any:
        return _call("cholesky", self, upper)

    def cholesky_solve(self, input2: Any, upper: bool = False) -> Any:
        """The solution X of ``A X = self`` given ``input2``, A's Cholesky factor."""
        return _call("cholesky_solve", self, input2, upper)

    def cholesky_inverse(self, upper: bool = False) -> Any:
        """The inverse of ``A = L L^T`` (``U^T U`` with ``upper``) from its factor: the
        solution of ``A X = I``, as ``torch.cholesky_inverse``."""
        n = self.shape[-1]
        eye = type(self)._wrap(np.broadcast_to(np.eye(n, dtype=self.data.dtype),
                                               self.shape).copy())
        return _call("cholesky_solve", eye, self, upper)

    def qr(self, some: bool = True) -> Any:
        return _call("qr", self, some)

    def svd(self, some: bool = True, compute_uv: bool = True) -> Any:
        return _call("svd", self, some, compute_uv)

    def pinverse(self, rcond: float = 1e-15) -> Any:
        return _call("pinverse", self, rcond)

    def matrix_power(self, n: int) -> Any:
        return _call("matrix_power", self, n)

    def matrix_exp(self) -> Any:
        return _call("matrix_exp", self)

    def triangular_solve(self, A: Any, upper: bool = True, transpose: bool = False,  # noqa: N803
                         unitriangular: bool = False) -> Any:
        """The solution X of ``A X = self`` (``A^T X = self`` with ``transpose``), and A."""
        return _call("triangular_solve", self, A, upper, transpose, unitriangular)
