"""``convgrad.nn.functional`` is :mod:`convgrad.functional` (as ``torch.nn.functional``)."""

from __future__ import annotations

from ..functional import *  # noqa: F403
from ..functional import __all__  # noqa: F401
