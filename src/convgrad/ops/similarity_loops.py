"""SSIM's per-pixel combination of the five filtered moments, and its gradient, as
compiled loops (Numba, :mod:`.jit`).

The moments arrive stacked along the batch, ``f`` (5N, C, S) C-contiguous (S the pixels
of one image), in :data:`convgrad.tensor.similarity.MOMENTS` order.  Each loop walks one
(image, channel) row of S pixels per task in float32, the Function's NumPy operations in
their order (each pixel's map and gradient are the reference's bits), the means summed
in float64:

* ``terms``: the means over the row of the SSIM map and of the contrast-structure map,
  ``out`` (2, N, C) float32;
* ``terms_grad``: the gradients of ``sum(a * ssim + b * cs)`` with respect to the five
  moments, ``a`` and ``b`` per row (the incoming gradient of each mean divided by S),
  ``out`` (5N, C, S) float32.

The formulas are :func:`convgrad.tensor.similarity.ssim_maps` and
:func:`~convgrad.tensor.similarity.ssim_maps_grad`, written out per pixel.  Rows run in a
``prange`` (serial where Numba's threading layer is its work queue).
"""

from __future__ import annotations

import numpy as np

from . import jit

__all__ = ["loops"]


def _compile(numba) -> dict:
    """``{"terms": ..., "terms_grad": ...}`` compiled: what ``loops()`` returns (None
    without Numba)."""
    parallel = jit.thread_safe()
    prange = numba.prange if parallel else range

    @numba.njit(nogil=True, cache=True, parallel=parallel)
    def terms(f, n_img, c1, c2, out):
        """out[0, n, c], out[1, n, c]: the means of the ssim and cs maps of row (n, c)."""
        c_len, s_len = f.shape[1], f.shape[2]
        two = np.float32(2)
        for t in prange(n_img * c_len):
            n, c = t // c_len, t % c_len
            mu1, mu2, e11 = f[n, c], f[n_img + n, c], f[2 * n_img + n, c]
            e22, e12 = f[3 * n_img + n, c], f[4 * n_img + n, c]
            s_ssim = s_cs = 0.0
            for j in range(s_len):
                m1_sq, m2_sq, m12 = mu1[j] * mu1[j], mu2[j] * mu2[j], mu1[j] * mu2[j]
                cs = (two * (e12[j] - m12) + c2) / ((e11[j] - m1_sq) + (e22[j] - m2_sq) + c2)
                s_ssim += ((two * m12 + c1) / (m1_sq + m2_sq + c1)) * cs
                s_cs += cs
            out[0, n, c] = np.float32(s_ssim / s_len)
            out[1, n, c] = np.float32(s_cs / s_len)

    @numba.njit(nogil=True, cache=True, parallel=parallel)
    def terms_grad(f, n_img, c1, c2, a, b, out):
        """out (5N, C, S): d sum(a ssim + b cs) / d each moment, a and b (N, C) float32."""
        c_len, s_len = f.shape[1], f.shape[2]
        two = np.float32(2)
        for t in prange(n_img * c_len):
            n, c = t // c_len, t % c_len
            mu1, mu2, e11 = f[n, c], f[n_img + n, c], f[2 * n_img + n, c]
            e22, e12 = f[3 * n_img + n, c], f[4 * n_img + n, c]
            g1, g2, g11 = out[n, c], out[n_img + n, c], out[2 * n_img + n, c]
            g22, g12 = out[3 * n_img + n, c], out[4 * n_img + n, c]
            an, bn = a[n, c], b[n, c]
            for j in range(s_len):
                m1, m2 = mu1[j], mu2[j]
                m1_sq, m2_sq, m12 = m1 * m1, m2 * m2, m1 * m2
                big_b = m1_sq + m2_sq + c1
                big_d = (e11[j] - m1_sq) + (e22[j] - m2_sq) + c2
                lum = (two * m12 + c1) / big_b
                cs = (two * (e12[j] - m12) + c2) / big_d
                p_b, q_d = (an * cs) / big_b, (an * lum + bn) / big_d
                u, v = p_b - q_d, q_d * cs - p_b * lum
                g_var = -(q_d * cs)
                g1[j] = two * (m2 * u + m1 * v)
                g2[j] = two * (m1 * u + m2 * v)
                g11[j], g22[j] = g_var, g_var
                g12[j] = two * q_d

    return {"terms": terms, "terms_grad": terms_grad}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)
