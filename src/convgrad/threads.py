"""``cg.set_num_threads`` and ``cg.get_num_threads``: torch's intra-op thread count.

The count every kernel uses (oneDNN's and Numba's OpenMP threads, the chunk pool) and
BLAS's own; without a call, ``CONVGRAD_NUM_THREADS``, else ``OMP_NUM_THREADS`` as it was
at import, else the usable cores (:func:`convgrad.ops.parallel.num_threads`).
"""

from __future__ import annotations

import operator

from .ops import parallel

__all__ = ["get_num_threads", "set_num_threads"]


def set_num_threads(n: int) -> None:
    """Run every kernel on ``n`` threads from now on (a positive int), as
    ``torch.set_num_threads``."""
    if isinstance(n, bool):
        raise TypeError(f"set_num_threads: n={n!r}; expected a positive int, not a bool")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"set_num_threads: n={n!r} ({type(n).__name__}); expected a "
                        "positive int") from None
    if n < 1:
        raise ValueError(f"set_num_threads: n={n}; expected a positive int")
    parallel.set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads the kernels run on, as ``torch.get_num_threads``."""
    return parallel.num_threads()
