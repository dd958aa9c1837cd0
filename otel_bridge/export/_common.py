"""What the trace and metric sinks share: OTLP protocol and endpoint, output files, the SDK's
kill switch, and keeping the SDK exporters' retry chatter off the user's terminal."""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import enum
import functools
import logging
import math
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit

from .. import _env as env
from .._exceptions import ConfigError

__all__ = [
    "DEFAULT_ENDPOINTS",
    "OTLP_PROTOCOLS",
    "REFUSED_ENDPOINT",
    "REFUSED_REQUEST",
    "RETRYABLE_HTTP",
    "ExportFailure",
    "OtlpEndpoint",
    "build_otlp_exporter",
    "capture_exporter_logs",
    "describe_exception",
    "export_failure",
    "failure_reason",
    "http_session",
    "open_output",
    "otlp_endpoint",
    "otlp_protocol",
    "quiet_exporter_logs",
    "reachability",
    "sdk_disabled",
    "shown_endpoint",
    "without_credentials",
]

OTLP_PROTOCOLS = ("grpc", "http/protobuf")

#: Where the SDK exporters send when no endpoint variable is set (the specification's defaults).
DEFAULT_ENDPOINTS = {"grpc": "http://localhost:4317", "http/protobuf": "http://localhost:4318"}

#: host:port, which the gRPC exporter takes as a channel target as it is (TLS unless
#: OTEL_EXPORTER_OTLP_INSECURE=true); an IPv6 host in brackets.
_HOST_PORT = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(?P<port>[0-9]{1,5})$")


def sdk_disabled(environ: Mapping[str, str]) -> bool:
    """OTEL_SDK_DISABLED=true: the specification's switch that turns every signal off."""
    return environ.get(env.OTEL_SDK_DISABLED, "").strip().lower() == "true"


def otlp_protocol(environ: Mapping[str, str], signal: str) -> str:
    """OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else the
    specification's default, http/protobuf.

    Raises:
        ConfigError: a protocol the bridge cannot speak (http/json).
    """
    protocol = (
        (
            environ.get(env.otlp_signal_variable("PROTOCOL", signal))
            or environ.get(env.OTEL_EXPORTER_OTLP_PROTOCOL)
            or "http/protobuf"
        )
        .strip()
        .lower()
    )
    if protocol not in OTLP_PROTOCOLS:
        raise ConfigError(
            f"OTLP protocol {protocol!r} is not supported: set "
            "OTEL_EXPORTER_OTLP_PROTOCOL to grpc or http/protobuf"
        )
    return protocol


@dataclass(frozen=True, slots=True)
class OtlpEndpoint:
    """Where one signal's OTLP exporter sends, checked at start.

    Attributes:
        url: the value as configured (or the default), for messages.
        variable: the variable it came from; None when none is set (the default).
        protocol: grpc or http/protobuf.
        host, port: what a TCP connection goes to.
        target: what the SDK exporter is given: for http/protobuf the full URL of the signal
            (the general variable plus /v1/<signal>, the signal's own variable as it is), for
            grpc the value as it is (the exporter keeps only host:port of a URL).
    """

    url: str
    variable: str | None
    protocol: str
    host: str
    port: int
    target: str

    def describe(self) -> str:
        """'http://host:4318 (http/protobuf)': what a person recognises from their set-up,
        without the credentials a URL may hold (`shown_endpoint`)."""
        return f"{shown_endpoint(self.url)} ({self.protocol})"


#: scheme://, then the authority (up to the first /, ? or #), whose userinfo ends at its last @
_AUTHORITY = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)?(?P<authority>[^/?#]*)")
_HOST = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]*)(?::[0-9]*)?")
#: a user (and password) before a host in running text: scheme://user:password@ (what an
#: exception or an exporter's message may quote)
_USERINFO_IN_TEXT = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#@]*@")


