"""Which span exporters the configuration asks for, and whether their collector is there.

Exporters are chosen the standard way (https://opentelemetry.io/docs/specs/otel/configuration/
sdk-environment-variables/): `OTEL_TRACES_EXPORTER` (the names of `_table.TRACE_EXPORTERS`, the
one table of exporters: otlp, console; or none), and for OTLP `OTEL_EXPORTER_OTLP_[TRACES_]
PROTOCOL` (grpc or http/protobuf, the spec's default). The endpoint
is checked at start (a typo is a configuration error, not minutes of retries) and handed to the
exporter; headers, TLS, compression and timeout are read by the SDK exporters themselves from
their `OTEL_EXPORTER_OTLP_*` variables. `OTEL_SDK_DISABLED=true` turns every exporter off.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from opentelemetry.sdk.trace.export import SpanExporter

from .. import _env as env
from ._common import (
    metric_exporter_names,
    open_output,
    otlp_endpoint,
    reachability,
    sdk_disabled,
)
from ._otlp_json import OtlpJsonFileExporter
from ._sniff import protocol_mismatch
from ._table import NONE, TRACE_EXPORTERS, SpanOptions, unsupported

__all__ = [
    "build_span_exporters",
    "exporter_label",
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
    options = SpanOptions(console_stream, console_format)
    for name in names:
        if name == NONE:
            continue
        row = TRACE_EXPORTERS.get(name)
        if row is None:
            raise unsupported(env.OTEL_TRACES_EXPORTER, name, TRACE_EXPORTERS)
        exporter, label = row.build(environ, options)
        exporters.append(exporter)
        _LABELS[exporter] = label
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


def _file_exporter(path: Path, mode: str) -> SpanExporter:
    """OTLP JSON Lines to a file we open (to choose truncate or append), closed at shutdown."""
    return OtlpJsonFileExporter(open_output(path, mode, "traces"))
