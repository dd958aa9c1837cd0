"""Which span exporters the configuration asks for, and whether their collector is there.

Exporters are chosen the standard way (https://opentelemetry.io/docs/specs/otel/configuration/
sdk-environment-variables/): `OTEL_TRACES_EXPORTER` (otlp, console, none), and for OTLP
`OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` (grpc or http/protobuf, the spec's default). The endpoint
is checked at start (a typo is a configuration error, not minutes of retries) and handed to the
exporter; headers, TLS, compression and timeout are read by the SDK exporters themselves from
their `OTEL_EXPORTER_OTLP_*` variables. `OTEL_SDK_DISABLED=true` turns every exporter off.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .. import _env as env
from .._exceptions import ConfigError
from ._common import (
    OtlpEndpoint,
    metric_exporter_names,
    open_output,
    otlp_endpoint,
    reachability,
    sdk_disabled,
)
from ._otlp_json import OtlpJsonFileExporter
from ._sdk_logs import build_otlp_exporter, capture_exporter_logs, http_session
from ._sniff import protocol_mismatch
from ._verdicts import ExportFailure, describe_exception, export_failure

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricExporter

__all__ = [
    "build_span_exporters",
    "exporter_label",
    "probe_otlp",
    "trace_exporter_names",
    "unreachable_collector",
]


def trace_exporter_names(
    environ: Mapping[str, str], traces_file: bool, *, console: bool = False
) -> tuple[str, ...]:
    """The exporters OTEL_TRACES_EXPORTER selects, with the bridge's defaults when unset: otlp
    when an OTLP endpoint is set (--traces-file or not: the file is one more destination, never
    a replacement), console when neither an endpoint nor a file is given, else none but the
    file. `console` (a --console-format given) adds the console whatever the variables say:
    the flag was typed for this run, and showing nothing would ignore it."""
    names = _configured_names(environ, traces_file)
    if console and "console" not in names:
        names = (*names, "console")
    return names


def _configured_names(environ: Mapping[str, str], traces_file: bool) -> tuple[str, ...]:
    raw = environ.get(env.OTEL_TRACES_EXPORTER, "").strip()
    if raw:
        names = tuple(n.strip().lower() for n in raw.split(",") if n.strip())
    elif (
        environ.get(env.OTEL_EXPORTER_OTLP_ENDPOINT, "").strip()
        or environ.get(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "").strip()
    ):
        names = ("otlp",)
    elif traces_file:
        names = ()  # the file is where the spans go
    else:
        names = ("console",)  # nothing configured: show the spans rather than fail to send
    return names


#: How each exporter the bridge made is called in log lines and summaries.
_LABELS: weakref.WeakKeyDictionary[SpanExporter, str] = weakref.WeakKeyDictionary()


def exporter_label(exporter: SpanExporter) -> str:
    """'otlp http://collector:4318/v1/traces (http/protobuf)', 'file traces.jsonl', 'console';
    the class name of an exporter the bridge did not make."""
    return _LABELS.get(exporter) or type(exporter).__name__


def build_span_exporters(
    environ: Mapping[str, str],
    *,
    traces_file: Path | None = None,
    file_mode: str = "w",
    console_stream: IO[str] | None = None,
    console_format: str | None = None,
) -> list[SpanExporter]:
    """The exporters the configuration asks for.

    Args:
        environ: the environment to read OTEL_* choices from.
        traces_file: also write OTLP JSON Lines here (the OpenTelemetry file-exporter format).
        file_mode: "w" to start the file afresh (replay), "a" to append (run).
        console_stream: where the console exporter writes; stdout by default.
        console_format: how it writes: "summary" (a line per task), "tree" or "json" (one
            span per line); None: summary on a terminal, json otherwise (see _console.py).
            Given, the console exporter is made whatever OTEL_TRACES_EXPORTER says.

    Returns:
        none when OTEL_SDK_DISABLED=true (the caller says so once).

    Raises:
        ConfigError: an exporter name or protocol we do not know, an OTLP endpoint that is not
            a URL, or a file we cannot open.
    """
    if sdk_disabled(environ):
        return []
    exporters: list[SpanExporter] = []
    names = trace_exporter_names(environ, traces_file is not None, console=bool(console_format))
    for name in names:
        if name == "none":
            continue
        if name == "console":
            from ._console import ConsoleSpanExporter

            exporters.append(ConsoleSpanExporter(console_stream or sys.stdout, console_format))
            _LABELS[exporters[-1]] = "console"
        elif name == "otlp":
            endpoint = otlp_endpoint(environ, "traces")
            exporters.append(_otlp_exporter(endpoint, environ))
            _LABELS[exporters[-1]] = f"otlp {endpoint.describe()}"
        else:
            raise ConfigError(
                f"OTEL_TRACES_EXPORTER={name!r} is not supported: "
                "use otlp, console or none (comma-separated)"
            )
    if traces_file is not None:
        exporters.append(_file_exporter(traces_file, file_mode))
        _LABELS[exporters[-1]] = f"file {traces_file}"
    return exporters


def unreachable_collector(
    environ: Mapping[str, str],
    *,
    traces_file: Path | None = None,
    metric_defaults: Sequence[str] = (),
    timeout: float = 2.0,
) -> str | None:
    """One line about the first OTLP endpoint the configuration sends to that does not accept
    a TCP connection, naming it and pointing to `otel-bridge doctor`, or whose port answers
    the other OTLP protocol (`_sniff.protocol_mismatch`), saying what to set; None when all
    is well (or none is used, or OTEL_SDK_DISABLED=true).

    Why: the SDK exporters retry a refused connection for their whole timeout at every batch,
    so a replay to a collector that is not running would take a minute to say so.

    Raises:
        ConfigError: an endpoint that is not a URL, or a protocol the bridge cannot speak.
    """
    if sdk_disabled(environ):
        return None
    endpoints = []
    if "otlp" in trace_exporter_names(environ, traces_file is not None):
        endpoints.append(otlp_endpoint(environ, "traces"))
    if "otlp" in metric_exporter_names(environ, metric_defaults):
        endpoints.append(otlp_endpoint(environ, "metrics"))
    seen: set[tuple[str, int]] = set()
    for endpoint in endpoints:
        if (endpoint.host, endpoint.port) in seen:
            continue
        seen.add((endpoint.host, endpoint.port))
        problem = reachability(endpoint, timeout)
        if problem is not None:
            return (
                f"OTLP endpoint {endpoint.describe()} {problem}: is the collector running? "
                f"`otel-bridge doctor` checks the set-up"
            )
        mismatch = protocol_mismatch(endpoint, timeout)  # the other protocol's port
        if mismatch is not None:
            return f"OTLP endpoint {endpoint.describe()}: {mismatch}"
    return None


def probe_otlp(
    environ: Mapping[str, str], signal: str, timeout: float = 2.0
) -> ExportFailure | None:
    """Send one empty export of `signal` ("traces" or "metrics") through the SDK exporter the
    bridge would use (its endpoint, headers, TLS), and say how it failed; None when the
    collector took it. An empty request carries nothing: a collector answers it as any
    other, and a backend with no receiver for the signal refuses it (Jaeger: HTTP 404 at
    /v1/metrics), which a TCP connection alone cannot tell.

    Raises:
        ConfigError: the endpoint or another OTLP setting is unusable.
    """
    # The SDK's metrics, imported only here: a command that sends no metrics never loads them.
    from opentelemetry.sdk.metrics.export import MetricExportResult, MetricsData

    from ._metric_exporters import otlp_metric_exporter

    exporter: SpanExporter | MetricExporter
    if signal == "traces":
        exporter = _otlp_exporter(otlp_endpoint(environ, "traces"), environ, timeout=timeout)
    else:
        exporter = otlp_metric_exporter(environ, timeout=timeout)
    with capture_exporter_logs() as records:
        try:
            if isinstance(exporter, SpanExporter):
                ok = exporter.export([]) is SpanExportResult.SUCCESS
            else:
                empty = MetricsData(resource_metrics=[])
                ok = exporter.export(empty, timeout_millis=timeout * 1000) is (
                    MetricExportResult.SUCCESS
                )
        except Exception as exc:  # an exporter's bug is one more way to fail
            return ExportFailure(describe_exception(exc))
        finally:
            with contextlib.suppress(Exception):
                exporter.shutdown()
    return None if ok else export_failure(records)


def _otlp_exporter(
    endpoint: OtlpEndpoint, environ: Mapping[str, str], timeout: float | None = None
) -> SpanExporter:
    """The SDK's exporter for the protocol, given the endpoint that was checked (the rest of
    its settings it reads from the environment; `timeout`, in seconds, instead of theirs).
    Its own retry messages are kept for the bridge's one warning instead of reaching the
    terminal (`quiet_exporter_logs`)."""

    def build() -> SpanExporter:
        if endpoint.protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            return OTLPSpanExporter(endpoint=endpoint.target, timeout=timeout)
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpSpanExporter,
        )

        return HttpSpanExporter(
            endpoint=endpoint.target, session=http_session(environ, "traces"), timeout=timeout
        )

    return build_otlp_exporter(endpoint, "trace", build)


def _file_exporter(path: Path, mode: str) -> SpanExporter:
    """OTLP JSON Lines to a file we open (to choose truncate or append), closed at shutdown."""
    return OtlpJsonFileExporter(open_output(path, mode, "traces"))
