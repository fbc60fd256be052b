"""Convolutions and their gradients on dask arrays, chunk by chunk.

:mod:`.kernels` holds the four kernels on dask inputs (each output chunk computed by the
in-memory kernel of :mod:`convgrad.ops` on exactly the input region it reads) and
:mod:`.halo` the per-dimension index arithmetic behind them.  Importing this package
does not import dask: :func:`is_dask_array` only looks at modules already loaded, and
the kernels load dask when they are first called.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["is_dask_array", "rechunk_like"]


def is_dask_array(a: Any) -> bool:
    """True when ``a`` is a ``dask.array.Array`` (dask itself is never imported here)."""
    module = sys.modules.get("dask.array")
    cls = getattr(module, "Array", None)
    return cls is not None and isinstance(a, cls)


def rechunk_like(a: Any, ref: Any) -> Any:
    """``a`` with the chunks of the dask array ``ref`` (an ndarray ``a`` is wrapped);
    ``a`` itself when ``ref`` is not a dask array or the chunks already agree."""
    if not is_dask_array(ref):
        return a
    if is_dask_array(a):
        return a if a.chunks == ref.chunks else a.rechunk(ref.chunks)
    import dask.array as da

    return da.from_array(a, chunks=ref.chunks)
