"""Replay: read finished (or growing) session logs once, from the first byte to the last."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .._assembler import Assembler
from .._events import Event
from .._lines import DEFAULT_MAX_LINE_BYTES, JsonLinesDecoder, ReadStats
from .._records import SpanRecord
from ._discovery import LogFile
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


def replay_logs(
    logs: Sequence[LogFile],
    assembler: Assembler,
    emit: Callable[[list[SpanRecord]], None],
    *,
    on_progress: Callable[[int], None] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> ReplaySummary:
    """Read each log to its end and feed its events through `assembler` into `emit`.

    Open spans at the end of each file close there (marked incomplete), so every span ends.
    A file that cannot be read is logged and listed in the summary; the others go on.

    Args:
        logs: the logs, each its own session.
        assembler: turns events into span records.
        emit: receives the finished records, a batch at a time.
        on_progress: called with the number of bytes just read.
        max_line_bytes: lines longer than this are skipped and counted.
    """
    summary = ReplaySummary()
    skips = SkipCounter(summary.read, assembler.metrics)
    for log in logs:
        stream = str(log.path)
        decoder = JsonLinesDecoder(stream, max_line_bytes=max_line_bytes, stats=summary.read)
        try:
            with log.path.open("rb") as handle:
                while chunk := handle.read(_CHUNK):
                    summary.bytes += len(chunk)
                    records = assembler.feed(stream, _counted(decoder.feed(chunk), assembler),
                                             log.session_hint)
                    summary.spans += len(records)
                    emit(records)
                    if on_progress is not None:
                        on_progress(len(chunk))
        except OSError as exc:
            why = exc.strerror or str(exc)
            logger.error("cannot read %s: %s", log.path, why)
            summary.failed.append((stream, why))
        records = assembler.feed(stream, _counted(decoder.finish(), assembler),
                                 log.session_hint)
        records += assembler.end_stream(stream)
        summary.spans += len(records)
        emit(records)
        summary.files += 1
        skips.update()
    return summary


def _counted(events: list[Event], assembler: Assembler) -> list[Event]:
    """Count decoded events into otel_bridge.events.read: once a batch, not once an event
    (each observation costs the SDK a measurement)."""
    if events:
        assembler.metrics.add("otel_bridge.events.read", len(events), {}, "")
    return events
