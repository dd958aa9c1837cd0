"""The one adapter between the bridge's span records and the OpenTelemetry SDK.

Records become SDK `ReadableSpan`s with their own (historical) timestamps and deterministic ids,
then go straight to `SpanExporter`s. No `TracerProvider` is involved: a provider would stamp
spans with the current time and random ids, which is exactly what the bridge must not do.

Exporters are chosen the standard way (https://opentelemetry.io/docs/specs/otel/configuration/
sdk-environment-variables/): `OTEL_TRACES_EXPORTER` (otlp, console, none), and for OTLP
`OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` (grpc or http/protobuf, the spec's default). Endpoint,
headers, TLS, compression and timeout are read by the SDK exporters themselves from their
`OTEL_EXPORTER_OTLP_*` variables; we do not parse them again.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SdkEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, TraceFlags
from opentelemetry.trace import SpanKind as SdkSpanKind
from opentelemetry.trace.status import Status
from opentelemetry.trace.status import StatusCode as SdkStatusCode

from .. import semconv
from .._exceptions import ConfigError
from .._metrics import MetricsRecorder, NullRecorder
from .._privacy import Scrubber
from .._records import SpanKind, SpanRecord, StatusCode
from .._sampling import TraceSampler
from .._version import __version__
from ._common import open_output, otlp_protocol
from ._queue import ExportWorker, RetryPolicy

__all__ = [
    "DEFAULT_SERVICE_NAME",
    "ExportStats",
    "SpanSink",
    "build_resource",
    "build_span_exporters",
    "to_readable_span",
    "trace_exporter_names",
]

logger = logging.getLogger(__name__)

#: service.name when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one. The CLI's
#: own telemetry uses the same name, so both land under one service in a backend.
DEFAULT_SERVICE_NAME = "github-copilot"

_SCOPE = InstrumentationScope("otel_bridge", __version__, semconv.SCHEMA_URL)
_KINDS = {SpanKind.INTERNAL: SdkSpanKind.INTERNAL, SpanKind.CLIENT: SdkSpanKind.CLIENT}
_STATUS = {StatusCode.UNSET: SdkStatusCode.UNSET, StatusCode.OK: SdkStatusCode.OK,
           StatusCode.ERROR: SdkStatusCode.ERROR}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)  # without it exporters and processors drop the span


def build_resource(environ: Mapping[str, str]) -> Resource:
    """The resource of every span: the SDK's (it reads OTEL_SERVICE_NAME and
    OTEL_RESOURCE_ATTRIBUTES), with our default service name when the user gave none."""
    attributes: dict[str, str] = {"otel_bridge.version": __version__}
    named = environ.get("OTEL_SERVICE_NAME") or "service.name=" in environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", "")
    if not named:
        attributes["service.name"] = DEFAULT_SERVICE_NAME
    return Resource.create(attributes)


def to_readable_span(record: SpanRecord, resource: Resource) -> ReadableSpan:
    """Map one record to an SDK span, keeping its ids and timestamps."""
    context = SpanContext(record.trace_id, record.span_id, is_remote=False, trace_flags=_SAMPLED)
    parent = None
    if record.parent_span_id is not None:
        parent = SpanContext(record.trace_id, record.parent_span_id, is_remote=False,
                             trace_flags=_SAMPLED)
    return ReadableSpan(
        name=record.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=dict(record.attributes),
        events=[SdkEvent(e.name, dict(e.attributes), e.timestamp_ns) for e in record.events],
        links=[Link(SpanContext(link.trace_id, link.span_id, is_remote=True,
                                trace_flags=_SAMPLED), dict(link.attributes))
               for link in record.links],
        kind=_KINDS[record.kind],
        status=Status(_STATUS[record.status], record.status_message
                      if record.status is StatusCode.ERROR else None),
        start_time=record.start_ns,
        end_time=record.end_ns,
        instrumentation_scope=_SCOPE,
    )


def trace_exporter_names(environ: Mapping[str, str], traces_file: bool) -> tuple[str, ...]:
    """The exporters OTEL_TRACES_EXPORTER selects, with the bridge's defaults when unset."""
    raw = environ.get("OTEL_TRACES_EXPORTER", "").strip()
    if raw:
        names = tuple(n.strip().lower() for n in raw.split(",") if n.strip())
    elif traces_file:
        names = ()  # --traces-file alone means: only the file
    elif environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        names = ("otlp",)
    else:
        names = ("console",)  # nothing configured: show the spans rather than fail to send
    return names


