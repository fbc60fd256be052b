"""Oracle: NumPy from the definition of the convolution, block by block over the same
(generated) data, with the test's own halo logic.

On a ``dask.distributed`` cluster of two single-threaded workers with 512 MiB each, a
strided 3-D convolution's forward, input gradient and weight gradient over a 1.5 GiB
input (3 times one worker's limit; with the output and both gradients 3.4 GiB, over
three times the cluster's memory) finish without any worker being lost to memory and
match the NumPy results (float32, max-norm relative 1e-5; the weight gradient's
error relative to the sum of its products' magnitudes).  The reference for
each output block runs in a task of the same graph next to the block it checks.
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

from convgrad.ops import ConvSpec, conv_forward, conv_input_grad, conv_weight_grad  # noqa: E402

N, D, H, W = 3, 512, 512, 512  # x: (N, 1, D, H, W) float32 = 1.5 GiB
SPEC = ConvSpec(stride=(2, 2, 2), padding=((1, 1),) * 3, kernel_dilation=(1, 1, 1),
                input_dilation=(1, 1, 1))
WEIGHT = np.random.default_rng(0).standard_normal((1, 1, 3, 3, 3)).astype(np.float32)
CHUNKS = ((1,) * N, (1,), (64,) * (D // 64), (128,) * (H // 128), (W // 4,) * 4)  # 4 MiB
# A worker holding NumPy, dask, distributed and convgrad takes about 150 MiB before any
# data; dask pauses a worker at 80% of its limit and a paused worker whose memory is
# not its data never resumes, so the limit leaves room for a few tasks above that.
MEMORY_LIMIT = "512MiB"
TIMEOUT_S = 600  # a stuck cluster fails the test instead of hanging the run


def _axis(length: int, start: int, stop: int, freq: float, phase: float) -> np.ndarray:
    """A cosine over [start, stop), zero outside [0, length)."""
    i = np.arange(start, stop)
    return np.where((i >= 0) & (i < length), np.cos(freq * i + phase), 0.0).astype(np.float32)


def x_values(n: int, d: tuple, h: tuple, w: tuple) -> np.ndarray:
    """x[n, 0, d0:d1, h0:h1, w0:w1], zero outside the volume: a smooth deterministic one."""
    a, b, c = _axis(D, *d, 0.05, n), _axis(H, *h, 0.07, 0.0), _axis(W, *w, 0.031, 0.3)
    c_in = _axis(W, *w, 0.0, 0.0)  # 1 inside, 0 outside
    return a[:, None, None] * b[None, :, None] * (c_in + 0.5 * c)[None, None, :]


def gy_values(n: int, d: tuple, h: tuple, w: tuple) -> np.ndarray:
    """gy[n, 0, ...] over output ranges, zero outside the output."""
    a = _axis(D // 2, *d, 0.09, -n)
    b, c = _axis(H // 2, *h, 0.05, 1.0), _axis(W // 2, *w, 0.04, 0.0)
    c_in = _axis(W // 2, *w, 0.0, 0.0)
    return a[:, None, None] * b[None, :, None] * (c + 0.1 * c_in)[None, None, :]


def _block(values, block_info=None):
    (n, _), _, d, h, w = block_info[None]["array-location"]
    return values(n, d, h, w)[None, None]


def reference(n: int, p: tuple, y_block: np.ndarray, gx_block: np.ndarray) -> dict:
    """NumPy on the y block of output ranges ``p`` (three (start, stop) pairs) and on the
    gx block of input ranges twice as long: errors of the dask blocks, and the block's
    share of the weight gradient.

    Output ``q`` reads ``x[2q - 1 + k]`` for tap ``k`` in every dim, so with x generated
    over ``[2 p0 - 1, 2 p1 + 1)`` tap ``k`` of all outputs is one strided slice; and
    ``gx[i]`` collects tap ``k`` of every output with ``2q - 1 + k = i``: the outputs
    ``p0 - 1 .. p1`` cover the inputs ``[2 p0, 2 p1)``.
    """
    m = [b - a for a, b in p]
    xs = x_values(n, *((2 * a - 1, 2 * b + 1) for a, b in p))
    gy = gy_values(n, *p).ravel().astype(np.float64)
    gy_wide = gy_values(n, *((a - 1, b + 1) for a, b in p))
    y_ref, gw, gw_abs = np.zeros(m, np.float32), np.zeros(WEIGHT.shape), np.zeros(WEIGHT.shape)
    acc = np.zeros([2 * k + 5 for k in m], np.float32)  # gx over [2 p0 - 3, 2 p1 + 2)
    for k in np.ndindex(3, 3, 3):
        wk = WEIGHT[(0, 0, *k)]
        tap = np.ascontiguousarray(xs[tuple(slice(k[i], k[i] + 2 * m[i], 2) for i in range(3))])
        y_ref += wk * tap
        gw[(0, 0, *k)] = np.dot(gy, tap.ravel())
        gw_abs[(0, 0, *k)] = np.dot(np.abs(gy), np.abs(tap.ravel()))  # the error's scale
        acc[tuple(slice(k[i], k[i] + 2 * (m[i] + 2), 2) for i in range(3))] += wk * gy_wide
    gx_ref = acc[tuple(slice(3, 3 + 2 * k) for k in m)]
    return {"y": (np.abs(y_block[0, 0] - y_ref).max(), np.abs(y_ref).max()),
            "gx": (np.abs(gx_block[0, 0] - gx_ref).max(), np.abs(gx_ref).max()),
            "gw": gw, "gw_abs": gw_abs}


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                       memory_limit=MEMORY_LIMIT, dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_a_nanny_in_this_process_leaves_its_thread_count(client):
    """dask's nannies set OMP_NUM_THREADS=1 in this process's environment for the workers
    they spawn (``distributed.nanny.pre-spawn-environ``); the client's convolutions keep
    the thread count the process started with."""
    import os

    from convgrad.ops import parallel

    if os.environ.get("CONVGRAD_NUM_THREADS") or parallel._OMP_AT_START:
        pytest.skip("the thread count was set when the process started")
    assert os.environ.get("OMP_NUM_THREADS") == "1"  # what the nanny left behind
    assert parallel.num_threads() == len(os.sched_getaffinity(0))


def test_strided_3d_convolution_and_gradients_out_of_core(client):
    workers = set(client.scheduler_info()["workers"])
    meta = np.empty((0,) * 5, np.float32)
    x = da.map_blocks(_block, x_values, dtype=np.float32, meta=meta, chunks=CHUNKS)
    assert x.nbytes == N * D * H * W * 4
    y = conv_forward(x, WEIGHT, SPEC)
    gy = da.map_blocks(_block, gy_values, dtype=np.float32, meta=meta, chunks=y.chunks)
    gx = conv_input_grad(gy, WEIGHT, x.shape, SPEC)
    gw = conv_weight_grad(x, gy, WEIGHT.shape, SPEC)
    assert y.chunks[2:] == tuple(tuple(c // 2 for c in dim) for dim in CHUNKS[2:])
    assert gx.chunks == x.chunks
    starts = [np.cumsum((0, *c)) for c in y.chunks]
    checks = [dask.delayed(reference)(b[0], tuple((starts[d][b[d]], starts[d][b[d] + 1])
                                                  for d in range(2, 5)), yb, gb)
              for b, yb, gb in zip(np.ndindex(y.numblocks), y.to_delayed().ravel(),
                                   gx.to_delayed().ravel())]
    futures = client.compute([gw, checks])
    distributed.wait(futures, timeout=TIMEOUT_S)
    gw_value, results = client.gather(futures)
    assert set(client.scheduler_info()["workers"]) == workers, "a worker was lost"
    for name in ("y", "gx"):
        err = max(r[name][0] for r in results) / max(r[name][1] for r in results)
        assert err <= 1e-5, f"{name}: max relative error {err:.2e}"
    # a float32 sum of millions of products that cancel: its error scales with the sum of
    # their magnitudes (oneDNN accumulates in float32 per chunk), not with the result
    gw_ref = sum(r["gw"] for r in results)
    scale = sum(r["gw_abs"] for r in results)
    err = (np.abs(gw_value - gw_ref) / scale).max()
    assert err <= 1e-5, f"weight gradient: max error {err:.2e} of the sum of |products|"
