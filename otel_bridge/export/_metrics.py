"""The bridge's metrics through the OpenTelemetry SDK: Prometheus endpoint, OTLP, console, file.

Instruments come from the one catalogue (`otel_bridge._metrics.CATALOGUE`). Readers are chosen the
standard way (`OTEL_METRICS_EXPORTER`: otlp, prometheus, console, none) with the bridge's
defaults: `run` serves Prometheus on 127.0.0.1:9464 and adds OTLP when an OTLP endpoint is set;
`replay` writes metrics only where asked (`--metrics-file`, or OTEL_METRICS_EXPORTER), because
the SDK stamps points with the current time and a backfill would look like a burst of activity
now (docs/architecture.md, "Metrics and old logs").
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource

from .. import semconv
from .._exceptions import ConfigError
from .._metrics import BUCKETS, CATALOGUE, Instrument
from .._privacy import Scrubber
from .._records import AttributeValue
from .._version import __version__
from ._common import open_output, otlp_protocol
from ._http import TelemetryServer

__all__ = ["MetricsOptions", "MetricsPipeline", "OtelMetricsRecorder", "build_metrics"]

logger = logging.getLogger(__name__)

#: Where `run` serves Prometheus by default: loopback only, the port OpenTelemetry uses for it.
DEFAULT_PROMETHEUS_HOST = "127.0.0.1"
DEFAULT_PROMETHEUS_PORT = 9464
_LABEL_MAX = 64  # characters of a label value that comes from a log


class OtelMetricsRecorder:
    """A `MetricsRecorder` over OpenTelemetry instruments. Thread-safe, as the SDK's are.

    Label values that come from logs (tool, model, agent names) are scrubbed like span
    attributes: a secret pasted where a tool name goes must not become a label.
    """

    def __init__(self, provider: MeterProvider, scrubber: Scrubber | None = None) -> None:
        self._scrubber = scrubber or Scrubber()
        meter = provider.get_meter("otel_bridge", __version__, schema_url=semconv.SCHEMA_URL)
        self._meter = meter
        self._counters = {}
        self._histograms = {}
        for spec in CATALOGUE:
            if spec.instrument is Instrument.COUNTER:
                self._counters[spec.name] = counter = meter.create_counter(
                    spec.name, unit=spec.unit, description=spec.description)
                if not spec.attributes:
                    # Exist from the start at 0: Prometheus' increase() misses the first
                    # increment of a series that appears already above 0.
                    counter.add(0)
            elif spec.instrument is Instrument.HISTOGRAM:
                self._histograms[spec.name] = meter.create_histogram(
                    spec.name, unit=spec.unit, description=spec.description,
                    explicit_bucket_boundaries_advisory=BUCKETS.get(spec.name))

    def add(self, name: str, value: float, attributes: Mapping[str, AttributeValue],
            session_id: str) -> None:
        counter = self._counters.get(name)
        if counter is not None:  # the session id is never a label
            counter.add(value, self._labels(attributes))

    def record(self, name: str, value: float, attributes: Mapping[str, AttributeValue],
               session_id: str) -> None:
        histogram = self._histograms.get(name)
        if histogram is not None:
            histogram.record(value, self._labels(attributes))

    def _labels(self, attributes: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
        """Scrubbed, then cut to 64 characters (cutting first could leave half a secret the
        patterns no longer recognize)."""
        return {key: (value if not isinstance(value, str) or len(value) <= _LABEL_MAX
                      else value[:_LABEL_MAX - 3] + "...")
                for key, value in self._scrubber.attributes(attributes).items()}

    def gauge(self, name: str, read: Callable[[], float]) -> None:
        """Report `read()` as the catalogue's gauge `name` whenever metrics are collected."""
        spec = next(s for s in CATALOGUE if s.name == name)

        def callback(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(read())]

        self._meter.create_observable_gauge(name, [callback], unit=spec.unit,
                                            description=spec.description)


