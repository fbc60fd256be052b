"""Weight pruning (torch's ``torch.nn.utils.prune``): each method turns the parameter
``<name>`` into a Parameter ``<name>_orig`` and a buffer ``<name>_mask``, and a forward
pre-hook recomputes ``module.<name> = <name>_orig * <name>_mask`` before each call.
Pruning the same tensor again combines the masks in a :class:`PruningContainer`."""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from ...random import default_generator
from ...tensor import Tensor
from ..module import Module

__all__ = ["BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured",
           "LnStructured", "PruningContainer", "RandomStructured", "RandomUnstructured",
           "custom_from_mask", "global_unstructured", "identity", "is_pruned",
           "l1_unstructured", "ln_structured", "random_structured", "random_unstructured",
           "remove"]


def _data(t: Any) -> np.ndarray:
    return t.data if isinstance(t, Tensor) else np.asarray(t)


def _check_amount(amount: Any, fn: str) -> None:
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"{fn}: amount={amount!r} must be an int or a float, got "
                        f"{type(amount).__name__}")
    if isinstance(amount, numbers.Integral):
        if amount < 0:
            raise ValueError(f"{fn}: amount={amount!r} must be a float in [0, 1] or a "
                             "non-negative int")
    elif not 0.0 <= amount <= 1.0:
        raise ValueError(f"{fn}: amount={amount!r} must be a float in [0, 1] or a "
                         "non-negative int")


