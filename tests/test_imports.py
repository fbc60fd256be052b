"""Oracle: a fresh Python interpreter per module (its exit status and its ``sys.modules``).

Each module of the package must import on its own, first, in a new process: an import
cycle that only works in one order, or a module that leans on another having been
imported before it, fails here.  ``import convgrad`` must not load the optional heavy
dependencies (they load inside the functions that need them); Numba loads with the
first convolution that runs its loops, not before.
"""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys

import pytest

import convgrad

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(convgrad.__path__, prefix="convgrad.")
    if info.name.rsplit(".", 1)[-1] != "__main__"  # running it is the command line
)
HEAVY = ("torch", "jax", "dask", "matplotlib", "skimage", "tqdm", "PIL", "pytorch_msssim",
         "numba")


def _python(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter that finds the package this test imported."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)


def test_every_module_is_listed():
    # the walk must see the layers and their modules, or the test below checks nothing
    for name in ("convgrad.ops.conv", "convgrad.autograd.engine", "convgrad.tensor.tensor",
                 "convgrad.functional.conv", "convgrad.nn.module", "convgrad.optim.adam",
                 "convgrad.metrics.ssim", "convgrad.serialization.checkpoint",
                 "convgrad.testing.gradcheck", "convgrad.cli.main", "convgrad.cli.msssim"):
        assert name in MODULES
    assert "convgrad.__main__" not in MODULES


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone_in_a_fresh_interpreter(module):
    code = (f"import sys, importlib; m = importlib.import_module({module!r}); "
            f"assert m.__name__ == {module!r}; print(m.__file__)")
    result = _python(code)
    assert result.returncode == 0, f"import {module} failed:\n{result.stderr}"
    # the module came from the tree under test, not from another installed copy
    assert os.path.commonpath([result.stdout.strip(), convgrad.__path__[0]]) \
        == convgrad.__path__[0]


def test_import_convgrad_loads_no_heavy_dependency():
    code = ("import sys, convgrad, convgrad.functional, convgrad.ops, convgrad.nn, "
            "convgrad.optim, convgrad.metrics, convgrad.serialization, convgrad.cli; "
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))")
    result = _python(code)
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.split())
    assert "convgrad" in loaded and "numpy" in loaded  # the check itself can see imports
    assert sorted(loaded & set(HEAVY)) == []


def test_numba_loads_with_the_first_convolution_that_uses_its_loops():
    pytest.importorskip("numba")
    code = "\n".join([
        "import sys, numpy as np, convgrad as cg",
        "x = np.ones((1, 8, 12, 12))",  # float64: the NumPy engine (oneDNN is float32)
        "with cg.profile() as prof:",
        "    cg.conv2d(x, np.ones((16, 8, 3, 3)))",  # 128 channel pairs: im2col
        "    print('numba' in sys.modules, prof.of('conv')[-1].algorithm)",
        "    cg.conv2d(x, np.ones((8, 1, 3, 3)), groups=8)",  # depthwise: direct
        "    print('numba' in sys.modules, prof.of('conv')[-1].algorithm)",
    ])
    result = _python(code)
    assert result.returncode == 0, result.stderr
    dense, depthwise = (line.split() for line in result.stdout.splitlines()[:2])
    assert dense[0] == "False" and dense[1] != "direct"  # a dense conv never needs numba
    assert depthwise == ["True", "direct"]
