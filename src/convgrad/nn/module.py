"""``Parameter``, ``Module`` (the container of parameters, buffers and sub-modules) and
``Sequential``.

Assigning a :class:`Parameter` or a :class:`Module` to an attribute registers it, in
assignment order, as in PyTorch; ``register_buffer`` registers an ndarray of untrained
state.  ``named_parameters``, ``named_buffers`` and ``state_dict`` walk the registrations
depth first, so keys read ``"0.weight"``, ``"encoder.1.bias"``, ``"bn.running_mean"``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from .. import devices as _device
from ..autograd.deferred import has_grad
from ..default_dtype import get_default_dtype
from ..tensor import Tensor
from ..tensor import shared_memory as _shm
from ..tensor.args import check_dtype
from ..tensor.hooks import RemovableHandle
from . import fusion as _fusion
from . import hooks as _hooks
from . import state as _state
from .buffer import Buffer
from .state import IncompatibleKeys

__all__ = ["IncompatibleKeys", "Module", "Parameter", "Sequential"]


class Parameter(Tensor):
    """A leaf Tensor that a :class:`Module` registers as one of its parameters.

    ``Parameter(data)`` shares ``data``'s memory when it is a float32/float64 ndarray
    (like ``torch.nn.Parameter``); it requires grad unless ``requires_grad=False``.
    """

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = np.empty(0, get_default_dtype())
        super().__init__(data.data if isinstance(data, Tensor) else data,
                         requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    return lines[0] if len(lines) == 1 else "\n".join(
        [lines[0]] + [" " * spaces + line for line in lines[1:]])


class Module:
    """Base class of every layer and model: override ``forward``, call the instance.

    A module owns three registries, each in assignment order: parameters
    (:class:`Parameter`, trained), buffers (ndarrays of state that is not trained, such
    as running statistics; persistent ones are saved in ``state_dict``) and child
    modules.  Registered entries read back as attributes.
    """

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        if d.get("_forward_pre_hooks") or d.get("_forward_hooks") or d.get("_backward_hooks"):
            return _hooks.call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # -- hooks (torch's signatures; each returns a handle with ``remove()``)
    def _hook(self, registry: str, hook: Any, fn: str) -> RemovableHandle:
        if not callable(hook):
            raise TypeError(f"{fn}: hook={hook!r} must be callable")
        if registry not in self.__dict__:
            object.__setattr__(self, registry, OrderedDict())
        return RemovableHandle(self.__dict__[registry], hook)

    def register_forward_pre_hook(self, hook: Any) -> RemovableHandle:
        """``hook(module, args)`` before ``forward``; a non-None result replaces args."""
        return self._hook("_forward_pre_hooks", hook, "register_forward_pre_hook")

    def register_forward_hook(self, hook: Any) -> RemovableHandle:
        """``hook(module, args, output)`` after ``forward``; a non-None result replaces the
        output."""
        return self._hook("_forward_hooks", hook, "register_forward_hook")

    def register_full_backward_hook(self, hook: Any) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` once the gradients of the module's
        Tensor inputs are computed (``None`` for inputs that need none); a non-None result
        replaces grad_input."""
        return self._hook("_backward_hooks", hook, "register_full_backward_hook")

    # -- registration
    def _registry(self) -> tuple[OrderedDict, OrderedDict, OrderedDict]:
        try:
            d = self.__dict__
            return d["_parameters"], d["_buffers"], d["_modules"]
        except KeyError:
            raise AttributeError(f"cannot assign to {type(self).__name__} before "
                                 "Module.__init__() is called (call super().__init__() "
                                 "first)") from None

    def _forget(self, name: str, keep: dict) -> None:
        """Drop ``name`` from the plain attributes and every registry but ``keep`` (where
        a re-assignment keeps its place)."""
        self.__dict__.pop(name, None)
        for registry in self._registry():
            if registry is not keep:
                registry.pop(name, None)
        if keep is not self._buffers:
            self._non_persistent_buffers_set.discard(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Parameter):
            self._forget(name, self._registry()[0])
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self._forget(name, self._registry()[2])
            self.add_module(name, value)
        elif isinstance(value, Buffer):  # nn.Buffer: register it (a taken name is refused)
            params, _, modules = self._registry()
            if name in params or name in modules:
                what = ("parameter", "Parameter") if name in params else ("child module",
                                                                          "Module")
                raise TypeError(f"cannot assign Buffer as {what[0]} {name!r} (a {what[1]} "
                                "or None expected)")
            self.register_buffer(name, value, persistent=value.persistent)
        elif "_parameters" not in self.__dict__:
            object.__setattr__(self, name, value)
        else:
            params, buffers, modules = self._registry()
            if name in params:
                if value is not None:
                    raise TypeError(f"cannot assign {type(value).__name__} as parameter "
                                    f"{name!r} (a Parameter or None expected)")
                params[name] = None
            elif name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign {type(value).__name__} as child module "
                                    f"{name!r} (a Module or None expected)")
                modules[name] = None
            elif name in buffers:
                buffers[name] = _buffer_value(value, name)
            else:
                object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        params, buffers, modules = self._registry()
        if name in params:
            del params[name]
        elif name in buffers:
            del buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in modules:
            del modules[name]
        else:
            object.__delattr__(self, name)

    def _check_name(self, name: Any, what: str, registry: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{what} name must be a str, got {type(name).__name__}")
        if not name or "." in name:
            raise ValueError(f"{what} name {name!r} must be non-empty and contain no '.'")
        params, buffers, modules = self._registry()
        taken = (name in self.__dict__ or hasattr(type(self), name)
                 or any(name in r for r in (params, buffers, modules) if r is not registry))
        if taken and name not in registry:
            raise KeyError(f"attribute {name!r} already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (or ``None``, a declared but absent parameter) as ``name``."""
        params, _, _ = self._registry()
        self._check_name(name, "parameter", params)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign {type(param).__name__} as parameter {name!r} "
                            "(a Parameter or None expected)")
        params[name] = param

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
        """Register ``tensor`` (an ndarray, a Tensor's data, or ``None``) as the buffer ``name``.

        A buffer is module state that is not trained (running statistics, a fixed
        kernel): it is an ndarray, a constant wherever it enters a computation, follows
        ``.float()``/``.double()`` when floating, and appears in ``state_dict`` unless
        ``persistent=False``.
        """
        _, buffers, _ = self._registry()
        self._check_name(name, "buffer", buffers)
        if not isinstance(persistent, bool):
            raise TypeError(f"register_buffer: persistent={persistent!r} must be a bool")
        buffers[name] = _buffer_value(tensor, name)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register ``module`` (or ``None``) as the child ``name``."""
        _, _, modules = self._registry()
        self._check_name(name, "module", modules)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The descendant at the dotted path ``target`` (``""`` is this module)."""
        if not isinstance(target, str):
            raise TypeError(f"get_submodule: target={target!r} must be a str")
        mod: Module = self
        for item in target.split(".") if target else []:
            child = mod._modules.get(item)
            if child is None:
                raise AttributeError(f"get_submodule: {type(mod).__name__} has no submodule "
                                     f"{item!r} (in target {target!r})")
            mod = child
        return mod

    # -- traversal
    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, child)`` for each direct child, each module once."""
        seen: set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and every descendant, depth first (pre-order), each once unless
        ``remove_duplicate=False``."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                           remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def _named_members(self, registry: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        owners = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                  if recurse else iter([(prefix, self)]))
        for mod_name, m in owners:
            for name, v in getattr(m, registry).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield (f"{mod_name}.{name}" if mod_name else name), v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs, each parameter once (shared ones too)."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, np.ndarray]]:
        """``(dotted name, buffer)`` pairs, persistent or not, each buffer once."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[np.ndarray]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Any) -> Module:
        """Call ``fn`` on every child (recursively), then on this module; returns ``self``.

        The usual use is initialisation: ``model.apply(init_weights)``.
        """
        if not callable(fn):
            raise TypeError(f"apply: fn={fn!r} must be callable")
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- modes and gradients
    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and every descendant; returns ``self``."""
        if not isinstance(mode, bool):
            raise TypeError(f"train: mode={mode!r} must be a bool")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode (``train(False)``); returns ``self``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Freeze (``False``) or unfreeze every parameter; returns ``self``."""
        if not isinstance(requires_grad, bool):
            raise TypeError(f"requires_grad_: requires_grad={requires_grad!r} must be a bool")
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop (or zero) the ``.grad`` of every parameter."""
        for p in self.parameters():
            if not has_grad(p):  # (a pending gradient is dropped uncomputed)
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = Tensor._wrap(np.zeros_like(p.data))

    def to(self, *args: Any, dtype: Any = None, device: Any = None,
           non_blocking: bool = False, memory_format: Any = None) -> Module:
        """As torch: ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``,
        ``to(memory_format=...)``.

        The device must be the CPU (``"cpu"`` changes nothing, any other device is a
        ValueError); only an explicit dtype (float32 or float64) casts every parameter and
        floating buffer in place.  Integer buffers (counters) keep their dtype.
        ``memory_format`` relays out every 4-d and 5-d parameter and floating buffer in
        place (torch's rule: a channels-last format of the wrong rank for one of them is
        a RuntimeError).  Returns ``self``.
        """
        if memory_format is not None:
            self._to_memory_format(memory_format)
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype if dtype is None else dtype
            elif _device.is_device(a):
                device = a
            elif not isinstance(a, bool):  # (a positional non_blocking changes nothing)
                dtype = a
        _device.check_device("Module.to", device)
        if dtype is None:
            return self
        dt = check_dtype("Module.to", dtype)
        for p in self.parameters():
            if p.data.dtype != dt:
                p.data = p.data.astype(dt)
                p.grad = None
        for m in self.modules():
            for name, b in m._buffers.items():
                if b is not None and b.dtype.kind == "f" and b.dtype != dt:
                    m._buffers[name] = b.astype(dt)
        return self

    def _to_memory_format(self, memory_format: Any) -> None:
        from ..tensor import memory_format as _mf

        fmt = _mf.check_format("to", memory_format)
        for p in self.parameters():
            if p.data.ndim in (4, 5):
                _mf.check_rank(fmt, p.data.ndim)
        for p in self.parameters():
            if p.data.ndim in (4, 5) and not _mf.is_in_format(p.data, fmt):
                p.data = Tensor._wrap(p.data).contiguous(memory_format=fmt).data
                if p.grad is not None:
                    p.grad = p.grad.contiguous(memory_format=fmt)
        for m in self.modules():
            for name, b in m._buffers.items():
                if b is not None and b.ndim in (4, 5) and b.dtype.kind == "f":
                    _mf.check_rank(fmt, b.ndim)
                    m._buffers[name] = Tensor._wrap(b).contiguous(memory_format=fmt).data

    def cpu(self) -> Module:
        """``self``: convgrad modules live on the CPU."""
        return self

    def share_memory(self) -> Module:
        """Every parameter and buffer in shared memory (``Tensor.share_memory_``): the
        processes this module is sent to through ``multiprocessing`` (hogwild training)
        update the same values.  ``self``."""
        for p in self.parameters():
            p.share_memory_()
        for m in self.modules():
            for name, b in m._buffers.items():
                if isinstance(b, np.ndarray):
                    m._buffers[name] = _shm.share(b)
        return self

    def cuda(self, device: Any = None) -> Module:
        """Always a ValueError: convgrad runs on the CPU only."""
        _device.check_device("Module.cuda", "cuda" if device is None else device)
        return self

    def float(self) -> Module:
        return self.to(np.float32)

    def double(self) -> Module:
        return self.to(np.float64)

    # -- state
    def state_dict(self, destination: Any = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict[str, Any]:
        """Every parameter and persistent buffer keyed by its dotted name (torch's keys
        and order: a module's parameters, then its buffers, then each child's).

        Values are copied ndarrays; ``keep_vars=True`` gives the Parameters and buffer
        arrays themselves.  A module shared under two names appears under both.
        """
        return _state.state_dict(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict: Any, strict: bool = True) -> IncompatibleKeys:
        """Copy values into the parameters and buffers (in place, so optimisers keep
        working); returns the ``(missing_keys, unexpected_keys)`` named tuple.

        Values may be ndarrays, Tensors or nested lists; each is cast to its target's
        dtype.  A shape mismatch is a ValueError naming the key; with ``strict`` (the
        default) so are missing and unexpected keys.  A failed load changes nothing.
        """
        return _state.load_state_dict(self, state_dict, strict)

    # -- printing
    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr (override in layers)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): {_addindent(repr(m), 2)}" for key, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{type(self).__name__}({body})"


def _buffer_value(value: Any, name: str) -> np.ndarray | None:
    """A buffer as stored: an ndarray (a Tensor contributes its data), or None."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        value = value.data
    elif isinstance(value, np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r} "
                        "(an ndarray, a Tensor or None expected)")
    if value.dtype.kind not in "biuf":
        raise TypeError(f"buffer {name!r} has dtype {value.dtype}; expected bool, integers "
                        "or floats")
    return value


class Sequential(Module):
    """Modules applied in order: ``Sequential(m0, m1, ...)`` or ``Sequential(OrderedDict)``."""

    def __init__(self, *modules: Any) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self._append_checked(m, name)
        else:
            for m in modules:
                self._append_checked(m, str(len(self._modules)))

    def _append_checked(self, module: Any, name: str) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"Sequential: entry {name!r} is a {type(module).__name__}, "
                            "expected a Module")
        if self._modules:  # a fused pair's own loads start while the network is built
            _fusion.warm_up_pair(next(reversed(self._modules.values())), module)
        self.add_module(name, module)

    def append(self, module: Module) -> Sequential:
        self._append_checked(module, str(len(self._modules)))
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        for m in modules:
            self.append(m)
        return self

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def __getitem__(self, index: int | slice) -> Any:
        items = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(items[index]))
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"Sequential indices must be ints or slices, got "
                            f"{type(index).__name__}")
        if not -len(items) <= index < len(items):
            raise IndexError(f"Sequential index {index} is out of range for {len(items)} "
                             "modules")
        return items[index][1]

    def forward(self, x: Any) -> Any:
        # a convolution and its ReLU run as one kernel (see .fusion)
        return _fusion.run_sequence(list(self._modules.values()), x)