def shown_endpoint(url: str) -> str:
    """An endpoint as the bridge shows it anywhere (log lines, /readyz, `doctor`, errors,
    summaries): without the user and password of its URL (`http://user:password@host`, which
    the HTTP exporter sends as Basic credentials) and without its query and fragment (where
    some services take a key). What is left says where spans go, never how to get in."""
    url = url.strip()
    match = _AUTHORITY.match(url)
    assert match is not None  # every part of the pattern is optional
    scheme, authority = match["scheme"] or "", match["authority"]
    rest = url[match.end() :].split("?", 1)[0].split("#", 1)[0]
    if "@" not in authority and "@" in rest and not _HOST.fullmatch(authority):
        # a password with a "/" in it ends the authority early: all up to the last @ goes
        authority, slash, path = rest.rpartition("@")[2].partition("/")
        rest = slash + path
    return scheme + authority.rpartition("@")[2] + rest


def without_credentials(text: str) -> str:
    """`text` with the user and password taken out of every URL in it (an exception's or an
    exporter's message about an endpoint)."""
    return _USERINFO_IN_TEXT.sub(r"\1", text)


def otlp_endpoint(environ: Mapping[str, str], signal: str) -> OtlpEndpoint:
    """The endpoint of one signal (traces, metrics), validated, so that a typo is a clear
    error at start rather than an exporter retrying an unusable address for minutes.

    Raises:
        ConfigError: not an http(s) URL with a host (for grpc, nor host:port), or a bad protocol;
            the message names the variable and what is expected.
    """
    protocol = otlp_protocol(environ, signal)
    specific = env.otlp_signal_variable("ENDPOINT", signal)
    variable: str | None = None
    for name in (specific, env.OTEL_EXPORTER_OTLP_ENDPOINT):
        if environ.get(name, "").strip():
            variable = name
            break
    url = environ[variable].strip() if variable else DEFAULT_ENDPOINTS[protocol]
    shown = shown_endpoint(url)
    example = DEFAULT_ENDPOINTS[protocol]
    expected = f"an http:// or https:// URL with a host, e.g. {example}" + (
        ", or host:port" if protocol == "grpc" else ""
    )
    if protocol == "grpc" and (match := _HOST_PORT.match(url)):
        number = int(match["port"])
        if not 0 < number < 65536:
            raise ConfigError(f"{variable}={shown!r}: port {number} is out of range")
        return OtlpEndpoint(url, variable, protocol, match["host"].strip("[]"), number, url)
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError as exc:  # a port that is not a number or out of range
        raise ConfigError(
            f"{variable}={shown!r} is not a usable OTLP endpoint "
            f"({without_credentials(str(exc))}): expected {expected}"
        ) from exc
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise ConfigError(
            f"{variable}={shown!r} is not a usable OTLP endpoint: expected {expected}"
        )
    if port is None:  # what the exporters' transports then use
        port = 443 if parts.scheme.lower() == "https" or protocol == "grpc" else 80
    target = url
    if protocol == "http/protobuf" and variable != specific:
        target = f"{url.removesuffix('/')}/v1/{signal}"
    return OtlpEndpoint(url, variable, protocol, host, port, target)


def reachability(endpoint: OtlpEndpoint, timeout: float = 2.0) -> str | None:
    """Open one TCP connection to the endpoint: None when it was accepted, else what went
    wrong, as words that follow the endpoint ("refused the connection", ...).

    Only TCP: it says whether something listens, not whether it speaks OTLP (an export says
    that), which is what goes wrong in practice (a collector not started, a wrong port).
    """
    try:
        with socket.create_connection((endpoint.host, endpoint.port), timeout=timeout):
            return None
    except ConnectionRefusedError:
        return "refused the connection"
    except socket.gaierror as exc:
        return f"is not reachable: cannot resolve {endpoint.host!r} ({exc.strerror or exc})"
    except TimeoutError:
        return f"did not accept a connection within {timeout:g} s"
    except OSError as exc:
        return f"is not reachable ({exc.strerror or exc})"


def open_output(path: Path, mode: str, what: str) -> IO[str]:
    """Open a JSON Lines output file ("w" to start afresh, "a" to append). A file the bridge
    creates is readable by its owner only (0600), whatever the umask: spans name working
    directories and repositories, and with content capture they hold prompts and command
    lines. An existing file keeps its mode (its owner chose it).

    Raises:
        ConfigError: the file cannot be written; the message names it.
    """
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if mode == "w" else os.O_APPEND)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.fdopen(
            os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600), mode, encoding="utf-8"
        )
    except OSError as exc:
        raise ConfigError(f"cannot write {what} to {path}: {exc.strerror or exc}") from exc


