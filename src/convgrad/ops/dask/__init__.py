"""Convolutions and their gradients on dask arrays, chunk by chunk.

:mod:`.kernels` holds the four kernels on dask inputs (each output chunk computed by the
in-memory kernel of :mod:`convgrad.ops` on exactly the input region it reads) and
:mod:`.halo` the per-dimension index arithmetic behind them.  Importing this package
does not import dask: :func:`is_dask_array` (from :mod:`convgrad.arraytypes`) only looks
at modules already loaded, and the kernels load dask when they are first called.
"""

from __future__ import annotations

from ...arraytypes import is_dask_array, rechunk_like

__all__ = ["is_dask_array", "rechunk_like"]
