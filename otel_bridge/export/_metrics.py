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
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
    MetricExportResult,
    MetricReader,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource

from .. import _env as env
from .. import semconv
from .._exceptions import ConfigError
from .._metrics import BUCKETS, CATALOGUE, METRICS, Instrument, known_metric
from .._records import AttributeValue
from .._version import __version__
from ..processors import Scrubber
from ._common import open_output, otlp_endpoint, sdk_disabled
from ._http import TelemetryServer, cannot_serve
from ._sdk_logs import build_otlp_exporter, capture_exporter_logs, http_session
from ._verdicts import (
    REFUSED_ENDPOINT,
    REFUSED_REQUEST,
    ExportFailure,
    describe_exception,
    export_failure,
)

__all__ = [
    "DEFAULT_MAX_LABEL_VALUES",
    "OTHER_LABEL_VALUE",
    "MetricsOptions",
    "MetricsPipeline",
    "OtelMetricsRecorder",
    "build_metrics",
    "metrics_failure_advice",
    "otlp_metric_exporter",
]

logger = logging.getLogger(__name__)

#: Where `run` serves Prometheus by default: loopback only, the port OpenTelemetry uses for it.
DEFAULT_PROMETHEUS_HOST = "127.0.0.1"
DEFAULT_PROMETHEUS_PORT = 9464
_LABEL_MAX = 64  # characters of a label value that comes from a log

#: Distinct values each label of each metric takes (`OtelMetricsRecorder`); a value past them is
#: recorded as `OTHER_LABEL_VALUE`. A deployment has some tens of models and agents and a few
#: hundred tools at most (MCP servers included); a log that names thousands is hostile or broken,
#: and every value is a series a scrape serializes for as long as the process lives.
DEFAULT_MAX_LABEL_VALUES = 500
OTHER_LABEL_VALUE = "other"
_LABELS_CAPPED = semconv.METRIC_LABELS_CAPPED


