"""Sinks: span records and metric observations out through the OpenTelemetry SDK."""

from ._exporters import build_span_exporters, trace_exporter_names
from ._metrics import MetricsOptions, MetricsPipeline, OtelMetricsRecorder, build_metrics
from ._otel import DEFAULT_SERVICE_NAME, ResourceOptions, build_resource, to_readable_span
from ._sink import ExportStats, SpanSink

__all__ = [
    "DEFAULT_SERVICE_NAME",
    "ExportStats",
    "MetricsOptions",
    "MetricsPipeline",
    "OtelMetricsRecorder",
    "ResourceOptions",
    "SpanSink",
    "build_metrics",
    "build_resource",
    "build_span_exporters",
    "to_readable_span",
    "trace_exporter_names",
]
