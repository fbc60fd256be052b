"""``Tensor``: an ndarray that records the operations applied to it.

float32 and float64 tensors are differentiable; int32, int64 and bool tensors (indices,
masks, labels) are not.  Operators and methods only normalise their arguments and call one
``Function`` from ``elementwise``, ``reduce`` or ``shape``; the gradient rules live there.
Between dtype kinds, binary operations promote as torch does (bool < integer < float: an
integer tensor times a float tensor has the float tensor's dtype, times a Python float
is float32); within a kind, as NumPy does (float32 with float64 gives float64).
In-place operations live in ``inplace``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .. import autograd as _autograd
from .. import devices as _device
from .. import random as _random
from ..autograd import deferred as _deferred
from ..autograd import register_tensor_type
from ..default_dtype import get_default_dtype
from . import elementwise as _ew
from . import gather as _ga
from . import hooks as _hooks
from . import inplace as _inplace
from . import lazy as _lazy
from . import memory_format as _mf
from . import printing as _printing
from . import reduce as _red
from . import return_types as _rt
from . import shape as _sh
from . import shared_memory as _shm
from . import version as _versions
from .args import DTYPES as _DTYPES
from .args import FLOATS as _FLOATS
from .args import alias as _alias
from .args import check_dtype as _check_dtype
from .args import dim as _dim
from .args import dims as _dims
from .args import shape_arg as _shape_arg
from .args import tensor_dtype as _tensor_dtype
from .indexing import IndexingMixin
from .inplace import InPlaceMixin
from .math_methods import MathMethodsMixin
from .operands import SCALARS as _SCALARS
from .operands import no_bool as _no_bool
from .operands import operand as _operand
from .operands import pair as _pair
from .operands import promote as _promote
from .operands import where
from .order_stats import OrderStatsMixin
from .product_methods import ProductMethodsMixin
from .provided_methods import ProvidedMethodsMixin
from .sampling import SamplingMethodsMixin
from .script_methods import ScriptMethodsMixin
from .shape_methods import ShapeMethodsMixin
from .special_methods import SpecialMethodsMixin
from .statistics import StatisticsMixin
from .torch_methods import TorchMethodsMixin

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

NOT_FLOAT_MESSAGE = "only Tensors of floating point dtype can require gradients"


# ----------------------------------------------------------------------------- coercion
def _array_data(fn: str, data: Any, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """data as a Tensor's ndarray: ``dtype`` if given; else a Tensor's or a float32/float64
    array's own dtype; else (lists, numbers, integer and bool arrays) the default float
    dtype (:func:`convgrad.get_default_dtype`)."""
    own = None
    if isinstance(data, Tensor):
        data, own = data.data, data.data.dtype
    elif is_torch_tensor(data):
        data = torch_array(fn, data)
        own = data.dtype if data.dtype in _DTYPES else None
    if _lazy.is_dask_array(data):  # stays lazy (np.asarray would compute it); immutable
        if data.dtype.kind not in "biuf":
            raise TypeError(f"{fn}: data of dtype {data.dtype} is not supported; "
                            "expected real numbers (bool, int or float)")
        dt = (_tensor_dtype(fn, dtype) if dtype is not None else own if own is not None
              else data.dtype if data.dtype in _FLOATS else get_default_dtype())
        return data if data.dtype == dt else data.astype(dt)
    try:
        arr = np.asarray(data)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{fn}: cannot make an array of data={data!r}: {e}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{fn}: data of dtype {arr.dtype} is not supported; "
                        "expected real numbers (bool, int or float)")
    if dtype is not None:
        dt = _tensor_dtype(fn, dtype)
    elif own is not None:
        dt = own
    elif isinstance(data, np.ndarray | np.generic) and arr.dtype in _FLOATS:
        dt = arr.dtype
    else:
        dt = get_default_dtype()
    return np.array(arr, dtype=dt, copy=copy)


def is_torch_tensor(x: Any) -> bool:
    """Whether ``x`` is a ``torch.Tensor`` (without importing torch)."""
    return any(c.__module__ == "torch" and c.__name__ == "Tensor" for c in type(x).__mro__)


def torch_array(fn: str, t: Any) -> np.ndarray:
    """A copy of a ``torch.Tensor``'s values (detached; on the CPU) as an ndarray."""
    if str(t.device) != "cpu":
        raise ValueError(f"{fn}: the torch.Tensor is on device {t.device}; convgrad runs on "
                         "the CPU only (move it with .cpu() first)")
    return np.array(t.detach().resolve_conj().resolve_neg().numpy(), copy=True)


