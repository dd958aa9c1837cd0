"""`--traces-file`: spans as OTLP JSON Lines, one ExportTraceServiceRequest per line.

The format is the OpenTelemetry file exporter's (opentelemetry-exporter-otlp-json-file), byte for
byte: the same keys in the same order, the same defaults left out, ids in hex, 64-bit integers as
strings, what `json.dumps(..., separators=(",", ":"))` writes. That exporter builds two objects
per attribute (a generated message class, then its dict), then serializes the dicts; it was a
quarter of a replay's time. This one writes the JSON text of each span directly, with the
pieces `json.dumps` itself uses (its string escaper, `repr` of numbers), and the resource, the
scope and each attribute key's prefix once. tests/unit/export/test_otlp_json.py checks every
fixture's spans, and values of every kind, against the SDK's own exporter, so a change of format
there shows as a failing test here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import IO, Any, NamedTuple

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanKind, Status

from .._records import LinkRecord, SpanEventRecord, SpanRecord, StatusCode
from .._records import SpanKind as RecordKind
from ._otlp_json_values import (
    LOCAL_FLAGS,
    REMOTE_FLAGS,
    encode_attributes,
    flags_of,
    quote,
    span_id_hex,
    trace_id_hex,
)

__all__ = ["EncodedSpan", "OtlpJsonFileExporter", "encode_record", "encode_request"]

logger = logging.getLogger(__name__)

_KINDS = {
    SpanKind.INTERNAL: 1,
    SpanKind.SERVER: 2,
    SpanKind.CLIENT: 3,
    SpanKind.PRODUCER: 4,
    SpanKind.CONSUMER: 5,
}
_REMEMBERED = 16  # encoded resources (and scopes) kept: the bridge has one of each


class EncodedSpan(NamedTuple):
    """A span already encoded (`encode_record`), with what its batch is grouped by: what
    `SpanSink` hands this exporter instead of a `ReadableSpan`, so that a span record is
    encoded once, straight from its fields, without the SDK object in between (or in a
    `replay --jobs` worker: the parent then only joins the texts)."""

    json: str
    resource: Resource
    instrumentation_scope: InstrumentationScope | None


class OtlpJsonFileExporter(SpanExporter):
    """Writes each batch as one line of OTLP JSON to a stream it owns (opened by the caller, to
    choose truncate or append), flushed at once, and closed at shutdown.

    As the SDK's file exporter: a batch that cannot be written is logged and reported failed; an
    export after shutdown is refused with a warning.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._shutdown = False
        self._encoder = _Encoder()

    def export(self, spans: Sequence[ReadableSpan | EncodedSpan]) -> SpanExportResult:
        """Write the batch as one line; `EncodedSpan`s are written as they are."""
        if self._shutdown:
            logger.warning("Exporter already shutdown, ignoring call")
            return SpanExportResult.FAILURE
        try:
            line = self._encoder.request(spans)
            with self._lock:
                if self._stream.closed:
                    logger.warning("Stream is closed, ignoring spans export call")
                    return SpanExportResult.FAILURE
                if line is not None:
                    self._stream.write(line + "\n")
                self._stream.flush()
        except Exception as error:
            logger.exception(
                "Failed to write spans batch to stream: %s: %s", type(error).__name__, error
            )
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        if self._shutdown:
            logger.warning("Exporter already shutdown, ignoring call")
            return
        self._shutdown = True
        with self._lock:
            self._stream.close()


def encode_request(spans: Sequence[ReadableSpan | EncodedSpan]) -> str | None:
    """The JSON text of the ExportTraceServiceRequest of `spans`, one line without its newline;
    None for no spans (nothing is written then)."""
    return _Encoder().request(spans)


