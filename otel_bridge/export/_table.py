"""The one table of span exporters: each name OTEL_TRACES_EXPORTER takes, how the bridge builds
it and names it in log lines, and how `doctor` checks it. Adding an exporter is one row here
(and its test): the choice (`_exporters.build_span_exporters`), the error that lists the
accepted names, the command line's help and `doctor` all read `TRACE_EXPORTERS`.

A row's functions import what they build when called, never here: a command pays at start
for the exporters it uses, not for all of them (docs/performance.md). This module itself
imports no part of the SDK, so that the help can name the exporters cheaply.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import IO, TYPE_CHECKING
from urllib.parse import urlsplit

from .. import _env as env
from .._exceptions import ConfigError
from ._common import DEFAULT_ENDPOINTS, OtlpEndpoint, otlp_endpoint, shown_endpoint

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

    from ._verdicts import ExportFailure

__all__ = [
    "NONE",
    "TRACE_EXPORTERS",
    "Finding",
    "Looked",
    "SpanExporterRow",
    "SpanOptions",
    "check_otlp",
    "trace_exporter_choices",
    "unsupported",
]

#: The name that turns a signal's exporters off (the specification's).
NONE = "none"


class SpanOptions:
    """What a command says about its span exporters beyond the environment. (The types of
    this module are plain classes, not dataclasses or named tuples: every command's help
    imports the module, and each of those takes a tenth of a millisecond or more to make.)

    Attributes:
        console_stream: where the console exporter writes; stdout by default.
        console_format: how it writes: "summary", "tree" or "json" (`_console.py`); None:
            summary on a terminal, json otherwise.
    """

    __slots__ = ("console_format", "console_stream")

    def __init__(
        self, console_stream: IO[str] | None = None, console_format: str | None = None
    ) -> None:
        self.console_stream = console_stream
        self.console_format = console_format


class Finding:
    """`doctor`'s word on one exporter: fine or not, and a line a person can act on (an ok
    finding without a line says nothing new and is left out)."""

    __slots__ = ("message", "ok")

    def __init__(self, ok: bool, message: str) -> None:
        self.ok = ok
        self.message = message


class Looked:
    """What `doctor` has looked at so far, so that each host and port is tried once for the
    traces and the metrics both.

    Attributes:
        timeout: seconds each connection or probe may take.
        reached: each host and port tried, and why it could not be reached (None: it could).
    """

    __slots__ = ("reached", "timeout")

    def __init__(self, timeout: float = 2.0) -> None:
        self.timeout = timeout
        self.reached: dict[tuple[str, int], str | None] = {}


class SpanExporterRow:
    """One name of OTEL_TRACES_EXPORTER.

    Attributes:
        build: the exporter the environment and the command's options ask for, and its
            label in log lines and summaries ('otlp http://collector:4318/v1/traces
            (http/protobuf)', 'console'). Raises ConfigError for a setting it cannot use.
        check: `doctor`'s finding about it, looked at for real where it can be.
    """

    __slots__ = ("build", "check")

    def __init__(
        self,
        build: Callable[[Mapping[str, str], SpanOptions], tuple[SpanExporter, str]],
        check: Callable[[Mapping[str, str], Looked], Finding],
    ) -> None:
        self.build = build
        self.check = check


def _build_otlp(environ: Mapping[str, str], options: SpanOptions) -> tuple[SpanExporter, str]:
    from ._otlp import otlp_span_exporter

    endpoint = otlp_endpoint(environ, "traces")
    return otlp_span_exporter(endpoint, environ), f"otlp {endpoint.describe()}"


def _check_otlp_traces(environ: Mapping[str, str], looked: Looked) -> Finding:
    return check_otlp(environ, "traces", looked)


def _build_console(environ: Mapping[str, str], options: SpanOptions) -> tuple[SpanExporter, str]:
    from ._console import ConsoleSpanExporter

    return ConsoleSpanExporter(options.console_stream or sys.stdout, options.console_format), (
        "console"
    )


def _check_console(environ: Mapping[str, str], looked: Looked) -> Finding:
    return Finding(
        True,
        "exporter console: spans printed to stdout (set "
        "OTEL_EXPORTER_OTLP_ENDPOINT to send them to a collector)",
    )


_TRACE_ROWS: dict[str, SpanExporterRow] = {
    "otlp": SpanExporterRow(_build_otlp, _check_otlp_traces),
    "console": SpanExporterRow(_build_console, _check_console),
}
#: Each name of OTEL_TRACES_EXPORTER but "none", in the order the help and errors list them.
TRACE_EXPORTERS: Mapping[str, SpanExporterRow] = MappingProxyType(_TRACE_ROWS)


def trace_exporter_choices() -> str:
    """The names OTEL_TRACES_EXPORTER accepts, for errors and the help: 'otlp, console or
    none'."""
    return _choices(TRACE_EXPORTERS)


def unsupported(variable: str, name: str, names: Iterable[str]) -> ConfigError:
    """The error for a name a signal's exporter variable does not take, listing `names` (a
    table's) and none: the span exporters' and the metric readers' say it alike."""
    return ConfigError(
        f"{variable}={name!r} is not supported: use {_choices(names)} (comma-separated)"
    )


def _choices(names: Iterable[str]) -> str:
    *first, last = (*names, NONE)
    return f"{', '.join(first)} or {last}"


def check_otlp(environ: Mapping[str, str], signal: str, looked: Looked) -> Finding:
    """The endpoint of `signal` ("traces" or "metrics") is usable, accepts a connection
    (looked at once per host and port: an ok finding with no message, left out, when the
    other signal's found it not there), and takes an empty export of `signal` through the
    exporter run would use."""
    from ._common import reachability
    from ._otlp import probe_otlp
    from ._sniff import protocol_mismatch

    try:
        endpoint = otlp_endpoint(environ, signal)
    except ConfigError as exc:
        return Finding(False, f"{signal}: {exc}")
    what = "exporter otlp" if signal == "traces" else "metrics otlp"
    where = f"{what} at {endpoint.describe()}{_origin(endpoint)}"
    key = (endpoint.host, endpoint.port)
    if key in looked.reached:
        if looked.reached[key] is not None:
            return Finding(True, "")  # said for the traces
    else:
        looked.reached[key] = reachability(endpoint, looked.timeout)
    problem = looked.reached[key]
    if problem is not None:
        return Finding(
            False,
            f"{where}: NOT reachable ({problem}); is the collector running, "
            f"and is the port right (4317 for grpc, 4318 for http/protobuf)?",
        )
    mismatch = protocol_mismatch(endpoint, looked.timeout)  # run and replay say it at start too
    if mismatch is not None:
        return Finding(False, f"{where}: {mismatch}")
    try:
        failure = probe_otlp(environ, signal, looked.timeout)
    except ConfigError as exc:
        return Finding(False, f"{where}: {exc}")
    if failure is None:
        return Finding(True, f"{where}: reachable, takes {signal}")
    return Finding(
        False,
        f"{where}: refused an empty export ({failure.reason}){_advice(endpoint, signal, failure)}",
    )


def _advice(endpoint: OtlpEndpoint, signal: str, failure: ExportFailure) -> str:
    """What to change, for a refusal of `signal` at `endpoint`."""
    from ._verdicts import REFUSED_ENDPOINT

    if failure.status in (401, 403, "UNAUTHENTICATED", "PERMISSION_DENIED"):
        return "; check the credentials in OTEL_EXPORTER_OTLP_HEADERS"
    if failure.refused is None:
        return "; the collector is there but takes nothing now: run would queue and retry"
    if failure.refused != REFUSED_ENDPOINT:
        return ""
    if (
        endpoint.protocol == "http/protobuf"
        and endpoint.variable is not None
        and endpoint.variable != env.OTEL_EXPORTER_OTLP_ENDPOINT
        and urlsplit(endpoint.url).path in ("", "/")
    ):
        # The signal's own variable is the full URL: a collector answers 404 at its root.
        return (
            f"; {endpoint.variable} is used as it is, with no path: did you mean "
            f"{shown_endpoint(endpoint.url).removesuffix('/')}/v1/{signal}?"
        )
    if signal == "metrics":
        return (
            ": it takes no OTLP metrics (a traces-only backend, such as Jaeger?); "
            "OTEL_METRICS_EXPORTER=prometheus keeps run's metrics on /metrics only, "
            "OTEL_METRICS_EXPORTER=none turns them off, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT "
            "sends them elsewhere"
        )
    return (
        ": nothing there takes OTLP traces; is the port right (4317 for grpc, 4318 for "
        "http/protobuf), and OTEL_EXPORTER_OTLP_ENDPOINT the collector's base URL?"
    )


def _origin(endpoint: OtlpEndpoint) -> str:
    if endpoint.variable is None:
        return f" (no endpoint set: the default, {DEFAULT_ENDPOINTS[endpoint.protocol]})"
    return ""
