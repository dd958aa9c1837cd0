"""The one adapter between the bridge's span records and the OpenTelemetry SDK.

Records become SDK `ReadableSpan`s with their own (historical) timestamps and deterministic ids,
then go straight to `SpanExporter`s. No `TracerProvider` is involved: a provider would stamp
spans with the current time and random ids, which is exactly what the bridge must not do.

Exporters are chosen the standard way (https://opentelemetry.io/docs/specs/otel/configuration/
sdk-environment-variables/): `OTEL_TRACES_EXPORTER` (otlp, console, none), and for OTLP
`OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` (grpc or http/protobuf, the spec's default). The endpoint
is checked at start (a typo is a configuration error, not minutes of retries) and handed to the
exporter; headers, TLS, compression and timeout are read by the SDK exporters themselves from
their `OTEL_EXPORTER_OTLP_*` variables. `OTEL_SDK_DISABLED=true` turns every exporter off.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SdkEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, TraceFlags
from opentelemetry.trace import SpanKind as SdkSpanKind
from opentelemetry.trace.status import Status
from opentelemetry.trace.status import StatusCode as SdkStatusCode

from .. import semconv
from .._exceptions import ConfigError
from .._metrics import MetricsRecorder, NullRecorder
from .._records import SpanKind, SpanRecord, StatusCode
from .._version import __version__
from ..processors import Scrubber, TraceSampler
from ._common import (
    OtlpEndpoint,
    http_session,
    open_output,
    otlp_endpoint,
    quiet_exporter_logs,
    reachability,
    sdk_disabled,
)
from ._metrics import metric_exporter_names
from ._queue import ExportWorker, RetryPolicy

__all__ = [
    "DEFAULT_SERVICE_NAME",
    "ExportStats",
    "SpanSink",
    "build_resource",
    "build_span_exporters",
    "to_readable_span",
    "trace_exporter_names",
    "unreachable_collector",
]

logger = logging.getLogger(__name__)

#: service.name when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one. The CLI's
#: own telemetry uses the same name, so both land under one service in a backend.
DEFAULT_SERVICE_NAME = "github-copilot"

_SCOPE = InstrumentationScope("otel_bridge", __version__, semconv.SCHEMA_URL)
_KINDS = {SpanKind.INTERNAL: SdkSpanKind.INTERNAL, SpanKind.CLIENT: SdkSpanKind.CLIENT}
_STATUS = {
    StatusCode.UNSET: SdkStatusCode.UNSET,
    StatusCode.OK: SdkStatusCode.OK,
    StatusCode.ERROR: SdkStatusCode.ERROR,
}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)  # without it exporters and processors drop the span


def build_resource(environ: Mapping[str, str]) -> Resource:
    """The resource of every span: the SDK's (it reads OTEL_SERVICE_NAME and
    OTEL_RESOURCE_ATTRIBUTES), with our default service name when the user gave none."""
    attributes: dict[str, str] = {"otel_bridge.version": __version__}
    named = environ.get("OTEL_SERVICE_NAME") or "service.name=" in environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    if not named:
        attributes["service.name"] = DEFAULT_SERVICE_NAME
    return Resource.create(attributes)


def to_readable_span(record: SpanRecord, resource: Resource) -> ReadableSpan:
    """Map one record to an SDK span, keeping its ids and timestamps."""
    context = SpanContext(record.trace_id, record.span_id, is_remote=False, trace_flags=_SAMPLED)
    parent = None
    if record.parent_span_id is not None:
        parent = SpanContext(
            record.trace_id, record.parent_span_id, is_remote=False, trace_flags=_SAMPLED
        )
    return ReadableSpan(
        name=record.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=dict(record.attributes),
        events=[SdkEvent(e.name, dict(e.attributes), e.timestamp_ns) for e in record.events],
        links=[
            Link(
                SpanContext(link.trace_id, link.span_id, is_remote=True, trace_flags=_SAMPLED),
                dict(link.attributes),
            )
            for link in record.links
        ],
        kind=_KINDS[record.kind],
        status=Status(
            _STATUS[record.status],
            record.status_message if record.status is StatusCode.ERROR else None,
        ),
        start_time=record.start_ns,
        end_time=record.end_ns,
        instrumentation_scope=_SCOPE,
    )


def trace_exporter_names(environ: Mapping[str, str], traces_file: bool) -> tuple[str, ...]:
    """The exporters OTEL_TRACES_EXPORTER selects, with the bridge's defaults when unset: otlp
    when an OTLP endpoint is set (--traces-file or not: the file is one more destination, never
    a replacement), console when neither an endpoint nor a file is given, else none but the
    file."""
    raw = environ.get("OTEL_TRACES_EXPORTER", "").strip()
    if raw:
        names = tuple(n.strip().lower() for n in raw.split(",") if n.strip())
    elif (
        environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    ):
        names = ("otlp",)
    elif traces_file:
        names = ()  # the file is where the spans go
    else:
        names = ("console",)  # nothing configured: show the spans rather than fail to send
    return names


#: How each exporter the bridge made is called in log lines and summaries.
_LABELS: weakref.WeakKeyDictionary[SpanExporter, str] = weakref.WeakKeyDictionary()


def exporter_label(exporter: SpanExporter) -> str:
    """'otlp http://collector:4318/v1/traces (http/protobuf)', 'file traces.jsonl', 'console';
    the class name of an exporter the bridge did not make."""
    return _LABELS.get(exporter) or type(exporter).__name__


def build_span_exporters(
    environ: Mapping[str, str],
    *,
    traces_file: Path | None = None,
    file_mode: str = "w",
    console_stream: IO[str] | None = None,
    console_format: str | None = None,
) -> list[SpanExporter]:
    """The exporters the configuration asks for.

    Args:
        environ: the environment to read OTEL_* choices from.
        traces_file: also write OTLP JSON Lines here (the OpenTelemetry file-exporter format).
        file_mode: "w" to start the file afresh (replay), "a" to append (run).
        console_stream: where the console exporter writes; stdout by default.
        console_format: how it writes: "summary" (a line per task), "tree" or "json" (one
            span per line); None: summary on a terminal, json otherwise (see _console.py).

    Returns:
        none when OTEL_SDK_DISABLED=true (the caller says so once).

    Raises:
        ConfigError: an exporter name or protocol we do not know, an OTLP endpoint that is not
            a URL, or a file we cannot open.
    """
    if sdk_disabled(environ):
        return []
    exporters: list[SpanExporter] = []
    for name in trace_exporter_names(environ, traces_file is not None):
        if name == "none":
            continue
        if name == "console":
            from ._console import ConsoleSpanExporter

            exporters.append(ConsoleSpanExporter(console_stream or sys.stdout, console_format))
            _LABELS[exporters[-1]] = "console"
        elif name == "otlp":
            endpoint = otlp_endpoint(environ, "traces")
            exporters.append(_otlp_exporter(endpoint, environ))
            _LABELS[exporters[-1]] = f"otlp {endpoint.describe()}"
        else:
            raise ConfigError(
                f"OTEL_TRACES_EXPORTER={name!r} is not supported: "
                "use otlp, console or none (comma-separated)"
            )
    if traces_file is not None:
        exporters.append(_file_exporter(traces_file, file_mode))
        _LABELS[exporters[-1]] = f"file {traces_file}"
    return exporters


def unreachable_collector(
    environ: Mapping[str, str],
    *,
    traces_file: Path | None = None,
    metric_defaults: Sequence[str] = (),
    timeout: float = 2.0,
) -> str | None:
    """One line about the first OTLP endpoint the configuration sends to that does not accept
    a TCP connection, naming it and pointing to `otel-bridge doctor`; None when all do (or
    none is used, or OTEL_SDK_DISABLED=true).

    Why: the SDK exporters retry a refused connection for their whole timeout at every batch,
    so a replay to a collector that is not running would take a minute to say so.

    Raises:
        ConfigError: an endpoint that is not a URL, or a protocol the bridge cannot speak.
    """
    if sdk_disabled(environ):
        return None
    endpoints = []
    if "otlp" in trace_exporter_names(environ, traces_file is not None):
        endpoints.append(otlp_endpoint(environ, "traces"))
    if "otlp" in metric_exporter_names(environ, metric_defaults):
        endpoints.append(otlp_endpoint(environ, "metrics"))
    seen: set[tuple[str, int]] = set()
    for endpoint in endpoints:
        if (endpoint.host, endpoint.port) in seen:
            continue
        seen.add((endpoint.host, endpoint.port))
        problem = reachability(endpoint, timeout)
        if problem is not None:
            return (
                f"OTLP endpoint {endpoint.describe()} {problem}: is the collector running? "
                f"`otel-bridge doctor` checks the set-up"
            )
    return None


def _otlp_exporter(endpoint: OtlpEndpoint, environ: Mapping[str, str]) -> SpanExporter:
    """The SDK's exporter for the protocol, given the endpoint that was checked (the rest of
    its settings it reads from the environment). Its own retry messages are kept for the
    bridge's one warning instead of reaching the terminal (`quiet_exporter_logs`)."""
    try:
        if endpoint.protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            exporter: SpanExporter = OTLPSpanExporter(endpoint=endpoint.target)
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter as HttpSpanExporter,
            )

            exporter = HttpSpanExporter(
                endpoint=endpoint.target, session=http_session(environ, "traces")
            )
    except (ValueError, TypeError, RuntimeError, OSError) as exc:  # e.g. a timeout not a number
        raise ConfigError(
            f"cannot set up the OTLP trace exporter ({endpoint.describe()}): "
            f"{exc}; check the OTEL_EXPORTER_OTLP_* variables"
        ) from exc
    quiet_exporter_logs()
    return exporter


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
    """What became of the spans, each span counted once however many destinations it has.

    Attributes:
        exported: spans delivered to every destination.
        failed: spans in failed export attempts (retried; a span counts at each attempt).
        dropped: spans dropped from a full queue (of at least one destination).
        by_exporter: spans delivered, per destination (its label), for a summary that says
            which destination fell behind when there are several.
    """

    exported: int = 0
    failed: int = 0
    dropped: int = 0
    by_exporter: dict[str, int] = field(default_factory=dict)


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

    Every destination gets every span; a span counts as exported once all of them have it.

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

    def __init__(
        self,
        exporters: Sequence[SpanExporter],
        resource: Resource,
        max_batch: int = 512,
        metrics: MetricsRecorder | None = None,
        *,
        queue_spans: int = DEFAULT_QUEUE_SPANS,
        block_when_full: bool = False,
        retry: RetryPolicy | None = None,
        block_seconds: float = 60.0,
        scrubber: Scrubber | None = None,
        sampler: TraceSampler | None = None,
    ) -> None:
        if max_batch < 1 or queue_spans < 1:
            raise ValueError("max_batch and queue_spans must be positive")
        self._resource = resource
        self.scrubber = scrubber or Scrubber()
        self.sampler = sampler or TraceSampler()
        self._lock = threading.Lock()
        self._seq = 0
        self._closed = False
        self._left = 0
        self.stats = ExportStats()
        self.metrics: MetricsRecorder = metrics or NullRecorder()
        # sequence number -> destinations that have not got the span yet; a span leaves when
        # the last one has it (exported) or when a full queue drops it (dropped)
        self._pending: dict[int, int] = {}
        labels = _unique([exporter_label(exporter) for exporter in exporters])
        self._workers = [
            ExportWorker(
                exporter,
                capacity=queue_spans,
                max_batch=max_batch,
                block_when_full=block_when_full,
                block_seconds=block_seconds,
                label=label,
                retry=retry or RetryPolicy(),
                on_result=partial(self._result, label),
            )
            for exporter, label in zip(exporters, labels, strict=True)
        ]
        self.stats.by_exporter = dict.fromkeys(labels, 0)

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

    @property
    def destinations(self) -> int:
        """How many exporters the spans go to."""
        return len(self._workers)

    def failing(self) -> tuple[str, float] | None:
        """The exporter that has failed the longest on its current batch, and for how many
        seconds; None when none is failing."""
        now = time.monotonic()
        worst = None
        for worker in self._workers:
            since = worker.failing_since
            if since is not None and (worst is None or now - since > worst[1]):
                worst = (worker.label, now - since)
        return worst

    def export(self, records: Iterable[SpanRecord]) -> None:
        """Sample, scrub and queue records for every exporter."""
        self._queue(self.sampler.offer(records))

    def _queue(self, records: Iterable[SpanRecord]) -> None:
        items = []
        for record in self.scrubber.records(records):
            self._seq += 1
            items.append((self._seq, to_readable_span(record, self._resource)))
        if items and self._workers:
            with self._lock:
                for seq, _ in items:
                    self._pending[seq] = len(self._workers)
            for worker in self._workers:
                worker.put(items)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until everything queued was delivered. False on timeout (it stays queued)."""
        deadline = time.monotonic() + timeout
        return all(w.wait_idle(max(deadline - time.monotonic(), 0)) for w in self._workers)

    def shutdown(self, timeout: float = 10.0, abort: Callable[[], bool] | None = None) -> int:
        """Deliver what can be within `timeout`, shut the exporters down. Idempotent.

        Args:
            timeout: seconds to keep trying, for all exporters together.
            abort: polled while waiting; when it returns True, stop trying at once (a second
                Ctrl-C). What is not delivered then is counted as such, as on a timeout.

        Returns:
            the spans not delivered to every destination (each logged per exporter); a
            checkpoint has not gone past them.
        """
        if self._closed:
            return self._left
        self._queue(self.sampler.flush())  # traces whose root never came: decided as they are
        self._closed = True
        deadline = time.monotonic() + timeout
        for worker in self._workers:  # all deliver at once, not one after the other
            worker.begin_stop(deadline)
        for worker in self._workers:
            undelivered = worker.finish_stop(abort)
            if undelivered:
                logger.error("%s: %d spans not delivered at shutdown", worker.label, undelivered)
        with self._lock:
            self._left = len(self._pending)
        return self._left

    def _result(self, label: str, exporter: str, sequence: Sequence[int], ok: bool | None) -> None:
        with self._lock:
            if ok is None:
                dropped = sum(self._pending.pop(seq, None) is not None for seq in sequence)
                logger.warning("%s: queue full, %d spans dropped", label, len(sequence))
                if dropped:
                    self.stats.dropped += dropped
                    self.metrics.add("otel_bridge.spans.dropped", dropped, {}, "")
            elif ok:
                self.stats.by_exporter[label] = self.stats.by_exporter.get(label, 0) + len(sequence)
                done = 0
                for seq in sequence:
                    left = self._pending.get(seq)
                    if left is None:  # dropped by another destination's queue
                        continue
                    if left <= 1:
                        del self._pending[seq]
                        done += 1
                    else:
                        self._pending[seq] = left - 1
                if done:
                    self.stats.exported += done
                    self.metrics.add("otel_bridge.spans.exported", done, {}, "")
            else:
                self.stats.failed += len(sequence)
                self.metrics.add(
                    "otel_bridge.export.failures", 1, {"otel_bridge.exporter": exporter}, ""
                )


def _unique(labels: list[str]) -> list[str]:
    """Labels made unique (two console exporters: 'console', 'console #2')."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return out
