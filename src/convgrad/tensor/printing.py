"""``set_printoptions``: how a Tensor's repr shows its values (torch's options).

Until the first call a Tensor prints with NumPy's defaults (up to 8 digits, trimmed);
once options are set the values print as torch's: ``precision`` digits after the point
(fixed), the middle of arrays longer than ``threshold`` elided with ``edgeitems`` shown
at each end, lines up to ``linewidth`` characters, and ``sci_mode`` forcing (True) or
refusing (False) scientific notation, or leaving it to the values (None).
"""

from __future__ import annotations

import math
import sys
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = ["format_array", "set_printoptions"]

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


class _Options:
    values: dict[str, Any] = {}  # empty until set_printoptions: NumPy's own defaults
    sci_mode: bool | None = None


_options = _Options()


def _count(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"set_printoptions: {name}={value!r} must be an int")
    if value < least:
        raise ValueError(f"set_printoptions: {name}={value!r} must be >= {least}")
    return int(value)


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set how Tensors print, as ``torch.set_printoptions``: ``profile`` (``"default"``,
    ``"short"`` or ``"full"``) sets the first four options at once, the others override
    it; options left None keep their value, except ``sci_mode``, set by every call."""
    fn = "set_printoptions"
    new = dict(_options.values) or dict(_PROFILES["default"])
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"{fn}: profile={profile!r} must be one of 'default', 'short' "
                             "or 'full'")
        new.update(_PROFILES[profile])
    if precision is not None:
        new["precision"] = _count("precision", precision, 0)
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, Real) or not (
                threshold >= 0):
            raise TypeError(f"{fn}: threshold={threshold!r} must be a number >= 0 "
                            "(math.inf: never elide)")
        new["threshold"] = threshold
    if edgeitems is not None:
        new["edgeitems"] = _count("edgeitems", edgeitems, 0)
    if linewidth is not None:
        new["linewidth"] = _count("linewidth", linewidth, 1)
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise TypeError(f"{fn}: sci_mode={sci_mode!r} must be True, False or None")
    _options.values, _options.sci_mode = new, sci_mode


def format_array(data: np.ndarray) -> str:
    """The values part of a Tensor's repr under the current print options."""
    opts = _options.values
    if not opts:
        return np.array2string(data, separator=", ", prefix="tensor(")
    p = opts["precision"]
    kw: dict[str, Any] = {"precision": p, "edgeitems": opts["edgeitems"],
                          "max_line_width": opts["linewidth"], "floatmode": "fixed",
                          "threshold": sys.maxsize if math.isinf(opts["threshold"])
                          else int(opts["threshold"])}
    if data.dtype.kind == "f" and _options.sci_mode is not True and data.size:
        finite = data[np.isfinite(data)]
        if np.array_equal(finite, np.round(finite)):  # whole numbers print as "2." (torch)
            kw["floatmode"] = "maxprec"
    if _options.sci_mode is not None and data.dtype.kind == "f":
        if _options.sci_mode:
            def sci(v: float) -> str:
                return np.format_float_scientific(v, precision=p, unique=False)

            width = max((len(sci(v)) for v in data.flat), default=0)  # aligned, as torch
            kw["formatter"] = {"float_kind": lambda v: sci(v).rjust(width)}
        else:
            kw["suppress_small"] = True
    return np.array2string(data, separator=", ", prefix="tensor(", **kw)
