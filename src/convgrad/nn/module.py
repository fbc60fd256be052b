"""``Parameter``, ``Module`` (the container of parameters and sub-modules) and ``Sequential``.

Assigning a :class:`Parameter` or a :class:`Module` to an attribute registers it, in
assignment order, as in PyTorch; ``named_parameters`` and ``state_dict`` walk the
registrations depth first, so keys read ``"0.weight"``, ``"encoder.1.bias"`` and so on.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np

from ..tensor import Tensor
from ..tensor.tensor import _check_dtype

__all__ = ["IncompatibleKeys", "Module", "Parameter", "Sequential"]


class Parameter(Tensor):
    """A leaf Tensor that a :class:`Module` registers as one of its parameters.

    ``Parameter(data)`` shares ``data``'s memory when it is a float32/float64 ndarray
    (like ``torch.nn.Parameter``); it requires grad unless ``requires_grad=False``.
    """

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = np.empty(0, np.float32)
        super().__init__(data.data if isinstance(data, Tensor) else data,
                         requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class IncompatibleKeys(NamedTuple):
    """What :meth:`Module.load_state_dict` did not match (empty lists when all matched)."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    return lines[0] if len(lines) == 1 else "\n".join(
        [lines[0]] + [" " * spaces + line for line in lines[1:]])