def _n_to_prune(amount: Any, size: int, fn: str) -> int:
    """How many of ``size`` entries (or channels) ``amount`` prunes (a fraction rounds)."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"{fn}: amount={amount} must be at most the number of "
                             f"units to prune ({size})")
        return int(amount)
    return round(amount * size)


def _check_dim(dim: Any, ndim: int, fn: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or not (
            -ndim <= dim < ndim):
        raise ValueError(f"{fn}: dim={dim!r} must be an int in [{-ndim}, {ndim - 1}]")
    return int(dim) % ndim


def _check_structured(t: np.ndarray, fn: str) -> None:
    if t.ndim <= 1:
        raise ValueError(f"{fn}: structured pruning needs a tensor of at least 2 dims, got "
                         f"shape {tuple(t.shape)}")


def _channel_mask(t: np.ndarray, dim: int, keep: np.ndarray, default_mask: np.ndarray
                  ) -> np.ndarray:
    """``default_mask`` with every channel of ``dim`` outside ``keep`` zeroed."""
    mask = np.zeros_like(default_mask)
    slc = [slice(None)] * t.ndim
    slc[dim] = keep
    mask[tuple(slc)] = 1
    return mask * default_mask


class BasePruningMethod:
    """Base class of the pruning methods: subclasses set ``PRUNING_TYPE``
    (``"unstructured"``, ``"structured"`` or ``"global"``) and define
    ``compute_mask(t, default_mask)`` on ndarrays.  An instance is the forward pre-hook."""

    PRUNING_TYPE: str = "unstructured"
    _tensor_name: str

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        """The new mask for importance scores ``t``, given the current ``default_mask``."""
        raise NotImplementedError(f"{type(self).__name__} must define compute_mask()")

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_orig * <name>_mask`` of ``module`` (differentiable in the original)."""
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return orig * Tensor(mask)

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Any = None,
              **kwargs: Any) -> BasePruningMethod:
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` (combining with any
        earlier pruning of it); returns the hook now attached."""
        fn = f"{cls.__name__}.apply"
        if not isinstance(module, Module):
            raise TypeError(f"{fn}: module must be a Module, got {type(module).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"{fn}: name={name!r} must be a str")
        method = cls(*args, **kwargs)
        method._tensor_name = name
        hooks = module.__dict__.get("_forward_pre_hooks") or {}
        old_key, old = None, None
        for key, hook in hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_key, old = key, hook
        if old is None:
            orig = module._parameters.get(name)
            if orig is None:
                raise ValueError(f"{fn}: module {type(module).__name__} has no parameter "
                                 f"named {name!r}")
            default_mask = np.ones_like(orig.data)
        else:
            orig = module._parameters[name + "_orig"]
            default_mask = np.array(module._buffers[name + "_mask"], copy=True)
        # (the default importance is the tensor as the module now holds it: the masked
        # weight once pruned, as torch)
        scores = _data(getattr(module, name) if importance_scores is None
                       else importance_scores)
        if scores.shape != orig.shape:
            raise ValueError(f"{fn}: importance_scores of shape {tuple(scores.shape)} must "
                             f"have the shape of parameter {name!r}, {tuple(orig.shape)}")
        if old is not None:  # (a new container: a failed pruning leaves the old one as is)
            earlier = old._pruning_methods if isinstance(old, PruningContainer) else (old,)
            hook_method: BasePruningMethod = PruningContainer(*earlier, method)
        else:
            hook_method = method
        mask = hook_method.compute_mask(scores, default_mask=default_mask)
        if old is None:
            del module._parameters[name]
            module.register_parameter(name + "_orig", orig)
        module.register_buffer(name + "_mask", np.asarray(mask, dtype=orig.data.dtype))
        setattr(module, name, hook_method.apply_mask(module))
        if old_key is not None:
            del hooks[old_key]
        module.register_forward_pre_hook(hook_method)
        return hook_method

    def prune(self, t: Any) -> Any:
        """``t`` times the mask this method computes for it from an all-ones mask."""
        arr = _data(t)
        mask = self.compute_mask(arr, default_mask=np.ones_like(arr))
        return t * Tensor(mask) if isinstance(t, Tensor) else arr * mask

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` becomes a Parameter holding
        ``orig * mask``; ``<name>_orig`` and ``<name>_mask`` go."""
        name = self._tensor_name
        weight = self.apply_mask(module)
        module.__dict__.pop(name, None)
        orig = module._parameters.pop(name + "_orig")
        orig.data = np.array(weight.data, copy=True)
        del module._buffers[name + "_mask"]
        module.register_parameter(name, orig)


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods applied to one tensor, in order; each later method
    prunes only among the entries (or channels) the earlier ones kept."""

    def __init__(self, *args: Any) -> None:
        self._pruning_methods: tuple = ()
        if len(args) == 1 and not isinstance(args[0], Iterable):
            args = (args[0],)
        elif len(args) == 1:
            args = tuple(args[0])
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append ``method`` (it must prune the same tensor)."""
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f"PruningContainer: {method!r} is not a BasePruningMethod")
        if not self._pruning_methods:
            self._tensor_name = method._tensor_name
        elif method._tensor_name != self._tensor_name:
            raise ValueError(f"PruningContainer: method for {method._tensor_name!r} cannot "
                             f"join a container pruning {self._tensor_name!r}")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Any:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        """The last method's mask, computed on the still-unpruned part of ``t``."""
        method = self._pruning_methods[-1]
        mask = np.asarray(default_mask)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            slc: Any = mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("PruningContainer: a structured method needs a dim")
            dim = method.dim % t.ndim
            keep = mask.sum(axis=tuple(d for d in range(t.ndim) if d != dim)) != 0
            index = [slice(None)] * t.ndim
            index[dim] = keep
            slc = tuple(index)
        elif kind == "global":
            slc = (slice(None),) * t.ndim
        else:
            raise ValueError(f"PruningContainer: unknown PRUNING_TYPE {kind!r}")
        new_mask = np.array(mask, copy=True)
        new_mask[slc] = method.compute_mask(t[slc], default_mask=mask[slc])
        return new_mask.astype(t.dtype, copy=False)


