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

from .._events import Event
from .._lines import DEFAULT_MAX_LINE_BYTES, JsonLinesDecoder, ReadStats
from .._records import SpanRecord
from .._safe_open import open_regular
from ..assembler import Assembler
from ._discovery import DEFAULT_MAX_LOG_BYTES, LogFile
from ._health import SkipCounter

__all__ = ["ReplaySummary", "replay_logs"]

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20


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
    assembler: Assembler,
    emit: Callable[[list[SpanRecord]], object],
    *,
    on_progress: Callable[[int], None] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
) -> ReplaySummary:
    """Read each log to its end and feed its events through `assembler` into `emit`.

    Open spans at the end of each file close there (marked incomplete), so every span ends.
    A file that cannot be read is logged and listed in the summary; the others go on. So is a
    file in which no line is a Copilot event (in one line, instead of one per bad line), and an
    empty one (at INFO: a session that has just started has an empty log).

    Args:
        logs: the logs, each its own session.
        assembler: turns events into span records.
        emit: receives the finished records, a batch at a time.
        on_progress: called with the number of bytes just read.
        max_line_bytes: lines longer than this are skipped and counted.
        max_log_bytes: logs larger than this are not read (listed as failed).
    """
    summary = ReplaySummary()
    skips = SkipCounter(summary.read, assembler.metrics)
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
                    left -= len(chunk)
                    summary.bytes += len(chunk)
                    records = assembler.feed(
                        stream, _counted(decoder.feed(chunk), assembler), log.session_hint
                    )
                    summary.spans += len(records)
                    emit(records)
                    if on_progress is not None:
                        on_progress(len(chunk))
        except OSError as exc:
            why = exc.strerror or str(exc)
            logger.error("cannot read %s: %s", log.path, why)
            summary.failed.append((stream, why))
        records = assembler.feed(stream, _counted(decoder.finish(), assembler), log.session_hint)
        if len(summary.failed) == failures:  # read to its end
            _judge(decoder, stream, summary)
        records += assembler.end_stream(stream)
        summary.spans += len(records)
        emit(records)
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


def _counted(events: list[Event], assembler: Assembler) -> list[Event]:
    """Count decoded events into otel_bridge.events.read: once a batch, not once an event
    (each observation costs the SDK a measurement)."""
    if events:
        assembler.metrics.add("otel_bridge.events.read", len(events), {}, "")
    return events
