"""Sinks: span records and metric observations out through the OpenTelemetry SDK."""

from ._common import (
    DEFAULT_ENDPOINTS,
    OtlpEndpoint,
    otlp_endpoint,
    reachability,
    sdk_disabled,
    shown_endpoint,
)
from ._console import CONSOLE_FORMATS
from ._delivery import ExportStats
from ._exporters import (
    build_span_exporters,
    probe_otlp,
    trace_exporter_names,
    unreachable_collector,
)
from ._http import cannot_serve
from ._metrics import (
    DEFAULT_PROMETHEUS_HOST,
    DEFAULT_PROMETHEUS_PORT,
    MetricsOptions,
    MetricsPipeline,
    OtelMetricsRecorder,
    build_metrics,
    metric_exporter_names,
)
from ._otel import DEFAULT_SERVICE_NAME, ResourceOptions, build_resource, to_readable_span
from ._otlp_json import encode_record
from ._sink import DEFAULT_QUEUE_SPANS, SpanSink
from ._verdicts import REFUSED_ENDPOINT, ExportFailure

__all__ = [
    "CONSOLE_FORMATS",
    "DEFAULT_ENDPOINTS",
    "DEFAULT_PROMETHEUS_HOST",
    "DEFAULT_PROMETHEUS_PORT",
    "DEFAULT_QUEUE_SPANS",
    "DEFAULT_SERVICE_NAME",
    "REFUSED_ENDPOINT",
    "ExportFailure",
    "ExportStats",
    "MetricsOptions",
    "MetricsPipeline",
    "OtelMetricsRecorder",
    "OtlpEndpoint",
    "ResourceOptions",
    "SpanSink",
    "build_metrics",
    "build_resource",
    "build_span_exporters",
    "cannot_serve",
    "encode_record",
    "metric_exporter_names",
    "otlp_endpoint",
    "probe_otlp",
    "reachability",
    "sdk_disabled",
    "shown_endpoint",
    "to_readable_span",
    "trace_exporter_names",
    "unreachable_collector",
]
