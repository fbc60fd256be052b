"""Kernel families: the one registry of algorithms, ``prefer()`` and profiler events.

A kernel family is a group of kernels with the same choice of algorithms: ``conv``
(the four convolution passes, :mod:`.kernels`), ``norm``, ``eltwise``, ``pool`` and so
on, each declared once with :func:`family` next to its kernels.  Every family

* names its algorithms (``Family.algorithms``); the first that applies to a call is
  the family's own decision, made in one function of its module;
* honours :func:`prefer`: inside ``with prefer(name)``, :meth:`Family.pinned` returns
  ``name`` for every family that has that algorithm (and ``None`` for the others, which
  keep their own choice), so one pin reaches every kernel it can;
* records each run through :meth:`Family.record`, one profiler event carrying the
  family, the kernel, the shapes and the algorithm that ran.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .profiler import _Recording

__all__ = ["Family", "algorithms", "families", "family", "prefer"]

_FAMILIES: dict[str, Family] = {}


@dataclass(frozen=True)
class Family:
    """One kernel family: its name and the algorithms its kernels choose from."""

    name: str
    algorithms: tuple[str, ...]

    def pinned(self) -> str | None:
        """The algorithm :func:`prefer` pins, when this family has it; else ``None``."""
        name = _Pinned.name
        return name if name in self.algorithms else None

    def record(self, kernel: str, *shapes: tuple, flops: int = 0) -> _Recording:
        """``with FAMILY.record("batch_norm_forward", x.shape) as rec: ...; rec.algorithm =
        ...`` logs one profiler event of this family."""
        return _Recording(kernel, tuple(tuple(s) for s in shapes), flops, self.name)


def family(name: str, algorithms: tuple[str, ...]) -> Family:
    """Declare the kernel family ``name`` (once, in the module of its kernels)."""
    if name in _FAMILIES and _FAMILIES[name].algorithms != tuple(algorithms):
        raise ValueError(f"kernel family {name!r} is declared twice, with different "
                         f"algorithms: {_FAMILIES[name].algorithms} and {tuple(algorithms)}")
    fam = _FAMILIES.setdefault(name, Family(name, tuple(algorithms)))
    return fam


def families() -> dict[str, Family]:
    """Every declared family, by name."""
    return dict(_FAMILIES)


def algorithms() -> tuple[str, ...]:
    """Every algorithm of every family, each once."""
    return tuple(dict.fromkeys(a for f in _FAMILIES.values() for a in f.algorithms))


class _Pinned:
    name: str | None = None  # the algorithm pinned by prefer(), for every thread


@contextmanager
def prefer(name: str) -> Iterator[None]:
    """Inside, every thread runs ``name`` in every kernel family that has it, wherever it
    applies, whatever the family's thresholds say.  ``onednn``: oneDNN's primitives for
    every call they support; ``numpy``: the NumPy reference kernels of every family
    (the convolution's own choice among its NumPy algorithms); the convolution's own
    algorithms (``scatter``, ``direct``, ``im2col``, ``fft``) are described in
    :func:`convgrad.ops.dispatch.choose`.  For tests and benchmarks that pin an
    algorithm; they check the profiler's ``algorithm``."""
    importlib.import_module(__package__)  # the package imports every family's module

    known = algorithms()
    if name not in known:
        raise ValueError(f"prefer: name={name!r} must be one of {known}")
    saved = _Pinned.name
    _Pinned.name = name
    try:
        yield
    finally:
        _Pinned.name = saved
