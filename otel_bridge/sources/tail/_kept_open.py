"""The files of logs being written, kept open between reads.

Opening a log the safe way (`open_regular`: from a descriptor of its root, one component at a
time without following a link, then an `fstat`) costs some ten system calls and more Python
than the read itself; a log that grows a line at a time was opened that way for every line.
A log read live keeps its descriptor here instead, and the next read goes on with it when the
path still names that file (the stat the read takes anyway says so). The refusal of links,
FIFOs and paths leading out of the root stays where it was, at the open: a kept descriptor
is one that passed it, and a path that names another file now (replaced, or a link swapped
in) is opened again the safe way. A truncation or a rewrite in place is seen as before, by
the size and the first KiB of the open file.

Bounded: at most `capacity` descriptors, the least recently read closed first, and one not
read for `quiet_seconds` is closed (a log whose agent has stopped writing). The Collector's
file consumer keeps its readers' files open between polls the same way
(pkg/stanza/fileconsumer, `max_concurrent_files`).
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Callable, Container

from ...files._safe_open import RegularFile

__all__ = ["KeptOpen"]

#: Descriptors kept at most: under the soft limit of 1,024 most systems start a process with,
#: beside what `run` needs of its own (inotify, sockets, the checkpoint journal).
CAPACITY = 128
#: A descriptor not read for this long is closed: an agent between two lines (a model call, a
#: tool) writes again within seconds; one quiet for longer may be done.
QUIET_SECONDS = 30.0


class KeptOpen:
    """Open files by log (stream), least recently read first."""

    def __init__(
        self,
        capacity: int = CAPACITY,
        quiet_seconds: float = QUIET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._capacity = capacity
        self._quiet = quiet_seconds
        self._clock = clock
        self._files: OrderedDict[str, tuple[RegularFile, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._files)

    def take(self, stream: str, st: os.stat_result) -> RegularFile | None:
        """The kept file of `stream` if it is the file `st` (a stat of its path just now)
        describes, its `stat` taken again; None otherwise (one kept for another file is
        closed). The caller gives it back (`keep`) or closes it."""
        kept = self._files.pop(stream, None)
        if kept is None:
            return None
        handle = kept[0]
        try:
            if (handle.stat.st_dev, handle.stat.st_ino) == (st.st_dev, st.st_ino):
                handle.stat = os.fstat(handle.fileno())
                return handle
        except OSError:
            pass
        handle.close()
        return None

    def keep(self, stream: str, handle: RegularFile) -> None:
        """Keep `handle` open for the next read of `stream`; the least recently read go
        beyond the capacity, and those quiet for too long."""
        now = self._clock()
        old = self._files.pop(stream, None)
        if old is not None and old[0] is not handle:
            old[0].close()
        self._files[stream] = (handle, now)
        while len(self._files) > self._capacity:
            self._files.popitem(last=False)[1][0].close()
        self.close_quiet(now)

    def close_quiet(self, now: float | None = None) -> None:
        """Close the files not read for `quiet_seconds`."""
        if now is None:
            now = self._clock()
        while self._files:
            stream, (handle, used) = next(iter(self._files.items()))
            if now - used < self._quiet:
                return
            del self._files[stream]
            handle.close()

    def keep_only(self, streams: Container[str]) -> None:
        """Close the files of logs not in `streams` (the awake ones: a log asleep holds
        nothing but its file's identity and size), and those quiet for too long."""
        for stream in [stream for stream in self._files if stream not in streams]:
            self.discard(stream)
        self.close_quiet()

    def discard(self, stream: str) -> None:
        """Close the file of `stream`, if one is kept (the log is gone, or let go)."""
        kept = self._files.pop(stream, None)
        if kept is not None:
            kept[0].close()

    def close_all(self) -> None:
        while self._files:
            self._files.popitem()[1][0].close()