def _result(value: Any) -> Any:
    """An operation's value as an array (NumPy returns scalars for 0-d results); dask
    arrays as they are (np.asarray would compute them)."""
    return value if _lazy.is_dask_array(value) else np.asarray(value)


_FAST = frozenset(_SCALARS)  # + Tensor, added below: operands that need no conversion


def as_tensor(x: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A Tensor as it is (cast to ``dtype`` if given); anything else (ndarray, list, number,
    torch.Tensor) as a constant Tensor, sharing an ndarray's memory when it can."""
    _device.check_device("as_tensor", device)
    if isinstance(x, Tensor):
        return x if dtype is None else x.to(dtype)
    return Tensor(x, dtype=dtype)


def _resolve_shape(fn: str, shape: tuple, size: int) -> tuple[int, ...]:
    shape = tuple(int(s) for s in _shape_arg(shape))
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        raise ValueError(f"{fn}: shape={shape} may hold one -1 and otherwise sizes >= 0")
    known = int(np.prod([s for s in shape if s != -1]))
    if -1 in shape:
        if known == 0 or size % known:
            raise ValueError(f"{fn}: cannot infer the -1 in shape={shape} for {size} elements")
        shape = tuple(size // known if s == -1 else s for s in shape)
    elif known != size:
        raise ValueError(f"{fn}: shape={shape} holds {known} elements, the tensor has {size}")
    return shape


def _index(index: Any) -> tuple:
    """A NumPy index tuple; Tensors become int arrays, boolean masks their nonzero() arrays."""
    out: list = []
    for i in index if isinstance(index, tuple) else (index,):
        if isinstance(i, Tensor):
            i = i.data
            if i.dtype.kind == "f":
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
def _is_size(v: Any) -> bool:
    """An int (not a bool) of Python or NumPy: one of torch's ``Tensor(*sizes)``."""
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


class Tensor(InPlaceMixin, TorchMethodsMixin, MathMethodsMixin, ScriptMethodsMixin,
             OrderStatsMixin, StatisticsMixin, IndexingMixin, SpecialMethodsMixin,
             ShapeMethodsMixin, ProductMethodsMixin, SamplingMethodsMixin,
             ProvidedMethodsMixin):
    """An n-dimensional array with reverse-mode autodiff (float32 and float64 tensors).

    ``data`` is the ndarray, ``grad`` the accumulated gradient (a Tensor) of a leaf,
    ``grad_fn`` the graph node that produced it (None for leaves).
    """

    __slots__ = ("data", "_grad", "_pending", "grad_fn", "_requires_grad", "_hooks",
                 "__weakref__")
    __array_ufunc__ = None  # `ndarray (op) Tensor` defers to the Tensor's reflected operator
    __hash__ = object.__hash__  # tensors are dict keys; == is elementwise

    def __init__(self, data: Any = None, *sizes: Any, requires_grad: bool = False,
                 dtype: Any = None) -> None:
        if data is None or _is_size(data) and all(_is_size(s) for s in sizes):
            # torch's size form: Tensor() is empty, Tensor(2, 3) a (2, 3) Tensor (zeros:
            # torch leaves its memory uninitialised)
            shape = (0,) if data is None else (int(data), *(int(s) for s in sizes))
            if any(n < 0 for n in shape):
                raise ValueError(f"Tensor: sizes {shape} must be >= 0")
            dt = get_default_dtype() if dtype is None else _check_dtype("Tensor", dtype)
            data = np.zeros(shape, dt)
        elif sizes:
            raise TypeError(f"Tensor: data={data!r} with more positional arguments "
                            f"{sizes!r}: expected data, or sizes (ints) only; pass "
                            "requires_grad and dtype by keyword")
        self.data = _array_data("Tensor", data, dtype)
        self._grad: Tensor | None = None
        self.grad_fn = None
        self._requires_grad = False
        if requires_grad:
            self.requires_grad = True

    @staticmethod
    def _wrap(data: np.ndarray, grad_fn: Any = None) -> Tensor:
        """Fast constructor for a float ndarray (no checks): an op output or a constant."""
        t = object.__new__(Tensor)
        t.data, t._grad, t.grad_fn, t._requires_grad = data, None, grad_fn, grad_fn is not None
        return t

    # -- the gradient
    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient of a leaf (a Tensor) or None.  A gradient a rule left
        pending (a convolution's weight gradient, see :mod:`convgrad.autograd.deferred`)
        is computed here, when first read."""
        pend = getattr(self, "_pending", None)
        if pend is not None and pend.parts:
            _deferred.settle(self)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        self._grad = value
        if getattr(self, "_pending", None) is not None:
            _deferred.drop(self)  # a pending gradient is replaced uncomputed (zero_grad)

    def __reduce_ex__(self, protocol: Any) -> Any:
        # a copy or pickle carries the gradient computed, not the rule that computes it
        pend = getattr(self, "_pending", None)
        if pend is not None and pend.parts:
            _deferred.settle(self)
        return super().__reduce_ex__(protocol)

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
        if flag and self.data.dtype.kind != "f":
            raise RuntimeError(NOT_FLOAT_MESSAGE)
        self._requires_grad = bool(flag)
        if flag:
            _versions.own_leaf(self)

    def register_hook(self, hook: Any) -> Any:
        """Call ``hook(grad)`` with this tensor's gradient during backward; a non-None
        result replaces the gradient.  Returns a handle whose ``remove()`` drops it."""
        if not callable(hook):
            raise TypeError(f"register_hook: hook={hook!r} must be callable")
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if self.grad_fn is None:
            if getattr(self, "_hooks", None) is None:
                self._hooks = {}
            hooks = self._hooks
        else:
            hooks = self.grad_fn.__dict__.setdefault("tensor_hooks", {})
        return _hooks.RemovableHandle(hooks, hook)

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` (accumulated, as a leaf's)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on a tensor that has requires_grad=False")
        if self.grad_fn is None or self.retains_grad:
            return
        self._hooks = _hooks.RETAINS  # (a non-leaf's own hooks live on its node)
        self.register_hook(_hooks.Retainer(self))

    @property
    def retains_grad(self) -> bool:
        return self.grad_fn is not None and getattr(self, "_hooks", None) is _hooks.RETAINS

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

    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        """The shape, or the length of dim ``dim`` (as torch; ``numel()`` counts elements)."""
        if dim is None:
            return self.data.shape
        return self.data.shape[_dim("size", dim, self.data.ndim)]

    def numel(self) -> int:
        """The number of elements."""
        return self.data.size

    def dim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def _version(self) -> int:
        """How many times this tensor's memory was modified in place (shared with views)."""
        return _versions.version(self.data)

    def _eager(self, fn: str) -> np.ndarray:
        """``data``, or a TypeError for dask data (which only ``cg.compute`` evaluates)."""
        if type(self.data) is not np.ndarray and _lazy.is_dask_array(self.data):
            raise _lazy.eager_error(fn, self.data)
        return self.data

    def numpy(self) -> np.ndarray:
        return self._eager("numpy")

    def item(self) -> Any:
        """The one element as a Python number (float, int or bool)."""
        if self.data.size != 1:
            raise ValueError(f"item: the tensor has {self.data.size} elements, expected 1")
        return self._eager("item").item()

    def tolist(self) -> Any:
        return self._eager("tolist").tolist()

    def detach(self) -> Tensor:
        """The same data (memory shared, so its version counter too), outside the graph."""
        return Tensor._wrap(self.data)

    def clone(self) -> Tensor:
        """A copy with its own memory; differentiable (the gradient passes unchanged)."""
        return _ew.Clone.apply(self)

    def is_contiguous(self, memory_format: Any = _mf.contiguous_format) -> bool:
        """Whether the memory is dense in ``memory_format`` (torch's rule: the strides of
        size-1 dims do not matter; a channels-last format on another rank: False)."""
        return _mf.is_in_format(self.data, _mf.check_format("is_contiguous", memory_format))

    def contiguous(self, memory_format: Any = _mf.contiguous_format) -> Tensor:
        """Self when dense in ``memory_format`` already, else a differentiable copy laid
        out so (``channels_last``: a 4-d tensor stored as (N, H, W, C);
        ``channels_last_3d``: 5-d, (N, D, H, W, C)).  The values are unchanged."""
        fmt = _mf.check_format("contiguous", memory_format)
        if fmt is _mf.preserve_format:
            if self.data.flags.c_contiguous:
                return self
            raise RuntimeError("preserve memory format is unsupported by the contiguous "
                               "operator")
        return self._in_format(fmt)

    def _in_format(self, fmt: Any) -> Tensor:
        _mf.check_rank(fmt, self.data.ndim)
        if fmt is _mf.preserve_format or _mf.is_in_format(self.data, fmt):
            return self
        return _mf.ToMemoryFormat.apply(self, channels_last=fmt is not _mf.contiguous_format)

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

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        """The DLPack capsule of ``data`` (``torch.from_dlpack(t)`` shares the memory)."""
        return self._eager("__dlpack__").__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple:
        return self._eager("__dlpack_device__").__dlpack_device__()

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return len(self.data)

    def __iter__(self) -> Iterator[Tensor]:
        return (self[i] for i in range(len(self)))

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise ValueError(f"bool: the truth value of a tensor with {self.data.size} elements "
                             "is ambiguous; use .any() or .all()")
        return bool(self._eager("bool").item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        """As torch: only one-element integer (or bool) tensors are indices."""
        if self.data.dtype.kind not in "biu" or self.data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            f"index, got dtype {self.data.dtype} with {self.data.size} elements")
        return int(self._eager("int").item())

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its number (as torch); a one-element tensor too, given a
        format spec (``f"{loss:.4f}"``); anything else with an empty spec as ``str``."""
        if self.data.ndim == 0 or (spec and self.data.size == 1):
            return format(self._eager("format").item(), spec)
        if spec:
            raise TypeError(f"format: spec {spec!r} needs a one-element tensor, got shape "
                            f"{self.data.shape}")
        return str(self)

    def __repr__(self) -> str:
        parts = [repr(self.data) if _lazy.is_dask_array(self.data)  # (without computing)
                 else _printing.format_array(self.data)]
        if self.data.dtype in (np.float64, np.int32):
            parts.append(f"dtype={self.data.dtype}")
        if self.grad_fn is not None:
            parts.append(f"grad_fn={self.grad_fn!r}")
        elif self._requires_grad:
            parts.append("requires_grad=True")
        return f"tensor({', '.join(parts)})"

    # -- arithmetic (NumPy broadcasting; Python scalars keep the tensor's dtype)
    def __add__(self, other: Any) -> Tensor:
        if type(other) in _FAST and self.data.dtype.kind == "f" and (
                type(other) is not Tensor or other.data.dtype.kind == "f"):
            return _ew.Add.apply(self, other)
        return _ew.Add.apply(*_pair(self, other))

    def __radd__(self, other: Any) -> Tensor:
        a, b = _pair(self, other)
        return _ew.Add.apply(b, a)

    def __sub__(self, other: Any) -> Tensor:
        if type(other) in _FAST and self.data.dtype.kind == "f" and type(other) is not bool and (
                type(other) is not Tensor or other.data.dtype.kind == "f"):
            return _ew.Sub.apply(self, other)
        _no_bool("subtract", self, other)
        return _ew.Sub.apply(*_pair(self, other))

    def __rsub__(self, other: Any) -> Tensor:
        _no_bool("subtract", self, other)
        a, b = _pair(self, other)
        return _ew.Sub.apply(b, a)

    def __mul__(self, other: Any) -> Tensor:
        if type(other) in _FAST and self.data.dtype.kind == "f" and (
                type(other) is not Tensor or other.data.dtype.kind == "f"):
            return _ew.Mul.apply(self, other)
        return _ew.Mul.apply(*_pair(self, other))

    def __rmul__(self, other: Any) -> Tensor:
        a, b = _pair(self, other)
        return _ew.Mul.apply(b, a)

    def __truediv__(self, other: Any) -> Tensor:
        if type(other) in _FAST and self.data.dtype.kind == "f" and (
                type(other) is not Tensor or other.data.dtype.kind == "f"):
            return _ew.Div.apply(self, other)
        return _ew.Div.apply(*_pair(self, other, True))

    def __rtruediv__(self, other: Any) -> Tensor:
        a, b = _pair(self, other, True)
        return _ew.Div.apply(b, a)

    def __pow__(self, other: Any) -> Tensor:
        _no_bool("pow", self, other, both=True)
        return _ew.Pow.apply(*_pair(self, other))

    def __rpow__(self, other: Any) -> Tensor:
        _no_bool("pow", self, other, both=True)
        a, b = _pair(self, other)
        return _ew.Pow.apply(b, a)

    def __matmul__(self, other: Any) -> Tensor:
        return _sh.MatMul.apply(*_pair(self, other))

    def __rmatmul__(self, other: Any) -> Tensor:
        a, b = _pair(self, other)
        return _sh.MatMul.apply(b, a)

    def __neg__(self) -> Tensor:
        return _ew.Neg.apply(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return _ew.Abs.apply(self)

    # -- comparisons and logic: bool (or integer) Tensors, not differentiable
    def _compare(self, other: Any, op: Any) -> Any:
        if isinstance(other, Tensor):
            return Tensor._wrap(_result(op(self.data, other.data)))
        if isinstance(other, int | float | np.ndarray | np.generic | list | tuple):
            return Tensor._wrap(_result(op(self.data, other)))
        return NotImplemented

    def _logic(self, other: Any, op: Any) -> Any:
        if self.data.dtype.kind not in "biu":
            raise TypeError(f"{op.__name__}: needs bool or integer tensors, got {self.dtype}")
        other = other.data if isinstance(other, Tensor) else other
        if not isinstance(other, bool | int | np.ndarray | np.generic):
            return NotImplemented
        return Tensor._wrap(_result(op(self.data, other)))

    def __and__(self, other: Any) -> Any:
        return self._logic(other, np.bitwise_and)

    __rand__ = __and__

    def __or__(self, other: Any) -> Any:
        return self._logic(other, np.bitwise_or)

    __ror__ = __or__

    def __xor__(self, other: Any) -> Any:
        return self._logic(other, np.bitwise_xor)

    __rxor__ = __xor__

    def __invert__(self) -> Tensor:
        if self.data.dtype.kind not in "biu":
            raise TypeError(f"invert: needs a bool or integer tensor, got {self.dtype}")
        return Tensor._wrap(np.invert(self.data))

    def logical_not(self) -> Tensor:
        return Tensor._wrap(np.logical_not(self.data))

    def any(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
            keepdims: bool | None = None) -> Tensor:
        """Whether any element (along ``dim``) is nonzero: a bool Tensor."""
        dims, keep = self._reduce_args("any", dim, keepdim, axis, keepdims)
        return Tensor._wrap(_result(np.any(self.data, axis=dims, keepdims=keep)))

    def all(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
            keepdims: bool | None = None) -> Tensor:
        """Whether every element (along ``dim``) is nonzero: a bool Tensor."""
        dims, keep = self._reduce_args("all", dim, keepdim, axis, keepdims)
        return Tensor._wrap(_result(np.all(self.data, axis=dims, keepdims=keep)))

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

    def __setitem__(self, index: Any, value: Any) -> None:
        """``t[index] = value`` in place (recorded like the other in-place operations)."""
        _inplace.setitem(self, _index(index), value)

    # -- elementwise functions
    def exp(self) -> Tensor:
        return _ew.Exp.apply(self._floating())

    def log(self) -> Tensor:
        return _ew.Log.apply(self._floating())

    def sqrt(self) -> Tensor:
        return _ew.Sqrt.apply(self._floating())

    def abs(self) -> Tensor:
        return _ew.Abs.apply(self)

    def pow(self, exponent: Any) -> Tensor:
        return self ** exponent

    def _floating(self) -> Tensor:
        """Self, or a copy in the default float dtype of an integer or bool tensor (for exp,
        log, ...), as torch."""
        return (self if self.data.dtype.kind == "f"
                else Tensor._wrap(self.data.astype(get_default_dtype())))

    def relu(self) -> Tensor:
        return _ew.ReLU.apply(self)

    def sigmoid(self) -> Tensor:
        return _ew.Sigmoid.apply(self._floating())

    def tanh(self) -> Tensor:
        return _ew.Tanh.apply(self._floating())

    def clip(self, min: float | None = None, max: float | None = None) -> Tensor:
        """Clamp to [min, max]; the gradient passes where min <= x <= max (as torch)."""
        if min is None and max is None:
            raise ValueError("clip: at least one of min and max must be given")
        for name, bound in (("min", min), ("max", max)):
            if isinstance(bound, Tensor):
                raise TypeError(f"clip: {name} must be a number or an ndarray, got a Tensor")
        return _ew.Clip.apply(self, lo=min, hi=max)

    clamp = clip

    # -- dtype and device conversions
    def to(self, *args: Any, dtype: Any = None, device: Any = None, copy: bool = False,
           non_blocking: bool = False, memory_format: Any = _mf.preserve_format) -> Tensor:
        """This tensor in ``dtype`` and ``memory_format`` (self when nothing changes, unless
        ``copy``); see :meth:`_to_dtype` and :meth:`contiguous`."""
        fmt = _mf.check_format("to", memory_format)
        out = self._to_dtype(*args, dtype=dtype, device=device, copy=copy,
                             non_blocking=non_blocking)
        return out._in_format(fmt)

    def _to_dtype(self, *args: Any, dtype: Any = None, device: Any = None, copy: bool = False,
                  non_blocking: bool = False) -> Tensor:
        """This tensor in ``dtype`` (self when it has it already, unless ``copy``).

        As torch: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)`` (its
        dtype).  The device must be the CPU (``"cpu"`` changes nothing; any other is a
        ValueError).  Casts between float32 and float64 are differentiable; casts to
        integer or bool types are not (the result requires no grad, as in torch).
        """
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.data.dtype if dtype is None else dtype
            elif _device.is_device(a):
                device = a
            elif isinstance(a, bool):  # torch's positional non_blocking: nothing to do
                continue
            elif a is not None:
                dtype = a
        _device.check_device("to", device)
        if dtype is None:
            return self.clone() if copy else self
        dt = _tensor_dtype("to", dtype)
        if dt == self.data.dtype:
            return self.clone() if copy else self
        if dt.kind == "f" and self.data.dtype.kind == "f":
            return _ew.Cast.apply(self, dtype=dt)
        return Tensor._wrap(self.data.astype(dt))

    def type(self, dtype: Any = None) -> Any:
        """The dtype's name without ``dtype``; else ``to(dtype)``."""
        return f"convgrad.{self.data.dtype}" if dtype is None else self.to(dtype)

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.data.dtype)

    @property
    def device(self) -> _device.device:
        """Always the CPU."""
        return _device.CPU

    @property
    def is_cuda(self) -> bool:
        return False

    # torch's other accelerator flags, read by scripts choosing a path (DCGAN's example)
    is_xpu = is_mps = is_meta = is_cuda

    @property
    def is_cpu(self) -> bool:
        return True

    def cpu(self) -> Tensor:
        """Self: convgrad tensors live on the CPU."""
        return self

    def share_memory_(self) -> Tensor:
        """Move the values into shared memory (:mod:`.shared_memory`): a process this
        Tensor is sent to through ``multiprocessing`` updates the same values.  Self."""
        self.data = _shm.share(self.data)
        return self

    def is_shared(self) -> bool:
        """Whether the values are in shared memory (:meth:`share_memory_`)."""
        return _shm.path_of(self.data) is not None

    def cuda(self, device: Any = None, non_blocking: bool = False) -> Tensor:
        """Always a ValueError: convgrad runs on the CPU only."""
        _device.check_device("cuda", "cuda" if device is None else f"cuda:{device}"
                             if isinstance(device, int) else device)
        return self

    astype = to

    def double(self) -> Tensor:
        return self.to(np.float64)

    def long(self) -> Tensor:
        return self.to(np.int64)

    def matmul(self, other: Any) -> Tensor:
        return self @ other

    # -- reductions (``dim``/``keepdim``, or NumPy's ``axis``/``keepdims``)
    def _reduce_args(self, fn: str, dim: Any, keepdim: Any, axis: Any, keepdims: Any) -> tuple:
        dim = _alias(fn, "dim", dim, "axis", axis, None)
        keepdim = _alias(fn, "keepdim", keepdim, "keepdims", keepdims, False)
        return _dims(fn, dim, self.ndim), bool(keepdim)

    def sum(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
            keepdims: bool | None = None) -> Tensor:
        dims, keep = self._reduce_args("sum", dim, keepdim, axis, keepdims)
        return _red.Sum.apply(self, dims=dims, keepdim=keep)

    def mean(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
             keepdims: bool | None = None) -> Tensor:
        if self.data.dtype.kind != "f":
            raise TypeError(f"mean: the tensor has dtype {self.data.dtype}; expected a floating "
                            "point dtype (as torch; convert with .float() first)")
        dims, keep = self._reduce_args("mean", dim, keepdim, axis, keepdims)
        count = self.numel() if dims is None else int(np.prod([self.shape[d] for d in dims]))
        return _red.Sum.apply(self, dims=dims, keepdim=keep) / count

    def max(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
            keepdims: bool | None = None) -> Any:
        """The largest value, or along an int ``dim`` the named tuple ``(values, indices)``.

        As in torch: with an int ``dim`` the gradient goes to the returned index of each
        slice (the first largest); over all dims (``max()``, a Tensor) or a tuple of dims
        (like ``torch.amax``) it is shared evenly among ties.
        """
        return self._extremum("max", dim, keepdim, axis, keepdims, largest=True)

    def min(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
            keepdims: bool | None = None) -> Any:
        """The smallest value, or along an int ``dim`` ``(values, indices)``; see :meth:`max`."""
        return self._extremum("min", dim, keepdim, axis, keepdims, largest=False)

    def _extremum(self, fn: str, dim: Any, keepdim: Any, axis: Any, keepdims: Any,
                  largest: bool) -> Any:
        dims, keep = self._reduce_args(fn, dim, keepdim, axis, keepdims)
        if not isinstance(_alias(fn, "dim", dim, "axis", axis, None), int | np.integer):
            return _red.Extremum.apply(self, dims=dims, keepdim=keep, largest=largest)
        (d,) = dims
        index = (np.argmax if largest else np.argmin)(self.data, axis=d, keepdims=True)
        values = _ga.Gather.apply(self, index=index, dim=d)
        if not keep:
            values, index = values.squeeze(d), index.squeeze(d)
        return (_rt.max if largest else _rt.min)(values, Tensor._wrap(index.astype(np.int64)))

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the first largest element (of the flattened tensor when ``dim`` is
        None), as an int64 Tensor."""
        return self._arg("argmax", np.argmax, dim, keepdim)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the first smallest element, as an int64 Tensor; see :meth:`argmax`."""
        return self._arg("argmin", np.argmin, dim, keepdim)

    def _arg(self, fn: str, op: Any, dim: Any, keepdim: bool) -> Tensor:
        axis = None if dim is None else _dim(fn, dim, max(self.data.ndim, 1))
        data = self.data if self.data.ndim else self.data.reshape(1)
        if data.size == 0 if axis is None else data.shape[axis] == 0:
            raise ValueError(f"{fn}: cannot reduce an empty dim of a tensor of shape "
                             f"{self.data.shape}")
        out = op(data, axis=axis, keepdims=bool(keepdim))
        return Tensor._wrap(np.asarray(out, dtype=np.int64).reshape(
            np.shape(out) if self.data.ndim else ()))

    # -- shape
    def reshape(self, *shape: Any) -> Tensor:
        shape = _resolve_shape("reshape", shape, self.data.size)
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

    def t(self) -> Tensor:
        """The transpose of a matrix; a 0-d or 1-d tensor as it is (torch's ``t``)."""
        if self.ndim > 2:
            raise ValueError(f"t: the tensor has {self.ndim} dims {self.shape}; expected at "
                             "most 2 (use transpose(dim0, dim1) or permute)")
        return self.transpose(0, 1) if self.ndim == 2 else self

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

    # (last in the class: these names shadow the builtins in the class body)
    def float(self) -> Tensor:
        return self.to(np.float32)

    def int(self) -> Tensor:
        return self.to(np.int32)

    def bool(self) -> Tensor:
        return self.to(np.bool_)


# ----------------------------------------------------------------------------- constructors
def tensor(data: Any, requires_grad: bool = False, dtype: Any = None, device: Any = None
           ) -> Tensor:
    """A new leaf Tensor holding a copy of ``data`` (a torch.Tensor is copied detached).

    Lists, numbers and integer or bool arrays become the default float dtype (float32
    unless ``set_default_dtype``) unless ``dtype`` says
    otherwise (int64, int32, bool); float32/float64 arrays keep their dtype.
    """
    _device.check_device("tensor", device)
    arr = _array_data("tensor", data, dtype, copy=True)
    return Tensor(arr, requires_grad=requires_grad, dtype=arr.dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A leaf sharing ``array``'s memory when it is float32/float64 (else a float32 copy)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected an ndarray, got {type(array).__name__}")
    return Tensor(array)


def zeros(*shape: Any, size: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    _device.check_device("zeros", device)
    dt = get_default_dtype() if dtype is None else _tensor_dtype("zeros", dtype)
    data = np.zeros(_shape_arg(shape, size, "zeros"), dt)
    return Tensor._wrap(data).requires_grad_(requires_grad)


def ones(*shape: Any, size: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    _device.check_device("ones", device)
    dt = get_default_dtype() if dtype is None else _tensor_dtype("ones", dtype)
    data = np.ones(_shape_arg(shape, size, "ones"), dt)
    return Tensor._wrap(data).requires_grad_(requires_grad)


def randn(*shape: Any, size: Any = None, rng: Any = None, dtype: Any = None,
          device: Any = None, requires_grad: bool = False, generator: Any = None) -> Tensor:
    """Standard normal samples from ``generator`` (or its alias ``rng``: a numpy Generator
    or an int seed); with neither, from the library-wide generator that
    ``cg.manual_seed`` seeds."""
    _device.check_device("randn", device)
    dt = get_default_dtype() if dtype is None else _check_dtype("randn", dtype)
    gen = _random.generator(generator if rng is None else rng, "randn")
    data = gen.standard_normal(_shape_arg(shape, size, "randn"), dtype=dt)
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
    if len({p.dtype.kind for p in parts}) > 1:
        parts = _promote(parts)
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


_FAST = _FAST | {Tensor}
register_tensor_type(Tensor)
