"""Padding layers with torch's names and arguments: ``ReflectionPad1d/2d/3d``,
``ReplicationPad1d/2d/3d``, ``CircularPad1d/2d/3d``, ``ZeroPad1d/2d/3d``,
``ConstantPad1d/2d/3d``.

``padding`` is an int (every side) or one ``(left, right[, top, bottom[, front,
back]])`` tuple, last dim first, as :func:`convgrad.functional.pad` takes it; each
``forward`` is one ``F.pad`` call.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from ..functional.padding import pad as _pad
from ..tensor import Tensor
from .module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d"]


class _PadNd(Module):
    mode = "constant"
    nd = 1

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        fn = type(self).__name__
        if isinstance(padding, Integral) and not isinstance(padding, bool):
            padding = (int(padding),) * (2 * self.nd)
        else:
            try:
                padding = tuple(padding)
            except TypeError:
                raise TypeError(f"{fn}: padding={padding!r} must be an int or a tuple of "
                                f"{2 * self.nd} ints") from None
            if len(padding) != 2 * self.nd or any(
                    isinstance(p, bool) or not isinstance(p, Integral) for p in padding):
                raise ValueError(f"{fn}: padding={padding!r} must be an int or a tuple of "
                                 f"{2 * self.nd} ints")
        if isinstance(value, bool) or not isinstance(value, Real):
            raise TypeError(f"{fn}: value={value!r} must be a number")
        self.padding = tuple(int(p) for p in padding)
        self.value = float(value)

    def forward(self, input: Any) -> Tensor:  # noqa: A002 (torch's name)
        return _pad(input, self.padding, mode=self.mode, value=self.value)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if type(self).__name__.startswith(
            "Constant") else "")


def _layer(name: str, mode: str, nd: int, doc: str, constant: bool = False) -> type:
    ns: dict[str, Any] = {"mode": mode, "nd": nd, "__doc__": doc, "__module__": __name__}
    if not constant:
        def __init__(self: Any, padding: Any) -> None:
            _PadNd.__init__(self, padding)
        ns["__init__"] = __init__
    return type(name, (_PadNd,), ns)


_DOCS = {"reflect": "Pad by reflecting the input at its border (the edge not repeated).",
         "replicate": "Pad by repeating the edge value.",
         "circular": "Pad periodically (the opposite edge's values).",
         "zeros": "Pad with zeros.",
         "constant": "Pad with ``value``."}

ReflectionPad1d = _layer("ReflectionPad1d", "reflect", 1, _DOCS["reflect"])
ReflectionPad2d = _layer("ReflectionPad2d", "reflect", 2, _DOCS["reflect"])
ReflectionPad3d = _layer("ReflectionPad3d", "reflect", 3, _DOCS["reflect"])
ReplicationPad1d = _layer("ReplicationPad1d", "replicate", 1, _DOCS["replicate"])
ReplicationPad2d = _layer("ReplicationPad2d", "replicate", 2, _DOCS["replicate"])
ReplicationPad3d = _layer("ReplicationPad3d", "replicate", 3, _DOCS["replicate"])
CircularPad1d = _layer("CircularPad1d", "circular", 1, _DOCS["circular"])
CircularPad2d = _layer("CircularPad2d", "circular", 2, _DOCS["circular"])
CircularPad3d = _layer("CircularPad3d", "circular", 3, _DOCS["circular"])
ZeroPad1d = _layer("ZeroPad1d", "constant", 1, _DOCS["zeros"])
ZeroPad2d = _layer("ZeroPad2d", "constant", 2, _DOCS["zeros"])
ZeroPad3d = _layer("ZeroPad3d", "constant", 3, _DOCS["zeros"])
ConstantPad1d = _layer("ConstantPad1d", "constant", 1, _DOCS["constant"], constant=True)
ConstantPad2d = _layer("ConstantPad2d", "constant", 2, _DOCS["constant"], constant=True)
ConstantPad3d = _layer("ConstantPad3d", "constant", 3, _DOCS["constant"], constant=True)
