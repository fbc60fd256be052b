"""PyTorch's remaining elementwise math as Tensor methods (and, through
:mod:`.functions`, as ``cg.<name>(x, ...)``; :data:`FORMS` lists them):

* inverse trigonometric and hyperbolic functions ``acos``, ``asin``, ``acosh``, ``asinh``,
  ``atanh`` (with NumPy's ``arc*`` aliases), ``atan2`` / ``arctan2``, ``hypot``;
* special functions ``erfc``, ``erfinv``, ``lgamma``, ``digamma``, ``polygamma(n)``,
  ``mvlgamma(p)``, ``i0``, ``sinc``, ``exp2``, ``logaddexp2``, ``float_power`` (in
  float64, as torch), ``ldexp``;
* ``fmax`` / ``fmin`` (NaN-ignoring; the gradient goes to the chosen argument, the first
  on a tie, as torch), ``copysign``, ``nextafter``, and, without a gradient (torch has
  none), ``floor_divide`` and ``heaviside``;
* predicates ``signbit``, ``isposinf``, ``isneginf``, ``isreal`` (bool, no gradient);
* aliases ``positive``, ``absolute``, ``greater``, ``greater_equal``, ``less``,
  ``less_equal``, ``not_equal``;
* in-place forms (``acos_``, ``atan2_``, ``lgamma_``, ``float_power_``, ...) through
  :meth:`InPlaceMixin._apply_ <.inplace.InPlaceMixin._apply_>`.

Integer and bool inputs are computed as float32 where torch promotes them.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from ..autograd import tensor_type
from . import elementwise as _ew
from . import operands
from . import special_math as _sm

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["FORMS", "SpecialMethodsMixin"]

#: the methods that are also torch functions with the tensor first (``torch.acos(x)``)
FORMS = frozenset({
    "acos", "asin", "atan2", "arctan2", "acosh", "asinh", "atanh", "arccos", "arcsin",
    "arccosh", "arcsinh", "arctanh", "erfc", "erfinv", "lgamma", "digamma", "mvlgamma",
    "i0", "sinc", "hypot", "fmax", "fmin", "copysign", "signbit", "exp2", "logaddexp2",
    "float_power", "floor_divide", "heaviside", "nextafter", "ldexp", "isposinf",
    "isneginf", "isreal", "positive", "absolute", "greater", "greater_equal", "less",
    "less_equal", "not_equal",
})


def _t():
    return tensor_type()


def _cast(x: Tensor, dtype: np.dtype) -> Tensor:
    """``x`` in ``dtype`` (differentiable between float dtypes)."""
    return x if x.data.dtype == dtype else _ew.Cast.apply(x, dtype=np.dtype(dtype))


def _operands(fn: str, a: Tensor, other: Any, floating: bool = True) -> tuple:
    """``(a, other)`` as two Tensors of the dtype torch gives their result (a Python number
    takes the tensor's dtype; ``floating``: integer and bool results are the default
    float dtype)."""
    T = _t()
    if other is None or isinstance(other, str):
        raise TypeError(f"{fn}: other={other!r} must be a Tensor or a number")
    a, b = operands.promote([a, operands.operand(other)])
    dtype = np.result_type(*[x.dtype for x in (a, b) if isinstance(x, T | np.ndarray)])
    if floating and dtype.kind != "f":
        dtype = operands.kind_default(2)
    b = b if isinstance(b, T) else T._wrap(np.asarray(b, dtype))
    return _cast(a, dtype), _cast(b, dtype)


def _order(fn: str, name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{fn}: {name}={value!r} must be an int")
    if value < least:
        raise ValueError(f"{fn}: {name}={value} must be >= {least}")
    return int(value)


def _inplace(name: str, *, records_others: bool = True) -> Any:
    """The in-place form ``<name>_`` of the method ``name``."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        others = args if records_others else ()
        return self._apply_(f"{name}_", lambda t: getattr(t, name)(*args, **kwargs), *others)

    method.__name__ = method.__qualname__ = f"{name}_"
    method.__doc__ = f"In-place ``{name}``."
    return method


