"""Replay: read finished (or growing) session logs once, from the first byte to the last.

Each log is opened as `open_regular` opens it (a regular file only, no link followed below the
directory it was found in) and read up to the size it had when opened: a FIFO cannot block
the replay, nor a file that grows without end keep it going. A log larger than
`max_log_bytes` is not read at all (a failure, said in one line).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..decode._events import Event
from ..decode._lines import DEFAULT_MAX_LINE_BYTES, JsonLinesDecoder, ReadStats
from ..decode._memory import give_back
from ..files._safe_open import open_regular
from ..metrics._recorder import MetricsRecorder
from ._discovery import DEFAULT_MAX_LOG_BYTES, LogFile
from ._health import SkipCounter

__all__ = ["Feed", "ReplaySummary", "replay_logs"]

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20


class Feed(Protocol):
    """Where replayed events go (`feed.StreamFeeder`): replay knows nothing of spans."""

    @property
    def metrics(self) -> MetricsRecorder: ...

    def feed(self, stream: str, events: list[Event], hint: str | None, *, end: bool = False) -> int:
        """Feed (and count) events; `end`: the stream is over. Returns the spans emitted."""
        ...


@dataclass
class ReplaySummary:
    """What a replay read and produced."""

    files: int = 0
    bytes: int = 0
    spans: int = 0
    read: ReadStats = field(default_factory=ReadStats)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    # Read, but no line was an event: a binary or some other file named events.jsonl. A failure
    # (`replay` exits 1): the user pointed at it, and nothing came of it.
    not_logs: list[str] = field(default_factory=list)
    # No line at all: a session that has just started. Not a failure, but said.
    empty: list[str] = field(default_factory=list)

    def merge(self, other: ReplaySummary) -> None:
        """Add what another replay (of other logs, e.g. in a worker process) read."""
        self.files += other.files
        self.bytes += other.bytes
        self.spans += other.spans
        self.read.merge(other.read)
        self.failed.extend(other.failed)
        self.not_logs.extend(other.not_logs)
        self.empty.extend(other.empty)


def replay_logs(
    logs: Sequence[LogFile],
    feed: Feed,
    *,
    on_progress: Callable[[int], None] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
) -> ReplaySummary:
    """Read each log to its end and `feed` its events.

    Open spans at the end of each file close there (marked incomplete), so every span ends.
    A file that cannot be read is logged and listed in the summary; the others go on. So is a
    file in which no line is a Copilot event (in one line, instead of one per bad line), and an
    empty one (at INFO: a session that has just started has an empty log).

    Args:
        logs: the logs, each its own session.
        feed: takes the events of each log (`feed.StreamFeeder`: the assembler, then emit).
        on_progress: called with the number of bytes just read.
        max_line_bytes: lines longer than this are skipped and counted.
        max_log_bytes: logs larger than this are not read (listed as failed).
    """
    summary = ReplaySummary()
    skips = SkipCounter(summary.read, feed.metrics)
    for log in logs:
        stream = str(log.path)
        decoder = JsonLinesDecoder(stream, max_line_bytes=max_line_bytes, stats=summary.read)
        failures = len(summary.failed)
        try:
            with open_regular(log.path, log.root) as handle:
                left = handle.stat.st_size
                if left > max_log_bytes:
                    why = f"{left} bytes, more than --max-log-bytes ({max_log_bytes})"
                    logger.error("not reading %s: %s", log.path, why)
                    summary.failed.append((stream, why))
                    left = 0
                while left > 0 and (chunk := handle.read(min(_CHUNK, left))):
                    size = len(chunk)
                    left -= size
                    summary.bytes += size
                    huge = decoder.stats.huge_lines
                    summary.spans += feed.feed(stream, decoder.feed(chunk), log.session_hint)
                    if decoder.stats.huge_lines != huge:  # a line of megabytes came and went
                        del chunk
                        give_back()
                    if on_progress is not None:
                        on_progress(size)
        except OSError as exc:
            why = exc.strerror or str(exc)
            logger.error("cannot read %s: %s", log.path, why)
            summary.failed.append((stream, why))
        events = decoder.finish()
        if len(summary.failed) == failures:  # read to its end
            _judge(decoder, stream, summary)
        summary.spans += feed.feed(stream, events, log.session_hint, end=True)
        summary.files += 1
        skips.update()
    return summary


def _judge(decoder: JsonLinesDecoder, stream: str, summary: ReplaySummary) -> None:
    """Say in one line when a whole file gave no event: not a log, or an empty one."""
    why = decoder.without_events()
    if why is not None:
        logger.error("%s: not a Copilot session log: %s", stream, why)
        summary.not_logs.append(stream)
    elif not decoder.lines_read:
        logger.info("%s: empty", stream)
        summary.empty.append(stream)