class _Encoder:
    """Spans to JSON text, remembering the encoded resources and scopes (one of each, in
    practice).

    Not thread-safe: one per exporter, used under its worker.
    """

    def __init__(self) -> None:
        self._resources: dict[Resource, str] = {}
        self._scopes: dict[InstrumentationScope | None, str] = {}

    def request(self, spans: Sequence[ReadableSpan | EncodedSpan]) -> str | None:
        # grouped by resource, then scope, in the order first seen, as the SDK's encoder does
        # (by equality; the identity checks only spare hashing a Resource at every span)
        groups: dict[Resource, dict[InstrumentationScope | None, list[str]]] = {}
        last_resource: Resource | None = None
        last_scope: InstrumentationScope | None = None
        scopes: dict[InstrumentationScope | None, list[str]] = {}
        encoded: list[str] = []
        for span in spans:
            resource, scope = span.resource, span.instrumentation_scope or None
            if resource is not last_resource or scope is not last_scope or not encoded:
                scopes = groups.setdefault(resource, {})
                encoded = scopes.setdefault(scope, [])
                last_resource, last_scope = resource, scope
            encoded.append(span.json if isinstance(span, EncodedSpan) else _span(span))
        if not groups:
            return None
        resource_spans = []
        for resource, scopes in groups.items():
            scope_spans = []
            for scope, encoded in scopes.items():
                fields = ['"scope":' + self._scope(scope), '"spans":[' + ",".join(encoded) + "]"]
                if scope is not None and scope.schema_url:
                    fields.append('"schemaUrl":' + quote(scope.schema_url))
                scope_spans.append("{" + ",".join(fields) + "}")
            fields = ['"resource":' + self._resource(resource)]
            fields.append('"scopeSpans":[' + ",".join(scope_spans) + "]")
            if resource.schema_url:
                fields.append('"schemaUrl":' + quote(resource.schema_url))
            resource_spans.append("{" + ",".join(fields) + "}")
        return '{"resourceSpans":[' + ",".join(resource_spans) + "]}"

    def _resource(self, resource: Resource) -> str:
        encoded = self._resources.get(resource)
        if encoded is None:
            if len(self._resources) >= _REMEMBERED:
                self._resources.clear()
            attributes = encode_attributes(resource.attributes)
            encoded = '{"attributes":' + attributes + "}" if attributes else "{}"
            self._resources[resource] = encoded
        return encoded

    def _scope(self, scope: InstrumentationScope | None) -> str:
        encoded = self._scopes.get(scope)
        if encoded is None:
            if len(self._scopes) >= _REMEMBERED:
                self._scopes.clear()
            fields = []
            if scope is not None:
                if scope.name:
                    fields.append('"name":' + quote(scope.name))
                if scope.version:
                    fields.append('"version":' + quote(scope.version))
                attributes = encode_attributes(scope.attributes)
                if attributes:
                    fields.append('"attributes":' + attributes)
            encoded = "{" + ",".join(fields) + "}"
            self._scopes[scope] = encoded
        return encoded


def _span(span: ReadableSpan) -> str:
    context = span.get_span_context()
    parent = span.parent
    fields = [
        '"traceId":"' + trace_id_hex(context.trace_id if context else 0) + '"',
        '"spanId":"' + span_id_hex(context.span_id if context else 0) + '"',
    ]
    trace_state = context.trace_state if context else None
    if trace_state is not None:
        state = ",".join([f"{key}={value}" for key, value in trace_state.items()])
        if state:
            fields.append('"traceState":' + quote(state))
    if parent:
        fields.append('"parentSpanId":"' + span_id_hex(parent.span_id) + '"')
    fields.append('"flags":' + flags_of(parent))
    if span.name:
        fields.append('"name":' + quote(span.name))
    kind = _KINDS[span.kind]
    if kind:
        fields.append('"kind":' + str(kind))
    if span.start_time:
        fields.append('"startTimeUnixNano":"' + str(span.start_time) + '"')
    if span.end_time:
        fields.append('"endTimeUnixNano":"' + str(span.end_time) + '"')
    attributes = encode_attributes(span.attributes)
    if attributes:
        fields.append('"attributes":' + attributes)
    if span.dropped_attributes:
        fields.append('"droppedAttributesCount":' + int.__repr__(span.dropped_attributes))
    if span.events:
        fields.append('"events":[' + ",".join([_event(event) for event in span.events]) + "]")
    if span.dropped_events:
        fields.append('"droppedEventsCount":' + int.__repr__(span.dropped_events))
    if span.links:
        fields.append('"links":[' + ",".join([_link(link) for link in span.links]) + "]")
    if span.dropped_links:
        fields.append('"droppedLinksCount":' + int.__repr__(span.dropped_links))
    status = span.status
    if status is not None:
        fields.append('"status":' + _status(status))
    return "{" + ",".join(fields) + "}"


