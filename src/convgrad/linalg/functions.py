"""The autograd Functions of ``convgrad.linalg``: each computes its value with NumPy's
LAPACK routines and states its gradient with differentiable Tensor operations, so that
gradients of every order follow.  Decompositions with several results (``Eigh``, ``Svd``,
``QR``) return them packed into one array (flattened and concatenated along the last
axis); :func:`unpack` splits a packed Tensor differentiably."""

from __future__ import annotations

from math import prod

import numpy as np

from ..autograd import OUTPUT, Context, Function
from ..tensor import Tensor, where
from ._checks import LinAlgError

__all__ = ["Cholesky", "CholeskySolve", "Det", "Eigh", "Inv", "LogAbsDet", "LUFactor",
           "MatrixExp", "Pinv", "QR", "Solve", "SolveTriangular", "Svd", "expm_array",
           "pack", "unpack"]


def _const(a: np.ndarray) -> Tensor:
    return Tensor._wrap(np.ascontiguousarray(a))


def pack(*arrays: np.ndarray, batch: tuple) -> np.ndarray:
    """Flatten each array's non-batch dims and join them along the last axis."""
    return np.concatenate([np.reshape(a, (*batch, prod(a.shape[len(batch):])))
                           for a in arrays], axis=-1)


def unpack(t: Tensor, shapes: list[tuple]) -> list[Tensor]:
    """The parts of a packed Tensor (differentiable), each of its trailing ``shapes``."""
    batch = tuple(t.shape[:-1])
    out, start = [], 0
    for s in shapes:
        size = prod(s)
        out.append(t.narrow(-1, start, size).reshape(*batch, *s))
        start += size
    return out


def _eye(n: int, like: Tensor) -> Tensor:
    return _const(np.eye(n, dtype=like.dtype))


def _vector_outer(v: Tensor) -> Tensor:
    return v.unsqueeze(-1) * v.unsqueeze(-2)


class Inv(Function):
    """``A^-1`` (LU).  ``d(A^-1) = -A^-1 dA A^-1``, so ``gA = -Y^T g Y^T`` (Y the output)."""

    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        try:
            return np.linalg.inv(a)
        except np.linalg.LinAlgError:
            raise LinAlgError("linalg.inv: the input matrix is singular; it has no "
                              "inverse") from None

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        yt = ctx.output.mT
        return -(yt @ grad @ yt)


class Det(Function):
    """``det(A)`` (LU).  ``d det = det tr(A^-1 dA)``, so ``gA = g det A^-T``; where A is
    exactly singular, ``g adj(A)^T`` (torch's value under ``create_graph``)."""

    reads = (0, OUTPUT)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        return np.asarray(np.linalg.det(a))

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        a = ctx.inputs[0]
        try:
            inverse = Inv.apply(a)
        except LinAlgError:  # an exactly singular matrix: the adjugate, from the SVD
            return grad.unsqueeze(-1).unsqueeze(-1) * adjugate_t(a)
        return (grad * ctx.output).unsqueeze(-1).unsqueeze(-1) * inverse.mT


def adjugate_t(a: Tensor) -> Tensor:
    """The transposed adjugate ``det(A) A^-T`` of square matrices, singular ones too
    (differentiable where the singular values are distinct):
    ``det(U) det(Vh) U diag(p) Vh``, ``p_i`` the product of the other singular values."""
    n = a.shape[-1]
    u, s, vh = unpack(Svd.apply(a, full_matrices=False), [(n, n), (n,), (n, n)])
    sign = np.linalg.det(u.data) * np.linalg.det(vh.data)
    others = where(_const(np.eye(n, dtype=bool)), 1.0, s.unsqueeze(-2).expand(
        *s.shape[:-1], n, n))
    p = others.prod(-1)
    return _const(np.asarray(sign, a.dtype)[..., None, None]) * ((u * p.unsqueeze(-2)) @ vh)


