"""Freed arrays stay in the process heap between training steps (glibc only).

A training step allocates its activations and gradients afresh and frees them at its
end.  A fresh process's glibc hands the top of its heap back to the system as soon as
a few MiB are free there (its trim threshold starts at 128 KiB and only grows, to twice
the largest memory-mapped block freed so far, up to 64 MiB), so every step
page-faults its arrays in again: measured on the N1 training step (2 cores, AVX-512
Xeon, a fresh process), 7,000 minor faults and 59-76 ms per step.  Setting from the
start the thresholds glibc adopts by itself once a 32 MiB block has been freed (blocks
below 32 MiB from the heap, trimmed beyond 64 MiB free) removes them: under 1 fault and
42 ms per step.  A padded heap top alone (``M_TOP_PAD``) did as well for the step but
pins the memory-map threshold at 128 KiB, which made torch's MS-SSIM in the same
process 1.8x slower; these thresholds did not.  The trim threshold is 256 MiB, not the
64 MiB glibc would reach: a step that frees more than 64 MiB at the heap top at once
(two 3x3 convolutions of (16, 32, 64, 64) with their ReLUs and backward) was trimmed on
every step, 4,100 minor faults per step, and 0.9 with 256 MiB; at most that much freed
memory stays mapped between steps.

Arrays of 32 MiB and more (a 3-D U-Net's (2, 16, 64, 64, 64) float32 activations) are
above glibc's largest memory-map threshold: each was mapped afresh, its pages zeroed and
faulted in, and unmapped when freed, every step (3.7-4.8 ms for each 33.5 MB array,
against 0.4 ms from the heap; N5 took 16-22 thousand minor faults per step).  With no
memory maps at all (``M_MMAP_MAX`` 0) they come from the heap and are reused like the
rest: N5's step 980-1170 -> 860-925 ms, 7 faults per step, the same peak memory (1.09 GB);
N3, N4 and N6 unchanged.  glibc still maps memory where its heap cannot grow (a thread's
arena, an exhausted address range), so no allocation fails for it.

A step whose arrays are larger still frees more than 256 MiB at once at the heap top (a
super-resolution net's (64, 64, 85, 85) activations, 118 MB each) and was trimmed and
page-faulted in again every step: :func:`follow_peak`, called at each optimiser step,
raises the trim threshold to the process's peak resident memory (at most a quarter of
the machine's), so freed memory kept between steps never exceeds what the process held
at its peak (pytorch/examples' super-resolution step, batch 64, alone: 1016-1074 ->
711-728 ms a step, minor faults 1.68M -> 0.59M over 6 steps, peak RSS 1358 MB both).

Left alone where the environment already sets a malloc policy (``MALLOC_*_`` variables
or ``GLIBC_TUNABLES``: dask workers return memory eagerly on purpose), on a C library
other than glibc, and with ``CONVGRAD_MALLOC=0``.

NumPy advises the kernel to back each array of 4 MiB and more with 2 MiB pages
(``madvise(MADV_HUGEPAGE)``); :func:`decline_huge_pages` turns that advice off, as torch
never gives it.  Each such page is zeroed whole on its first touch, and a first step
touches all its memory for the first time: measured on the 3-D U-Net (N5, 2 cores,
AVX-512 Xeon, a virtual machine whose kernel had free 2 MiB blocks and stalled on no
compaction), its first step took 1462-2029 ms with 0.9-2.1 s of system time, and 974-1028
ms with 0.3 s without the advice (torch's: 1073); its later steps 683-700 against
682-710 ms, ResNet-18's (N3) first step 290-296 against 255-265 ms.  Left alone where
``NUMPY_MADVISE_HUGEPAGE`` is set (the user chose) and with ``CONVGRAD_MALLOC=0``.
"""

from __future__ import annotations

import ctypes
import os
import platform

try:
    import resource
except ImportError:  # not on Windows: there follow_peak has no policy to follow (_trim)
    resource = None

__all__ = ["M_MMAP_MAX", "M_MMAP_THRESHOLD", "M_TRIM_THRESHOLD", "PEAK_SHARE", "THRESHOLDS",
           "decline_huge_pages", "follow_peak", "release_free", "tune_malloc"]

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_MMAP_MAX = -1, -3, -4  # glibc's malloc.h
# glibc's largest dynamic memory-map threshold on 64-bit; a trim threshold above the
# memory a step frees at once; no memory maps, so arrays above the threshold are reused
# too (see the module docstring)
THRESHOLDS = ((M_MMAP_THRESHOLD, 32 * 2**20), (M_TRIM_THRESHOLD, 256 * 2**20),
              (M_MMAP_MAX, 0))


def wanted() -> bool:
    """Whether the environment leaves the malloc policy to convgrad."""
    if os.environ.get("CONVGRAD_MALLOC", "").strip() == "0":
        return False
    return "GLIBC_TUNABLES" not in os.environ and not any(
        k.startswith("MALLOC_") and k.endswith("_") for k in os.environ)


def tune_malloc() -> bool:
    """Set :data:`THRESHOLDS` (once per process is enough); whether they were set."""
    if not wanted() or platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no mallopt in this process's C library
        return False
    done = all(mallopt(param, value) == 1 for param, value in THRESHOLDS)
    if done:
        _trim[:] = [mallopt, dict(THRESHOLDS)[M_TRIM_THRESHOLD], _physical() // PEAK_SHARE]
    return done


#: the trim threshold follows the peak resident memory up to this share (1/n) of the
#: machine's memory
PEAK_SHARE = 4
_trim: list = []  # [mallopt, the trim threshold set, its cap] once tune_malloc set them


def _physical() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def follow_peak() -> bool:
    """Raise glibc's trim threshold to the process's peak resident memory, at most
    1/:data:`PEAK_SHARE` of the machine's (see the module docstring), where
    :func:`tune_malloc` set the policy; whether it raised it.  Cheap (one ``getrusage``)."""
    if not _trim:
        return False
    mallopt, current, cap = _trim
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    wanted_trim = min(peak, cap)
    if wanted_trim <= current or mallopt(M_TRIM_THRESHOLD, wanted_trim) != 1:
        return False
    _trim[1] = wanted_trim
    return True


def decline_huge_pages() -> bool:
    """Turn NumPy's huge-page advice off (see the module docstring) unless
    ``NUMPY_MADVISE_HUGEPAGE`` is set or ``CONVGRAD_MALLOC=0``; whether it did."""
    if os.environ.get("CONVGRAD_MALLOC", "").strip() == "0" or (
            "NUMPY_MADVISE_HUGEPAGE" in os.environ):
        return False
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # a NumPy without the switch (it gives no advice to turn off)
        return False
    _set_madvise_hugepage(False)
    return True


def release_free() -> bool:
    """Hand the heap's free memory back to the system now (glibc's ``malloc_trim(0)``),
    so the next allocations page-fault in afresh; whether it ran.  For a measurement
    that must not inherit memory an earlier run freed (a benchmark's first step)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim(0)
    return True
