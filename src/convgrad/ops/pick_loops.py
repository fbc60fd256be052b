"""One element picked per position along an axis, and its adjoint, as compiled loops
(Numba, :mod:`.jit`): a classifier's loss picking the target class's log-probability
at every pixel or voxel.

Arrays are seen as in :mod:`.softmax_loops`: ``(outer, C, inner)`` for the dense array
(``C`` the axis) and ``(outer, inner)`` for the indices and the picked values.

* ``pick``:  ``out[o, i] = x[o, t[o, i], i]``;
* ``place``: ``out[o, c, i] = g[o, i]`` where ``c == t[o, i]``, else 0 (each position
  receives exactly one value: no sum, so no order, and the zeros written in the same
  pass).

The indices must lie in ``[0, C)``: the caller checks them (an index outside would read
or write outside the arrays).  NumPy's fancy indexing took 4.2 ms to pick the class of
each voxel of a channels-last (2, 3, 64, 64, 64) array and ``np.add.at`` 8.5 ms to place
the gradients.
"""

from __future__ import annotations

from . import jit

__all__ = ["loops"]


def _compile(numba) -> dict:
    """``{"pick": (rows, blocks), "place": (rows, blocks)}`` compiled: what ``loops()``
    returns (None without Numba); the rows forms take ``(outer, C)`` and ``(outer,)``
    views where ``inner`` is 1 (as :mod:`.softmax_loops`)."""
    parallel = jit.thread_safe()
    prange = numba.prange if parallel else range
    njit = numba.njit(nogil=True, cache=True, parallel=parallel)

    @njit
    def pick(x, t, out):
        outer, _, inner = x.shape
        for o in prange(outer):
            for i in range(inner):
                out[o, i] = x[o, t[o, i], i]

    @njit
    def place(g, t, out):
        outer, k, inner = out.shape
        for o in prange(outer):
            for c in range(k):
                for i in range(inner):
                    out[o, c, i] = g[o, i] if t[o, i] == c else 0

    @njit
    def pick_rows(x, t, out):
        for p in prange(x.shape[0]):
            out[p] = x[p, t[p]]

    @njit
    def place_rows(g, t, out):
        for p in prange(out.shape[0]):
            for c in range(out.shape[1]):
                out[p, c] = 0
            out[p, t[p]] = g[p]

    return {"pick": (pick_rows, pick), "place": (place_rows, place)}


#: the compiled loops, loaded on first use (and by :func:`.jit.warm_up`)
loops = jit.compiled(_compile)
