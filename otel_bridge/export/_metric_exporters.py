"""The metric exporters the bridge builds itself: the SDK's OTLP exporter, failing the way the
span exporters do (one warning, one recovery line, counted), and the OTLP JSON Lines file."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
)

from .. import semconv
from ._common import open_output, otlp_endpoint
from ._metric_recorder import OtelMetricsRecorder
from ._otlp import otlp_metric_exporter
from ._sdk_logs import capture_exporter_logs
from ._verdicts import (
    REFUSED_ENDPOINT,
    REFUSED_REQUEST,
    ExportFailure,
    describe_exception,
    export_failure,
)

__all__ = [
    "QuietMetricExporter",
    "file_exporter",
    "metrics_failure_advice",
    "otlp_exporter",
]

#: the name its log lines have always had
logger = logging.getLogger("otel_bridge.export._metrics")


def otlp_exporter(environ: Mapping[str, str]) -> QuietMetricExporter:
    endpoint = otlp_endpoint(environ, "metrics")
    return QuietMetricExporter(otlp_metric_exporter(environ), f"otlp {endpoint.describe()}")


class QuietMetricExporter(MetricExporter):
    """The SDK's OTLP metric exporter, failing the way the span exporters do: its own retry
    messages kept off the terminal, one warning when it starts failing (with the reason) and
    one line when it works again, every failed export counted in otel_bridge.export.failures
    (a metric point that could not be sent is sent cumulatively with the next one)."""

    def __init__(self, inner: MetricExporter, label: str) -> None:
        super().__init__(
            preferred_temporality=getattr(inner, "_preferred_temporality", None),
            preferred_aggregation=getattr(inner, "_preferred_aggregation", None),
        )
        self._inner = inner
        self._label = label
        self._name = type(inner).__name__
        self._failing_since: float | None = None
        self._shut = False  # a failure while being shut down is the shutdown's, not news
        self.last = False  # the next export is the last one: no next interval to try again
        self.recorder: OtelMetricsRecorder | None = None  # set once the provider exists

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        with capture_exporter_logs() as records:
            try:
                result = self._inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
                failure = None if result is MetricExportResult.SUCCESS else export_failure(records)
            except Exception as exc:  # an exporter bug must not stop the metrics
                result, failure = MetricExportResult.FAILURE, ExportFailure(describe_exception(exc))
        if result is MetricExportResult.SUCCESS:
            if self._failing_since is not None:
                logger.info(
                    "%s: exporting metrics again after %.0f s of failures",
                    self._label,
                    time.monotonic() - self._failing_since,
                )
                self._failing_since = None
            return result
        if self.recorder is not None:
            self.recorder.add(
                semconv.METRIC_EXPORT_FAILURES, 1, {semconv.OTEL_BRIDGE_EXPORTER: self._name}, ""
            )
        assert failure is not None
        if self._failing_since is None and not self._shut:
            self._failing_since = time.monotonic()
            logger.warning("%s: %s", self._label, metrics_failure_advice(failure, self.last))
        else:
            logger.debug("%s: metrics export failed again (%s)", self._label, failure.reason)
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._inner.force_flush(timeout_millis=timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._shut = True
        with capture_exporter_logs():
            self._inner.shutdown(timeout_millis=timeout_millis, **kwargs)


def metrics_failure_advice(failure: ExportFailure, last: bool = False) -> str:
    """What a failed OTLP metrics export means, and the variable that settles it: an
    endpoint that takes no metrics (a backend for traces only, such as Jaeger: HTTP 404 at
    /v1/metrics, gRPC UNIMPLEMENTED) will refuse every export, however often it is tried.
    `last`: the export at the stop, after which nothing is tried again."""
    if failure.refused == REFUSED_ENDPOINT:
        return (
            f"metrics export refused ({failure.reason}): the endpoint takes no OTLP metrics "
            "(a traces-only backend, such as Jaeger?); OTEL_METRICS_EXPORTER=prometheus keeps "
            "them on /metrics only, OTEL_METRICS_EXPORTER=none turns them off, "
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT sends them elsewhere"
        )
    then = (
        "what was counted since the previous export is not sent"
        if last
        else "trying again at the next interval"
    )
    if failure.refused == REFUSED_REQUEST:
        return (
            f"metrics export refused ({failure.reason}); {then} "
            "(`otel-bridge doctor` checks the endpoint)"
        )
    what = "the last metrics export" if last else "metrics export"
    return f"{what} failed ({failure.reason}); {then}"


def file_exporter(path: Path, mode: str) -> tuple[MetricExporter, IO[str]]:
    from opentelemetry.exporter.otlp.json.file import FileMetricExporter

    stream = open_output(path, mode, "metrics")
    return FileMetricExporter(stream=stream), stream
