"""Sinks: span records out through the OpenTelemetry SDK exporters."""

from ._otel import (
    DEFAULT_SERVICE_NAME,
    ExporterChoice,
    ExportStats,
    SpanSink,
    build_resource,
    build_span_exporters,
    exporter_choice,
    to_readable_span,
)

__all__ = [
    "DEFAULT_SERVICE_NAME",
    "ExportStats",
    "ExporterChoice",
    "SpanSink",
    "build_resource",
    "build_span_exporters",
    "exporter_choice",
    "to_readable_span",
]
