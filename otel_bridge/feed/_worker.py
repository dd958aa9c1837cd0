"""What runs in a `replay --jobs` worker process (see `_parallel.py`): one session log read
with an assembler of its own, through a `StreamFeeder`, into values the parent replays: the
batches of span records (scrubbed and encoded as `Prepare` says), the metric observations
(`RecordingRecorder`), the counts and the log records (`_Capture`). A worker ignores Ctrl-C
(the parent's to handle) and ends with its parent.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .._records import AttributeValue, SpanRecord
from ..assembler import Assembler, AssemblerConfig, AssemblerStats
from ..export import CredentialFilter, encode_record
from ..metrics._recorder import MetricsRecorder
from ..processors import Scrubber, ScrubberConfig
from ..sources import DEFAULT_MAX_LOG_BYTES, LogFile, ReplaySummary, replay_logs
from ._feeder import StreamFeeder

__all__ = [
    "Observation",
    "Prepare",
    "PreparedSink",
    "RecordingRecorder",
    "SessionResult",
    "replay_into",
]


Observation = tuple[str, str, float, dict[str, AttributeValue], str]


class RecordingRecorder:
    """A `MetricsRecorder` that keeps each call, to be made again elsewhere (`replay_into`):
    the SDK's instruments live in the parent, and observations made there in the same order
    give the same points (float sums included)."""

    def __init__(self) -> None:
        self.calls: list[Observation] = []

    def add(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        self.calls.append(("add", name, value, dict(attributes), session_id))

    def record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        self.calls.append(("record", name, value, dict(attributes), session_id))


def replay_into(calls: Sequence[Observation], target: MetricsRecorder) -> None:
    """Make the recorded observations on `target`, in order."""
    for method, name, value, attributes, session_id in calls:
        if method == "add":
            target.add(name, value, attributes, session_id)
        else:
            target.record(name, value, attributes, session_id)


@dataclass(frozen=True, slots=True)
class Prepare:
    """What the workers do to the spans beyond assembling them, for the parent to do less.

    Attributes:
        scrub: scrub every span with a scrubber of this configuration (the sink's), its
            attribute filters left to the parent's sink (the console's lines for people read
            every attribute); the parent then queues them with
            `PreparedSink.export_scrubbed`, so only where no sampler drops spans (it judges
            them before they are scrubbed). None: the spans go nowhere (no destination),
            nothing to scrub.
        encode: also encode each scrubbed span for the OTLP JSON file (`encode_record`), with
            the attribute filters applied.
        records: send the scrubbed records too; without them (when every destination is the
            OTLP JSON file, which needs only the texts, or there is none) the parent gets each
            span's id and text (`PreparedSink.export_encoded`), and neither side pickles
            records.
    """

    scrub: ScrubberConfig | None
    encode: bool = False
    records: bool = True


class PreparedSink(Protocol):
    """Where the parent queues what the workers prepared (`SpanSink`)."""

    def export_scrubbed(
        self, records: Sequence[SpanRecord], encoded: Sequence[str] | None = None
    ) -> object: ...

    def export_encoded(
        self, span_ids: Sequence[int], encoded: Sequence[str] | None = None
    ) -> object: ...


@dataclass(frozen=True, slots=True)
class _Task:
    logs: tuple[LogFile, ...]  # consecutive logs, read one after the other
    config: AssemblerConfig
    max_line_bytes: int
    observe: bool  # record metric observations (the parent has somewhere to send them)
    prepare: Prepare | None = None
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES


@dataclass
class SessionResult:
    """Everything reading one session log produced, as values the parent can replay.

    `encoded`: with `Prepare.encode`, the `encode_record` text of each span of each batch;
    else empty. `span_ids`: without `Prepare.records`, the span ids of each batch (`batches`
    is then empty)."""

    batches: list[list[SpanRecord]]
    observations: list[Observation]
    summary: ReplaySummary
    stats: AssemblerStats
    log_records: list[logging.LogRecord] = field(default_factory=list)
    encoded: list[list[str]] = field(default_factory=list)
    span_ids: list[list[int]] = field(default_factory=list)


class _Capture(logging.Handler):
    """Keeps a worker's log records, made picklable, for the parent to log."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        # As logging.handlers.QueueHandler.prepare: the message is made here, where its
        # arguments are, and a traceback kept as text.
        record.msg = record.getMessage()
        record.args = None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        self.records.append(record)


_CAPTURE = _Capture()
# A worker's records are written by the parent's handler, which scrubs them; scrubbed here
# too, so that no record with a credential in it is ever pickled to another process.
_CAPTURE.addFilter(CredentialFilter())


def _start_worker(level: int, parent: int) -> None:
    """In each worker: Ctrl-C is the parent's to handle (a worker would print a traceback),
    log records are kept for the parent instead of written, and the worker ends with the
    parent (`_end_with`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(_CAPTURE)
    root.setLevel(level)
    threading.Thread(target=_end_with, args=(parent,), name="parent", daemon=True).start()


def _end_with(parent: int) -> None:
    """Exit this worker, silently, once the process `parent` has ended.

    A parent killed (SIGKILL, or a SIGTERM before `replay` catches it) cannot stop its
    workers, and nothing else would: a worker waits for tasks on a queue whose writing end it
    holds itself, so it would never see the end of it, and would keep the forkserver alive.
    """
    pidfd_open = getattr(os, "pidfd_open", None)  # Linux: readable once the process ends
    try:
        handle = pidfd_open(parent) if pidfd_open is not None else None
    except ProcessLookupError:
        os._exit(1)
    except OSError:  # a kernel without pidfds
        handle = None
    if handle is not None:
        select.select([handle], [], [])
    else:
        while _alive(parent):
            time.sleep(1.0)
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but not ours to signal
        return True
    return True


def _replay_task(task: _Task) -> list[SessionResult]:
    """In a worker: read the task's logs, each as `replay_logs` does, keeping what each
    produced (scrubbed and encoded as `task.prepare` says)."""
    how = task.prepare
    scrubber = Scrubber(how.scrub) if how is not None and how.scrub is not None else None
    return [_replay_one(log, task, scrubber) for log in task.logs]


def _replay_one(log: LogFile, task: _Task, scrubber: Scrubber | None = None) -> SessionResult:
    _CAPTURE.records = []
    recorder = RecordingRecorder()
    assembler = Assembler(task.config, metrics=recorder if task.observe else None)
    result = SessionResult([], recorder.calls, ReplaySummary(), assembler.stats)
    prepare = task.prepare

    def keep(records: list[SpanRecord]) -> None:
        if not records:
            return
        encoded = records
        if scrubber is not None:  # filters: the parent's, per destination; these texts' here
            records = scrubber.records(records, filtered=False)
            encoded = [scrubber.filtered(record) for record in records]
        if prepare is not None and prepare.encode:
            result.encoded.append([encode_record(record) for record in encoded])
        if prepare is None or prepare.records:
            result.batches.append(records)
        else:
            result.span_ids.append([record.span_id for record in records])

    result.summary = replay_logs(
        [log],
        StreamFeeder(assembler, keep),
        max_line_bytes=task.max_line_bytes,
        max_log_bytes=task.max_log_bytes,
    )
    result.log_records = _CAPTURE.records
    return result