class SpecialMethodsMixin:
    """The methods listed in the module's docstring."""

    __slots__ = ()

    # -- inverse trigonometric and hyperbolic functions
    def acos(self) -> Tensor:
        return _sm.Arc.apply(self._floating(), name="acos")

    def asin(self) -> Tensor:
        return _sm.Arc.apply(self._floating(), name="asin")

    def acosh(self) -> Tensor:
        return _sm.Arc.apply(self._floating(), name="acosh")

    def asinh(self) -> Tensor:
        return _sm.Arc.apply(self._floating(), name="asinh")

    def atanh(self) -> Tensor:
        return _sm.Arc.apply(self._floating(), name="atanh")

    def atan2(self, other: Any) -> Tensor:
        """The angle of the point (other, self): ``atan(self / other)`` in the right
        quadrant."""
        return _sm.Atan2.apply(*_operands("atan2", self, other))

    arccos, arcsin, arccosh, arcsinh, arctanh, arctan2 = acos, asin, acosh, asinh, atanh, atan2

    def hypot(self, other: Any) -> Tensor:
        """``sqrt(self^2 + other^2)``; floating-point inputs only, as torch."""
        for name, v in (("input", self), ("other", other)):
            if isinstance(v, _t()) and v.data.dtype.kind != "f":
                raise TypeError(f"hypot: {name} of dtype {v.data.dtype} must be floating "
                                "point (as torch)")
        return _sm.Hypot.apply(*_operands("hypot", self, other))

    # -- special functions
    def erfc(self) -> Tensor:
        return _sm.Erfc.apply(self._floating())

    def erfinv(self) -> Tensor:
        return _sm.Erfinv.apply(self._floating())

    def lgamma(self) -> Tensor:
        return _sm.Lgamma.apply(self._floating())

    def digamma(self) -> Tensor:
        return _sm.Polygamma.apply(self._floating(), n=0)

    def polygamma(self, n: int) -> Tensor:
        """The ``n``-th derivative of ``digamma`` (``n >= 0``)."""
        return _sm.Polygamma.apply(self._floating(), n=_order("polygamma", "n", n, 0))

    def mvlgamma(self, p: int) -> Tensor:
        """The log of the multivariate gamma function of dimension ``p``:
        ``sum_i lgamma(x - i/2) + p (p - 1)/4 log(pi)``; every element must exceed
        ``(p - 1) / 2``."""
        p = _order("mvlgamma", "p", p, 1)
        x = self._floating()
        if (x.data <= (p - 1) / 2).any():
            raise ValueError(f"mvlgamma: all elements must be greater than (p-1)/2 = "
                             f"{(p - 1) / 2} for p={p}")
        offsets = _t()._wrap((np.arange(p) * -0.5).astype(x.data.dtype))
        return (x.unsqueeze(-1) + offsets).lgamma().sum(-1) + p * (p - 1) / 4 * np.log(np.pi)

    def i0(self) -> Tensor:
        return _sm.I0.apply(self._floating())

    def sinc(self) -> Tensor:
        """``sin(pi x) / (pi x)``, 1 at 0 (with the derivative 0 there, as torch)."""
        x = self._floating()
        zero = x.data == 0
        if not zero.any():
            px = x * np.pi
            return px.sin() / px
        ones = _t()._wrap(np.ones_like(x.data))
        px = operands.where(zero, ones, x) * np.pi
        return operands.where(zero, ones, px.sin() / px)

    def exp2(self) -> Tensor:
        return _sm.Exp2.apply(self._floating())

    def logaddexp2(self, other: Any) -> Tensor:
        """``log2(2^self + 2^other)``, as ``hi + log1p(2^(lo - hi)) / ln 2``."""
        a, b = _operands("logaddexp2", self, other)
        first = a.data >= b.data
        hi = operands.where(first, a, b)
        lo = operands.where(first, b, a)
        diff = lo - hi
        infinite = np.isinf(hi.data)
        if infinite.any():  # both -inf, or +inf: the result is hi
            diff = operands.where(infinite, _t()._wrap(np.zeros_like(diff.data)), diff)
        return hi + diff.exp2().log1p() / float(np.log(2.0))

    def float_power(self, exponent: Any) -> Tensor:
        """``self ** exponent`` computed in float64 (the result is float64), as torch."""
        x = _cast(self, np.dtype(np.float64))
        if isinstance(exponent, _t()):
            return x.pow(_cast(exponent, np.dtype(np.float64)))
        if isinstance(exponent, bool) or not isinstance(exponent, int | float | Integral):
            e = np.asarray(exponent)
            if e.dtype.kind not in "iuf":
                raise TypeError(f"float_power: exponent={exponent!r} must be a Tensor or "
                                "a number")
            return x.pow(_t()._wrap(e.astype(np.float64)))
        return x.pow(float(exponent))

    def ldexp(self, other: Any) -> Tensor:
        """``self * 2^other``."""
        a, b = _operands("ldexp", self, other)
        return a * b.exp2()

    # -- two-argument functions
    def fmax(self, other: Any) -> Tensor:
        """The larger of the two, ignoring a NaN (NaN only where both are); the gradient
        goes to the chosen one, to self on a tie."""
        a, b = _operands("fmax", self, other, floating=False)
        return operands.where((a.data >= b.data) | np.isnan(b.data), a, b)

    def fmin(self, other: Any) -> Tensor:
        """The smaller of the two, ignoring a NaN (as :meth:`fmax`)."""
        a, b = _operands("fmin", self, other, floating=False)
        return operands.where((a.data <= b.data) | np.isnan(b.data), a, b)

    def copysign(self, other: Any) -> Tensor:
        """``|self|`` with the sign of ``other`` (no gradient to ``other``)."""
        return _sm.Copysign.apply(*_operands("copysign", self, other))

    def nextafter(self, other: Any) -> Tensor:
        """The next representable float after self towards other (floats only)."""
        a, b = _operands("nextafter", self, other, floating=False)
        if a.data.dtype.kind != "f":
            raise TypeError(f"nextafter: inputs of dtype {a.data.dtype} must be floating "
                            "point (as torch)")
        return _sm.Nextafter.apply(a, b)

    def floor_divide(self, other: Any) -> Tensor:
        """``floor(self / other)`` (Python's ``//``); integers stay integers.  No gradient
        (torch has none)."""
        a, b = _operands("floor_divide", self, other, floating=False)
        if a.data.dtype.kind != "f" and (b.data == 0).any():
            raise ValueError("floor_divide: integer division by zero (other holds a 0)")
        with np.errstate(divide="ignore", invalid="ignore"):
            return _t()._wrap(np.floor_divide(a.data, b.data))

    def heaviside(self, values: Any) -> Tensor:
        """0 where self < 0, ``values`` where self == 0, 1 where self > 0 (and 0 for NaN,
        as torch); ``values`` must have self's dtype.  No gradient (torch has none)."""
        v = values.data if isinstance(values, _t()) else values
        if not isinstance(v, np.ndarray) or v.dtype != self.data.dtype:
            raise TypeError(f"heaviside: values must be a Tensor of the input's dtype "
                            f"{self.data.dtype}, got {getattr(v, 'dtype', type(v).__name__)}")
        x = self.data
        out = np.where(x == 0, v, x > 0).astype(x.dtype)
        return _t()._wrap(out)

    # -- predicates and aliases
    def signbit(self) -> Tensor:
        return _t()._wrap(np.signbit(self.data))

    def isposinf(self) -> Tensor:
        return _t()._wrap(np.isposinf(self.data))

    def isneginf(self) -> Tensor:
        return _t()._wrap(np.isneginf(self.data))

    def isreal(self) -> Tensor:
        """All True: every convgrad Tensor is real."""
        return _t()._wrap(np.ones(self.data.shape, np.bool_))

    def positive(self) -> Tensor:
        """Self (not for bool tensors, as torch)."""
        if self.data.dtype == np.bool_:
            raise TypeError("positive: the `+` operator on a bool tensor is not supported")
        return self

    def absolute(self) -> Tensor:
        return self.abs()

    def greater(self, other: Any) -> Tensor:
        return self.gt(other)

    def greater_equal(self, other: Any) -> Tensor:
        return self.ge(other)

    def less(self, other: Any) -> Tensor:
        return self.lt(other)

    def less_equal(self, other: Any) -> Tensor:
        return self.le(other)

    def not_equal(self, other: Any) -> Tensor:
        return self.ne(other)

    # -- in-place forms
    acos_, asin_, acosh_, asinh_, atanh_ = (_inplace(n) for n in
                                            ("acos", "asin", "acosh", "asinh", "atanh"))
    arccos_, arcsin_, arccosh_, arcsinh_, arctanh_ = acos_, asin_, acosh_, asinh_, atanh_
    atan2_ = _inplace("atan2")
    arctan2_ = atan2_
    hypot_, copysign_, nextafter_, ldexp_ = (_inplace(n) for n in
                                             ("hypot", "copysign", "nextafter", "ldexp"))
    floor_divide_, heaviside_ = _inplace("floor_divide"), _inplace("heaviside")
    erfc_, erfinv_, lgamma_, digamma_ = (_inplace(n) for n in
                                         ("erfc", "erfinv", "lgamma", "digamma"))
    polygamma_ = _inplace("polygamma", records_others=False)
    mvlgamma_ = _inplace("mvlgamma", records_others=False)
    i0_, sinc_, exp2_ = _inplace("i0"), _inplace("sinc"), _inplace("exp2")
    absolute_, negative_ = _inplace("absolute"), _inplace("negative")

    def float_power_(self, exponent: Any) -> Tensor:
        """In-place ``float_power``: the tensor must be float64 (the result's dtype)."""
        if self.data.dtype != np.float64:
            raise TypeError(f"float_power_: the tensor has dtype {self.data.dtype}, but the "
                            "result is float64; call it on a float64 tensor")
        return self._apply_("float_power_", lambda t: t.float_power(exponent), exponent)