class LogAbsDet(Function):
    """``log|det A|`` (LU).  ``d log|det A| = tr(A^-1 dA)``, so ``gA = g A^-T``."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        return np.asarray(np.linalg.slogdet(a)[1])

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        return grad.unsqueeze(-1).unsqueeze(-1) * Inv.apply(ctx.inputs[0]).mT


class Solve(Function):
    """``X = A^-1 B`` for A ``(*, n, n)`` and B ``(*, n, k)`` of one batch shape.
    ``dX = A^-1 (dB - dA X)``, so ``gB = A^-T g`` and ``gA = -gB X^T``."""

    reads = {0: (0, OUTPUT), 1: (0,)}

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        try:
            return np.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            raise LinAlgError("linalg.solve: the input matrix A is singular; the system "
                              "has no unique solution") from None

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        gb = Solve.apply(ctx.inputs[0].mT, grad)
        ga = -(gb @ ctx.output.mT) if ctx.needs_input_grad[0] else None
        return ga, gb


class Cholesky(Function):
    """Lower ``L`` with ``A = L L^T`` (reads A's lower triangle).  With
    ``P = Phi(L^T gL)`` (the lower triangle, diagonal halved),
    ``gA = sym(L^-T P L^-1)``, ``sym(X) = (X + X^T) / 2``."""

    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        try:
            return np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            raise LinAlgError("linalg.cholesky: the input matrix is not positive "
                              "definite; the factorization could not be completed") from None

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        low = ctx.output
        p = low.mT @ grad
        p = p.tril(-1) + 0.5 * (p * _eye(p.shape[-1], p))
        linv = Inv.apply(low)
        s = linv.mT @ p @ linv
        return 0.5 * (s + s.mT)


def _any(t: Tensor) -> bool:
    return bool(np.any(t.data))


def _off_diagonal_inverse(e: Tensor) -> Tensor:
    """``1 / e`` off the diagonal of the last two dims, 0 on it."""
    n = e.shape[-1]
    eye = np.eye(n, dtype=bool)
    safe = e + _const(eye.astype(e.dtype))
    return (1.0 / safe) * _const((~eye).astype(e.dtype))


class Eigh(Function):
    """Eigenvalues ``w`` (ascending) and eigenvectors ``V`` of a symmetric matrix (reads the
    ``uplo`` triangle), packed as ``(*, n, n)`` then ``(*, n)``.
    ``gA = sym(V (diag(gw) + F o (V^T gV)) V^T)`` with ``F_ij = 1 / (w_j - w_i)``, 0 on
    the diagonal (the F term only where gV is not zero), ``sym(X) = (X + X^T) / 2``."""

    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, uplo: str) -> np.ndarray:
        w, v = np.linalg.eigh(a, UPLO=uplo)
        ctx.n = a.shape[-1]
        return pack(v, w, batch=a.shape[:-2])

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        n = ctx.n
        v, w = unpack(ctx.output, [(n, n), (n,)])
        gv, gw = unpack(grad, [(n, n), (n,)])
        inner = gw.unsqueeze(-1) * _eye(n, gw)
        if _any(gv):
            f = _off_diagonal_inverse(w.unsqueeze(-2) - w.unsqueeze(-1))
            inner = inner + f * (v.mT @ gv)
        out = v @ inner @ v.mT
        return 0.5 * (out + out.mT)


class Svd(Function):
    """``A = U diag(S) Vh``, packed as U, S, Vh (reduced: k = min(m, n) columns of U and
    rows of Vh; full: all).  The gradient reads the first k of them:
    ``gA = U [(skew(U^T gU) / E) S + S (skew(V^T gV) / E) + diag(gS)] Vh
    + (I - U U^T) gU S^-1 Vh + U S^-1 gVh (I - V V^T)`` with ``E_ij = S_j^2 - S_i^2``
    (1 on the diagonal), ``skew(X) = X - X^T``; the last two terms only where m > k or
    n > k, the first ones only where gU or gVh are not zero."""

    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, full_matrices: bool) -> np.ndarray:
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        ctx.shapes = [u.shape[-2:], s.shape[-1:], vh.shape[-2:]]
        return pack(u, s, vh, batch=a.shape[:-2])

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        (m, mu), (k,), (nv, n) = ctx.shapes
        u, s, vh = unpack(ctx.output, ctx.shapes)
        gu, gs, gvh = unpack(grad, ctx.shapes)
        if mu > k:
            u, gu = u.narrow(-1, 0, k), gu.narrow(-1, 0, k)
        if nv > k:
            vh, gvh = vh.narrow(-2, 0, k), gvh.narrow(-2, 0, k)
        inner = gs.unsqueeze(-1) * _eye(k, gs)
        has_u, has_v = _any(gu), _any(gvh)
        if not (has_u or has_v):
            return u @ inner @ vh
        s2 = s * s
        f = _off_diagonal_inverse(s2.unsqueeze(-2) - s2.unsqueeze(-1))
        if has_u:
            uhgu = u.mT @ gu
            inner = inner + (f * (uhgu - uhgu.mT)) * s.unsqueeze(-2)
        if has_v:
            vhgv = vh @ gvh.mT
            inner = inner + s.unsqueeze(-1) * (f * (vhgv - vhgv.mT))
        out = u @ inner @ vh
        if has_u and m > k:
            out = out + ((gu - u @ uhgu) / s.unsqueeze(-2)) @ vh
        if has_v and n > k:
            out = out + u @ ((gvh - (gvh @ vh.mT) @ vh) / s.unsqueeze(-1))
        return out


class QR(Function):
    """``A = Q R`` (Householder), packed as Q then R; the gradient for m >= n with the
    reduced Q:  ``M = R gR^T - gQ^T Q``,
    ``gA = (gQ + Q copyltu(M)) R^-T``, ``copyltu(M) = tril(M) + tril(M, -1)^T``."""

    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, mode: str) -> np.ndarray:
        q, r = np.linalg.qr(a, mode=mode)
        ctx.shapes = [q.shape[-2:], r.shape[-2:]]
        return pack(q, r, batch=a.shape[:-2])

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        (m, k), (_, n) = ctx.shapes
        if k > n:
            raise RuntimeError("linalg.qr: the QR decomposition is not differentiable when "
                               "mode='complete' and nrows > ncols")
        q, r = unpack(ctx.output, ctx.shapes)
        gq, gr = unpack(grad, ctx.shapes)
        mm = r @ gr.mT - gq.mT @ q
        mm = mm.tril() + mm.tril(-1).mT
        b = gq + q @ mm
        return Solve.apply(r, b.mT).mT


class Pinv(Function):
    """The pseudo-inverse ``P`` (SVD; singular values at most ``max(atol, rtol s_max)``
    are taken as zero).  For a constant rank:  ``gA = -P^T g P^T
    + (I - A P) g^T P P^T + P^T P g^T (I - P A)``."""

    reads = (0, OUTPUT)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, atol: np.ndarray, rtol: np.ndarray,
                hermitian: bool) -> np.ndarray:
        return pinv_array(a, atol, rtol, hermitian)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        a, p = ctx.inputs[0], ctx.output
        m, n = a.shape[-2:]
        gt = grad.mT
        out = -(p.mT @ grad @ p.mT)
        out = out + (_eye(m, a) - a @ p) @ gt @ (p @ p.mT)
        return out + (p.mT @ p) @ gt @ (_eye(n, a) - p @ a)


def cutoff(s: np.ndarray, atol: np.ndarray, rtol: np.ndarray) -> np.ndarray:
    """The singular-value threshold ``max(atol, rtol * s_max)`` of each matrix, (*, 1)."""
    smax = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    return np.maximum(np.asarray(atol)[..., None], np.asarray(rtol)[..., None] * smax)


def pinv_array(a: np.ndarray, atol: np.ndarray, rtol: np.ndarray,
               hermitian: bool) -> np.ndarray:
    """The pseudo-inverse of a batch of matrices (ndarray)."""
    if hermitian:
        w, v = np.linalg.eigh(a)
        mag = np.abs(w)
        keep = mag > cutoff(np.sort(mag, axis=-1)[..., ::-1], atol, rtol)
        inv_w = np.where(keep, 1.0 / np.where(keep, w, 1), 0).astype(a.dtype)
        return (v * inv_w[..., None, :]) @ np.swapaxes(v, -1, -2)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    keep = s > cutoff(s, atol, rtol)
    inv_s = np.where(keep, 1.0 / np.where(keep, s, 1), 0).astype(a.dtype)
    return np.swapaxes(vh, -1, -2) @ (inv_s[..., :, None] * np.swapaxes(u, -1, -2))


def _trsm(a: np.ndarray, b: np.ndarray, upper: bool, unit: bool,
          trans: bool = False) -> np.ndarray:
    """``op(A)^-1 B`` for batches of triangular A (BLAS ``trsm``: no singularity check, a
    zero diagonal gives inf/NaN as torch), ``op`` the transpose where ``trans``."""
    from scipy.linalg import blas

    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, (*batch, *a.shape[-2:])).reshape(-1, *a.shape[-2:])
    bs = np.broadcast_to(b, (*batch, *b.shape[-2:])).reshape(-1, *b.shape[-2:])
    out = np.empty(bs.shape, b.dtype)
    if out.size:
        func = blas.get_blas_funcs("trsm", (a[:1], bs[:1]))
        for i in range(len(bs)):
            out[i] = func(1.0, a[i], bs[i], lower=not upper, trans_a=int(trans),
                          diag=int(unit))
    return out.reshape(*batch, *b.shape[-2:])


class SolveTriangular(Function):
    """``X = A^-1 B`` for triangular A (its ``upper`` or lower triangle; unit diagonal where
    ``unit``) and B of one batch shape.  ``dX = A^-1 (dB - dA X)``, so ``gB = A^-T g`` and
    ``gA = -gB X^T`` restricted to A's triangle (strictly, where ``unit``)."""

    reads = {0: (0, OUTPUT), 1: (0,)}

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray, upper: bool,
                unit: bool) -> np.ndarray:
        ctx.upper, ctx.unit = upper, unit
        return _trsm(a, b, upper, unit)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        upper, unit = ctx.upper, ctx.unit
        gb = SolveTriangular.apply(ctx.inputs[0].mT, grad, upper=not upper, unit=unit)
        if not ctx.needs_input_grad[0]:
            return None, gb
        ga = -(gb @ ctx.output.mT)
        ga = ga.triu(int(unit)) if upper else ga.tril(-int(unit))
        return ga, gb


