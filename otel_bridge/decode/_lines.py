"""A tolerant, incremental JSON Lines decoder for Copilot session logs.

Why a decoder of our own rather than `for line in file`:
- Lines end at b"\\n" only. Python's str.splitlines() also splits on U+2028/U+2029, which are
  ordinary characters inside JSON strings (prompts and tool output contain them).
- A log is read while it grows: the last line may be half written. The decoder keeps the partial
  line and reports `offset`, the end of the last complete line, which is what a checkpoint may
  safely store.
- Bad input must never stop a file: a malformed line is logged with its place, counted, skipped;
  bytes that are not UTF-8 are replaced; a line over the size cap is dropped without buffering it;
  a torn line (a truncated event that runs into a complete one, seen after `copilot --resume`)
  still yields the complete event; an event nested deeper than the JSON decoder goes (about
  1,000 levels) is counted as such, apart from malformed lines.
- Bad input must cost no more than its size: every line, however it was built, is decoded in
  time linear in its length (see `_torn_lines.torn_start`), so that one hostile log cannot
  stall the others.
- Bad input must not flood the log either. Until a file read from its start has given an event,
  its bad lines are counted, not logged: a file that never gives one is not a Copilot log at all
  (a binary, some other JSON), and its reader says so in one line (`without_events`); if an event
  does come, one line says how many bad lines came before it. After that, the first few bad lines
  are logged with their place and the rest only counted.

Each line is parsed once, on the fast path when it can (`_envelope.fast_event`: msgspec for
the envelope, orjson for a small `data`, a large one decoded only when read): what that path
cannot take as `json` would (NaN, lone surrogate escapes, bytes that are not UTF-8, numbers
beyond 64 bits) takes the tolerant `json` path as before, so such numbers stay exact.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field

from .._exceptions import EventDecodeError
from ._envelope import fast_event
from ._event_types import KNOWN_EVENT_TYPES
from ._events import Event, event_from_json
from ._torn_lines import recover_torn
from ._wide import WIDE_CHECK_BYTES, too_wide

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "MAX_UNKNOWN_TYPES",
    "OTHER_UNKNOWN_TYPES",
    "JsonLinesDecoder",
    "ReadStats",
]

logger = logging.getLogger(__name__)

#: Lines longer than this are skipped (the CLI trims tool results on disk; 16 MiB is far above
#: anything seen, and bounds memory per followed file).
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024

#: Per file, this many bad lines are logged at WARNING; the rest are only counted (the summary at
#: the end of `replay` and `run` gives the counts).
_LOGGED_PROBLEMS_PER_FILE = 5

#: Distinct unknown event types `ReadStats` counts by name; events of further types are counted
#: under `OTHER_UNKNOWN_TYPES`. The CLI writes `model.*` types with a hash in their names during
#: compactions: without a cap a daemon would keep one entry per compaction, forever.
MAX_UNKNOWN_TYPES = 100
OTHER_UNKNOWN_TYPES = "other"


@dataclass
class ReadStats:
    """What reading saw; the bridge's own health numbers come from these.

    Attributes:
        unknown_types: events of types the bridge does not know, by type: at most
            MAX_UNKNOWN_TYPES types by name, the events of any further type under "other"
            (`count_unknown`); the total is exact.
        unknown_types_capped: some type was counted under "other" for want of room.
    """

    lines: int = 0
    events: int = 0
    malformed: int = 0
    torn: int = 0
    oversized: int = 0
    too_deep: int = 0  # nested deeper than the JSON decoder goes: dropped whole
    too_wide: int = 0  # more values than its size holds as text (`_wide.too_wide`): dropped whole
    invalid_utf8: int = 0
    #: lines of `WIDE_CHECK_BYTES` or more, read or refused: not a problem, but their reader
    #: gives memory back after them (`_memory.give_back`), as the allocator keeps what a peak
    #: took
    huge_lines: int = 0
    unknown_types: Counter[str] = field(default_factory=Counter)
    unknown_types_capped: bool = False

    def count_unknown(self, event_type: str, count: int = 1) -> None:
        """Count `count` events of an unknown type: by its name while there is room."""
        known = self.unknown_types
        if event_type not in known and len(known) >= MAX_UNKNOWN_TYPES:
            event_type = OTHER_UNKNOWN_TYPES
            self.unknown_types_capped = True
        known[event_type] += count

    def merge(self, other: ReadStats) -> None:
        """Add another file's counts to these."""
        self.lines += other.lines
        self.events += other.events
        self.malformed += other.malformed
        self.torn += other.torn
        self.oversized += other.oversized
        self.too_deep += other.too_deep
        self.too_wide += other.too_wide
        self.invalid_utf8 += other.invalid_utf8
        self.huge_lines += other.huge_lines
        for event_type, count in other.unknown_types.items():
            self.count_unknown(event_type, count)
        self.unknown_types_capped |= other.unknown_types_capped

    def skips(self) -> dict[str, int]:
        """Lines lost, by reason (a torn line lost its truncated first event); the keys are the
        `otel_bridge.reason` values of otel_bridge.lines.skipped."""
        return {
            "malformed": self.malformed,
            "oversized": self.oversized,
            "torn": self.torn,
            "too_deep": self.too_deep,
            "too_wide": self.too_wide,
        }


