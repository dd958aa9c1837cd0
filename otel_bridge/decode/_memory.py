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
import sys
from collections.abc import Callable

__all__ = ["give_back", "malloc_trim"]


def malloc_trim() -> Callable[[], object] | None:
    """glibc's `malloc_trim(0)`, or None where there is none (macOS, musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim  # glibc; musl has no such symbol
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


_MALLOC_TRIM = malloc_trim()


def give_back() -> bool:
    """Return the allocator's free memory to the system; False where that cannot be done.
    Costs about a millisecond: call it after a peak, not on every read."""
    if _MALLOC_TRIM is None:
        return False
    _MALLOC_TRIM()
    return True