class OtelMetricsRecorder:
    """A `MetricsRecorder` over OpenTelemetry instruments. Thread-safe, as the SDK's are.

    Label values that come from logs (tool, model, agent names) are scrubbed like span
    attributes: a secret pasted where a tool name goes must not become a label.

    Every label of every metric takes at most `max_label_values` distinct values; later new
    values are recorded as "other", counted in otel_bridge.labels.capped (by metric and label)
    and said once per metric in the log. Capped here, at the one edge every observation
    crosses, rather than at each place in the assembler that reads a name from a log: tool,
    model, agent and skill names, error types, MCP servers, repositories, CLI versions, and
    any label added later. Labels that take a few values of the bridge's own (outcomes, modes)
    never reach the cap, so all are capped alike. The SDK's own limit is on combinations, not
    values: past 2,000 attribute sets per metric (opentelemetry-sdk 1.45,
    `_view_instrument_match._DEFAULT_CARDINALITY_LIMIT`) it records into one point labelled
    `otel.metric.overflow=true`, which says nothing of which label grew; with 20,000 tool
    names it still let /metrics grow to 11 MB. That limit stays, behind this one, for metrics
    whose labels multiply.

    The assembler speaks the released GenAI names only; `semconv` chooses what goes out
    (`semconv.SEMCONV_MODES`): `previous` turns each released metric that was renamed into
    its previous name (`_PREVIOUS`) and drops the metrics that did not exist then, `both`
    records both. So dashboards built on semantic-conventions 1.41.0 keep working.
    """

    def __init__(
        self,
        provider: MeterProvider,
        scrubber: Scrubber | None = None,
        semconv_mode: str = semconv.SEMCONV_RELEASED,
        max_label_values: int = DEFAULT_MAX_LABEL_VALUES,
    ) -> None:
        if max_label_values < 1:
            raise ValueError("max_label_values must be positive")
        if semconv_mode not in semconv.SEMCONV_MODES:
            raise ConfigError(
                f"--semconv {semconv_mode!r}: use one of {', '.join(semconv.SEMCONV_MODES)}"
            )
        self._released = semconv_mode != semconv.SEMCONV_PREVIOUS
        self._previous = semconv_mode != semconv.SEMCONV_RELEASED
        self._scrubber = scrubber or Scrubber()
        self._max_values = max_label_values
        self._values: dict[tuple[str, str], set[object]] = {}  # (metric, label) -> values
        self._capped: set[str] = set()  # metrics whose capping was logged
        self._lock = threading.Lock()
        meter = provider.get_meter("otel_bridge", __version__, schema_url=semconv.SCHEMA_URL)
        self._meter = meter
        self._counters = {}
        self._histograms = {}
        for spec in CATALOGUE:
            if spec.instrument is Instrument.COUNTER:
                self._counters[spec.name] = counter = meter.create_counter(
                    spec.name, unit=spec.unit, description=spec.description
                )
                # Exist from the start at 0: Prometheus' increase() misses the first
                # increment of a series that appears already above 0, and a dashboard that
                # divides by a counter shows "No data" until it exists.
                for labels in _FROM_THE_START.get(spec.name, [{}] if not spec.attributes else []):
                    counter.add(0, labels)
            elif spec.instrument is Instrument.HISTOGRAM:
                self._histograms[spec.name] = meter.create_histogram(
                    spec.name,
                    unit=spec.unit,
                    description=spec.description,
                    explicit_bucket_boundaries_advisory=BUCKETS.get(spec.name),
                )

    def add(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        if not known_metric(name) or (not self._released and name in _RELEASED_ONLY):
            return  # a name the catalogue lacks: raised in tests, counted and said once here
        counter = self._counters.get(name)
        if counter is not None:  # the session id is never a label
            counter.add(value, self._labels(name, attributes))

    def record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        if not known_metric(name):
            return
        previous = _PREVIOUS.get(name)
        if previous is not None and self._previous:
            old_name, extra = previous
            self._record(old_name, value, {**attributes, **extra})
        if self._released or (previous is None and name not in _RELEASED_ONLY):
            self._record(name, value, attributes)

    def _record(self, name: str, value: float, attributes: Mapping[str, AttributeValue]) -> None:
        histogram = self._histograms.get(name)
        if histogram is not None:
            histogram.record(value, self._labels(name, attributes))

    def _labels(
        self, name: str, attributes: Mapping[str, AttributeValue]
    ) -> dict[str, AttributeValue]:
        """Scrubbed, then cut to 64 characters (cutting first could leave half a secret the
        patterns no longer recognize), then capped in number."""
        labels: dict[str, AttributeValue] = {}
        for key, value in self._scrubber.attributes(attributes).items():
            if isinstance(value, str) and len(value) > _LABEL_MAX:
                value = value[: _LABEL_MAX - 3] + "..."
            labels[key] = self._bounded(name, key, value)
        return labels

    def _bounded(self, name: str, key: str, value: AttributeValue) -> AttributeValue:
        """`value`, or "other" once label `key` of metric `name` has its fill of values."""
        seen = self._values.get((name, key))
        marker = value if isinstance(value, (str, int, float)) else repr(value)
        if seen is not None and marker in seen:  # the common case, without the lock
            return value
        with self._lock:
            seen = self._values.setdefault((name, key), set())
            if marker in seen or len(seen) < self._max_values:
                seen.add(marker)
                return value
            first = name not in self._capped
            self._capped.add(name)
        if first:  # never the value itself: it came from a log, and may hold anything
            logger.warning(
                "metric %s: more than %d distinct values of its label %s; further ones are "
                "recorded as %r (counted in %s)",
                name,
                self._max_values,
                key,
                OTHER_LABEL_VALUE,
                _LABELS_CAPPED,
            )
        self._counters[_LABELS_CAPPED].add(
            1, {semconv.OTEL_BRIDGE_METRIC: name, semconv.OTEL_BRIDGE_LABEL: key}
        )
        return OTHER_LABEL_VALUE

    def gauge(self, name: str, read: Callable[[], float]) -> None:
        """Report `read()` as the catalogue's gauge `name` whenever metrics are collected."""
        if not known_metric(name):
            return
        spec = METRICS[name]

        def callback(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(read())]

        self._meter.create_observable_gauge(
            name, [callback], unit=spec.unit, description=spec.description
        )


#: The label sets the bridge knows before any log is read, of the counters that dashboards and
#: alert rules divide by (the completion rate, the tool error rate): they exist at 0 from the
#: start. What comes from logs (a tool's name, a repository) is not known: those series come
#: with the first count.
_FROM_THE_START: Mapping[str, list[dict[str, AttributeValue]]] = {
    semconv.METRIC_TASKS: [
        {semconv.COPILOT_TASK_OUTCOME: outcome, semconv.COPILOT_MODE: mode}
        for mode in (semconv.MODE_INTERACTIVE, semconv.MODE_PLAN, semconv.MODE_AUTOPILOT)
        for outcome in (
            semconv.OUTCOME_COMPLETED,
            semconv.OUTCOME_FAILED,
            semconv.OUTCOME_ERROR,
            semconv.OUTCOME_ABORTED,
            semconv.OUTCOME_NO_SIGNAL,
        )
    ],
    semconv.METRIC_TOOL_CALLS: [
        {semconv.COPILOT_TOOL_OUTCOME: outcome, semconv.COPILOT_AGENT_TYPE: agent}
        for agent in (semconv.AGENT_TYPE_MAIN, semconv.AGENT_TYPE_SUBAGENT)
        for outcome in (
            semconv.TOOL_OUTCOME_SUCCESS,
            semconv.TOOL_OUTCOME_ERROR,
            semconv.TOOL_OUTCOME_ABORTED,
            semconv.TOOL_OUTCOME_INCOMPLETE,
        )
    ],
}

#: Each released histogram that was renamed: its previous name and the labels it had there
#: (semconv.RENAMED; semantic-conventions-genai docs/gen-ai/non-normative/migration.md, "GenAI
#: client token usage metric" and "GenAI client inference duration metric").
_PREVIOUS: Mapping[str, tuple[str, Mapping[str, AttributeValue]]] = {
    semconv.METRIC_INFERENCE_INPUT_TOKENS: (
        semconv.METRIC_TOKEN_USAGE,
        {semconv.GEN_AI_TOKEN_TYPE: semconv.TOKEN_TYPE_INPUT},
    ),
    semconv.METRIC_INFERENCE_OUTPUT_TOKENS: (
        semconv.METRIC_TOKEN_USAGE,
        {semconv.GEN_AI_TOKEN_TYPE: semconv.TOKEN_TYPE_OUTPUT},
    ),
    semconv.METRIC_INFERENCE_DURATION: (semconv.METRIC_OPERATION_DURATION, {}),
}
#: Metrics semantic-conventions 1.41.0 did not have: not emitted with `--semconv previous`.
_RELEASED_ONLY = frozenset(
    (
        semconv.METRIC_USAGE_INPUT_TOKENS,
        semconv.METRIC_USAGE_OUTPUT_TOKENS,
        semconv.METRIC_USAGE_CACHE_READ_TOKENS,
        semconv.METRIC_USAGE_CACHE_WRITE_TOKENS,
        semconv.METRIC_USAGE_REASONING_TOKENS,
        semconv.METRIC_INVOKE_AGENT_INFERENCE_CALLS,
    )
)


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
        self.otlp_exporters: list[_QuietMetricExporter] = []  # told when the last export comes
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
    readers: list[MetricReader] = []
    closers: list[Callable[[], Any]] = []
    server: TelemetryServer | None = None
    interval = options.export_interval_millis
    disabled = sdk_disabled(environ)
    if "otlp" in names and not disabled:
        otlp_endpoint(environ, "metrics")  # a bad one is an error before a port is bound
    counted: list[_QuietMetricExporter] = []  # they count their failures once there are metrics
    for name in names:
        if name == "none":
            continue
        if name == "prometheus":
            if options.prometheus_port is None:
                if not options.default_exporters:
                    # replay: asked for by OTEL_METRICS_EXPORTER, but a one-shot command
                    # serves nothing to scrape
                    logger.warning(
                        "OTEL_METRICS_EXPORTER=prometheus: this command serves no /metrics "
                        "(it exits when done); --metrics-file or otlp writes its metrics"
                    )
                continue
            reader, server = _prometheus(
                options.prometheus_host, options.prometheus_port, with_metrics=not disabled
            )
            if reader is not None:
                readers.append(reader)
            closers.append(server.close)
        elif disabled:
            continue
        elif name == "otlp":
            counted.append(_otlp_exporter(environ))
            readers.append(PeriodicExportingMetricReader(counted[-1], interval))
        elif name == "console":
            readers.append(
                PeriodicExportingMetricReader(
                    ConsoleMetricExporter(out=options.console_stream or sys.stdout), interval
                )
            )
        else:
            raise ConfigError(
                f"OTEL_METRICS_EXPORTER={name!r} is not supported: use otlp, "
                "prometheus, console or none (comma-separated)"
            )
    if options.metrics_file is not None and not disabled:
        exporter, stream = _file_exporter(options.metrics_file, options.file_mode)
        readers.append(PeriodicExportingMetricReader(exporter, interval))
        closers.append(stream.close)  # after the provider's last export
    if server is None and options.probes and options.prometheus_port is not None:
        server = _probes_only(options.prometheus_host, options.prometheus_port, names)
        closers.append(server.close)
    if not readers:
        return MetricsPipeline(None, None, closers, server)
    # No atexit hook: the command shuts the pipeline down itself, within its export timeout
    # (the SDK's hook would make a last export at exit, retrying a collector that is down).
    provider = MeterProvider(resource=resource, metric_readers=readers, shutdown_on_exit=False)
    recorder = OtelMetricsRecorder(
        provider, scrubber, options.semconv_mode, options.max_label_values
    )
    for quiet in counted:
        quiet.recorder = recorder
    pipeline = MetricsPipeline(provider, recorder, closers, server)
    pipeline.otlp_exporters = counted
    return pipeline


def metric_exporter_names(environ: Mapping[str, str], defaults: Sequence[str]) -> list[str]:
    """OTEL_METRICS_EXPORTER, else `defaults` plus otlp when an OTLP endpoint is set (and there
    are defaults: replay has none, so that old logs do not make metrics of now)."""
    raw = environ.get(env.OTEL_METRICS_EXPORTER, "").strip()
    if raw:
        return [n.strip().lower() for n in raw.split(",") if n.strip()]
    names = list(defaults)
    if (
        names
        and "otlp" not in names
        and (
            environ.get(env.OTEL_EXPORTER_OTLP_ENDPOINT, "").strip()
            or environ.get(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, "").strip()
        )
    ):
        names.append("otlp")
    return names


def _prometheus(
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


def _probes_only(host: str, port: int, names: Sequence[str]) -> TelemetryServer:
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


def otlp_metric_exporter(
    environ: Mapping[str, str], timeout: float | None = None
) -> MetricExporter:
    """The SDK's OTLP metric exporter for the configured protocol and endpoint (the rest of
    its settings it reads from the environment; `timeout` in seconds instead of theirs)."""
    endpoint = otlp_endpoint(environ, "metrics")

    def build() -> MetricExporter:
        if endpoint.protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter,
            )

            return OTLPMetricExporter(endpoint=endpoint.target, timeout=timeout)
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
            OTLPMetricExporter as HttpMetricExporter,
        )

        return HttpMetricExporter(
            endpoint=endpoint.target, session=http_session(environ, "metrics"), timeout=timeout
        )

    return build_otlp_exporter(endpoint, "metric", build)


def _otlp_exporter(environ: Mapping[str, str]) -> _QuietMetricExporter:
    endpoint = otlp_endpoint(environ, "metrics")
    return _QuietMetricExporter(otlp_metric_exporter(environ), f"otlp {endpoint.describe()}")


class _QuietMetricExporter(MetricExporter):
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


def _file_exporter(path: Path, mode: str) -> tuple[MetricExporter, IO[str]]:
    from opentelemetry.exporter.otlp.json.file import FileMetricExporter

    stream = open_output(path, mode, "metrics")
    return FileMetricExporter(stream=stream), stream
