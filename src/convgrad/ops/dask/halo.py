"""Per-dimension index arithmetic of a convolution computed chunk by chunk.

One spatial dim of a convolution (see :class:`~convgrad.ops.ConvSpec`): output position
``p`` reads the dilated, padded input at ``p*s + k*dk`` for taps ``k < K``, i.e. the
dilated input at ``t = p*s + k*dk - lo``; only multiples of the input dilation ``di``
are real samples, ``i = t / di`` with ``0 <= i < L``.  So the outputs ``[p0, p1)`` read
the samples ``[ceil((p0*s - lo)/di), floor(((p1-1)*s - lo + E)/di)]`` (``E = (K-1)*dk``,
the dilated kernel extent minus one), and the samples ``[q0, q1)`` feed the outputs ``p``
with ``q0*di + lo - E <= p*s <= (q1-1)*di + lo``.

A block of the input ``x[i0:i1]`` yields the outputs ``y[p0:p1]`` by the same
convolution with its padding moved: ``lo' = lo + i0*di - p0*s`` (a sample ``i`` sits
at ``(i - i0)*di`` in the block, output ``p`` reads from ``(p - p0)*s - lo'``) and
``hi'`` whatever makes the output ``p1 - p0`` long; either may be negative.

Chunk plans: an output chunk boundary follows each input chunk boundary ``b`` at
``ceil((b*di + lo - E//2) / s)`` (the output whose window is centred there, so a
``"same"`` convolution keeps its chunks and a stride-2 one halves them), and an input
gradient's chunk boundary follows each output-gradient boundary ``c`` at
``ceil((c*s - lo + E//2) / di)``, the inverse when the division is exact, so a
gradient comes back chunked like its input.  A plan pairs the chunks of the array that
is read (the source) with those of the array that is written (the target), one to one,
and gives each source block the halo its target block needs beyond it.  Halos come
from the neighbouring blocks only, so a source chunk smaller than the halo (or whose
target chunk would be empty) is merged with a neighbour.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

__all__ = ["Axis", "ChunkMap", "bounds", "chunk_map"]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def bounds(chunks: Sequence[int]) -> tuple[int, ...]:
    """Chunk sizes -> chunk boundaries ``(0, ..., length)``."""
    return (0, *accumulate(int(c) for c in chunks))


@dataclass(frozen=True)
class Axis:
    """One spatial dim of a convolution: input length ``length``, output length
    ``out_length``, ``stride``, ``extent = (K - 1) * kernel_dilation``,
    ``input_dilation`` and the padding before, ``lo``."""

    length: int
    out_length: int
    stride: int
    extent: int
    input_dilation: int
    lo: int

    def x_reads(self, p0: int, p1: int) -> tuple[int, int]:
        """Input samples ``[i0, i1)`` that the outputs ``[p0, p1)`` read (none: i1 <= i0)."""
        s, di = self.stride, self.input_dilation
        i0 = max(0, _ceil_div(p0 * s - self.lo, di))
        i1 = min(self.length, ((p1 - 1) * s - self.lo + self.extent) // di + 1)
        return i0, i1

    def y_reads(self, q0: int, q1: int) -> tuple[int, int]:
        """Outputs ``[p0, p1)`` whose windows reach the input samples ``[q0, q1)``."""
        s, di = self.stride, self.input_dilation
        p0 = max(0, _ceil_div(q0 * di + self.lo - self.extent, s))
        p1 = min(self.out_length, ((q1 - 1) * di + self.lo) // s + 1)
        return p0, p1

    def block_padding(self, x_range: tuple[int, int], y_range: tuple[int, int]
                      ) -> tuple[int, int]:
        """``(lo, hi)`` of the convolution that maps ``x[i0:i1]`` to ``y[p0:p1]``."""
        (i0, i1), (p0, p1) = x_range, y_range
        s, di = self.stride, self.input_dilation
        lo = self.lo + i0 * di - p0 * s
        # padded length (p1 - p0 - 1) * s + extent + 1 gives exactly p1 - p0 outputs
        hi = (p1 - p0 - 1) * s + self.extent - (i1 - i0 - 1) * di - lo
        return lo, hi

    def y_boundary(self, b: int) -> int:
        """Output chunk boundary that follows the input chunk boundary ``b``."""
        return _ceil_div(b * self.input_dilation + self.lo - self.extent // 2, self.stride)

    def x_boundary(self, c: int) -> int:
        """Input(-gradient) chunk boundary that follows the output chunk boundary ``c``."""
        return _ceil_div(c * self.stride - self.lo + self.extent // 2, self.input_dilation)


@dataclass(frozen=True)
class ChunkMap:
    """The chunking of one dim: source and target chunk boundaries (the same number of
    chunks, paired in order) and the halo ``(before, after)`` added to each source block
    (none beyond the array's ends)."""

    src: tuple[int, ...]
    tgt: tuple[int, ...]
    depth: tuple[int, int]

    @property
    def src_chunks(self) -> tuple[int, ...]:
        return tuple(b - a for a, b in zip(self.src, self.src[1:]))

    @property
    def tgt_chunks(self) -> tuple[int, ...]:
        return tuple(b - a for a, b in zip(self.tgt, self.tgt[1:]))

    def block_start(self, j: int) -> int:
        """Source index of the first sample of source block ``j``, halo included."""
        return max(0, self.src[j] - self.depth[0])

    def target(self, j: int) -> tuple[int, int]:
        return self.tgt[j], self.tgt[j + 1]


Reads = Callable[[int, int], tuple[int, int]]


def _halo(src: Sequence[int], tgt: Sequence[int], reads: Reads) -> tuple[int, int]:
    """The largest (before, after) reach of a target chunk beyond its source chunk."""
    before = after = 0
    for j in range(len(src) - 1):
        i0, i1 = reads(tgt[j], tgt[j + 1])
        if i1 > i0:
            before = max(before, src[j] - i0)
            after = max(after, i1 - src[j + 1])
    return before, after


def chunk_map(src: Sequence[int], tgt: Sequence[int], reads: Reads) -> ChunkMap:
    """Pair source boundaries ``src`` with target boundaries ``tgt`` (same length, from 0
    to each array's length; interior target boundaries may lie outside the target and
    are then dropped) and merge chunks until every halo comes from a neighbour.

    ``reads(t0, t1)`` gives the source range that the target range ``[t0, t1)`` needs.
    """
    src_len, tgt_len = src[-1], tgt[-1]
    pairs = []  # interior boundaries, strictly increasing on both sides
    last_s = last_t = 0
    for s, t in zip(src[1:-1], tgt[1:-1]):
        if last_s < s < src_len and last_t < t < tgt_len:
            pairs.append((s, t))
            last_s, last_t = s, t
    while True:
        s_b = (0, *(p[0] for p in pairs), src_len)
        t_b = (0, *(p[1] for p in pairs), tgt_len)
        depth = _halo(s_b, t_b, reads)
        need = max(depth)
        sizes = [b - a for a, b in zip(s_b, s_b[1:])]
        if not pairs or min(sizes) >= need:
            return ChunkMap(s_b, t_b, depth)
        kept, start = [], 0  # greedy merge: a boundary stays once its chunk is big enough
        for s, t in pairs:
            if s - start >= need:
                kept.append((s, t))
                start = s
        if kept and src_len - kept[-1][0] < need:
            kept.pop()
        pairs = kept