class JsonLinesDecoder:
    """Turns the bytes of one growing log into events, a chunk at a time.

    Not thread-safe: one decoder belongs to one reader of one file.

    Args:
        label: how log lines name the file (usually its path).
        start_offset: the byte offset in the file where the first fed byte sits.
        max_line_bytes: lines longer than this are skipped and counted as oversized.
        stats: counters to add to; a new `ReadStats` when omitted.
    """

    def __init__(
        self,
        label: str,
        *,
        start_offset: int = 0,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        stats: ReadStats | None = None,
    ) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self.label = label
        self.stats = stats if stats is not None else ReadStats()
        self._max = max_line_bytes
        self._buffer = bytearray()
        self._skipping = False  # inside an oversized line, dropping bytes until its newline
        self._dropped = 0  # bytes of that oversized line dropped so far
        self._offset = start_offset  # end of the last complete line consumed
        self._line_no = 0 if start_offset == 0 else None
        self._problems_logged = 0
        #: Non-blank lines and events of this file (`stats` may be shared between files).
        self.lines_read = 0
        self.events_read = 0
        # Bad lines held back (counted, not logged) until the first event: only for a file read
        # from its start. A decoder that starts inside a file continues a log that was judged
        # before (a checkpoint) or whose start was not read: its problems are logged at once.
        self._holding = start_offset == 0
        self._held = 0
        self._first_held = ""  # where the first held-back bad line was, and what was wrong

    @property
    def offset(self) -> int:
        """Byte offset just past the last complete line: where a restart may resume."""
        return self._offset

    @property
    def pending_bytes(self) -> int:
        """Bytes of a partial last line held back until its newline arrives."""
        return len(self._buffer)

    def drop_partial(self) -> int:
        """Let go of the partial last line held back; returns its length. It is still in the
        file, at `offset`: a reader that feeds it again from there gets what holding it would
        have given, without keeping megabytes of half-written lines in memory meanwhile."""
        held = len(self._buffer)
        self._buffer = bytearray()
        return held

    def feed(self, chunk: bytes) -> list[Event]:
        """Decode every complete line in `chunk` (plus what was held back before it)."""
        return [event for event, _ in self.feed_positions(chunk)]

    def feed_positions(self, chunk: bytes) -> list[tuple[Event, int]]:
        """As `feed`, with the byte offset just past each event's line: a checkpoint taken
        there resumes exactly after that event."""
        events: list[tuple[Event, int]] = []
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                self._hold(chunk[start:])
                return events
            part = chunk[start:newline]
            line_len = len(self._buffer) + len(part) + 1
            if self._skipping:
                self._skipping = False
                self._offset += self._dropped + line_len
                self._dropped = 0
            elif len(self._buffer) + len(part) > self._max:
                self._oversized(self._offset)
                self._offset += line_len
                self._buffer.clear()
            else:
                line: bytes | bytearray = part
                if self._buffer:  # the line is the buffer's: handed over, not copied
                    self._buffer += part
                    line, self._buffer = self._buffer, bytearray()
                event = self._decode_line(line, self._offset)
                self._offset += line_len
                if event is not None:
                    events.append((event, self._offset))
            if self._line_no is not None:
                self._line_no += 1
            start = newline + 1

    def without_events(self) -> str | None:
        """Why this file does not look like a Copilot session log, or None.

        "0 of 21 lines are events (line 1: not JSON)" when lines were read from the file's start
        and none was an event; None when an event was read, no line yet (an empty file: a
        session that has just started), or the file was not read from its start.
        """
        if not self._holding or not self.lines_read:
            return None
        are = "line is an event" if self.lines_read == 1 else "lines are events"
        return f"0 of {self.lines_read} {are} ({self._first_held})"

    def finish(self) -> list[Event]:
        """End of input: decode a last line that has no newline, if it is a complete event.

        A log that ends without a newline was either cut (the CLI crashed mid-write) or is still
        being written; replay calls this, a follower does not.
        """
        if self._skipping or not self._buffer:
            self._offset += self._dropped
            self._dropped = 0
            self._skipping = False
            return []
        line, self._buffer = self._buffer, bytearray()
        event = self._decode_line(line, self._offset)
        self._offset += len(line)
        return [event] if event is not None else []

    def _hold(self, rest: bytes) -> None:
        if self._skipping:
            self._dropped += len(rest)
            return
        if len(self._buffer) + len(rest) > self._max:
            self._oversized(self._offset)
            self._dropped = len(self._buffer) + len(rest)
            self._buffer.clear()
            self._skipping = True
            return
        self._buffer += rest

    def _oversized(self, offset: int) -> None:
        self.stats.lines += 1
        self.lines_read += 1
        self.stats.oversized += 1
        self._problem(
            f"line over {self._max} bytes skipped", f"over {self._max} bytes", offset=offset
        )

    def _decode_line(self, line: bytes | bytearray, offset: int) -> Event | None:
        if not line or line.isspace():  # blank (as line.strip() is empty, without a copy)
            return None
        self.stats.lines += 1
        self.lines_read += 1
        if len(line) >= WIDE_CHECK_BYTES and too_wide(line):
            self.stats.too_wide += 1
            self.stats.huge_lines += 1
            self._problem(
                "line skipped: more JSON values than its size holds as text (decoded, it "
                "would take many times its size in memory)",
                "too many values",
                offset=offset,
            )
            return None
        if len(line) >= WIDE_CHECK_BYTES:
            self.stats.huge_lines += 1
        event = fast_event(line, self.stats)
        if event is None:
            event = self._slow_event(line, offset)
            if event is None:
                return None
        if self._holding:
            self._first_event()
        self.stats.events += 1
        self.events_read += 1
        if event.type not in KNOWN_EVENT_TYPES:
            self.stats.count_unknown(event.type)
        return event

    def _slow_event(self, line: bytes | bytearray, offset: int) -> Event | None:
        """The tolerant path: the stdlib decoder, invalid UTF-8 replaced, a torn line repaired;
        None when the line is skipped (counted and reported)."""
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            # Keep the event: a broken byte inside a tool result must not lose the turn.
            self.stats.invalid_utf8 += 1
            text = line.decode("utf-8", errors="replace")
        error: Exception
        try:
            return event_from_json(json.loads(text))
        except (ValueError, RecursionError, EventDecodeError) as exc:
            # RecursionError: JSON nested deeper than the decoder goes (hostile or corrupt).
            error = exc
        try:
            torn = recover_torn(line)
        except RecursionError as exc:  # the complete event after a torn start is too deep
            torn, error = None, exc
        if torn is not None:
            self.stats.torn += 1
            self._first_event()
            self._problem(
                "torn line: a truncated event was dropped, the event after it kept",
                "torn",
                offset=offset,
            )
            return torn
        if isinstance(error, RecursionError):
            self.stats.too_deep += 1
            self._problem(
                "line skipped: nested too deeply (over about 1,000 levels) to decode",
                "too deeply nested",
                offset=offset,
            )
        else:
            self.stats.malformed += 1
            self._problem(
                f"malformed line skipped: {_short(error)}",
                "not JSON" if not isinstance(error, EventDecodeError) else _short(error),
                offset=offset,
            )
        return None

    def _first_event(self) -> None:
        """An event was read: the file is a Copilot log; say once what was held back."""
        if not self._holding:
            return
        self._holding = False
        if self._held:
            logger.warning(
                "%s: %d bad line%s before its first event skipped (the first, %s)",
                self.label,
                self._held,
                "s" if self._held != 1 else "",
                self._first_held,
            )

    def _problem(self, message: str, reason: str, *, offset: int) -> None:
        """Log a bad line (`message`; `reason`, shorter, for the one-line verdicts), unless
        it is held back or over the per-file cap."""
        if self._holding:
            self._held += 1
            if self._held == 1:
                place = (
                    f"line {self._line_no + 1}" if self._line_no is not None else f"byte {offset}"
                )
                self._first_held = f"{place}: {reason}"
            return
        self._problems_logged += 1
        if self._problems_logged > _LOGGED_PROBLEMS_PER_FILE:
            return
        where = f"{self.label}:{self._line_no + 1}" if self._line_no is not None else self.label
        logger.warning("%s (byte %d): %s", where, offset, message)
        if self._problems_logged == _LOGGED_PROBLEMS_PER_FILE:
            logger.warning("%s: further bad lines in this file are counted, not logged", self.label)


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 120 else text[:117] + "..."
