"""The bridge's metrics through the OpenTelemetry SDK: Prometheus endpoint, OTLP, console, file.

Instruments come from the one catalogue (`otel_bridge.metrics._recorder.CATALOGUE`). Readers are
chosen the standard way (`OTEL_METRICS_EXPORTER`: a name of `METRIC_READERS`, otlp, prometheus,
console; or none) with the bridge's defaults: `run` serves Prometheus on 127.0.0.1:9464 and
adds OTLP when an OTLP endpoint is set; `replay` writes metrics only where asked
(`--metrics-file`, or OTEL_METRICS_EXPORTER), because the SDK stamps points with the current
time and a backfill would look like a burst of activity now
(docs/architecture.md, "Metrics and old logs").
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .. import _env as env
from ..processors import Scrubber
from ._common import (
    metric_exporter_names,
    otlp_endpoint,
    sdk_disabled,
)
from ._metric_options import MetricsOptions
from ._table import NONE, unsupported

if TYPE_CHECKING:
    # The SDK's metrics, the Prometheus client and the HTTP server are imported where metrics
    # are built (`build_metrics`): a command without metrics never loads them (`_lazy.py`).
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.resources import Resource

    from ._http import TelemetryServer
    from ._metric_exporters import QuietMetricExporter
    from ._metric_recorder import OtelMetricsRecorder

__all__ = [
    "MetricsOptions",
    "MetricsPipeline",
    "build_metrics",
    "metric_exporter_names",
]

logger = logging.getLogger(__name__)

#: Where `run` serves Prometheus by default: loopback only, the port OpenTelemetry uses for it.


class MetricsPipeline:
    """The meter provider, the recorder over it, and what must be closed with them."""

    def __init__(
        self,
        provider: MeterProvider | None,
        recorder: OtelMetricsRecorder | None,
        closers: list[Callable[[], Any]],
        server: TelemetryServer | None,
    ) -> None:
        self.provider = provider
        self.recorder = recorder
        self.server = server  # serves /metrics, /healthz, /readyz when Prometheus is on
        self.otlp_exporters: list[QuietMetricExporter] = []  # told when the last export comes
        self._closers = closers
        self._closed = False

    def shutdown(self, timeout: float = 30.0, abort: Callable[[], bool] | None = None) -> None:
        """Export a last time and stop, within `timeout` seconds or until `abort()` says to
        quit at once (a second Ctrl-C: the last export is then left to the process's end).
        Idempotent."""
        if self._closed:
            return
        self._closed = True
        for exporter in self.otlp_exporters:
            exporter.last = True
        if self.provider is not None:
            provider = self.provider
            done = threading.Event()

            def last_export() -> None:
                try:
                    provider.shutdown(timeout_millis=max(timeout, 0.0) * 1000)
                except Exception:  # the SDK raises when a reader missed the deadline: a
                    # traceback from this thread at the stop would say nothing more
                    logger.debug("the last metrics export did not finish", exc_info=True)
                finally:
                    done.set()

            # On its own thread, so that waiting for it can be given up: the SDK's final
            # export against a collector that is down retries for its whole timeout.
            threading.Thread(target=last_export, name="metrics-shutdown", daemon=True).start()
            deadline = time.monotonic() + max(timeout, 0.0) + 5.0
            while not done.wait(0.1):
                if (abort is not None and abort()) or time.monotonic() > deadline:
                    break
        for close in self._closers:
            close()


def build_metrics(
    environ: Mapping[str, str],
    resource: Resource,
    options: MetricsOptions,
    scrubber: Scrubber | None = None,
) -> MetricsPipeline:
    """Set up the metric readers the configuration asks for.

    With OTEL_SDK_DISABLED=true no metric goes anywhere (the caller says so); the Prometheus
    port, when asked for, still serves /healthz and /readyz, so that probes do not restart a
    bridge that was deliberately quietened. With `options.probes`, the port serves them too
    when OTEL_METRICS_EXPORTER leaves prometheus out (otlp, none).

    The caller must call `shutdown()` on the pipeline (it makes the last export): no atexit
    hook does it, since one would retry a collector that is down at the process's very end,
    after a second Ctrl-C asked to quit at once.

    Raises:
        ConfigError: an unknown exporter, an OTLP endpoint that is not a URL, a port that
            cannot be bound, a file not writable.
    """
    names = metric_exporter_names(environ, options.default_exporters)
    names += [name for name in options.always if name not in names]
    disabled = sdk_disabled(environ)
    nothing = all(name == "none" for name in names) and options.metrics_file is None
    if nothing and not options.probes:  # nothing to build, nothing of the SDK's to import
        return MetricsPipeline(None, None, [], None)
    from opentelemetry.sdk.metrics import MeterProvider

    from ._metric_recorder import OtelMetricsRecorder
    from ._metric_server import probes_only

    if "otlp" in names and not disabled:
        otlp_endpoint(environ, "metrics")  # a bad one is an error before a port is bound
    built = _Readers()
    for name in names:
        _add_reader(built, name, environ, options, disabled)
    if options.metrics_file is not None and not disabled:
        _add_file_reader(built, options.metrics_file, options)
    if built.server is None and options.probes and options.prometheus_port is not None:
        built.server = probes_only(options.prometheus_host, options.prometheus_port, names)
        built.closers.append(built.server.close)
    if not built.readers:
        return MetricsPipeline(None, None, built.closers, built.server)
    # No atexit hook: the command shuts the pipeline down itself, within its export timeout
    # (the SDK's hook would make a last export at exit, retrying a collector that is down).
    provider = MeterProvider(
        resource=resource, metric_readers=built.readers, shutdown_on_exit=False
    )
    recorder = OtelMetricsRecorder(
        provider, scrubber, options.semconv_mode, options.max_label_values
    )
    for quiet in built.counted:
        quiet.recorder = recorder
    pipeline = MetricsPipeline(provider, recorder, built.closers, built.server)
    pipeline.otlp_exporters = built.counted
    return pipeline


@dataclass
class _Readers:
    """What `build_metrics` has built so far."""

    readers: list[MetricReader] = field(default_factory=list)
    closers: list[Callable[[], Any]] = field(default_factory=list)
    server: TelemetryServer | None = None
    #: they count their failures once there are metrics (the recorder is made last)
    counted: list[QuietMetricExporter] = field(default_factory=list)


def _add_file_reader(built: _Readers, path: Path, options: MetricsOptions) -> None:
    """The reader of --metrics-file: OTLP JSON Lines, exported at the interval."""
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    from ._metric_exporters import file_exporter

    exporter, stream = file_exporter(path, options.file_mode)
    built.readers.append(PeriodicExportingMetricReader(exporter, options.export_interval_millis))
    built.closers.append(stream.close)  # after the provider's last export


def _add_reader(
    built: _Readers, name: str, environ: Mapping[str, str], options: MetricsOptions, disabled: bool
) -> None:
    """Build the reader one name of OTEL_METRICS_EXPORTER asks for, by its row of
    `METRIC_READERS`.

    Raises:
        ConfigError: an unknown name, or what building its reader raises.
    """
    if name == NONE:
        return
    add = METRIC_READERS.get(name)
    if add is None:
        raise unsupported(env.OTEL_METRICS_EXPORTER, name, METRIC_READERS)
    add(built, environ, options, disabled)


def _prometheus(
    built: _Readers, environ: Mapping[str, str], options: MetricsOptions, disabled: bool
) -> None:
    """The Prometheus reader and the port that serves it (with /healthz and /readyz, even
    with OTEL_SDK_DISABLED=true: a probe must still find the bridge)."""
    from ._metric_server import prometheus_reader

    if options.prometheus_port is None:
        if not options.default_exporters:
            # replay: asked for by OTEL_METRICS_EXPORTER, but a one-shot command
            # serves nothing to scrape
            logger.warning(
                "OTEL_METRICS_EXPORTER=prometheus: this command serves no /metrics "
                "(it exits when done); --metrics-file or otlp writes its metrics"
            )
        return
    reader, built.server = prometheus_reader(
        options.prometheus_host, options.prometheus_port, with_metrics=not disabled
    )
    if reader is not None:
        built.readers.append(reader)
    built.closers.append(built.server.close)


def _otlp(
    built: _Readers, environ: Mapping[str, str], options: MetricsOptions, disabled: bool
) -> None:
    """The OTLP exporter, read at the interval, counting its failures."""
    if disabled:
        return
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    from ._metric_exporters import otlp_exporter

    built.counted.append(otlp_exporter(environ))
    built.readers.append(
        PeriodicExportingMetricReader(built.counted[-1], options.export_interval_millis)
    )


def _console(
    built: _Readers, environ: Mapping[str, str], options: MetricsOptions, disabled: bool
) -> None:
    """The SDK's console exporter, read at the interval."""
    if disabled:
        return
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        PeriodicExportingMetricReader,
    )

    exporter = ConsoleMetricExporter(out=options.console_stream or sys.stdout)
    built.readers.append(PeriodicExportingMetricReader(exporter, options.export_interval_millis))


_MetricRow = Callable[[_Readers, Mapping[str, str], MetricsOptions, bool], None]
_METRIC_ROWS: dict[str, _MetricRow] = {
    "otlp": _otlp,
    "prometheus": _prometheus,
    "console": _console,
}
#: Each name of OTEL_METRICS_EXPORTER but "none": what adds its reader to those being built
#: (it imports what it builds when called; OTEL_SDK_DISABLED=true is its fourth argument).
#: In the order the errors list them. The span exporters' table is `_table.TRACE_EXPORTERS`.
METRIC_READERS: Mapping[str, _MetricRow] = MappingProxyType(_METRIC_ROWS)