def build_span_exporters(
    environ: Mapping[str, str],
    *,
    traces_file: Path | None = None,
    file_mode: str = "w",
    console_stream: IO[str] | None = None,
) -> list[SpanExporter]:
    """The exporters the configuration asks for.

    Args:
        environ: the environment to read OTEL_* choices from.
        traces_file: also write OTLP JSON Lines here (the OpenTelemetry file-exporter format).
        file_mode: "w" to start the file afresh (replay), "a" to append (run).
        console_stream: where the console exporter writes; stdout by default.

    Raises:
        ConfigError: an exporter name or protocol we do not know, or a file we cannot open.
    """
    exporters: list[SpanExporter] = []
    for name in trace_exporter_names(environ, traces_file is not None):
        if name == "none":
            continue
        if name == "console":
            exporters.append(ConsoleSpanExporter(
                out=console_stream or sys.stdout,
                formatter=lambda span: span.to_json(indent=None) + "\n"))
        elif name == "otlp":
            exporters.append(_otlp_exporter(otlp_protocol(environ, "traces")))
        else:
            raise ConfigError(f"OTEL_TRACES_EXPORTER={name!r} is not supported: "
                              "use otlp, console or none (comma-separated)")
    if traces_file is not None:
        exporters.append(_file_exporter(traces_file, file_mode))
    return exporters


def _otlp_exporter(protocol: str) -> SpanExporter:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        return OTLPSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpSpanExporter,
    )
    return HttpSpanExporter()


def _file_exporter(path: Path, mode: str) -> SpanExporter:
    from opentelemetry.exporter.otlp.json.file import FileSpanExporter

    stream = open_output(path, mode, "traces")
    return _OwnedStreamExporter(FileSpanExporter(stream=stream), stream)


class _OwnedStreamExporter(SpanExporter):
    """A FileSpanExporter on a stream we opened (to choose truncate or append), closed with it."""

    def __init__(self, inner: SpanExporter, stream: IO[str]) -> None:
        self._inner = inner
        self._stream = stream

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self._inner.export(spans)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._inner.shutdown()
        self._stream.close()


@dataclass
class ExportStats:
    """Spans delivered, failed export attempts, and spans dropped (queue overflow)."""

    exported: int = 0
    failed: int = 0
    dropped: int = 0


#: Spans each exporter's queue holds while its collector cannot take them (run); about 2 KiB
#: each in memory, so some 40 MiB at most per exporter.
DEFAULT_QUEUE_SPANS = 20_000


