"""What the processor is: its vendor and model name, read once from ``/proc/cpuinfo``
(Linux), else from :mod:`platform`.  The dispatch reads the vendor where a measured
crossover differs between vendors' cores (:data:`.dispatch.WINOGRAD_VENDORS`); the
bench prints the model name."""

from __future__ import annotations

import functools
import platform

__all__ = ["model", "vendor"]


@functools.cache
def _cpuinfo() -> dict[str, str]:
    """The first processor's fields in ``/proc/cpuinfo`` (empty where there is none)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break  # the end of the first processor's block
                key, _, value = line.partition(":")
                fields.setdefault(key.strip().lower(), value.strip())
    except OSError:
        pass
    return fields


def vendor() -> str:
    """The x86 vendor string (``"GenuineIntel"``, ``"AuthenticAMD"``), else what
    :func:`platform.processor` says (``""`` where it says nothing)."""
    return _cpuinfo().get("vendor_id") or platform.processor()


def model() -> str:
    """The processor's model name, else its architecture."""
    return _cpuinfo().get("model name") or platform.processor() or platform.machine()
