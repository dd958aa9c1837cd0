"""What `build_metrics` is told: where metrics go. A module of its own, without the SDK's
metrics, so that a command that only names the options (`replay` without metrics) does not
import them (`_lazy.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .. import semconv
from ._common import DEFAULT_MAX_LABEL_VALUES, DEFAULT_PROMETHEUS_HOST, DEFAULT_PROMETHEUS_PORT

__all__ = ["MetricsOptions"]


@dataclass(frozen=True, slots=True)
class MetricsOptions:
    """Where metrics go.

    Attributes:
        default_exporters: readers used when OTEL_METRICS_EXPORTER is unset ("prometheus" for
            run, none for replay).
        always: readers built whatever OTEL_METRICS_EXPORTER says (run: "prometheus" when
            a flag of its port was given: the flag wins).
        prometheus_host: address the Prometheus endpoint binds.
        prometheus_port: its port; None disables it.
        probes: serve /healthz and /readyz on that port even when no Prometheus reader is
            asked for (run, whose probes must answer whatever OTEL_METRICS_EXPORTER says:
            a liveness probe that finds nothing restarts the bridge for ever); /metrics then
            answers 404 saying where the metrics go.
        metrics_file: also write OTLP JSON Lines here.
        file_mode: "w" to start the file afresh, "a" to append.
        export_interval_millis: how often OTLP/console/file readers export (run).
        semconv_mode: which GenAI metric names go out: released, previous or both
            (`OtelMetricsRecorder`; docs/metrics.md, "Convention version").
        max_label_values: distinct values each label of each metric takes before further
            ones are recorded as "other" (`OtelMetricsRecorder`).
    """

    default_exporters: tuple[str, ...] = ()
    always: tuple[str, ...] = ()
    prometheus_host: str = DEFAULT_PROMETHEUS_HOST
    prometheus_port: int | None = DEFAULT_PROMETHEUS_PORT
    probes: bool = False
    metrics_file: Path | None = None
    file_mode: str = "w"
    export_interval_millis: int = 60_000
    console_stream: IO[str] | None = None
    semconv_mode: str = semconv.SEMCONV_RELEASED
    max_label_values: int = DEFAULT_MAX_LABEL_VALUES
