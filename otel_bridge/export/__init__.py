"""Sinks: span records and metric observations out through the OpenTelemetry SDK."""

from ._metrics import MetricsOptions, MetricsPipeline, OtelMetricsRecorder, build_metrics
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
    "MetricsOptions",
    "MetricsPipeline",
    "OtelMetricsRecorder",
    "SpanSink",
    "build_metrics",
    "build_resource",
    "build_span_exporters",
    "exporter_choice",
    "to_readable_span",
]
