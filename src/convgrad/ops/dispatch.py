"""The one place that chooses a dense-convolution algorithm per shape.

Every convolution kernel reduces (through :mod:`.polyphase`) to dense convolutions
``out[b,g,o,p] = sum_{c,k} x[b,g,c,p*s+k*d-lo] * w[g,o,c,k]``; this module picks how
each one is computed.  Adding an algorithm touches this module only.
"""

from __future__ import annotations

import numpy as np

from .im2col import im2col_conv


def dense_conv(x: np.ndarray, w: np.ndarray, out: np.ndarray, stride: tuple, lo: tuple,
               dil: tuple) -> tuple[int, str]:
    """Fill ``out`` (B, G, O, *P) from ``x`` (B, G, C, *L) and ``w`` (G, O, C, *K).

    Returns (FLOPs performed, name of the algorithm used).
    """
    return im2col_conv(x, w, out, stride, lo, dil), "im2col"
