"""Hypothesis profiles: "ci" (default, fast) and "thorough" (>= 20,000 fuzz draws in all).

The fuzz tests take ``max_examples`` from the loaded profile (torch: 1x for convolution
and 1x for transposed convolution, JAX: 1/2x), so "thorough" runs 8,000 + 8,000 + 4,000
draws.  Pick a profile with ``pytest --hypothesis-profile=thorough``.
"""

from hypothesis import settings

settings.register_profile("ci", max_examples=150, deadline=None, print_blob=True)
settings.register_profile("thorough", max_examples=8000, deadline=None, print_blob=True)
settings.load_profile("ci")  # the hypothesis plugin loads --hypothesis-profile after this