# --- the SDK exporters' own logging ----------------------------------------------------------
#
# The SDK's OTLP exporters retry inside each export call and log every attempt (and urllib3
# may add its own lines): a collector that is down for a minute fills the terminal. The
# bridge's queue already retries, logs one warning when an exporter starts failing (with the
# reason, taken from these records) and one line when it recovers, and counts failures in
# otel_bridge.export.failures. So while one of the bridge's own exports runs, on that thread,
# the SDK's records are kept for the reason and not shown, unless the bridge logs at DEBUG.
# Records from any other thread (an application's own exporters, next to LiveBridge) pass.

_SDK_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http._common",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.metric_exporter",
    "urllib3.connectionpool",
    "urllib3.connection",
    "urllib3.util.retry",
)
_SDK_PREFIXES = ("opentelemetry.exporter.", "urllib3")
_MAX_KEPT = 20  # records kept per export call: the first ones say what went wrong
_local = threading.local()
_install_lock = threading.Lock()
_bridge_logger = logging.getLogger("otel_bridge")


class _ExportChatter(logging.Filter):
    """Keeps SDK records emitted during the bridge's exports, and hides them below DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        kept: list[logging.LogRecord] | None = getattr(_local, "records", None)
        if kept is None:
            return True
        if len(kept) < _MAX_KEPT:
            kept.append(record)
        return _bridge_logger.isEnabledFor(logging.DEBUG)


_CHATTER = _ExportChatter()


_Exporter = TypeVar("_Exporter")


def build_otlp_exporter(
    endpoint: OtlpEndpoint, what: str, build: Callable[[], _Exporter]
) -> _Exporter:
    """Run `build` (which makes the SDK's OTLP exporter for `endpoint`; `what`: "trace" or
    "metric"), turning the SDK's own errors about its settings into a ConfigError, and keep its
    retry messages off the terminal (`quiet_exporter_logs`)."""
    try:
        exporter = build()
    except (ValueError, TypeError, RuntimeError, OSError) as exc:  # e.g. a timeout not a number
        raise ConfigError(
            f"cannot set up the OTLP {what} exporter ({endpoint.describe()}): "
            f"{without_credentials(str(exc))}; check the OTEL_EXPORTER_OTLP_* variables"
        ) from exc
    quiet_exporter_logs()
    return exporter


def quiet_exporter_logs() -> None:
    """Put the filter on the SDK exporters' and urllib3's loggers (a logger's filter sees only
    what that very logger emits, hence one per logger). Idempotent; call once the exporter
    modules are imported, so that their loggers exist."""
    with _install_lock:
        names = set(_SDK_LOGGERS)
        names.update(
            name
            for name, item in list(logging.Logger.manager.loggerDict.items())
            if name.startswith(_SDK_PREFIXES) and isinstance(item, logging.Logger)
        )
        for name in names:
            target = logging.getLogger(name)
            # First: the gRPC exporter's logger has the SDK's DuplicateFilter
            # (opentelemetry-exporter-otlp-proto-grpc 1.45, exporter.py: `logger.addFilter(
            # DuplicateFilter())`; opentelemetry.sdk._shared_internal), which drops a record
            # whose message the previous one had, within 20 s: after it, a second refusal in
            # a row would leave no record to say what it was. Filters run in list order.
            if target.filters[:1] != [_CHATTER]:
                if _CHATTER in target.filters:
                    target.removeFilter(_CHATTER)
                target.filters.insert(0, _CHATTER)


@contextlib.contextmanager
def capture_exporter_logs() -> Iterator[list[logging.LogRecord]]:
    """Within the block, on this thread, the SDK's log records are collected (and hidden
    below DEBUG); the list holds them for `failure_reason`."""
    previous = getattr(_local, "records", None)
    records: list[logging.LogRecord] = []
    _local.records = records
    try:
        yield records
    finally:
        _local.records = previous


def http_session(environ: Mapping[str, str], signal: str) -> Any:
    """A requests session for an OTLP/HTTP exporter that notes among the export's records
    what each request came to (a refused response's status, a connection error), since the
    SDK's last message after its retries ("due to timeout, max retries or shutdown") no longer
    says.

    None (the exporter makes its own) when a credential provider is configured: that one
    makes the session.
    """
    if environ.get(env.OTEL_PYTHON_HTTP_CREDENTIAL_PROVIDER) or environ.get(
        f"{env.OTEL_PYTHON_HTTP_PREFIX}{signal.upper()}_CREDENTIAL_PROVIDER"
    ):
        return None
    return _noting_session_class()()


@functools.cache
def _noting_session_class() -> type:
    import requests

    class NotingSession(requests.Session):
        def request(self, *args: Any, **kwargs: Any) -> Any:
            try:
                response = super().request(*args, **kwargs)
            except Exception as exc:
                _note("request failed: %s", (exc,))
                raise
            if response.status_code >= 300:
                _note(
                    "collector answered %d %s",
                    (response.status_code, response.reason or ""),
                    retry_after=_retry_after(response.headers.get("Retry-After")),
                )
            return response

    return NotingSession


def _note(message: str, args: tuple[Any, ...], retry_after: float | None = None) -> None:
    """Add a record to the current export's, if one is being captured on this thread (with
    the answer's Retry-After, in seconds, as its `retry_after`)."""
    kept: list[logging.LogRecord] | None = getattr(_local, "records", None)
    if kept is not None and len(kept) < _MAX_KEPT:
        record = logging.LogRecord(
            "otel_bridge.export", logging.WARNING, __file__, 0, message, args, None
        )
        record.retry_after = retry_after
        kept.append(record)


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (RFC 9110 section 10.2.3: a number of seconds, or an HTTP
    date), at most an hour; None when absent or not understood."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.timezone.utc)
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


# --- what a failed export came to ------------------------------------------------------------
#
# The SDK's exporters retry inside export() only what the OTLP specification calls transient
# (opentelemetry-exporter-otlp-proto-http 1.45: opentelemetry/exporter/otlp/common/http.py,
# `_RETRYABLE_STATUS_CODES` = 429, 502, 503, 504, honouring Retry-After, within
# OTEL_EXPORTER_OTLP_TIMEOUT; -proto-grpc 1.45: opentelemetry/exporter/otlp/proto/grpc/
# exporter.py, `_RETRYABLE_ERROR_CODES`, honouring the RetryInfo trailer). Any other answer
# ends the call at once with FAILURE; that answer will come again for the same request, and
# for a 404 or 501, for every request: `export_failure` says which, so that whoever retries
# after the SDK (the bridge's queue, the metrics' warning) does not wait and try again as if
# the collector were only busy.

#: The OTLP specification's retryable answers (otlp.md, "Failures"): everything else is final.
RETRYABLE_HTTP = frozenset({429, 502, 503, 504})
#: Answers that no request to this endpoint gets past: no receiver there (404: Jaeger's
#: OTLP port has no /v1/metrics), a method or protocol it does not take, or credentials.
_ENDPOINT_HTTP = frozenset({401, 403, 404, 405, 501})
_RETRYABLE_GRPC = frozenset(
    {
        "CANCELLED",
        "DEADLINE_EXCEEDED",
        "RESOURCE_EXHAUSTED",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNAVAILABLE",
        "DATA_LOSS",
    }
)
_ENDPOINT_GRPC = frozenset({"UNIMPLEMENTED", "NOT_FOUND", "UNAUTHENTICATED", "PERMISSION_DENIED"})
_MAX_RETRY_AFTER = 3600.0

#: `ExportFailure.refused`: the collector refused this request (a span or point in it may be
#: the cause: another request may pass), or the endpoint refuses every request of this kind.
REFUSED_REQUEST = "request"
REFUSED_ENDPOINT = "endpoint"


@dataclass(frozen=True, slots=True)
class ExportFailure:
    """Why an export failed, and whether trying the same again can help.

    Attributes:
        reason: one short phrase (`failure_reason`): "HTTP 404 Not Found", "Connection
            refused", "UNAVAILABLE: ...".
        refused: None when the failure is transient (no answer, or 429, 502, 503, 504,
            gRPC UNAVAILABLE...): try again later. `REFUSED_REQUEST` when the collector
            answered that it will not take this request (HTTP 400, 413, 500...; gRPC
            INVALID_ARGUMENT...): the same request gets the same answer. `REFUSED_ENDPOINT`
            when it takes no request of this kind at all (HTTP 401, 403, 404, 405, 501; gRPC
            UNIMPLEMENTED, NOT_FOUND, UNAUTHENTICATED, PERMISSION_DENIED): a setting is wrong.
        status: the HTTP status (an int) or the gRPC status name, when there was an answer.
        retry_after: seconds the collector asked to wait (HTTP Retry-After), when it did.
    """

    reason: str
    refused: str | None = None
    status: int | str | None = None
    retry_after: float | None = None


def export_failure(records: Sequence[logging.LogRecord]) -> ExportFailure:
    """What a failed export call came to, from the records captured during it
    (`capture_exporter_logs`): the last answer the collector gave decides."""
    status: int | str | None = None
    retry_after: float | None = None
    for record in records:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.name == "otel_bridge.export" and args and isinstance(args[0], int):
            status, retry_after = args[0], getattr(record, "retry_after", None)
            continue
        for arg in args:
            if isinstance(arg, enum.Enum) and type(arg).__name__ == "StatusCode":
                status = arg.name  # gRPC
            elif (
                status is None  # the HTTP exporter's last word, when no session noted it
                and str(record.msg).startswith("Failed to export")
                and isinstance(arg, int)
                and not isinstance(arg, bool)
                and 100 <= arg < 600
            ):
                status = arg
    refused: str | None = None
    if isinstance(status, int):
        if status not in RETRYABLE_HTTP:
            refused = REFUSED_ENDPOINT if status in _ENDPOINT_HTTP else REFUSED_REQUEST
    elif isinstance(status, str) and status not in _RETRYABLE_GRPC:
        refused = REFUSED_ENDPOINT if status in _ENDPOINT_GRPC else REFUSED_REQUEST
    return ExportFailure(failure_reason(records), refused, status, retry_after)


def failure_reason(records: Sequence[logging.LogRecord]) -> str:
    """One short phrase for why an export failed, from the SDK's records of that call.

    The SDK's messages are worded for its own retry loop ("retrying in 1.02s"), which the
    bridge's user does not see, so the cause is taken from their arguments where it can be: the
    root cause of an exception ("Connection refused"), a gRPC status and its details, an HTTP
    status; else the first warning or error is quoted.
    """
    for record in records:
        args = record.args if isinstance(record.args, tuple) else ()
        for arg in args:
            if isinstance(arg, BaseException):
                return describe_exception(arg)
        texts = [arg for arg in args if isinstance(arg, str)]
        for arg in args:
            if isinstance(arg, enum.Enum):  # grpc.StatusCode, followed by its details
                return _clip(f"{arg.name}: {texts[-1]}" if texts else arg.name)
            if isinstance(arg, int) and not isinstance(arg, bool) and 100 <= arg < 600:
                return _clip(f"HTTP {arg} {texts[-1]}" if texts else f"HTTP {arg}")
        if str(record.msg).startswith("Transient error") and texts:
            return _clip(texts[0])  # the HTTP exporter's reason phrase ("Service Unavailable")
    for record in records:
        if record.levelno >= logging.WARNING:
            return _clip(record.getMessage())
    return "the exporter reported a failure"


def describe_exception(exc: BaseException) -> str:
    """The innermost OS error under an exception (what urllib3 and requests wrap three deep:
    "[Errno 111] Connection refused"), else the exception itself, clipped."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            return current.strerror
        nested = [
            current.__cause__,
            current.__context__,
            getattr(current, "reason", None),
            *current.args,
        ]
        todo.extend(item for item in nested if isinstance(item, BaseException))
    return _clip(f"{type(exc).__name__}: {exc}")


def _clip(text: str, limit: int = 240) -> str:
    text = " ".join(without_credentials(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
