"""Hypothesis profiles: "ci" (default, fast) and "thorough" (>= 20,000 fuzz draws in all).

The fuzz tests take ``max_examples`` from the loaded profile (torch: 1x for convolution
and 1x for transposed convolution, JAX: 1/2x), so "thorough" runs 8,000 + 8,000 + 4,000
draws.  Pick a profile with ``pytest --hypothesis-profile=thorough``.  The ``backend`` fixture
runs a test module's tests with oneDNN and again on the NumPy engine alone.  The suite
compiles the Numba loops in its process (``CONVGRAD_JIT_BUILD=inline``).
"""

import os

from hypothesis import HealthCheck, settings

# the suite compiles the loops it calls in its own process (a fresh checkout has none
# built: by default a process would run without them while a builder compiles them, and
# the tests that assert a loop ran would not see it); tests of that default unset it
os.environ.setdefault("CONVGRAD_JIT_BUILD", "inline")

# the backend fixture below holds for a whole fuzz test, all its draws: as intended
_ONCE = [HealthCheck.function_scoped_fixture]
settings.register_profile("ci", max_examples=150, deadline=None, print_blob=True,
                          suppress_health_check=_ONCE)
settings.register_profile("thorough", max_examples=8000, deadline=None, print_blob=True,
                          suppress_health_check=_ONCE)
settings.load_profile("ci")  # the hypothesis plugin loads --hypothesis-profile after this


import pytest  # noqa: E402

from convgrad.ops import onednn_available, prefer  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _loops_compiled_before_the_first_test():
    """Every Numba loop compiled on the main thread before the first test: compiled on the
    warm-up thread (a fresh checkout's cache is empty), Numba's compiler swapped the
    process's warning filters under a test's ``pytest.warns``, which then missed its
    warning (see :func:`convgrad.ops.jit_build.compile_on_this_thread`)."""
    from convgrad.ops import jit_build

    jit_build.compile_on_this_thread()


@pytest.fixture(params=["onednn", "numpy"])
def backend(request):
    """Run a test twice: with oneDNN where it runs a pass (its default on Linux x86_64)
    and on the NumPy engine alone.  Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("backend")``."""
    if request.param == "onednn" and not onednn_available():
        pytest.skip("oneDNN is not available here")
    with prefer(request.param):
        yield request.param


@pytest.fixture
def torch_threads_as_ours():
    """torch on as many threads as convgrad's kernels run (``CONVGRAD_NUM_THREADS=1``, a
    one-core machine): oneDNN's float32 weight gradient is less accurate on one thread
    (one accumulator per weight) than on two, so a float32 error is compared with torch's
    at the same thread count."""
    torch = pytest.importorskip("torch")
    from convgrad.ops.parallel import num_threads

    saved = torch.get_num_threads()
    torch.set_num_threads(num_threads())
    try:
        yield
    finally:
        torch.set_num_threads(saved)
