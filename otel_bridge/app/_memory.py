"""Giving memory back to the operating system once a burst of work is over.

A catch-up reads thousands of logs: their bytes, events, sessions and readers come and go,
and glibc's malloc keeps the pages they used (its free lists, and the heaps of the threads
that exported the spans) for the next burst, which for a daemon that then idles for days
never comes. Over 1,000 recent sessions that was some 3 MB of a 55 MB process (issue 28).
`malloc_trim(0)` hands free pages back; it is glibc's, so elsewhere (musl, macOS) this does
nothing. It is called when a catch-up ends and when many logs were let go at once (put to
sleep), never per poll: it walks the heap (a few milliseconds).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..decode._memory import malloc_trim

__all__ = ["LET_GO_AT_ONCE", "MemoryRelease", "malloc_trim"]

logger = logging.getLogger(__name__)

#: Logs put to sleep in one poll past which their memory is given back.
LET_GO_AT_ONCE = 100


class MemoryRelease:
    """Decides, after each poll, whether to give memory back (see the module)."""

    def __init__(self, trim: Callable[[], object] | None = None) -> None:
        self._trim = trim if trim is not None else malloc_trim()
        self._catching_up = True  # a start is a catch-up, however small
        self._huge_lines = 0
        self.released = 0  # times memory was given back

    def after_poll(self, catching_up: bool, let_go: int, huge_lines: int = 0) -> None:
        """`catching_up`: logs are still to be read to their end once; `let_go`: logs the
        poll put to sleep; `huge_lines`: lines of megabytes read so far (`ReadStats`), whose
        bytes the allocator keeps unless told (a tool's output of 16 MB, or a hostile line
        refused after it was read whole, left 22 MB behind)."""
        ended = self._catching_up and not catching_up
        huge = huge_lines != self._huge_lines
        self._catching_up = catching_up
        self._huge_lines = huge_lines
        if self._trim is None or catching_up:  # the catch-up's end gives back all at once
            return
        if not (ended or huge or let_go >= LET_GO_AT_ONCE):
            return
        try:
            self._trim()
        except Exception:  # a foreign function: never worth stopping the daemon for
            logger.debug("malloc_trim failed", exc_info=True)
            self._trim = None
            return
        self.released += 1
