"""`--traces-file`: spans as OTLP JSON Lines, one ExportTraceServiceRequest per line.

The format is the OpenTelemetry file exporter's (opentelemetry-exporter-otlp-json-file), byte for
byte: the same keys in the same order, the same defaults left out, ids in hex, 64-bit integers as
strings, the same compact `json.dumps`. That exporter builds two objects per attribute (a
generated message class, then its dict) and walks them again to serialize; this one builds the
dicts directly, and the resource and scope once, not once a batch. It was a quarter of a replay's
time. tests/test_otlp_json.py checks every fixture's spans, and values of every kind, against the
SDK's own exporter, so a change of format there shows as a failing test here.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status
from opentelemetry.util.types import Attributes

__all__ = ["OtlpJsonFileExporter", "encode_request"]

logger = logging.getLogger(__name__)

_KINDS = {
    SpanKind.INTERNAL: 1,
    SpanKind.SERVER: 2,
    SpanKind.CLIENT: 3,
    SpanKind.PRODUCER: 4,
    SpanKind.CONSUMER: 5,
}
_HAS_IS_REMOTE = 0x100  # SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
_IS_REMOTE = 0x200  # SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
_REMEMBERED = 16  # encoded resources (and scopes) kept: the bridge has one of each


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

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            logger.warning("Exporter already shutdown, ignoring call")
            return SpanExportResult.FAILURE
        try:
            request = self._encoder.request(spans)
            with self._lock:
                if self._stream.closed:
                    logger.warning("Stream is closed, ignoring spans export call")
                    return SpanExportResult.FAILURE
                if request is not None:
                    self._stream.write(json.dumps(request, separators=(",", ":")) + "\n")
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


def encode_request(spans: Sequence[ReadableSpan]) -> dict[str, Any] | None:
    """The ExportTraceServiceRequest of `spans` as the dict the file format serializes; None
    for no spans (nothing is written then)."""
    return _Encoder().request(spans)


class _Encoder:
    """Span to dict, remembering the encoded resources and scopes (one of each, in practice).

    Not thread-safe: one per exporter, used under its worker.
    """

    def __init__(self) -> None:
        self._resources: dict[Resource, dict[str, Any]] = {}
        self._scopes: dict[InstrumentationScope | None, dict[str, Any]] = {}

    def request(self, spans: Sequence[ReadableSpan]) -> dict[str, Any] | None:
        # grouped by resource, then scope, in the order first seen, as the SDK's encoder does
        # (by equality; the identity checks only spare hashing a Resource at every span)
        groups: dict[Resource, dict[InstrumentationScope | None, list[dict[str, Any]]]] = {}
        last_resource: Resource | None = None
        last_scope: InstrumentationScope | None = None
        scopes: dict[InstrumentationScope | None, list[dict[str, Any]]] = {}
        encoded: list[dict[str, Any]] = []
        for span in spans:
            resource, scope = span.resource, span.instrumentation_scope or None
            if resource is not last_resource or scope is not last_scope or not encoded:
                scopes = groups.setdefault(resource, {})
                encoded = scopes.setdefault(scope, [])
                last_resource, last_scope = resource, scope
            encoded.append(_span(span))
        if not groups:
            return None
        resource_spans = []
        for resource, scopes in groups.items():
            item: dict[str, Any] = {"resource": self._resource(resource)}
            scope_spans = []
            for scope, encoded in scopes.items():
                entry: dict[str, Any] = {"scope": self._scope(scope)}
                if encoded:
                    entry["spans"] = encoded
                if scope is not None and scope.schema_url:
                    entry["schemaUrl"] = scope.schema_url
                scope_spans.append(entry)
            item["scopeSpans"] = scope_spans
            if resource.schema_url:
                item["schemaUrl"] = resource.schema_url
            resource_spans.append(item)
        return {"resourceSpans": resource_spans}

    def _resource(self, resource: Resource) -> dict[str, Any]:
        encoded = self._resources.get(resource)
        if encoded is None:
            if len(self._resources) >= _REMEMBERED:
                self._resources.clear()
            encoded = {}
            attributes = _attributes(resource.attributes)
            if attributes:
                encoded["attributes"] = attributes
            self._resources[resource] = encoded
        return encoded

    def _scope(self, scope: InstrumentationScope | None) -> dict[str, Any]:
        encoded = self._scopes.get(scope)
        if encoded is None:
            if len(self._scopes) >= _REMEMBERED:
                self._scopes.clear()
            encoded = {}
            if scope is not None:
                if scope.name:
                    encoded["name"] = scope.name
                if scope.version:
                    encoded["version"] = scope.version
                attributes = _attributes(scope.attributes)
                if attributes:
                    encoded["attributes"] = attributes
            self._scopes[scope] = encoded
        return encoded


def _span(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    parent = span.parent
    out: dict[str, Any] = {
        "traceId": _trace_id(context.trace_id if context else 0),
        "spanId": _span_id(context.span_id if context else 0),
    }
    trace_state = context.trace_state if context else None
    if trace_state is not None:
        state = ",".join([f"{key}={value}" for key, value in trace_state.items()])
        if state:
            out["traceState"] = state
    if parent:
        out["parentSpanId"] = _span_id(parent.span_id)
    out["flags"] = _flags(parent)
    if span.name:
        out["name"] = span.name
    kind = _KINDS[span.kind]
    if kind:
        out["kind"] = kind
    if span.start_time:
        out["startTimeUnixNano"] = str(span.start_time)
    if span.end_time:
        out["endTimeUnixNano"] = str(span.end_time)
    attributes = _attributes(span.attributes)
    if attributes:
        out["attributes"] = attributes
    if span.dropped_attributes:
        out["droppedAttributesCount"] = span.dropped_attributes
    if span.events:
        out["events"] = [_event(event) for event in span.events]
    if span.dropped_events:
        out["droppedEventsCount"] = span.dropped_events
    if span.links:
        out["links"] = [_link(link) for link in span.links]
    if span.dropped_links:
        out["droppedLinksCount"] = span.dropped_links
    status = _status(span.status)
    if status is not None:
        out["status"] = status
    return out


def _event(event: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if event.timestamp:
        out["timeUnixNano"] = str(event.timestamp)
    if event.name:
        out["name"] = event.name
    attributes = _attributes(event.attributes)
    if attributes:
        out["attributes"] = attributes
    if event.dropped_attributes:
        out["droppedAttributesCount"] = event.dropped_attributes
    return out


def _link(link: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": _trace_id(link.context.trace_id),
        "spanId": _span_id(link.context.span_id),
    }
    attributes = _attributes(link.attributes)
    if attributes:
        out["attributes"] = attributes
    if link.dropped_attributes:
        out["droppedAttributesCount"] = link.dropped_attributes
    out["flags"] = _flags(link.context)
    return out


def _status(status: Status | None) -> dict[str, Any] | None:
    if status is None:
        return None
    out: dict[str, Any] = {}
    if status.description:
        out["message"] = status.description
    code = status.status_code.value
    if code:
        out["code"] = int(code)
    return out


def _flags(context: SpanContext | None) -> int:
    if context and context.is_remote:
        return _HAS_IS_REMOTE | _IS_REMOTE
    return _HAS_IS_REMOTE


def _trace_id(trace_id: int) -> str:
    return trace_id.to_bytes(length=16, byteorder="big", signed=False).hex()


def _span_id(span_id: int) -> str:
    return span_id.to_bytes(length=8, byteorder="big", signed=False).hex()


def _attributes(attributes: Attributes) -> list[dict[str, Any]]:
    if not attributes:
        return []
    out = []
    for key, value in attributes.items():
        # the common case inline: a string, an int, a bool
        kind = type(value)
        if kind is str:
            encoded: dict[str, Any] = {"stringValue": value}
        elif kind is int:
            encoded = {"intValue": str(value)}
        elif kind is bool:
            encoded = {"boolValue": value}
        else:
            try:
                encoded = _value(value)
            except Exception as error:  # as the SDK: the attribute is left out, logged
                logger.exception("Failed to encode key %s: %s", key, error)
                continue
        out.append({"key": key, "value": encoded} if key else {"value": encoded})
    return out


def _value(value: Any) -> dict[str, Any]:
    """An AnyValue, as the SDK's encoder makes it of any attribute value."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": _double(value)}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode("utf-8") if value else ""}
    if isinstance(value, Sequence):
        values = [_value(item) for item in value]
        return {"arrayValue": {"values": values} if values else {}}
    if isinstance(value, Mapping):
        pairs = [
            {"key": str(k), "value": _value(v)} if str(k) else {"value": _value(v)}
            for k, v in value.items()
        ]
        return {"kvlistValue": {"values": pairs} if pairs else {}}
    raise TypeError(f"Invalid type {type(value)} of value {value}")


def _double(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value
