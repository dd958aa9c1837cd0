"""The port `run` serves: Prometheus's /metrics with /healthz and /readyz, or the probes alone
when the metrics go elsewhere (or nowhere: OTEL_SDK_DISABLED)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from opentelemetry.sdk.metrics.export import (
    MetricReader,
)

from .._exceptions import ConfigError
from ._http import TelemetryServer, cannot_serve

__all__ = [
    "probes_only",
    "prometheus_reader",
]

#: the name its log lines have always had
logger = logging.getLogger("otel_bridge.export._metrics")


def prometheus_reader(
    host: str, port: int, *, with_metrics: bool = True
) -> tuple[MetricReader | None, TelemetryServer]:
    from opentelemetry.exporter.prometheus import PrometheusMetricReader

    # One meter makes every series: otel_scope_name/version/schema_url labels would tell nothing
    # apart, and the version label would start new series (breaking rate() and increase())
    # at each upgrade of the bridge. target_info keeps the resource.
    reader = PrometheusMetricReader(scope_info_enabled=False) if with_metrics else None
    server = _serve(host, port)
    if reader is None:
        logger.info(
            "serving http://%s/healthz and /readyz (no metrics: OTEL_SDK_DISABLED)", server.address
        )
    else:
        logger.info("serving http://%s/metrics (and /healthz, /readyz)", server.address)
    return reader, server


def probes_only(host: str, port: int, names: Sequence[str]) -> TelemetryServer:
    """The port with /healthz and /readyz and no Prometheus metrics: their exporters are
    `names` (otlp, console, none)."""
    server = _serve(host, port)
    chosen = ",".join(names) or "none"
    server.no_metrics = (
        f"no /metrics here: OTEL_METRICS_EXPORTER={chosen} leaves prometheus out "
        "(/healthz and /readyz answer)"
    )
    logger.info(
        "serving http://%s/healthz and /readyz (no /metrics: OTEL_METRICS_EXPORTER=%s)",
        server.address,
        chosen,
    )
    return server


def _serve(host: str, port: int) -> TelemetryServer:
    try:
        return TelemetryServer(host, port)
    except (OSError, OverflowError) as exc:
        raise ConfigError(cannot_serve(host, port, exc)) from exc