class Identity(BasePruningMethod):
    """Prunes nothing: the mask stays all ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        """Attach an identity pruning of ``module.<name>``."""
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Prunes ``amount`` entries (a count, or a fraction of them), the first ``amount`` of
    :meth:`_order` (flat positions)."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: Any) -> None:
        _check_amount(amount, type(self).__name__)
        self.amount = amount

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        k = _n_to_prune(self.amount, t.size, type(self).__name__)
        mask = np.array(default_mask, copy=True)
        if k:
            mask.reshape(-1)[self._order(t)[:k]] = 0
        return mask

    def _order(self, t: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` entries (a count, or a fraction of them) chosen at random."""

    def _order(self, t: np.ndarray) -> np.ndarray:
        return default_generator().permutation(t.size)

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any  # type: ignore[override]
              ) -> BasePruningMethod:
        """Attach a random unstructured pruning of ``module.<name>``."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the ``amount`` entries of smallest absolute value."""

    def _order(self, t: np.ndarray) -> np.ndarray:
        return np.argsort(np.abs(t).reshape(-1), kind="stable")

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any,  # type: ignore[override]
              importance_scores: Any = None) -> BasePruningMethod:
        """Attach an L1 unstructured pruning of ``module.<name>``."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim``: all but those :meth:`_kept` keeps."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, dim: int = -1) -> None:
        fn = type(self).__name__
        _check_amount(amount, fn)
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise TypeError(f"{fn}: dim={dim!r} must be an int")
        self.amount = amount
        self.dim = int(dim)

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        fn = type(self).__name__
        _check_structured(t, fn)
        dim = _check_dim(self.dim, t.ndim, fn)
        size = t.shape[dim]
        k = _n_to_prune(self.amount, size, fn)
        if k == 0:
            return default_mask
        return _channel_mask(t, dim, self._kept(t, dim, size, k), default_mask)

    def _kept(self, t: np.ndarray, dim: int, size: int, k: int) -> np.ndarray:
        raise NotImplementedError


class RandomStructured(_Structured):
    """Prunes ``amount`` whole channels along ``dim``, chosen at random."""

    def _kept(self, t: np.ndarray, dim: int, size: int, k: int) -> np.ndarray:
        keep = np.ones(size, dtype=bool)
        keep[default_generator().permutation(size)[:k]] = False
        return keep

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any,  # type: ignore[override]
              dim: int = -1) -> BasePruningMethod:
        """Attach a random structured pruning of ``module.<name>``."""
        return super().apply(module, name, amount=amount, dim=dim)


def _ln_norm(t: np.ndarray, n: Any, axes: tuple) -> np.ndarray:
    """torch.norm(t, p=n, dim=axes) on ndarrays."""
    a = np.abs(t)
    if n == "fro" or n == 2:
        return np.sqrt(np.sum(a * a, axis=axes))
    if n == np.inf:
        return np.max(a, axis=axes)
    if n == -np.inf:
        return np.min(a, axis=axes)
    if n == 0:
        return np.sum(a != 0, axis=axes).astype(t.dtype)
    return np.sum(a ** n, axis=axes) ** (1.0 / n)


class LnStructured(_Structured):
    """Prunes the ``amount`` channels along ``dim`` of smallest L``n`` norm."""

    def __init__(self, amount: Any, n: Any, dim: int = -1) -> None:
        _check_amount(amount, "LnStructured")
        if not (n == "fro" or (isinstance(n, numbers.Real) and not isinstance(n, bool))):
            raise ValueError(f"LnStructured: n={n!r} must be a number, inf, -inf or 'fro'")
        super().__init__(amount, dim)
        self.n = n

    def _kept(self, t: np.ndarray, dim: int, size: int, k: int) -> np.ndarray:
        norm = _ln_norm(t, self.n, tuple(d for d in range(t.ndim) if d != dim))
        keep = np.zeros(size, dtype=bool)
        keep[np.argsort(-norm, kind="stable")[:size - k]] = True
        return keep

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any, n: Any,  # type: ignore[override]
              dim: int, importance_scores: Any = None) -> BasePruningMethod:
        """Attach an Ln structured pruning of ``module.<name>``."""
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given ``mask`` is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Any) -> None:
        self.mask = _data(mask)

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        if self.mask.shape != default_mask.shape:
            raise ValueError(f"CustomFromMask: mask of shape {tuple(self.mask.shape)} must "
                             f"have the parameter's shape {tuple(default_mask.shape)}")
        return (default_mask * self.mask).astype(default_mask.dtype, copy=False)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Any  # type: ignore[override]
              ) -> BasePruningMethod:
        """Attach the pruning of ``module.<name>`` by ``mask``."""
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    """Prune nothing of ``module.<name>`` but set up ``<name>_orig``/``<name>_mask``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: Any) -> Module:
    """Prune ``amount`` random entries of ``module.<name>``; returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: Any,
                    importance_scores: Any = None) -> Module:
    """Prune the ``amount`` entries of ``module.<name>`` of smallest ``|importance|``
    (the parameter itself by default); returns ``module``."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: Any, dim: int) -> Module:
    """Prune ``amount`` random channels along ``dim`` of ``module.<name>``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: Any, n: Any, dim: int,
                  importance_scores: Any = None) -> Module:
    """Prune the ``amount`` channels along ``dim`` of smallest L``n`` norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters: Any, pruning_method: Any, importance_scores: Any = None,
                        **kwargs: Any) -> None:
    """Prune the ``(module, name)`` pairs of ``parameters`` together, as one flat tensor,
    with the unstructured ``pruning_method(**kwargs)`` class."""
    fn = "global_unstructured"
    if not isinstance(parameters, Iterable):
        raise TypeError(f"{fn}: parameters={parameters!r} must be an iterable of "
                        "(module, name) pairs")
    parameters = list(parameters)
    if importance_scores is None:
        importance_scores = {}
    if not isinstance(importance_scores, dict):
        raise TypeError(f"{fn}: importance_scores must be a dict or None, got "
                        f"{type(importance_scores).__name__}")
    if not (isinstance(pruning_method, type) and issubclass(pruning_method, BasePruningMethod)):
        raise TypeError(f"{fn}: pruning_method={pruning_method!r} must be a "
                        "BasePruningMethod subclass")
    scores, masks = [], []
    for pair in parameters:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"{fn}: each entry of parameters must be a (module, name) "
                            f"pair, got {pair!r}")
        module, name = pair
        weight = getattr(module, name)
        score = _data(importance_scores.get(pair, weight))
        scores.append(score.reshape(-1))
        mask = module._buffers.get(name + "_mask") if isinstance(module, Module) else None
        masks.append((np.ones_like(_data(weight)) if mask is None else mask).reshape(-1))
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise ValueError(f"{fn}: pruning_method must have PRUNING_TYPE 'unstructured', "
                         f"{pruning_method.__name__} has {method.PRUNING_TYPE!r}")
    container = PruningContainer(method)
    if not scores:
        return
    final = container.compute_mask(np.concatenate(scores), np.concatenate(masks))
    start = 0
    for (module, name), score in zip(parameters, scores):
        shape = _data(getattr(module, name)).shape
        custom_from_mask(module, name, final[start:start + score.size].reshape(shape))
        start += score.size


def custom_from_mask(module: Module, name: str, mask: Any) -> Module:
    """Prune ``module.<name>`` where ``mask`` is zero; returns ``module``."""
    CustomFromMask.apply(module, name, mask=mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent (a plain Parameter again)."""
    hooks = (module.__dict__.get("_forward_pre_hooks") or {}) if isinstance(
        module, Module) else {}
    for key, hook in list(hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del hooks[key]
            return module
    raise ValueError(f"remove: parameter {name!r} of module {type(module).__name__} has to "
                     "be pruned before its pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any module inside it has a pruning hook."""
    for sub in module.modules():
        for hook in (sub.__dict__.get("_forward_pre_hooks") or {}).values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