class SpanSink:
    """Converts span records to SDK spans and hands them to one retrying worker per exporter.

    Each exporter has a bounded queue and a thread: a failed batch is retried with back-off
    until it goes through (a collector down for minutes loses nothing that fits the queue);
    when a queue is full, `run` drops its oldest span (counted, logged) and `replay` waits
    (`block_when_full`). `watermark` tells how far delivery has got, for checkpoints.
    `export` may be called from one thread at a time.

    Args:
        exporters: where spans go; none is allowed (a dry run).
        resource: the resource of every span.
        max_batch: spans per export call.
        metrics: where to count delivered and dropped spans and failed attempts.
        queue_spans: spans each exporter's queue holds.
        block_when_full: wait for room instead of dropping.
        retry: back-off between attempts at a failed batch.
        scrubber: redacts secrets in every span on its way out (one with the default patterns
            when none is given: scrubbing is always on).
        sampler: decides per trace what is exported (all, by default).
    """

    def __init__(self, exporters: Sequence[SpanExporter], resource: Resource,
                 max_batch: int = 512, metrics: MetricsRecorder | None = None, *,
                 queue_spans: int = DEFAULT_QUEUE_SPANS, block_when_full: bool = False,
                 retry: RetryPolicy | None = None, block_seconds: float = 60.0,
                 scrubber: Scrubber | None = None, sampler: TraceSampler | None = None) -> None:
        if max_batch < 1 or queue_spans < 1:
            raise ValueError("max_batch and queue_spans must be positive")
        self._resource = resource
        self.scrubber = scrubber or Scrubber()
        self.sampler = sampler or TraceSampler()
        self._lock = threading.Lock()
        self._seq = 0
        self._closed = False
        self.stats = ExportStats()
        self.metrics: MetricsRecorder = metrics or NullRecorder()
        self._workers = [ExportWorker(exporter, capacity=queue_spans, max_batch=max_batch,
                                      block_when_full=block_when_full,
                                      block_seconds=block_seconds,
                                      retry=retry or RetryPolicy(), on_result=self._result)
                         for exporter in exporters]

    @property
    def sequence(self) -> int:
        """The sequence number of the last span queued."""
        return self._seq

    @property
    def watermark(self) -> int:
        """Every span queued up to this sequence number is done with, for every exporter."""
        return min((w.watermark for w in self._workers), default=self._seq)

    @property
    def queued(self) -> int:
        """Spans waiting in the fullest exporter queue."""
        return max((w.depth for w in self._workers), default=0)

    def failing(self) -> tuple[str, float] | None:
        """The exporter that has failed the longest on its current batch, and for how many
        seconds; None when none is failing."""
        now = time.monotonic()
        worst = None
        for worker in self._workers:
            since = worker.failing_since
            if since is not None and (worst is None or now - since > worst[1]):
                worst = (worker.name, now - since)
        return worst

    def export(self, records: Iterable[SpanRecord]) -> None:
        """Sample, scrub and queue records for every exporter."""
        self._queue(self.sampler.offer(records))

    def _queue(self, records: Iterable[SpanRecord]) -> None:
        items = []
        for record in self.scrubber.records(records):
            self._seq += 1
            items.append((self._seq, to_readable_span(record, self._resource)))
        if items:
            for worker in self._workers:
                worker.put(items)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until everything queued was delivered. False on timeout (it stays queued)."""
        deadline = time.monotonic() + timeout
        return all(w.wait_idle(max(deadline - time.monotonic(), 0)) for w in self._workers)

    def shutdown(self, timeout: float = 10.0) -> int:
        """Deliver what can be within `timeout`, shut the exporters down. Idempotent.

        Returns:
            the spans left undelivered (logged); a checkpoint has not gone past them.
        """
        if self._closed:
            return 0
        self._queue(self.sampler.flush())  # traces whose root never came: decided as they are
        self._closed = True
        deadline = time.monotonic() + timeout
        left = 0
        for worker in self._workers:
            undelivered = worker.stop(max(deadline - time.monotonic(), 0))
            if undelivered:
                logger.error("%s: %d spans not delivered at shutdown", worker.name,
                             undelivered)
            left += undelivered
        return left

    def _result(self, exporter: str, spans: int, ok: bool | None) -> None:
        with self._lock:
            if ok is None:
                self.stats.dropped += spans
                logger.warning("%s: queue full, %d spans dropped", exporter, spans)
                self.metrics.add("otel_bridge.spans.dropped", spans, {}, "")
            elif ok:
                self.stats.exported += spans
                self.metrics.add("otel_bridge.spans.exported", spans, {}, "")
            else:
                self.stats.failed += spans
                self.metrics.add("otel_bridge.export.failures", 1,
                                 {"otel_bridge.exporter": exporter}, "")
