"""torch's dtype names as NumPy dtypes (``cg.float32 == np.dtype("float32")``), so
``dtype=cg.float32`` and ``t.dtype == cg.int64`` read as in a PyTorch script.

A Tensor holds float32, float64, int32, int64 or bool; ``float16`` and ``uint8`` are
named so that a script can ask for them and get torch's refusal (a TypeError) where
convgrad has no such tensors.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bool", "double", "float", "float16", "float32", "float64", "half", "int",
           "int32", "int64", "long", "uint8"]

float32 = float = np.dtype(np.float32)  # noqa: A001
float64 = double = np.dtype(np.float64)
float16 = half = np.dtype(np.float16)
int32 = int = np.dtype(np.int32)  # noqa: A001
int64 = long = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
bool = np.dtype(np.bool_)  # noqa: A001
