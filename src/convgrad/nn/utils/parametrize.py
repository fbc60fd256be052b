"""Parametrizations (torch's ``torch.nn.utils.parametrize``): a module's parameter or
buffer recomputed by a chain of modules on every access.

``register_parametrization(module, "weight", P())`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (``original0``, ``original1``, ... when
``P.right_inverse`` returns a tuple) and gives the module a generated subclass
``Parametrized<Class>`` whose ``weight`` property returns ``P(original)``, differentiably;
assigning ``module.weight = X`` stores ``P.right_inverse(X)``.  The state-dict keys are
torch's (``parametrizations.weight.original``), so torch's state dicts load.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ...autograd import no_grad
from ...tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module, Parameter

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "type_before_parametrizations"]

_cache_depth = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside this context each parametrized tensor is computed once, at its first access,
    and the result reused until the context exits (as torch's ``parametrize.cached``)."""
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


def _as_tensor(value: Any) -> Any:
    return Tensor._wrap(value) if isinstance(value, np.ndarray) else value


def _describe(module: Module) -> str:
    return type(module).__name__


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor, holding the unparametrized tensor as
    ``original`` (or ``original0``, ``original1``, ... when the first ``right_inverse``
    returns a sequence of tensors)."""

    def __init__(self, modules: Sequence[Module], original: Any, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        is_param = isinstance(original, Parameter)
        new = _as_tensor(original)
        with no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:
                        pass  # (torch: then right_inverse counts as the identity)
        if isinstance(new, Tensor):
            self.is_tensor = True
            self.ntensors = 1
            if not unsafe and new.dtype != _as_tensor(original).dtype:
                raise ValueError(
                    f"register_parametrization: right_inverse returned dtype {new.dtype} for a "
                    f"tensor of dtype {_as_tensor(original).dtype}; it may not change the dtype "
                    "(unless unsafe=True)")
            if is_param:
                original.data = np.array(new.data, copy=True)  # the same Parameter object
                self.register_parameter("original", original)
            else:
                self.register_buffer("original", np.array(new.data, copy=True))
        elif isinstance(new, Sequence) and not isinstance(new, str):
            self.is_tensor = False
            self.ntensors = len(new)
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError(f"register_parametrization: right_inverse returned a "
                                     f"sequence whose element {i} is a {type(t).__name__}; "
                                     "expected Tensors")
                arr = np.array(t.data, copy=True)
                if is_param:
                    self.register_parameter(f"original{i}",
                                            Parameter(arr, requires_grad=original.requires_grad))
                else:
                    self.register_buffer(f"original{i}", arr)
        else:
            raise ValueError("register_parametrization: right_inverse must return a Tensor or a "
                             f"sequence of Tensors, got {type(new).__name__}")

    def _originals(self) -> list[Any]:
        if self.is_tensor:
            return [_as_tensor(self.original)]
        return [_as_tensor(getattr(self, f"original{i}")) for i in range(self.ntensors)]

    def right_inverse(self, value: Any) -> None:
        """Store ``value`` as the parametrized tensor: each parametrization's
        ``right_inverse``, last first, then copied into the originals in place."""
        with no_grad():
            for m in reversed(list(self)):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {_describe(m)} does not implement "
                                       "right_inverse")
                value = m.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"right_inverse must return a Tensor, got "
                                     f"{type(value).__name__}")
                self._store("original", value)
            else:
                if not isinstance(value, Sequence) or len(value) != self.ntensors:
                    raise ValueError(f"right_inverse must return a sequence of {self.ntensors} "
                                     f"Tensors, got {type(value).__name__}")
                for i, t in enumerate(value):
                    self._store(f"original{i}", t)

    def _store(self, name: str, value: Any) -> None:
        old = getattr(self, name)
        old_dtype = old.dtype
        if not isinstance(value, Tensor):
            raise ValueError(f"right_inverse must return Tensors, got {type(value).__name__} "
                             f"for {name!r}")
        if value.dtype != old_dtype:
            raise ValueError(f"right_inverse returned dtype {value.dtype} for {name!r} of "
                             f"dtype {old_dtype}; the dtype may not change")
        arr = np.array(value.data, copy=True)
        if isinstance(old, Parameter):
            old.data = arr
        else:
            self._buffers[name] = arr

    def forward(self) -> Any:
        """The parametrized tensor: the first parametrization applied to the originals,
        each next one to the previous result."""
        mods = list(self)
        x = mods[0](*self._originals())
        for m in mods[1:]:
            x = m(x)
        return x


def _parametrized_property(tensor_name: str) -> property:
    def get(self: Module) -> Any:
        plist = self.parametrizations[tensor_name]
        if _cache_depth:
            key = (id(self), tensor_name)
            if key not in _cache:
                _cache[key] = plist()
            return _cache[key]
        return plist()

    def set_(self: Module, value: Any) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    return property(get, set_)


def _parametrized_setattr(self: Module, name: str, value: Any) -> None:
    if isinstance(getattr(type(self), name, None), property):
        object.__setattr__(self, name, value)  # the property's setter
    else:
        Module.__setattr__(self, name, value)


def _inject_class(module: Module) -> None:
    cls = type(module)

    def forward(self: Module, *args: Any, **kwargs: Any) -> Any:
        # one computation of each parametrized tensor per call, however often the layer
        # reads it (a convolution reads its weight's shape too): what torch's layers,
        # which read it once, compute (this also keeps the pair out of .fusion)
        with cached():
            return cls.forward(self, *args, **kwargs)

    new_cls = type(f"Parametrized{cls.__name__}", (cls,),
                   {"__setattr__": _parametrized_setattr, "_parametrized_base": cls,
                    "__module__": cls.__module__, "forward": forward})
    module.__class__ = new_cls


def _check_unsafe(fn: str, module: Module, tensor_name: str, shape: tuple, dtype: Any
                  ) -> None:
    """The parametrized value keeps the original's shape and dtype (torch's checks)."""
    value = getattr(module, tensor_name)
    if not isinstance(value, Tensor):
        raise ValueError(f"{fn}: a parametrization must return a Tensor, got "
                         f"{type(value).__name__} (unless unsafe=True)")
    if value.dtype != dtype or tuple(value.shape) != shape:
        raise ValueError(
            f"{fn}: the parametrization changes {tensor_name!r} from shape "
            f"{shape} and dtype {dtype} to shape {tuple(value.shape)} "
            f"and dtype {value.dtype}; it may change neither (unless unsafe=True)")


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` be ``parametrization(original)``, recomputed on each
    access; a second call on the same name appends to the chain (without calling the new
    ``right_inverse``).  ``unsafe=True`` skips the shape and dtype checks.  Returns
    ``module``."""
    fn = "register_parametrization"
    if not isinstance(module, Module):
        raise TypeError(f"{fn}: module must be a Module, got {type(module).__name__}")
    if not isinstance(parametrization, Module):
        raise TypeError(f"{fn}: parametrization must be a Module, got "
                        f"{type(parametrization).__name__}")
    if not isinstance(tensor_name, str):
        raise TypeError(f"{fn}: tensor_name must be a str, got {type(tensor_name).__name__}")
    if not isinstance(unsafe, bool):
        raise TypeError(f"{fn}: unsafe={unsafe!r} must be a bool")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        before = getattr(module, tensor_name)
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        if not unsafe:
            try:
                _check_unsafe(fn, module, tensor_name, tuple(before.shape), before.dtype)
            except Exception:
                plist.pop()
                raise
        return module
    params, buffers = module._parameters, module._buffers
    if params.get(tensor_name) is not None:
        original = params[tensor_name]
    elif buffers.get(tensor_name) is not None:
        original = buffers[tensor_name]
    else:
        raise ValueError(f"{fn}: module {_describe(module)} has no parameter, buffer or "
                         f"parametrized element named {tensor_name!r}")
    shape, dtype = tuple(original.shape), _as_tensor(original).dtype
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        module.parametrizations = ModuleDict()
        _inject_class(module)
    module.parametrizations[tensor_name] = plist
    setattr(type(module), tensor_name, _parametrized_property(tensor_name))
    if not unsafe:
        try:
            _check_unsafe(fn, module, tensor_name, shape, dtype)
        except Exception:
            remove_parametrizations(module, tensor_name, leave_parametrized=False)
            raise
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization on ``tensor_name`` (on anything, when
    ``tensor_name`` is None)."""
    plists = module._modules.get("parametrizations") if isinstance(module, Module) else None
    if not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo :func:`register_parametrization` on ``tensor_name``: the tensor becomes its
    current parametrized value (``leave_parametrized=True``, the default; the same
    Parameter object when there is one original) or the original again.  Returns
    ``module``; once nothing is parametrized the module gets its class back."""
    fn = "remove_parametrizations"
    if not isinstance(leave_parametrized, bool):
        raise TypeError(f"{fn}: leave_parametrized={leave_parametrized!r} must be a bool")
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"{fn}: module {_describe(module)} has no parametrization on "
                         f"{tensor_name!r}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist._parameters.get("original")
        if original is None:
            original = plist._buffers["original"]
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            if value.dtype != _as_tensor(original).dtype:
                raise ValueError(f"{fn}: the parametrized {tensor_name!r} has dtype "
                                 f"{value.dtype}, the original {_as_tensor(original).dtype}; "
                                 "cannot leave it parametrized")
            if isinstance(original, Parameter):
                original.data = np.array(value.data, copy=True)
            else:
                original = np.array(value.data, copy=True)
    else:
        if not leave_parametrized:
            raise ValueError(f"{fn}: cannot leave {tensor_name!r} unparametrized "
                             "(leave_parametrized=False): it is parametrized in terms of a "
                             "sequence of tensors")
        with no_grad():
            value = getattr(module, tensor_name)
        first = plist._parameters.get("original0")
        if first is not None:
            original = Parameter(np.array(value.data, copy=True),
                                 requires_grad=first.requires_grad)
        else:
            original = np.array(value.data, copy=True)
    del module.parametrizations[tensor_name]
    delattr(type(module), tensor_name)
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        del module.parametrizations
        module.__class__ = type(module)._parametrized_base
    return module


def type_before_parametrizations(module: Module) -> type:
    """``module``'s class as it was before any parametrization was registered."""
    if is_parametrized(module):
        return type(module)._parametrized_base
    return type(module)
