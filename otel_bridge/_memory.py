"""Memory given back to the operating system after a peak.

Why: CPython's allocator and glibc's keep what a peak took. A reader that met a line of
megabytes (a tool's huge output, or a hostile line refused after it was read whole) holds its
bytes, and perhaps its decoded values, for a moment; once they are freed, the process's
resident size stays at the peak unless the C allocator is told to return its free pages
(`malloc_trim(0)`, glibc 2.8 and later: every arena, by madvise). A daemon that runs for months
beside agents must settle back. Elsewhere (macOS, musl) this does nothing: those allocators
return large blocks on their own or have no such call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable

__all__ = ["give_back"]


def _trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    return trim


_MALLOC_TRIM = _trim()


def give_back() -> bool:
    """Return the allocator's free memory to the system; False where that cannot be done.
    Costs about a millisecond: call it after a peak, not on every read."""
    if _MALLOC_TRIM is None:
        return False
    _MALLOC_TRIM(0)
    return True
