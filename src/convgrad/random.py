"""The library's one source of randomness, and :func:`manual_seed` that makes it repeatable.

Every draw that is not given its own generator (``cg.randn`` with ``rng=None``, the
initial weights of a layer, dropout masks, the order in which a ``DataLoader``
shuffles) comes from :func:`default_generator`, a ``numpy.random.Generator``.
:func:`manual_seed` reseeds that generator in place, so code that holds a reference
to it sees the new stream too (the analogue of ``torch.manual_seed``).  This module
depends on NumPy only, so every layer of the package can import it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from numbers import Integral
from typing import Any

import numpy as np

__all__ = ["checked_seed", "default_generator", "fork_rng", "fresh_seed", "generator",
           "initial_seed", "manual_seed", "seed"]


def fresh_seed() -> int:
    """A seed from OS entropy."""
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0])


_initial_seed: int = fresh_seed()  # (as torch: a process starts from a random seed)
_default = np.random.default_rng(_initial_seed)


def manual_seed(seed: int) -> np.random.Generator:
    """Reseed the library-wide generator with ``seed``; returns the generator.

    Two programs that call ``manual_seed`` with the same seed and then make the same
    calls draw the same numbers.
    """
    global _initial_seed
    seed = checked_seed(seed, "manual_seed")
    _default.bit_generator.state = type(_default.bit_generator)(seed).state
    _initial_seed = seed
    return _default


def seed() -> int:
    """Reseed the library-wide generator from fresh OS entropy; returns the seed used."""
    fresh = fresh_seed()
    manual_seed(fresh)
    return fresh


def initial_seed() -> int:
    """The seed last given to :func:`manual_seed` or drawn by :func:`seed` (at import, a
    fresh one from OS entropy), as ``torch.initial_seed``."""
    return _initial_seed


def default_generator() -> np.random.Generator:
    """The generator behind every draw that is given no generator of its own."""
    return _default


def generator(rng: Any, fn: str) -> np.random.Generator:
    """``rng`` as a Generator: ``None`` is the library's, an int seeds a new one, a
    ``cg.Generator`` (torch's class) draws from its own stream."""
    if rng is None:
        return _default
    if isinstance(rng, np.random.Generator):
        return rng
    inner = getattr(rng, "numpy_generator", None)  # cg.Generator (rng_state.py)
    if isinstance(inner, np.random.Generator):
        return inner
    if isinstance(rng, Integral) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"{fn}: rng={rng!r} must be a convgrad Generator, a numpy Generator, "
                    "an int seed or None")


def checked_seed(seed: Any, fn: str) -> int:
    """``seed`` as a non-negative int, or a TypeError/ValueError naming ``fn``."""
    if isinstance(seed, bool) or not isinstance(seed, Integral):
        raise TypeError(f"{fn}: seed={seed!r} must be an int")
    if int(seed) < 0:
        raise ValueError(f"{fn}: seed={int(seed)} must be >= 0")
    return int(seed)


@contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, device_type: str = "cuda"
             ) -> Iterator[None]:
    """``with fork_rng():`` draws inside leave the library-wide generator as it was: its
    state is restored on exit (as ``torch.random.fork_rng``; ``devices`` and
    ``device_type`` name accelerator generators, which convgrad has none of)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"fork_rng: enabled={enabled!r} must be a bool")
    if not enabled:
        yield
        return
    saved = _default.bit_generator.state
    try:
        yield
    finally:
        _default.bit_generator.state = saved