class CholeskySolve(Function):
    """``X = (L L^T)^-1 B`` for lower-triangular L (two triangular solves) and B of one
    batch shape.  With ``A = L L^T``: ``gB = A^-1 g``, ``gA = -gB X^T`` and, through
    ``dA = dL L^T + L dL^T``, ``gL = (gA + gA^T) L`` (not restricted to the triangle, as
    torch)."""

    reads = {0: (1,), 1: (1, OUTPUT)}

    @staticmethod
    def forward(ctx: Context, b: np.ndarray, low: np.ndarray) -> np.ndarray:
        return _trsm(low, _trsm(low, b, False, False), False, False, trans=True)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> tuple:
        low = ctx.inputs[1]
        gb = CholeskySolve.apply(grad, low)
        if not ctx.needs_input_grad[1]:
            return gb, None
        common = gb @ ctx.output.mT
        return gb, -((common + common.mT) @ low)


def expm_array(a: np.ndarray) -> np.ndarray:
    """``exp(A)`` of a batch of square matrices (SciPy's scaling and squaring; float32 in
    float64, then rounded)."""
    from scipy.linalg import expm

    if a.size == 0:
        return np.zeros(a.shape, a.dtype)
    return np.asarray(expm(a.astype(np.float64)), a.dtype)


class MatrixExp(Function):
    """``exp(A)``.  The adjoint of the Frechet derivative: ``gA`` is the upper-right block
    of ``exp([[A^T, g], [0, A^T]])`` (itself a MatrixExp, so gradients of every order
    follow)."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        return expm_array(a)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        from ..tensor import cat

        at = ctx.inputs[0].mT
        n = at.shape[-1]
        zero = _const(np.zeros(at.shape, at.dtype))
        block = cat([cat([at, grad], -1), cat([zero, at], -1)], -2)
        return MatrixExp.apply(block).narrow(-2, 0, n).narrow(-1, n, n)


class LUFactor(Function):
    """The packed LU factors ``P L U = A`` (``lu``, computed by the caller with ``perm`` the
    permutation matrices P), L unit lower, U upper.  For square A, with
    ``phi = tril(L^T gL, -1) + triu(gU U^T)`` (gL, gU the strict lower / upper parts of
    the gradient): ``gA = P L^-T phi U^-T``."""

    reads = (OUTPUT,)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, lu: np.ndarray, perm: np.ndarray) -> np.ndarray:
        ctx.perm = perm
        return lu.copy()

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        m, n = ctx.output.shape[-2:]
        if m != n:
            raise NotImplementedError("linalg.lu_factor: the gradient is implemented for "
                                      f"square matrices only, got {m} x {n}")
        lu = ctx.output
        low = lu.tril(-1) + _eye(n, lu)
        phi = (low.mT @ grad.tril(-1)).tril(-1) + (grad.triu() @ lu.triu().mT).triu()
        y = SolveTriangular.apply(low.mT, phi, upper=True, unit=True)
        z = SolveTriangular.apply(lu.triu(), y.mT, upper=True, unit=False).mT
        return _const(ctx.perm.astype(lu.dtype)) @ z
