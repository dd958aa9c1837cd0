"""What the trace and metric sinks share: OTLP protocol and endpoint (checked at start, shown
without credentials), output files, and the SDK's kill switch. The SDK exporters' logging is in
`_sdk_logs`, what a failed export came to in `_verdicts`."""

from __future__ import annotations

import logging
import os
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from .. import _env as env
from .._exceptions import ConfigError

__all__ = [
    "CONSOLE_FORMATS",
    "DEFAULT_ENDPOINTS",
    "DEFAULT_MAX_LABEL_VALUES",
    "DEFAULT_MAX_SESSION_LABEL_VALUES",
    "DEFAULT_PROMETHEUS_HOST",
    "DEFAULT_PROMETHEUS_PORT",
    "HIDDEN",
    "OTLP_PROTOCOLS",
    "CredentialFilter",
    "OtlpEndpoint",
    "metric_exporter_names",
    "open_output",
    "otlp_endpoint",
    "otlp_protocol",
    "query_problem",
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
    """OTEL_SDK_DISABLED=true: the specification's switch that turns every signal off (read
    by its boolean rule, `_env.boolean`)."""
    return env.boolean(environ, env.OTEL_SDK_DISABLED)


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
#: exception or an exporter's message may quote); a password holding an unencoded @ goes too
_USERINFO_IN_TEXT = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)(?:[^\s/?#@]*@)+")
#: the same without a scheme, as gRPC quotes its target (`alice:PASSWORD@127.0.0.1:4317`):
#: user:password@ before any host (gRPC decodes a percent-encoded password, so it may hold
#: / and @: up to the last @), or a lone token@ before a host:port (an e-mail address, which
#: has no port, stays). It starts a word: after a space, a quote, a bracket, = or ,.
_BARE_USERINFO = re.compile(
    r"(?<![^\s'\"(\[<=,;])(?:[^\s/?#@'\"<>()\[\],;=:]+:[^\s'\"<>]*@(?=[\w\[])"
    r"|[^\s?#@'\"<>()\[\],;=:]+@(?=(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.\-]+):[0-9]{1,5}\b))"
)
#: a query parameter whose name says it is a credential (api_key, token, sig, ...)
_QUERY_SECRET = re.compile(
    r"(?i)([?&;](?:[\w.\-]*(?:key|token|auth|passw|pwd|secret|signature|credential)[\w.\-]*"
    r"|sig|code)=)[^&\s#'\"<>)]+"
)
#: a header that carries a credential, as text quotes it (`Authorization: Bearer X`,
#: `x-api-key=X` of OTEL_EXPORTER_OTLP_HEADERS, `'api-key': 'X'` of a dict): its value,
#: after an authentication scheme when there is one
_HEADER_SECRET = re.compile(
    r"(?i)\b((?:proxy-)?authorization|(?:x-)?api[-_]?key|x-[\w-]*?(?:token|key|secret)"
    r"|[\w-]*auth-token|private-token|access[-_]token|cookie|client[-_]secret)"
    r"(['\"]?\s*[:=]\s*['\"]?)"
    r"((?:(?:bearer|basic|token|digest|apikey|negotiate)(?:\s+|%20))?)"
    r"(?!\[REDACTED\])[^\s,'\"&;)}\]]+"
)
#: what a credential in a log line is replaced by
HIDDEN = "[REDACTED]"


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
    """`text` with the credentials a collector's address or request may carry taken out: the
    user and password of every URL in it (with or without a scheme: gRPC quotes its target
    as `user:password@host:port`), the value of every query parameter named like a key
    (`?api_key=`), and the value of every header that authenticates (`Authorization: Bearer
    X`, `x-api-key=X`). What is left still says where the request went and why it failed.

    Used for every message the bridge makes of an exception or an exporter's words, and by
    `CredentialFilter` for every log record, the SDK's, gRPC's and urllib3's included."""
    if not any(mark in text for mark in _MARKS):
        return text  # most log lines: nothing to scrub
    text = _USERINFO_IN_TEXT.sub(r"\1", text)
    text = _BARE_USERINFO.sub("", text)
    text = _QUERY_SECRET.sub(rf"\1{HIDDEN}", text)
    return _HEADER_SECRET.sub(rf"\1\2\3{HIDDEN}", text)


#: what a text holding a credential holds at least one of (case folded: `_HEADER_SECRET`)
_MARKS = ("@", "=", ":")


class CredentialFilter(logging.Filter):
    """Takes credentials out of every record a handler writes (`without_credentials`): put on
    each handler the bridge installs, not on a logger, because a logger's filter never sees
    the records that propagate to it from other loggers, and the SDK's exporters, gRPC and
    urllib3 quote the endpoint (`Failed to export traces to alice:PASSWORD@...`) from loggers
    of their own. The record's message is made (its arguments put in) and scrubbed, and so
    is the text of its exception; a record that held a credential then carries the scrubbed
    text, with no arguments, so that every handler after this one writes the same (the
    export's own copies of the SDK's records keep theirs: `_sdk_logs`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit: logging reports it later
            return True
        scrubbed = without_credentials(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = without_credentials(record.exc_text)
        if record.stack_info:
            record.stack_info = without_credentials(record.stack_info)
        return True


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


def query_problem(endpoint: OtlpEndpoint, signal: str) -> str | None:
    """Why a query string in the endpoint (where some services take a key: `?api_key=K`)
    cannot work, in one line that does not quote it; None when there is none or it works.

    The HTTP exporter puts /v1/<signal> after the general variable's value, query included
    (`http://h:4318/?api_key=K/v1/traces`), so the path is wrong and the key too, and every
    export fails; the gRPC exporter keeps only host:port and sends no query at all. Only a
    signal's own variable, which the HTTP exporter takes as it is, keeps a query working.
    """
    if "?" not in endpoint.url:
        return None
    name = endpoint.variable or env.OTEL_EXPORTER_OTLP_ENDPOINT
    if endpoint.protocol == "grpc":
        why = "the gRPC exporter sends only host:port, so a key there is never sent"
    elif endpoint.target != endpoint.url:
        why = (
            f"the exporter appends /v1/{signal} after it, so no export can work; or give "
            f"the full URL in {env.otlp_signal_variable('ENDPOINT', signal)}"
        )
    else:
        return None
    return (
        f"{name}={shown_endpoint(endpoint.url)!r} has a query string (value not shown): "
        f"{why}; send a key as a header (OTEL_EXPORTER_OTLP_HEADERS)"
    )


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


#: Where run serves /metrics, /healthz and /readyz by default.
DEFAULT_PROMETHEUS_HOST = "127.0.0.1"
DEFAULT_PROMETHEUS_PORT = 9464

#: Distinct values each label of each metric takes (`OtelMetricsRecorder`); a value past them is
#: recorded as `OTHER_LABEL_VALUE`. A deployment has some tens of models and agents and a few
#: hundred tools at most (MCP servers included); a log that names thousands is hostile or broken,
#: and every value is a series a scrape serializes for as long as the process lives.
DEFAULT_MAX_LABEL_VALUES = 500

#: Of those, the most one session may bring (new values of one label of one metric): without
#: it the cap was first come for the life of the process, and one hostile log that named 500
#: tools first sent every later real tool or model name to `other` until a restart. A real
#: session uses some tens of tools; a log past this is broken or hostile, and it alone can
#: take a tenth of the cap, leaving the rest to the others.
DEFAULT_MAX_SESSION_LABEL_VALUES = 50

#: What --console-format takes (`_console.py` prints them).
CONSOLE_FORMATS = ("summary", "tree", "json")


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
