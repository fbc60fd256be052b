"""``convgrad bench``: the benchmark workloads (W1-W8, MS, S1, N1 and N2) for convgrad and
the installed peers.

Modules: :mod:`.workloads` (the table, as data), :mod:`.peers` (one adapter per
implementation), :mod:`.networks` (the training steps N1 and N2 in convgrad and torch,
and their agreement check), :mod:`.runner` (interleaved timing, medians, agreement check),
:mod:`.report` (table, JSON, chart) and :mod:`.memory` (peak memory, run as
``python -m convgrad.cli.bench.memory``).  Only NumPy is imported at package import;
torch, jax, mlx, tqdm, threadpoolctl and matplotlib load when the bench runs.
"""

from __future__ import annotations

from .command import run_bench
from .workloads import THREADS

__all__ = ["THREADS", "run_bench"]