@dataclass(frozen=True, slots=True)
class MetricsOptions:
    """Where metrics go.

    Attributes:
        default_exporters: readers used when OTEL_METRICS_EXPORTER is unset ("prometheus" for
            run, none for replay).
        prometheus_host: address the Prometheus endpoint binds.
        prometheus_port: its port; None disables it.
        metrics_file: also write OTLP JSON Lines here.
        file_mode: "w" to start the file afresh, "a" to append.
        export_interval_millis: how often OTLP/console/file readers export (run).
    """

    default_exporters: tuple[str, ...] = ()
    prometheus_host: str = DEFAULT_PROMETHEUS_HOST
    prometheus_port: int | None = DEFAULT_PROMETHEUS_PORT
    metrics_file: Path | None = None
    file_mode: str = "w"
    export_interval_millis: int = 60_000
    console_stream: IO[str] | None = None


class MetricsPipeline:
    """The meter provider, the recorder over it, and what must be closed with them."""

    def __init__(self, provider: MeterProvider | None, recorder: OtelMetricsRecorder | None,
                 closers: list[Callable[[], Any]], server: TelemetryServer | None) -> None:
        self.provider = provider
        self.recorder = recorder
        self.server = server  # serves /metrics, /healthz, /readyz when Prometheus is on
        self._closers = closers
        self._closed = False

    def shutdown(self) -> None:
        """Export a last time and stop. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.provider is not None:
            self.provider.shutdown()
        for close in self._closers:
            close()


def build_metrics(environ: Mapping[str, str], resource: Resource,
                  options: MetricsOptions, scrubber: Scrubber | None = None) -> MetricsPipeline:
    """Set up the metric readers the configuration asks for.

    Raises:
        ConfigError: an unknown exporter, a port that cannot be bound, a file not writable.
    """
    raw = environ.get("OTEL_METRICS_EXPORTER", "").strip()
    if raw:
        names = [n.strip().lower() for n in raw.split(",") if n.strip()]
    else:
        names = list(options.default_exporters)
        if names and (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                      or environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")):
            names.append("otlp")
    readers: list[MetricReader] = []
    closers: list[Callable[[], Any]] = []
    server: TelemetryServer | None = None
    interval = options.export_interval_millis
    for name in names:
        if name == "none":
            continue
        if name == "prometheus":
            if options.prometheus_port is None:
                continue
            reader, server = _prometheus(options.prometheus_host, options.prometheus_port)
            readers.append(reader)
            closers.append(server.close)
        elif name == "otlp":
            readers.append(PeriodicExportingMetricReader(_otlp_exporter(environ), interval))
        elif name == "console":
            readers.append(PeriodicExportingMetricReader(
                ConsoleMetricExporter(out=options.console_stream or sys.stdout), interval))
        else:
            raise ConfigError(f"OTEL_METRICS_EXPORTER={name!r} is not supported: use otlp, "
                              "prometheus, console or none (comma-separated)")
    if options.metrics_file is not None:
        exporter, stream = _file_exporter(options.metrics_file, options.file_mode)
        readers.append(PeriodicExportingMetricReader(exporter, interval))
        closers.append(stream.close)  # after the provider's last export
    if not readers:
        return MetricsPipeline(None, None, closers, None)
    provider = MeterProvider(resource=resource, metric_readers=readers)
    return MetricsPipeline(provider, OtelMetricsRecorder(provider, scrubber), closers, server)


def _prometheus(host: str, port: int) -> tuple[MetricReader, TelemetryServer]:
    from opentelemetry.exporter.prometheus import PrometheusMetricReader

    reader = PrometheusMetricReader()
    try:
        server = TelemetryServer(host, port)
    except OSError as exc:
        raise ConfigError(f"cannot serve Prometheus metrics on {host}:{port}: "
                          f"{exc.strerror or exc}; choose another --prometheus-port, or "
                          f"--no-prometheus") from exc
    logger.info("serving http://%s/metrics (and /healthz, /readyz)", server.address)
    return reader, server


def _otlp_exporter(environ: Mapping[str, str]) -> MetricExporter:
    if otlp_protocol(environ, "metrics") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        return OTLPMetricExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpMetricExporter,
    )
    return HttpMetricExporter()


def _file_exporter(path: Path, mode: str) -> tuple[MetricExporter, IO[str]]:
    from opentelemetry.exporter.otlp.json.file import FileMetricExporter

    stream = open_output(path, mode, "metrics")
    return FileMetricExporter(stream=stream), stream
