"""``Tensor``: a float32/float64 ndarray that records the operations applied to it.

Operators and methods only normalise their arguments and call one ``Function`` from
``elementwise``, ``reduce`` or ``shape``; the gradient rules live there.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .. import autograd as _autograd
from ..autograd import register_tensor_type
from . import elementwise as _ew
from . import lazy as _lazy
from . import reduce as _red
from . import shape as _sh

__all__ = [
    "Tensor",
    "as_tensor",
    "cat",
    "concatenate",
    "from_numpy",
    "ones",
    "randn",
    "stack",
    "tensor",
    "where",
    "zeros",
]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# ----------------------------------------------------------------------------- coercion
def _check_dtype(who: str, dtype: Any) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in _FLOATS:
        raise TypeError(f"{who}: dtype={dtype!r} is not supported; expected float32 or float64")
    return dt


def _float_data(who: str, data: Any, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """data as a float ndarray: float32/float64 arrays keep their dtype, all else float32."""
    if isinstance(data, Tensor):
        data = data.data
    if _lazy.is_dask_array(data):  # stays lazy (np.asarray would compute it); immutable
        if data.dtype.kind not in "biuf":
            raise TypeError(f"{who}: data of dtype {data.dtype} is not supported; "
                            "expected real numbers (bool, int or float)")
        dt = (_check_dtype(who, dtype) if dtype is not None
              else data.dtype if data.dtype in _FLOATS else np.dtype(np.float32))
        return data if data.dtype == dt else data.astype(dt)
    try:
        arr = np.asarray(data)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{who}: cannot make an array of data={data!r}: {e}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{who}: data of dtype {arr.dtype} is not supported; "
                        "expected real numbers (bool, int or float)")
    if dtype is not None:
        dt = _check_dtype(who, dtype)
    elif isinstance(data, np.ndarray | np.generic) and arr.dtype in _FLOATS:
        dt = arr.dtype
    else:
        dt = np.dtype(np.float32)
    return np.array(arr, dtype=dt, copy=copy)


def _operand(x: Any) -> Any:
    """The other operand of a binary op: a Tensor, a weak Python scalar or a float ndarray."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, bool | int | float):
        return float(x) if isinstance(x, np.floating) else x  # np.float64 is a float too
    arr = x if _lazy.is_dask_array(x) else np.asarray(x)  # (dask stays lazy)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"unsupported operand {x!r} of type {type(x).__name__}; "
                        "expected a Tensor, an ndarray or a real number")
    return arr if arr.dtype in _FLOATS else arr.astype(np.float32)


def as_tensor(x: Any) -> Tensor:
    """A Tensor as it is; anything else (ndarray, list, number) as a constant Tensor."""
    return x if isinstance(x, Tensor) else Tensor(x)


def _dims(who: str, dim: Any, ndim: int) -> tuple[int, ...] | None:
    """Normalise ``dim`` (None, an int or a sequence of ints, negatives allowed)."""
    if dim is None:
        return None
    try:
        dims = (dim,) if isinstance(dim, int | np.integer) else tuple(dim)
    except TypeError:
        raise TypeError(f"{who}: dim={dim!r} must be an int or a tuple of ints") from None
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int | np.integer):
            raise TypeError(f"{who}: dim={dim!r} must be an int or a tuple of ints")
        if not -ndim <= d < ndim:
            raise ValueError(f"{who}: dim={dim!r} is out of range for a tensor with {ndim} "
                             f"dims; expected -{ndim} <= dim < {ndim}")
        out.append(int(d) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{who}: dim={dim!r} repeats a dimension")
    return tuple(sorted(out))


def _dim(who: str, dim: Any, ndim: int) -> int:
    """Normalise one dim index (negative allowed)."""
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer):
        raise TypeError(f"{who}: dim={dim!r} must be an int")
    return _dims(who, dim, ndim)[0]


def _alias(who: str, name: str, value: Any, alias: str, alias_value: Any, default: Any) -> Any:
    """Merge a PyTorch argument with its NumPy alias (``dim``/``axis``)."""
    if alias_value is None:
        return default if value is None else value
    if value is not None and value != alias_value:
        raise ValueError(f"{who}: got {name}={value!r} and {alias}={alias_value!r}; pass one")
    return alias_value


def _shape_arg(shape: tuple) -> tuple:
    """Accept ``f(2, 3)`` and ``f((2, 3))``."""
    return (tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], Sequence | np.ndarray)
            else shape)


