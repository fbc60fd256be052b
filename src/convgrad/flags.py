"""Process-wide switches that torch scripts set: deterministic algorithms and the float32
matmul precision.

convgrad's kernels are deterministic (the same inputs give the same bits on every run).
One exception: a process started before the Numba loops were built (the first run after
an install) runs other kernels until they are, then switches to them
(:mod:`convgrad.ops.jit_build`); ``use_deterministic_algorithms(True)`` makes it wait for
the loops instead.  Every float32 product is
computed in full float32 (never TF32 or bfloat16), whatever precision is asked for: the
setting is recorded and read back, as torch's.
"""

from __future__ import annotations

from typing import Any

__all__ = ["are_deterministic_algorithms_enabled", "get_float32_matmul_precision",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "use_deterministic_algorithms"]

_PRECISIONS = ("highest", "high", "medium")


class _Flags:
    deterministic = False
    warn_only = False
    matmul_precision = "highest"


_flags = _Flags()


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record torch's deterministic-algorithms flag (convgrad's kernels always are); on,
    the loops' first build is waited for rather than run beside (see the module)."""
    for name, v in (("mode", mode), ("warn_only", warn_only)):
        if not isinstance(v, bool):
            raise TypeError(f"use_deterministic_algorithms: {name}={v!r} must be a bool")
    _flags.deterministic, _flags.warn_only = mode, warn_only
    from .ops.jit_build import require_reproducible

    require_reproducible(mode)


def are_deterministic_algorithms_enabled() -> bool:
    """The flag last given to :func:`use_deterministic_algorithms` (False at start)."""
    return _flags.deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """The ``warn_only`` last given to :func:`use_deterministic_algorithms`."""
    return _flags.warn_only


def set_float32_matmul_precision(precision: Any) -> None:
    """Record ``"highest"``, ``"high"`` or ``"medium"`` (products stay full float32)."""
    if precision not in _PRECISIONS:
        raise ValueError(f"set_float32_matmul_precision: precision={precision!r} must be "
                         f"one of {', '.join(repr(p) for p in _PRECISIONS)}")
    _flags.matmul_precision = str(precision)


def get_float32_matmul_precision() -> str:
    """The precision last set (``"highest"`` at start, as torch)."""
    return _flags.matmul_precision
