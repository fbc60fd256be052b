"""``convgrad.special``: torch.special's functions (``import convgrad as cg``;
``cg.special.erfinv(x)``), differentiable where torch's are.

Most are the Tensor methods under SciPy's names (``expit`` is ``sigmoid``, ``gammaln``
``lgamma``, ``psi`` ``digamma``, ``multigammaln`` ``mvlgamma``); the rest are the
Functions of :mod:`convgrad.tensor.special_math` or compositions of the library's
operations (``ndtr``, ``xlog1py``).  ``gammainc`` / ``gammaincc`` have a gradient in
``other`` only and ``bessel_j0`` / ``bessel_j1`` none, as torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .tensor import Tensor, as_tensor, operands
from .tensor import special_math as _sm

__all__ = [
    "bessel_j0", "bessel_j1", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
    "expit", "expm1", "gammainc", "gammaincc", "gammaln", "i0", "i0e", "i1", "i1e",
    "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr",
    "ndtri", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy",
]


def _float(x: Any) -> Tensor:
    """``x`` as a Tensor, integer and bool ones as float32 (torch promotes them)."""
    return as_tensor(x)._floating()


def expit(input: Any) -> Tensor:  # noqa: A002 (torch's argument names throughout)
    """The logistic sigmoid ``1 / (1 + e^-x)``."""
    return _float(input).sigmoid()


def logit(input: Any, eps: float | None = None) -> Tensor:  # noqa: A002
    """``log(p / (1 - p))``, p clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    return _float(input).logit(eps)


def erf(input: Any) -> Tensor:  # noqa: A002
    return _float(input).erf()


def erfc(input: Any) -> Tensor:  # noqa: A002
    return _float(input).erfc()


def erfcx(input: Any) -> Tensor:  # noqa: A002
    """The scaled complementary error function ``e^(x^2) erfc(x)``."""
    return _sm.Erfcx.apply(_float(input))


def erfinv(input: Any) -> Tensor:  # noqa: A002
    return _float(input).erfinv()


def gammaln(input: Any) -> Tensor:  # noqa: A002
    """``log |Gamma(x)|`` (torch's ``lgamma``)."""
    return _float(input).lgamma()


def digamma(input: Any) -> Tensor:  # noqa: A002
    return _float(input).digamma()


psi = digamma


def polygamma(n: int, input: Any) -> Tensor:  # noqa: A002
    """The ``n``-th derivative of digamma at ``input`` (the order comes first, as torch)."""
    return as_tensor(input).polygamma(n)


def multigammaln(input: Any, p: int) -> Tensor:  # noqa: A002
    """The log of the multivariate gamma function of dimension ``p`` (``mvlgamma``)."""
    return as_tensor(input).mvlgamma(p)


def i0(input: Any) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind, order 0."""
    return _float(input).i0()


def i0e(input: Any) -> Tensor:  # noqa: A002
    """``e^(-|x|) i0(x)``."""
    return _sm.I0e.apply(_float(input))


def i1(input: Any) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind, order 1."""
    return _sm.I1.apply(_float(input))


def i1e(input: Any) -> Tensor:  # noqa: A002
    """``e^(-|x|) i1(x)``."""
    return _sm.I1e.apply(_float(input))


def ndtr(input: Any) -> Tensor:  # noqa: A002
    """The standard normal CDF, ``erfc(-x / sqrt 2) / 2`` (accurate in the lower tail)."""
    return (_float(input) * -np.sqrt(0.5)).erfc() * 0.5


def ndtri(input: Any) -> Tensor:  # noqa: A002
    """The inverse of :func:`ndtr`."""
    return _sm.Ndtri.apply(_float(input))


def log_ndtr(input: Any) -> Tensor:  # noqa: A002
    """``log(ndtr(x))``, accurate in both tails."""
    return _sm.LogNdtr.apply(_float(input))


def xlogy(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input * log(other)``, 0 where input is 0 (unless other is NaN)."""
    return as_tensor(input).xlogy(other)


def xlog1py(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input * log1p(other)``, 0 where input is 0 (unless other is NaN); its gradient in
    input ``log1p(other)``, in other ``input / (1 + other)`` (0 in both where input is 0
    and other is -1 or less)."""
    x = as_tensor(input)
    x, y = (t._floating() for t in operands.promote([x, as_tensor(other)]))
    if x.data.dtype != y.data.dtype:  # float32 with float64: float64
        x, y = x.double(), y.double()
    zero = np.broadcast_to((x.data == 0) & ~np.isnan(y.data) & (y.data <= -1),
                           np.broadcast_shapes(x.shape, y.shape))
    if zero.any():  # log1p of -1 or less times a zero x: the value is 0, not NaN
        y = operands.where(zero, Tensor._wrap(np.zeros(zero.shape, y.data.dtype)), y)
    return x * y.log1p() + 0.0  # (+0.0: a zero x gives 0, not -0, as torch)


def entr(input: Any) -> Tensor:  # noqa: A002
    """``-x ln x`` elementwise (0 at 0, -inf for negative x)."""
    return _sm.Entr.apply(_float(input))


def sinc(input: Any) -> Tensor:  # noqa: A002
    """The normalized sinc ``sin(pi x) / (pi x)``."""
    return as_tensor(input).sinc()


def round(input: Any, *, decimals: int = 0) -> Tensor:  # noqa: A001, A002
    """Round half to even, to ``decimals`` decimal places."""
    return as_tensor(input).round(decimals=decimals)


def log1p(input: Any) -> Tensor:  # noqa: A002
    return as_tensor(input).log1p()


def expm1(input: Any) -> Tensor:  # noqa: A002
    return as_tensor(input).expm1()


def exp2(input: Any) -> Tensor:  # noqa: A002
    return as_tensor(input).exp2()


def logsumexp(input: Any, dim: Any, keepdim: bool = False) -> Tensor:  # noqa: A002
    return as_tensor(input).logsumexp(dim, keepdim)


def softmax(input: Any, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    return as_tensor(input).softmax(dim, dtype=dtype)


def log_softmax(input: Any, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    return as_tensor(input).log_softmax(dim, dtype=dtype)


def _incomplete_gamma(fn: str, input: Any, other: Any, upper: bool) -> Tensor:  # noqa: A002
    a, x = as_tensor(input), as_tensor(other)
    for name, t in (("input", a), ("other", x)):
        if t.data.dtype.kind != "f":
            raise TypeError(f"{fn}: {name} of dtype {t.data.dtype} must be floating point "
                            "(as torch)")
    if a.data.dtype != x.data.dtype:  # float32 with float64: float64
        a, x = a.double(), x.double()
    return _sm.Gammainc.apply(a, x, upper=upper)


def gammainc(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The regularized lower incomplete gamma function P(input, other); differentiable in
    ``other`` only (torch raises for ``input``'s gradient, and so does this)."""
    return _incomplete_gamma("gammainc", input, other, upper=False)


def gammaincc(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P."""
    return _incomplete_gamma("gammaincc", input, other, upper=True)


def _bessel_j(name: str, input: Any) -> Tensor:  # noqa: A002
    x = _float(input)
    return Tensor._wrap(_sm.in_float64(_sm.scipy_special(name), x.data))


def bessel_j0(input: Any) -> Tensor:  # noqa: A002
    """The Bessel function of the first kind, order 0 (no gradient, as torch)."""
    return _bessel_j("j0", input)


def bessel_j1(input: Any) -> Tensor:  # noqa: A002
    """The Bessel function of the first kind, order 1 (no gradient, as torch)."""
    return _bessel_j("j1", input)