def _resolve_shape(who: str, shape: tuple, size: int) -> tuple[int, ...]:
    shape = tuple(int(s) for s in _shape_arg(shape))
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        raise ValueError(f"{who}: shape={shape} may hold one -1 and otherwise sizes >= 0")
    known = int(np.prod([s for s in shape if s != -1]))
    if -1 in shape:
        if known == 0 or size % known:
            raise ValueError(f"{who}: cannot infer the -1 in shape={shape} for {size} elements")
        shape = tuple(size // known if s == -1 else s for s in shape)
    elif known != size:
        raise ValueError(f"{who}: shape={shape} holds {known} elements, the tensor has {size}")
    return shape


def _index(index: Any) -> tuple:
    """A NumPy index tuple; Tensors become int arrays, boolean masks their nonzero() arrays."""
    out: list = []
    for i in index if isinstance(index, tuple) else (index,):
        if isinstance(i, Tensor):
            i = i.data
            if not np.array_equal(i, np.round(i)):
                raise IndexError(f"a Tensor used as an index must hold integers, got {i}")
            i = i.astype(np.intp)
        elif isinstance(i, list):
            i = np.asarray(i)
        if isinstance(i, np.ndarray) and i.dtype == bool and i.ndim > 0:
            out.extend(i.nonzero())
        else:
            out.append(i)
    return tuple(out)


# ----------------------------------------------------------------------------- Tensor
class Tensor:
    """An n-dimensional float32 or float64 array with reverse-mode autodiff.

    ``data`` is the ndarray, ``grad`` the accumulated gradient (a Tensor) of a leaf,
    ``grad_fn`` the graph node that produced it (None for leaves).
    """

    __slots__ = ("data", "grad", "grad_fn", "_requires_grad", "__weakref__")
    __array_ufunc__ = None  # `ndarray (op) Tensor` defers to the Tensor's reflected operator
    __hash__ = object.__hash__  # tensors are dict keys; == is elementwise

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None) -> None:
        self.data = _float_data("Tensor", data, dtype)
        self.grad: Tensor | None = None
        self.grad_fn = None
        self._requires_grad = bool(requires_grad)

    @staticmethod
    def _wrap(data: np.ndarray, grad_fn: Any = None) -> Tensor:
        """Fast constructor for a float ndarray (no checks): an op output or a constant."""
        t = object.__new__(Tensor)
        t.data, t.grad, t.grad_fn, t._requires_grad = data, None, grad_fn, grad_fn is not None
        return t

    # -- attributes
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if self.grad_fn is not None:
            if not flag:
                raise RuntimeError("requires_grad can only be changed on leaf tensors; use "
                                   "detach() for a copy outside the graph")
            return
        self._requires_grad = bool(flag)

    def requires_grad_(self, flag: bool = True) -> Tensor:
        self.requires_grad = flag
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    def _eager(self, who: str) -> np.ndarray:
        """``data``, or a TypeError for dask data (which only ``cg.compute`` evaluates)."""
        if type(self.data) is not np.ndarray and _lazy.is_dask_array(self.data):
            raise _lazy.eager_error(who, self.data)
        return self.data

    def numpy(self) -> np.ndarray:
        return self._eager("numpy")

    def item(self) -> float:
        if self.data.size != 1:
            raise ValueError(f"item: the tensor has {self.data.size} elements, expected 1")
        return self._eager("item").item()

    def tolist(self) -> Any:
        return self._eager("tolist").tolist()

    def detach(self) -> Tensor:
        """The same data, outside the graph."""
        return Tensor._wrap(self.data)

    def zero_(self) -> Tensor:
        """Fill with zeros in place (for gradient buffers; not recorded)."""
        self.data[...] = 0
        return self

    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into the ``.grad`` of every leaf requiring grad.

        ``retain_graph`` defaults to ``create_graph``, as in PyTorch.
        """
        _autograd.backward(self, gradient, retain_graph, create_graph)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        data = self._eager("__array__")
        if dtype is None and not copy:
            return data
        return np.array(data, dtype=dtype, copy=True if copy else None)

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return len(self.data)

    def __iter__(self) -> Iterator[Tensor]:
        return (self[i] for i in range(len(self)))

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __repr__(self) -> str:
        parts = [repr(self.data) if _lazy.is_dask_array(self.data)  # (without computing)
                 else np.array2string(self.data, separator=", ", prefix="tensor(")]
        if self.data.dtype == np.float64:
            parts.append("dtype=float64")
        if self.grad_fn is not None:
            parts.append(f"grad_fn={self.grad_fn!r}")
        elif self._requires_grad:
            parts.append("requires_grad=True")
        return f"tensor({', '.join(parts)})"

    # -- arithmetic (NumPy broadcasting; Python scalars keep the tensor's dtype)
    def __add__(self, other: Any) -> Tensor:
        return _ew.Add.apply(self, _operand(other))

    def __radd__(self, other: Any) -> Tensor:
        return _ew.Add.apply(_operand(other), self)

    def __sub__(self, other: Any) -> Tensor:
        return _ew.Sub.apply(self, _operand(other))

    def __rsub__(self, other: Any) -> Tensor:
        return _ew.Sub.apply(_operand(other), self)

    def __mul__(self, other: Any) -> Tensor:
        return _ew.Mul.apply(self, _operand(other))

    def __rmul__(self, other: Any) -> Tensor:
        return _ew.Mul.apply(_operand(other), self)

    def __truediv__(self, other: Any) -> Tensor:
        return _ew.Div.apply(self, _operand(other))

    def __rtruediv__(self, other: Any) -> Tensor:
        return _ew.Div.apply(_operand(other), self)

    def __pow__(self, other: Any) -> Tensor:
        return _ew.Pow.apply(self, _operand(other))

    def __rpow__(self, other: Any) -> Tensor:
        return _ew.Pow.apply(_operand(other), self)

    def __matmul__(self, other: Any) -> Tensor:
        return _sh.MatMul.apply(self, _operand(other))

    def __rmatmul__(self, other: Any) -> Tensor:
        return _sh.MatMul.apply(_operand(other), self)

    def __neg__(self) -> Tensor:
        return _ew.Neg.apply(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return _ew.Abs.apply(self)

    # -- comparisons: bool ndarrays, not differentiable
    def _compare(self, other: Any, op: Any) -> Any:
        if isinstance(other, Tensor):
            return op(self.data, other.data)
        if isinstance(other, int | float | np.ndarray | np.generic | list):
            return op(self.data, other)
        return NotImplemented

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, np.less)

    def __le__(self, other: Any) -> Any:
        return self._compare(other, np.less_equal)

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, np.greater)

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, np.greater_equal)

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return self._compare(other, np.equal)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return self._compare(other, np.not_equal)

    def __getitem__(self, index: Any) -> Tensor:
        return _sh.GetItem.apply(self, index=_index(index))

    # -- elementwise functions
    def exp(self) -> Tensor:
        return _ew.Exp.apply(self)

    def log(self) -> Tensor:
        return _ew.Log.apply(self)

    def sqrt(self) -> Tensor:
        return _ew.Sqrt.apply(self)

    def abs(self) -> Tensor:
        return _ew.Abs.apply(self)

    def pow(self, exponent: Any) -> Tensor:
        return _ew.Pow.apply(self, _operand(exponent))

    def relu(self) -> Tensor:
        return _ew.ReLU.apply(self)

    def sigmoid(self) -> Tensor:
        return _ew.Sigmoid.apply(self)

    def tanh(self) -> Tensor:
        return _ew.Tanh.apply(self)

    def clip(self, min: float | None = None, max: float | None = None) -> Tensor:
        """Clamp to [min, max]; the gradient passes where min <= x <= max (as torch)."""
        if min is None and max is None:
            raise ValueError("clip: at least one of min and max must be given")
        for name, bound in (("min", min), ("max", max)):
            if isinstance(bound, Tensor):
                raise TypeError(f"clip: {name} must be a number or an ndarray, got a Tensor")
        return _ew.Clip.apply(self, lo=min, hi=max)

    clamp = clip

    def astype(self, dtype: Any) -> Tensor:
        """Cast to float32 or float64 (differentiable)."""
        dt = _check_dtype("astype", dtype)
        return self if dt == self.data.dtype else _ew.Cast.apply(self, dtype=dt)

    def matmul(self, other: Any) -> Tensor:
        return self @ other

    # -- reductions (``dim``/``keepdim``, or NumPy's ``axis``/``keepdims``)
    def _reduce_args(self, who: str, dim: Any, keepdim: Any, axis: Any, keepdims: Any) -> tuple:
        dim = _alias(who, "dim", dim, "axis", axis, None)
        keepdim = _alias(who, "keepdim", keepdim, "keepdims", keepdims, False)
        return _dims(who, dim, self.ndim), bool(keepdim)

    def sum(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
            keepdims: bool | None = None) -> Tensor:
        dims, keep = self._reduce_args("sum", dim, keepdim, axis, keepdims)
        return _red.Sum.apply(self, dims=dims, keepdim=keep)

    def mean(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
             keepdims: bool | None = None) -> Tensor:
        dims, keep = self._reduce_args("mean", dim, keepdim, axis, keepdims)
        count = self.size if dims is None else int(np.prod([self.shape[d] for d in dims]))
        return _red.Sum.apply(self, dims=dims, keepdim=keep) / count

    def max(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
            keepdims: bool | None = None) -> Tensor:
        """The largest values (values only, no indices).

        As in torch: with an int ``dim`` the gradient goes to one index per slice (the
        first largest, like ``torch.max(x, dim)``); over all dims or a tuple of dims it
        is shared evenly among ties (like ``torch.max(x)`` and ``torch.amax``).
        """
        dims, keep = self._reduce_args("max", dim, keepdim, axis, keepdims)
        single = isinstance(_alias("max", "dim", dim, "axis", axis, None), int | np.integer)
        return _red.Extremum.apply(self, dims=dims, keepdim=keep, single=single, largest=True)

    def min(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
            keepdims: bool | None = None) -> Tensor:
        """The smallest values (values only); ties as in :meth:`max`."""
        dims, keep = self._reduce_args("min", dim, keepdim, axis, keepdims)
        single = isinstance(_alias("min", "dim", dim, "axis", axis, None), int | np.integer)
        return _red.Extremum.apply(self, dims=dims, keepdim=keep, single=single, largest=False)

    def argmax(self, dim: int | None = None) -> np.ndarray:
        return np.argmax(self.data, axis=dim)

    def argmin(self, dim: int | None = None) -> np.ndarray:
        return np.argmin(self.data, axis=dim)

    # -- shape
    def reshape(self, *shape: Any) -> Tensor:
        shape = _resolve_shape("reshape", shape, self.size)
        return self if shape == self.shape else _sh.Reshape.apply(self, shape=shape)

    view = reshape

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        if self.ndim == 0:
            return self.reshape(1)
        s, e = _dim("flatten", start_dim, self.ndim), _dim("flatten", end_dim, self.ndim)
        if s > e:
            raise ValueError(f"flatten: start_dim={start_dim} comes after end_dim={end_dim}")
        return self.reshape(self.shape[:s] + (-1,) + self.shape[e + 1:])

    def squeeze(self, dim: Any = None) -> Tensor:
        """Drop the given dims (all if None) that have size 1; others stay, as in torch."""
        dims = _dims("squeeze", dim, self.ndim) if dim is not None else range(self.ndim)
        keep = [n for d, n in enumerate(self.shape) if not (d in dims and n == 1)]
        return self.reshape(tuple(keep))

    def unsqueeze(self, dim: int) -> Tensor:
        d = _dim("unsqueeze", dim, self.ndim + 1)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def permute(self, *dims: Any) -> Tensor:
        dims = tuple(_shape_arg(dims))
        perm = tuple(_dim("permute", d, self.ndim) for d in dims)
        if sorted(perm) != list(range(self.ndim)):
            raise ValueError(f"permute: dims={dims} must order all {self.ndim} dims once each")
        return self if perm == tuple(range(self.ndim)) else _sh.Permute.apply(self, perm=perm)

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        perm = list(range(self.ndim))
        a, b = _dim("transpose", dim0, self.ndim), _dim("transpose", dim1, self.ndim)
        perm[a], perm[b] = b, a
        return self.permute(perm)

    @property
    def T(self) -> Tensor:
        return self.permute(tuple(reversed(range(self.ndim))))

    def expand(self, *shape: Any) -> Tensor:
        """Broadcast to ``shape`` (-1 keeps a size), like torch's expand."""
        shape = tuple(_shape_arg(shape))
        lead = len(shape) - self.ndim
        if lead < 0:
            raise ValueError(f"expand: shape={shape} has fewer dims than the tensor {self.shape}")
        shape = tuple(self.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
        try:
            np.broadcast_shapes(self.shape, shape)
        except ValueError:
            raise ValueError(f"expand: cannot broadcast {self.shape} to shape={shape}") from None
        return self if shape == self.shape else _sh.BroadcastTo.apply(self, shape=shape)

    broadcast_to = expand

    def sum_to_size(self, *shape: Any) -> Tensor:
        """Sum over the dims that broadcasting to ``self.shape`` added or stretched.

        The gradient of an input broadcast in a forward op is the sum over every
        position it was copied to: ``grad.sum_to_size(input.shape)``.
        """
        if shape == (self.shape,):
            return self
        shape = tuple(_shape_arg(shape))
        lead = self.ndim - len(shape)
        if lead < 0 or any(n not in (1, m) for n, m in zip(shape, self.shape[lead:])):
            raise ValueError(f"sum_to_size: shape={shape} does not broadcast to {self.shape}")
        stretched = [lead + d for d, n in enumerate(shape) if n == 1 and self.shape[lead + d] != 1]
        return self.sum(dim=tuple(range(lead)) + tuple(stretched)).reshape(shape)


# ----------------------------------------------------------------------------- constructors
def tensor(data: Any, requires_grad: bool = False, dtype: Any = None) -> Tensor:
    """A new leaf Tensor holding a copy of ``data`` (lists and ints become float32)."""
    return Tensor(_float_data("tensor", data, dtype, copy=True), requires_grad)


def from_numpy(array: np.ndarray) -> Tensor:
    """A leaf sharing ``array``'s memory when it is float32/float64 (else a float32 copy)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected an ndarray, got {type(array).__name__}")
    return Tensor(array)


def zeros(*shape: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    dt = np.float32 if dtype is None else _check_dtype("zeros", dtype)
    return Tensor._wrap(np.zeros(_shape_arg(shape), dt)).requires_grad_(requires_grad)


def ones(*shape: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    dt = np.float32 if dtype is None else _check_dtype("ones", dtype)
    return Tensor._wrap(np.ones(_shape_arg(shape), dt)).requires_grad_(requires_grad)


def randn(*shape: Any, rng: Any = None, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples; ``rng`` is a numpy Generator, an int seed or None."""
    dt = np.float32 if dtype is None else _check_dtype("randn", dtype)
    if not (rng is None or isinstance(rng, int | np.random.Generator)):
        raise TypeError(f"randn: rng={rng!r} must be a numpy Generator, an int seed or None")
    data = np.random.default_rng(rng).standard_normal(_shape_arg(shape), dtype=dt)
    return Tensor._wrap(data).requires_grad_(requires_grad)


# ----------------------------------------------------------------------------- joining
def concatenate(tensors: Sequence[Any], dim: int | None = None, *, axis: int | None = None
                ) -> Tensor:
    """Join tensors along an existing dim (differentiable w.r.t. each)."""
    dim = _alias("concatenate", "dim", dim, "axis", axis, 0)
    parts = [_operand(t) for t in tensors]
    if not parts:
        raise ValueError("concatenate: tensors is empty; expected at least one tensor")
    ndims = {np.ndim(p) for p in parts}
    if len(ndims) != 1 or 0 in ndims:
        raise ValueError(f"concatenate: tensors have shapes {[np.shape(p) for p in parts]}; "
                         "expected arrays of the same number (>= 1) of dims")
    (d,) = _dims("concatenate", dim, ndims.pop())
    return _sh.Concatenate.apply(*parts, dim=d)


cat = concatenate


def stack(tensors: Sequence[Any], dim: int | None = None, *, axis: int | None = None) -> Tensor:
    """Join same-shape tensors along a new dim."""
    dim = _alias("stack", "dim", dim, "axis", axis, 0)
    parts = [as_tensor(t) for t in tensors]
    if not parts or len({p.shape for p in parts}) != 1:
        raise ValueError(f"stack: tensors have shapes {[p.shape for p in parts]}; "
                         "expected one or more tensors of the same shape")
    return concatenate([p.unsqueeze(dim) for p in parts], dim)


def where(cond: Any, a: Any, b: Any) -> Tensor:
    """``a`` where ``cond`` is true, else ``b`` (broadcasting; gradients to a and b)."""
    cond = (cond.data if isinstance(cond, Tensor) else cond if _lazy.is_dask_array(cond)
            else np.asarray(cond))
    return _ew.Where.apply(cond.astype(bool, copy=False), _operand(a), _operand(b))


register_tensor_type(Tensor)
