"""Sinks: span records and metric observations out through the OpenTelemetry SDK.

The names below are loaded from their modules when first used (PEP 562), not when the package
is imported: a command pays for the exporters it uses, not for all of them (`replay` with
the traces file only never imports the Prometheus client, the HTTP server or the SDK's
metrics). `_NAMES` is the one table of what comes from where.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._common import (
        CONSOLE_FORMATS,
        DEFAULT_ENDPOINTS,
        DEFAULT_PROMETHEUS_HOST,
        DEFAULT_PROMETHEUS_PORT,
        CredentialFilter,
        OtlpEndpoint,
        metric_exporter_names,
        otlp_endpoint,
        reachability,
        sdk_disabled,
        shown_endpoint,
    )
    from ._delivery import ExportStats
    from ._exporters import build_span_exporters, trace_exporter_names, unreachable_collector
    from ._http import cannot_serve
    from ._metric_options import MetricsOptions
    from ._metric_recorder import OtelMetricsRecorder
    from ._metrics import MetricsPipeline, build_metrics
    from ._otel import DEFAULT_SERVICE_NAME, ResourceOptions, build_resource, to_readable_span
    from ._otlp import probe_otlp
    from ._otlp_json import encode_record
    from ._sink import DEFAULT_QUEUE_SPANS, SpanSink
    from ._sniff import protocol_mismatch
    from ._table import (
        NONE,
        TRACE_EXPORTERS,
        Finding,
        Looked,
        check_otlp,
        trace_exporter_choices,
    )
    from ._verdicts import REFUSED_ENDPOINT, ExportFailure

__all__ = [
    "CONSOLE_FORMATS",
    "DEFAULT_ENDPOINTS",
    "DEFAULT_PROMETHEUS_HOST",
    "DEFAULT_PROMETHEUS_PORT",
    "DEFAULT_QUEUE_SPANS",
    "DEFAULT_SERVICE_NAME",
    "NONE",
    "REFUSED_ENDPOINT",
    "TRACE_EXPORTERS",
    "CredentialFilter",
    "ExportFailure",
    "ExportStats",
    "Finding",
    "Looked",
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
    "check_otlp",
    "encode_record",
    "metric_exporter_names",
    "otlp_endpoint",
    "probe_otlp",
    "protocol_mismatch",
    "reachability",
    "sdk_disabled",
    "shown_endpoint",
    "to_readable_span",
    "trace_exporter_choices",
    "trace_exporter_names",
    "unreachable_collector",
]

#: Where each name of the package is defined.
_NAMES: dict[str, str] = {
    "CONSOLE_FORMATS": "._common",
    "DEFAULT_ENDPOINTS": "._common",
    "DEFAULT_PROMETHEUS_HOST": "._common",
    "DEFAULT_PROMETHEUS_PORT": "._common",
    "DEFAULT_QUEUE_SPANS": "._sink",
    "CredentialFilter": "._common",
    "DEFAULT_SERVICE_NAME": "._otel",
    "ExportFailure": "._verdicts",
    "ExportStats": "._delivery",
    "Finding": "._table",
    "Looked": "._table",
    "MetricsOptions": "._metric_options",
    "NONE": "._table",
    "MetricsPipeline": "._metrics",
    "OtelMetricsRecorder": "._metric_recorder",
    "OtlpEndpoint": "._common",
    "REFUSED_ENDPOINT": "._verdicts",
    "ResourceOptions": "._otel",
    "SpanSink": "._sink",
    "TRACE_EXPORTERS": "._table",
    "build_metrics": "._metrics",
    "build_resource": "._otel",
    "build_span_exporters": "._exporters",
    "cannot_serve": "._http",
    "check_otlp": "._table",
    "encode_record": "._otlp_json",
    "metric_exporter_names": "._common",
    "otlp_endpoint": "._common",
    "probe_otlp": "._otlp",
    "protocol_mismatch": "._sniff",
    "reachability": "._common",
    "sdk_disabled": "._common",
    "shown_endpoint": "._common",
    "to_readable_span": "._otel",
    "trace_exporter_choices": "._table",
    "trace_exporter_names": "._exporters",
    "unreachable_collector": "._exporters",
}


__getattr__, __dir__ = lazy_names(__name__, _NAMES)
