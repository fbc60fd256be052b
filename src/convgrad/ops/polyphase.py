"""Polyphase decomposition: a convolution with input dilation as dense convolutions.

With input dilation ``di`` the dilated input is zero except at multiples of ``di``,
so output ``p`` meets a real input sample through tap ``k`` only when
``p*s + k*dk - lo`` is a multiple of ``di``.  Outputs fall into ``q = di/gcd(s, di)``
residue classes ``p = r + q*m``; class ``r`` is reached only by the taps
``k = k0 + T*t`` (``T = di/gcd(dk, di)``), and reads input sample
``base + m*(s/gcd(s,di)) + t*(dk/gcd(dk,di))``: a dense convolution with stride
``s/gcd(s, di)``, dilation ``dk/gcd(dk, di)`` and no input dilation.  Each tap belongs
to exactly one class, so the classes multiply no zeros, and classes that no tap
reaches are zero.  In N-d the classes are the product of each dim's classes.
(Transposed convolution, ``di = stride``, becomes its sub-pixel decomposition.)
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd


@dataclass(frozen=True)
class Phase:
    """One residue class of one spatial dim: outputs ``r::q`` use taps ``k0::T``."""

    r: int       # first output of the class
    q: int       # output step
    k0: int      # first tap of the class
    T: int       # tap step
    base: int    # input index read by (m=0, t=0); negative = inside the padding
    stride: int  # dense stride between consecutive outputs of the class
    dilation: int  # dense dilation between consecutive taps of the class

    def out_slice(self) -> slice:
        return slice(self.r, None, self.q)

    def tap_slice(self) -> slice:
        return slice(self.k0, None, self.T)


def phases(kernel: int, out: int, stride: int, lo: int, kdil: int, idil: int) -> list[Phase]:
    """The non-empty residue classes of one spatial dim (see module docstring)."""
    if idil == 1:
        return [Phase(0, 1, 0, 1, -lo, stride, kdil)]
    g = gcd(stride, idil)
    q = idil // g
    T = idil // gcd(kdil, idil)
    h = gcd(kdil, idil)
    pairs = []  # (r, k0): output class and its first tap
    if min(kernel, T) <= min(out, q):  # walk the taps, find each one's class
        inv = pow(stride // g, -1, q) if q > 1 else 0
        for k0 in range(min(kernel, T)):
            c = lo - k0 * kdil  # need stride * r == c (mod idil)
            if c % g == 0 and (r := (c // g) * inv % q) < out:
                pairs.append((r, k0))
    else:  # walk the classes, find each one's first tap
        inv = pow(kdil // h, -1, T) if T > 1 else 0
        for r in range(min(out, q)):
            c = lo - r * stride  # need kdil * k0 == c (mod idil)
            if c % h == 0 and (k0 := (c // h) * inv % T) < kernel:
                pairs.append((r, k0))
    return [Phase(r, q, k0, T, (r * stride + k0 * kdil - lo) // idil, stride // g,
                  kdil // h) for r, k0 in sorted(pairs)]


def covers_all(found: list[Phase], out: int) -> bool:
    """True when the classes reach every output position (no zero-fill needed)."""
    if not found:
        return out == 0
    q = found[0].q
    return len(found) >= min(q, out)
