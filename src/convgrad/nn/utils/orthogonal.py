"""The orthogonal parametrization (torch's ``parametrizations.orthogonal``): a real
matrix weight kept orthogonal (orthonormal columns or rows when rectangular) as the
image of an unconstrained matrix under ``matrix_exp``, the Cayley map or a product of
Householder reflections, times a fixed orthogonal ``base`` (the trivialization)."""

from __future__ import annotations

import numpy as np

from ...random import default_generator
from ...tensor import Tensor, cat, eye, zeros
from ..module import Module
from . import parametrize

__all__ = ["orthogonal"]

_MAPS = ("matrix_exp", "cayley", "householder")


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """The first k columns of ``H_1 ... H_k`` with ``H_i = I - tau_i v_i v_i^T``, ``v_i``
    column i of ``a`` (strictly lower part) with a 1 at row i, composed of Tensor ops."""
    n, k = a.shape[-2], a.shape[-1]
    unit = np.eye(n, k, dtype=a.dtype)
    q = Tensor._wrap(np.broadcast_to(unit, a.shape).copy())
    for i in reversed(range(k)):
        v = a[..., :, i:i + 1] + Tensor._wrap(unit[:, i:i + 1])
        q = q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.mT @ q))
    return q


def _make_orthogonal(a: np.ndarray) -> np.ndarray:
    """The Q of ``a``'s QR decomposition with R's diagonal made non-negative."""
    q, r = np.linalg.qr(a)
    d = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    d = np.where(d == 0, 1, d)
    return (q * d[..., None, :]).astype(a.dtype)


def _householder_inverse(q: np.ndarray) -> np.ndarray:
    """The reflectors of ``q`` (LAPACK's geqrf: the vectors below the diagonal) with the
    signs of R's diagonal on the diagonal, negated where a reflector is the identity."""
    out = np.empty_like(q)
    for idx in np.ndindex(*q.shape[:-2]):
        h, tau = np.linalg.qr(q[idx], mode="raw")
        a = h.T.copy()
        k = min(a.shape)
        d = np.sign(np.diagonal(a)[:k])
        d = np.where(tau[:k] == 0, -d, d)
        a[np.arange(k), np.arange(k)] = d
        out[idx] = a
    return out


def _is_orthogonal(q: np.ndarray) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    tol = 10.0 * n * np.finfo(q.dtype).eps
    return bool(np.allclose(np.swapaxes(q, -1, -2) @ q, np.eye(k), rtol=1e-5, atol=tol))


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, use_trivialization: bool) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                x = cat([x, zeros(*x.shape[:-1], n - k, dtype=x.dtype)], dim=-1)
            a = x - x.mT
            if self.orthogonal_map == "matrix_exp":
                from ...linalg import matrix_exp

                q = matrix_exp(a)
            else:
                from ...linalg import solve

                ident = eye(n, dtype=a.dtype)
                q = solve(ident - 0.5 * a, ident + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = _householder_product(a, tau)
            # the diagonal of x holds the signs (+-1), truncated as torch's int cast does
            signs = np.trunc(np.diagonal(x.data, axis1=-2, axis2=-1)).astype(x.dtype)
            q = q * Tensor._wrap(signs[..., None, :])
        if self._buffers.get("base") is not None:
            q = Tensor._wrap(self.base) @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        if tuple(q.shape) != self.shape:
            raise ValueError(f"orthogonal: expected a matrix (or batch) of shape {self.shape}, "
                             f"got {tuple(q.shape)}")
        arr = q.data
        n, k = arr.shape[-2], arr.shape[-1]
        transposed = n < k
        if transposed:
            arr = np.swapaxes(arr, -1, -2)
            n, k = k, n
        if "base" not in self._buffers:
            if self.orthogonal_map != "householder":
                raise NotImplementedError("orthogonal: assigning to a matrix_exp or cayley "
                                          "weight needs use_trivialization=True")
            a = _householder_inverse(arr)
            return Tensor._wrap(np.swapaxes(a, -1, -2) if transposed else a)
        if n == k:
            base = arr.copy() if _is_orthogonal(arr) else _make_orthogonal(arr)
        else:
            fill = default_generator().standard_normal(arr.shape[:-1] + (n - k,))
            base = _make_orthogonal(np.concatenate([arr, fill.astype(arr.dtype)], axis=-1))
        self.base = base
        neg_id = np.zeros(self.shape, q.dtype)
        idx = np.arange(min(self.shape[-2:]))
        neg_id[..., idx, idx] = -1.0
        return Tensor._wrap(neg_id)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Keep ``module.<name>`` (real, ``(..., n, k)``) orthogonal: ``orthogonal_map`` is
    ``"matrix_exp"``, ``"cayley"`` or ``"householder"`` (default: ``matrix_exp`` for a square
    matrix, else ``householder``); with ``use_trivialization`` the weight is ``base @ Q``
    (buffer ``base``) and may be assigned.  Returns ``module``."""
    fn = "orthogonal"
    weight = getattr(module, name, None) if isinstance(name, str) else None
    if not isinstance(weight, Tensor):
        raise ValueError(f"{fn}: module {type(module).__name__} has no parameter or buffer "
                         f"named {name!r}")
    if weight.ndim < 2:
        raise ValueError(f"{fn}: expected a matrix or a batch of matrices, got a "
                         f"{weight.ndim}-d tensor")
    n, k = weight.shape[-2], weight.shape[-1]
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if n == k else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(f"{fn}: orthogonal_map={orthogonal_map!r}; expected one of "
                         f"{', '.join(map(repr, _MAPS))} or None")
    if not isinstance(use_trivialization, bool):
        raise TypeError(f"{fn}: use_trivialization={use_trivialization!r} must be a bool")
    parametrize.register_parametrization(
        module, name, _Orthogonal(weight, orthogonal_map, use_trivialization), unsafe=True)
    return module
