"""What kind of array a value is: a NumPy array or a lazy ``dask.array.Array``.

A leaf module (it imports nothing of convgrad, and never dask itself), so every layer,
the autodiff engine included, can tell a dask array from an ndarray without importing
the layers above it.
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
