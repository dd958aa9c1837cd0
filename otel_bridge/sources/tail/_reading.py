"""Reading an awake log: what was appended since the last read, at most `_READ_LIMIT`, decoded
and handed to the downstream (`Downstream.feed_positions`), its file replaced, truncated,
rewritten or removed told apart from a log that grew.

A stat says whether there is anything to do; the file is then opened as `open_regular` does
(a regular file, no link followed below the root), and what its `fstat` says is what counts.
(The OpenTelemetry Collector's file consumer has a reader per file the same way:
pkg/stanza/fileconsumer/internal/reader.)
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import semconv as sc
from ...checkpoint._file import FINGERPRINT_BYTES, fingerprint_of
from ...files._safe_open import RegularFile, kind, open_regular
from .._discovery import EVENTS_FILE
from .._gate import identity_key
from ._downstream import Downstream
from ._options import TailOptions
from ._reader import Reader
from ._tracker import Tracker

__all__ = ["Reading"]

# The name the lines of run's reading have always carried (people filter on it).
logger = logging.getLogger("otel_bridge.sources._tail")

#: Bytes read from one file per poll, so that one huge log cannot stall the rest. A log with
#: more to read is read again at once (`run` does not wait between polls then), unless the
#: exporters are behind. With back-pressure, a read is also kept to what the room left in the
#: export queue can take: an event is some 100 bytes at the least, and ends a span or two.
_READ_LIMIT = 1 << 20
_MIN_READ = 4096
_BYTES_PER_SPAN = 100
#: A read that stops inside a line reads on to its end (`_finish_line`, in steps from this
#: up to `_READ_LIMIT`), instead of every log of a catch-up holding a partial tool result of
#: megabytes at once, cut by small reads under back-pressure (tens of MiB, kept by malloc).
_LINE_STEP = 64 << 10
#: A line half written at the end of a file is held up to this size; a longer one is let go
#: and read again from disk when the file grows (`Reader.released`).
_HELD_LINE_BYTES = 64 << 10


class Reading:
    """Reads awake logs into `downstream`; the tracker's sets say what is behind or open.

    Args:
        options: limits.
        tracker: the known logs and their sets.
        downstream: takes the events.
        admissible: may this log (path, size, file) be followed? (refused if not)
        forget: a log gone, or refused now: forget it everywhere.
        ledger_after_restart: a new ledger for a log read again from its start.
        backlog, max_backlog: the exporters' backlog and the most a read may add to it.
    """

    def __init__(
        self,
        options: TailOptions,
        tracker: Tracker,
        downstream: Downstream,
        admissible: Callable[[str, int, int], bool],
        forget: Callable[[str], None],
        backlog: Callable[[], int] | None,
        max_backlog: int,
    ) -> None:
        self._options = options
        self._tracker = tracker
        self._downstream = downstream
        self._admissible = admissible
        self._forget = forget
        self._backlog = backlog
        self._max_backlog = max_backlog
        # Wall-clock seconds the bridge was not polling (paused, suspended): not quiet time.
        self.paused = 0.0
        self.more = False  # a read stopped at _READ_LIMIT: read again without waiting
        self.heartbeat = float("-inf")  # progress inside a poll, for run's /healthz
        self.last_lag: float | None = None  # seconds, of the last event read live
        self.caught_up_bytes = 0  # read of the catch-up at start, for a progress bar

    def exporters_behind(self) -> bool:
        """Back-pressure: while the exporters hold `max_backlog` spans or more, no log is read
        (they wait on disk, where nothing is lost), instead of the queue dropping its
        oldest."""
        return self._backlog is not None and self._backlog() >= self._max_backlog

    def read_limit(self) -> int:
        """How much of a log one read may take: `_READ_LIMIT`, or with back-pressure no more
        than the spans the export queue has room for would take (a small queue is not
        overrun by one read of many small events)."""
        if self._backlog is None:
            return _READ_LIMIT
        room = self._max_backlog - self._backlog()
        return max(_MIN_READ, min(_READ_LIMIT, room * _BYTES_PER_SPAN))

    def read_guarded(self, reader: Reader, now: float) -> int:
        """`read`, with whatever it raises (a bug met by an unusual log, past the session's
        own guard: decoding, scrubbing, queueing) logged once per log, counted, and the other
        logs read on: one log never stops the daemon. The log goes on from where reading got."""
        self.heartbeat = time.monotonic()
        try:
            return self.read(reader, now)
        except Exception as exc:
            if not reader.raised:
                reader.raised = True
                logger.warning(
                    "%s: reading it raised %s; it goes on from where reading got (details at "
                    "DEBUG)",
                    reader.log.path,
                    type(exc).__name__,
                )
            logger.debug("reading %s raised", reader.log.path, exc_info=True)
            self._downstream.metrics.add(
                sc.METRIC_EVENTS_FAILED, 1, {sc.OTEL_BRIDGE_STEP: "read"}, ""
            )
            return 0

    def read(self, reader: Reader, now: float) -> int:
        """Read what was appended to the log since the last read (at most `read_limit`).

        Another file (replaced: the rest of the old one is read first if it is still in
        the directory), a shorter one (truncated), or one whose first bytes changed
        (rewritten, even if longer) is read again from its start."""
        path = reader.log.path
        try:
            st = path.stat()
        except FileNotFoundError:
            self._removed(reader)
            return 0
        except OSError as exc:
            _failed(reader, f"cannot stat {path}: {exc.strerror or exc}")
            return 0
        if not stat.S_ISREG(st.st_mode):  # a FIFO or a directory now: not even opened
            _failed(reader, _unreadable(path, f"not a regular file ({kind(st.st_mode)})"))
            return 0
        if (st.st_dev, st.st_ino) == reader.identity and st.st_size == reader.read_pos:
            self.reached_end(reader)  # nothing new: not even opened
            return 0
        try:
            handle = open_regular(path, reader.log.root)
        except FileNotFoundError:
            self._removed(reader)
            return 0
        except OSError as exc:
            _failed(reader, _unreadable(path, exc.strerror or str(exc)))
            return 0
        with handle:
            return self._read_from(reader, handle, now)

    def _read_from(self, reader: Reader, handle: RegularFile, now: float) -> int:
        stream = reader.stream
        st = handle.stat
        size = st.st_size
        identity = (st.st_dev, st.st_ino)
        events = 0
        if identity != reader.identity:
            if not self._admissible(stream, size, identity_key(*identity)):
                self.stop_following(stream)
                return 0
            events = self._read_rotated(reader, now)
            self._start_over(reader, identity, "replaced")
        elif size < reader.read_pos:
            self._start_over(reader, identity, "truncated")
        elif 0 < reader.read_pos < size and not _same_start(reader, handle):
            self._start_over(reader, identity, "rewritten")
        if size > self._options.max_log_bytes:
            self._admissible(stream, size, identity_key(*identity))  # refused: said, counted
            self.stop_following(stream)
            return events
        if reader.error is not None:
            logger.info("%s can be read again", reader.log.path)
            reader.error = None
        if size <= reader.read_pos:
            self.reached_end(reader)
            return events
        return events + self._read_more(reader, handle, size, now)

    def _read_more(self, reader: Reader, handle: RegularFile, size: int, now: float) -> int:
        """Read the log's next bytes (up to `read_limit`, and on to the end of a line the
        read stopped in) and feed their events."""
        stream = reader.stream
        released = reader.rewind()  # a long partial line let go: read again from its start
        start = reader.read_pos
        wanted = min(size - start, self.read_limit() + released)
        chunk = handle.read_at(start, wanted)
        if start == 0 and chunk:
            reader.fingerprint = fingerprint_of(chunk[:FINGERPRINT_BYTES])
        positions = self._decode(reader, chunk, now)
        # A read that ends short is the end of the file, whatever its size said (truncated
        # meanwhile, or a file that tells no size): looked at again when it changes, not at
        # every poll.
        at_end = len(chunk) < wanted
        if not at_end and reader.decoder.pending_bytes:
            at_end = self._finish_line(reader, handle, positions, now)
        catching_up = not reader.caught_up
        if catching_up:
            self.caught_up_bytes += max(reader.read_pos - start - released, 0)
        if at_end or reader.read_pos >= size:
            if reader.decoder.pending_bytes > _HELD_LINE_BYTES:
                reader.release_partial()
            reader.end_seen = now
            self.reached_end(reader)
        else:
            reader.at_end = False
            self._tracker.behind.add(stream)
            self.more = True
        if positions:
            self.feed(reader, positions)
            is_open = stream in self._tracker.open
            if reader.at_end and is_open:
                self._say_waiting(reader, now)
            if catching_up and reader.caught_up and not is_open:
                # Read whole at start (or copied in): out of memory at once, not a minute
                # later, so that catching up on 10,000 logs does not hold 10,000 sessions.
                self._downstream.evict(stream, reader.ledger)
        return len(positions)

    def _finish_line(
        self, reader: Reader, handle: RegularFile, positions: list[tuple[Any, int]], now: float
    ) -> bool:
        """The read stopped inside a line: read on to its newline (not past it: the limits
        hold for the lines after it), its event added to `positions`; one event more, under
        back-pressure too. The decoder drops a line over `--max-line-bytes` as it goes, which
        ends this. Returns whether the end of the file came first."""
        size = handle.stat.st_size
        step = _LINE_STEP
        while reader.decoder.pending_bytes and reader.read_pos < size:
            wanted = min(size - reader.read_pos, step)
            piece = handle.read_at(reader.read_pos, wanted)
            newline = piece.find(b"\n")
            if newline >= 0:
                piece = piece[: newline + 1]
            positions.extend(self._decode(reader, piece, now))
            if newline < 0 and len(piece) < wanted:
                return True
            step = min(step * 2, _READ_LIMIT)
        return False

    def _decode(self, reader: Reader, chunk: bytes, now: float) -> list[tuple[Any, int]]:
        """The events of `chunk`, the next bytes of the log, counted (and, once the log is
        live, their lag: from their time, or from `Reader.end_seen` if later)."""
        if not chunk:
            return []
        reader.read_pos += len(chunk)
        reader.last_activity = now - self.paused
        positions = reader.decoder.feed_positions(chunk)
        self._downstream.count_read(len(positions))
        if reader.caught_up:  # catch-up reading is late by design; only live lag counts
            metrics = self._downstream.metrics
            for event, _ in positions:  # how late the reading is, not how old the event
                self.last_lag = max(now - max(event.timestamp_ns / 1e9, reader.end_seen), 0.0)
                metrics.record(sc.METRIC_EVENT_LAG, self.last_lag, {}, "")
        return positions

    def feed(self, reader: Reader, positions: list[tuple[Any, int]]) -> None:
        """Hand events to the downstream; note whether a task is open after them."""
        stream = reader.stream
        if self._downstream.feed_positions(
            stream, reader.log.session_hint, reader.ledger, positions
        ):
            self._tracker.open.add(stream)
        else:
            self._tracker.open.discard(stream)

    def _read_rotated(self, reader: Reader, now: float) -> int:
        """The log was replaced. If the old file is still in the session directory under
        another name (rotated: renamed, a new log made in its place), read what was appended
        to it since the last read before moving on; returns the events read. (One deleted
        is gone with what was left in it.)"""
        name = _renamed_to(reader.log.path.parent, reader.identity[1])
        if name is None:
            return 0
        events = 0
        try:
            with open_regular(reader.log.path.parent / name, reader.log.root) as old:
                st = old.stat
                if (st.st_dev, st.st_ino) != reader.identity:
                    return 0
                end = min(st.st_size, self._options.max_log_bytes)
                reader.rewind()
                while reader.read_pos < end:
                    wanted = min(end - reader.read_pos, self.read_limit())
                    chunk = old.read_at(reader.read_pos, wanted)
                    positions = self._decode(reader, chunk, now)
                    if positions:
                        self.feed(reader, positions)
                        events += len(positions)
                    if len(chunk) < wanted:
                        break
        except OSError:
            pass
        if events:
            logger.info("%s: read the rest of the file it replaced (%s)", reader.log.path, name)
        return events

    def _start_over(self, reader: Reader, identity: tuple[int, int], how: str) -> None:
        """The log's file was replaced, truncated or rewritten: what was open ends, and the
        new content is read from its start."""
        stream = reader.stream
        logger.info("%s was %s; reading it from the start", reader.log.path, how)
        self._downstream.end(stream)
        self._tracker.open.discard(stream)
        gate = self._tracker.gate
        gate.release(identity_key(*reader.identity), stream)
        gate.claim(identity_key(*identity), stream)
        reader.restart(identity, self._downstream.restarted_ledger(reader.ledger))

    def _removed(self, reader: Reader) -> None:
        logger.info("%s was removed; its open spans are closed", reader.log.path)
        self._downstream.end(reader.stream)
        self._forget(reader.stream)

    def stop_following(self, stream: str) -> None:
        """A followed (or sleeping) log that is refused now: what was open ends, and it is
        looked at again at every sweep (`Gate`)."""
        self._downstream.end(stream)
        self._forget(stream)

    def reached_end(self, reader: Reader) -> None:
        if self._tracker.reached_end(reader):
            _judge(reader)

    def _say_waiting(self, reader: Reader, now: float) -> None:
        """Say once a task that its agent loop has stopped but it waits for background work
        (shells, sub-agents) that will resume it: its line comes only when they report, or
        when the background wait is over. Not for a task whose wait is over already (an old
        log caught up: it ends at once)."""
        what = self._downstream.background_wait(reader.stream, reader.ledger, now)
        if what is not None:
            logger.info(
                "%s: its task's agent loop stopped; waiting up to %s", reader.log.path, what
            )


def _judge(reader: Reader) -> None:
    """Say once, instead of a warning per line, that a log read to its end has given no
    event. It is still followed: a log could yet become one (its bad lines were counted)."""
    why = reader.decoder.without_events()
    if why is not None and not reader.not_a_log_said:
        logger.warning(
            "%s: does not look like a Copilot session log so far: %s; still following it",
            reader.log.path,
            why,
        )
        reader.not_a_log_said = True


def _failed(reader: Reader, message: str) -> None:
    """Log a read problem once, not at every poll."""
    if reader.error != message:
        logger.warning("%s", message)
        reader.error = message


def _same_start(reader: Reader, handle: RegularFile) -> bool:
    """Does the file still begin as it did (its fingerprint: the first KiB, as the
    checkpoint's)? A log truncated and written again longer than it was is told apart
    from one that grew by this, not by its size. Takes the fingerprint of a file that
    has none yet, or a longer one."""
    head = handle.read_at(0, FINGERPRINT_BYTES)
    known = reader.fingerprint
    if known is not None:
        digest, length = known
        if len(head) < length or fingerprint_of(head[:length])[0] != digest:
            return False
        if length == len(head):
            return True
    reader.fingerprint = fingerprint_of(head)
    return True


def _unreadable(path: Path, why: str) -> str:
    return f"cannot read {path}: {why}; the other logs go on, and this one is tried again"


def _renamed_to(directory: Path, inode: int) -> str | None:
    """The name under which the file `inode` is in `directory` now, other than the log's."""
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.inode() == inode and entry.name != EVENTS_FILE and _is_file(entry):
                    return entry.name
    except OSError:
        pass
    return None


def _is_file(entry: Any) -> bool:
    try:
        return bool(entry.is_file(follow_symlinks=False))
    except OSError:
        return False