_RECORD_KINDS = {RecordKind.INTERNAL: ',"kind":1', RecordKind.CLIENT: ',"kind":3'}
_RECORD_STATUS = {StatusCode.UNSET: "{}", StatusCode.OK: '{"code":1}'}


def encode_record(record: SpanRecord) -> str:
    """The JSON text of a span record (scrubbed) in a request: what `_span` writes of
    `to_readable_span(record, ...)` (export/_otel.py), written from the record's own fields.

    What that mapping fixes, fixed here too: the span's context and its parent's are local
    (flags 256), links are remote (768), no trace state, nothing dropped; an ERROR status
    keeps its message, other statuses drop it (as the SDK's `Status` does).
    tests/unit/export/test_otlp_json.py checks both give the same text for every fixture span."""
    parts = [
        '{"traceId":"',
        trace_id_hex(record.trace_id),
        '","spanId":"',
        span_id_hex(record.span_id),
    ]
    if record.parent_span_id is not None:
        parts += ['","parentSpanId":"', span_id_hex(record.parent_span_id)]
    parts.append('","flags":' + LOCAL_FLAGS)
    if record.name:
        parts.append(',"name":' + quote(record.name))
    parts.append(_RECORD_KINDS[record.kind])
    if record.start_ns:
        parts.append(',"startTimeUnixNano":"' + int.__repr__(record.start_ns) + '"')
    if record.end_ns:
        parts.append(',"endTimeUnixNano":"' + int.__repr__(record.end_ns) + '"')
    attributes = encode_attributes(record.attributes)
    if attributes:
        parts.append(',"attributes":' + attributes)
    if record.events:
        parts.append(',"events":[' + ",".join([_record_event(e) for e in record.events]) + "]")
    if record.links:
        parts.append(',"links":[' + ",".join([_record_link(li) for li in record.links]) + "]")
    status = _RECORD_STATUS.get(record.status)
    if status is None:  # ERROR
        message = record.status_message
        status = '{"message":' + quote(message) + ',"code":2}' if message else '{"code":2}'
    parts.append(',"status":' + status + "}")
    return "".join(parts)


def _record_event(event: SpanEventRecord) -> str:
    fields = []
    if event.timestamp_ns:
        fields.append('"timeUnixNano":"' + int.__repr__(event.timestamp_ns) + '"')
    if event.name:
        fields.append('"name":' + quote(event.name))
    attributes = encode_attributes(event.attributes)
    if attributes:
        fields.append('"attributes":' + attributes)
    return "{" + ",".join(fields) + "}"


def _record_link(link: LinkRecord) -> str:
    fields = [
        '"traceId":"' + trace_id_hex(link.trace_id) + '"',
        '"spanId":"' + span_id_hex(link.span_id) + '"',
    ]
    attributes = encode_attributes(link.attributes)
    if attributes:
        fields.append('"attributes":' + attributes)
    fields.append('"flags":' + REMOTE_FLAGS)
    return "{" + ",".join(fields) + "}"


def _event(event: Any) -> str:
    fields = []
    if event.timestamp:
        fields.append('"timeUnixNano":"' + str(event.timestamp) + '"')
    if event.name:
        fields.append('"name":' + quote(event.name))
    attributes = encode_attributes(event.attributes)
    if attributes:
        fields.append('"attributes":' + attributes)
    if event.dropped_attributes:
        fields.append('"droppedAttributesCount":' + int.__repr__(event.dropped_attributes))
    return "{" + ",".join(fields) + "}"


def _link(link: Any) -> str:
    fields = [
        '"traceId":"' + trace_id_hex(link.context.trace_id) + '"',
        '"spanId":"' + span_id_hex(link.context.span_id) + '"',
    ]
    attributes = encode_attributes(link.attributes)
    if attributes:
        fields.append('"attributes":' + attributes)
    if link.dropped_attributes:
        fields.append('"droppedAttributesCount":' + int.__repr__(link.dropped_attributes))
    fields.append('"flags":' + flags_of(link.context))
    return "{" + ",".join(fields) + "}"


def _status(status: Status) -> str:
    fields = []
    if status.description:
        fields.append('"message":' + quote(status.description))
    code = status.status_code.value
    if code:
        fields.append('"code":' + int.__repr__(int(code)))
    return "{" + ",".join(fields) + "}"