class Module:
    """Base class of every layer and model: override ``forward``, call the instance."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "training", True)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # -- registration
    def _registry(self) -> tuple[OrderedDict, OrderedDict]:
        try:
            return self.__dict__["_parameters"], self.__dict__["_modules"]
        except KeyError:
            raise AttributeError(f"cannot assign to {type(self).__name__} before "
                                 "Module.__init__() is called (call super().__init__() "
                                 "first)") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Parameter):
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self.add_module(name, value)
        else:
            params, modules = self._registry() if "_parameters" in self.__dict__ else ({}, {})
            buffers = self.__dict__.get("_buffers", {})
            if name in buffers:
                buffers[name] = None if value is None else _buffer_tensor(name, value)
            elif name in params:
                if value is not None:
                    raise TypeError(f"cannot assign {type(value).__name__} as parameter "
                                    f"{name!r} (a Parameter or None expected)")
                params[name] = None
            elif name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign {type(value).__name__} as child module "
                                    f"{name!r} (a Module or None expected)")
                modules[name] = None
            else:
                object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        params, modules = self._registry()
        if name in params:
            del params[name]
        elif name in modules:
            del modules[name]
        elif name in self.__dict__.get("_buffers", {}):
            del self._buffers[name]
            self._non_persistent_buffers.discard(name)
        else:
            object.__delattr__(self, name)

    def _check_name(self, name: Any, what: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{what} name must be a str, got {type(name).__name__}")
        if not name or "." in name:
            raise ValueError(f"{what} name {name!r} must be non-empty and contain no '.'")
        params, modules = self._registry()
        if name in self.__dict__ and name not in params and name not in modules:
            raise KeyError(f"attribute {name!r} already exists")
        if what != "buffer" and name in self.__dict__.get("_buffers", {}):
            raise KeyError(f"attribute {name!r} already exists (a buffer)")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (or ``None``, a declared but absent parameter) as ``name``."""
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign {type(param).__name__} as parameter {name!r} "
                            "(a Parameter or None expected)")
        params, modules = self._registry()
        modules.pop(name, None)
        params[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Register ``module`` (or ``None``) as the child ``name``."""
        self._check_name(name, "module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        params, modules = self._registry()
        params.pop(name, None)
        modules[name] = module

    register_module = add_module

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
        """Register a state array that is not a parameter (e.g. BatchNorm's running mean).

        ``tensor`` (an ndarray, a Tensor or ``None``) is kept as a constant Tensor and read
        back as ``self.<name>``; persistent buffers are in :meth:`state_dict`.
        """
        self._check_name(name, "buffer")
        params, modules = self._registry()
        if name in params or name in modules:
            raise KeyError(f"attribute {name!r} already exists")
        self._buffers[name] = None if tensor is None else _buffer_tensor(name, tensor)
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def named_buffers(self, prefix: str = "", recurse: bool = True
                      ) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)`` pairs, each buffer once."""
        seen: set[int] = set()
        owners = self.named_modules(prefix) if recurse else iter([(prefix, self)])
        for mod_name, m in owners:
            for name, b in m._buffers.items():
                if b is None or id(b) in seen:
                    continue
                seen.add(id(b))
                yield (f"{mod_name}.{name}" if mod_name else name), b

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- traversal
    def named_children(self) -> Iterator[tuple[str, Module]]:
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module and every descendant, depth first, each once."""
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            yield name, m
            kids = [(f"{name}.{k}" if name else k, c) for k, c in m.named_children()]
            stack.extend(reversed(kids))

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_parameters(self, prefix: str = "", recurse: bool = True
                         ) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs, each parameter once (shared ones too)."""
        seen: set[int] = set()
        owners = self.named_modules(prefix) if recurse else iter([(prefix, self)])
        for mod_name, m in owners:
            for name, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{mod_name}.{name}" if mod_name else name), p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

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
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop (or zero) the ``.grad`` of every parameter."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = Tensor._wrap(np.zeros_like(p.data))

    def to(self, dtype: Any) -> Module:
        """Cast every parameter to ``dtype`` (float32 or float64) in place; returns ``self``."""
        dt = _check_dtype("Module.to", dtype)
        for p in self.parameters():
            if p.data.dtype != dt:
                p.data = p.data.astype(dt)
                p.grad = None
        for b in self.buffers():
            if b.data.dtype.kind == "f" and b.data.dtype != dt:
                b.data = b.data.astype(dt)
        return self

    def float(self) -> Module:
        return self.to(np.float32)

    def double(self) -> Module:
        return self.to(np.float64)

    # -- state
    def state_dict(self) -> OrderedDict[str, np.ndarray]:
        """Every parameter and persistent buffer as a copied ndarray, keyed by its dotted
        name (PyTorch's keys and order: each module's parameters, then its buffers)."""
        return OrderedDict((name, np.array(p.data, copy=True))
                           for name, p in self._all_named_parameters())

    def _all_named_parameters(self) -> Iterator[tuple[str, Tensor]]:
        # state_dict lists a shared parameter under every name it has, as torch does
        for mod_name, m in self._named_modules_all():
            entries = list(m._parameters.items()) + [
                (k, b) for k, b in m._buffers.items() if k not in m._non_persistent_buffers]
            for name, p in entries:
                if p is not None:
                    yield (f"{mod_name}.{name}" if mod_name else name), p

    def _named_modules_all(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        yield prefix, self
        for k, c in self.named_children():
            yield from c._named_modules_all(f"{prefix}.{k}" if prefix else k)

    def load_state_dict(self, state_dict: Any, strict: bool = True) -> IncompatibleKeys:
        """Copy values into the parameters (in place, so optimisers keep working).

        Values may be ndarrays, Tensors or nested lists; each is cast to its parameter's
        dtype.  A shape mismatch is a ValueError; with ``strict`` (the default) so are
        missing and unexpected keys.
        """
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"load_state_dict: state_dict must be a mapping of names to "
                            f"arrays, got {type(state_dict).__name__}")
        own = list(self._all_named_parameters())
        own_names = {name for name, _ in own}
        missing = [name for name, _ in own if name not in state_dict]
        unexpected = [k for k in state_dict.keys() if k not in own_names]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append(f"missing key(s): {', '.join(map(repr, missing))}")
            if unexpected:
                parts.append(f"unexpected key(s): {', '.join(map(repr, unexpected))}")
            raise ValueError(f"load_state_dict for {type(self).__name__}: {'; '.join(parts)}")
        updates = []
        for name, p in own:
            if name not in state_dict:
                continue
            value = state_dict[name]
            arr = np.asarray(value.data if isinstance(value, Tensor) else value)
            if arr.dtype.kind not in "biuf":
                raise TypeError(f"load_state_dict: {name!r} has dtype {arr.dtype}; "
                                "expected numbers")
            if arr.shape != p.shape:
                raise ValueError(f"load_state_dict: size mismatch for {name!r}: the checkpoint "
                                 f"has shape {arr.shape}, the module has shape {p.shape}")
            updates.append((p, arr))
        for p, arr in updates:  # all checked first: a failed load changes nothing
            p.data[...] = arr
        return IncompatibleKeys(missing, unexpected)

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


def _buffer_tensor(name: str, value: Any) -> Tensor:
    """A buffer's value as a constant Tensor (int arrays keep their integer dtype)."""
    if isinstance(value, Tensor):
        return value
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"register_buffer: buffer {name!r} has dtype {arr.dtype}; "
                        "expected numbers")
    return Tensor(arr) if arr.dtype.kind == "f" else Tensor._wrap(np.array(arr))


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
        for m in self._modules.values():
            x = m(x)
        return x
