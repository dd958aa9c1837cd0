"""The one adapter between the bridge's span records and the OpenTelemetry SDK.

Records become SDK `ReadableSpan`s with their own (historical) timestamps and deterministic ids,
then go straight to `SpanExporter`s (`_sink.py`). No `TracerProvider` is involved: a provider
would stamp spans with the current time and random ids, which is exactly what the bridge must
not do.
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SdkEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, TraceFlags
from opentelemetry.trace import SpanKind as SdkSpanKind
from opentelemetry.trace.status import Status
from opentelemetry.trace.status import StatusCode as SdkStatusCode

from .. import semconv
from .._records import SpanKind, SpanRecord, StatusCode
from .._version import __version__

__all__ = ["DEFAULT_SERVICE_NAME", "build_resource", "to_readable_span"]


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
