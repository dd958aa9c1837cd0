"""What the trace and metric sinks share: OTLP protocol and endpoint (checked at start, shown
without credentials), output files, and the SDK's kill switch. The SDK exporters' logging is in
`_sdk_logs`, what a failed export came to in `_verdicts`."""

from __future__ import annotations

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
    "DEFAULT_PROMETHEUS_HOST",
    "DEFAULT_PROMETHEUS_PORT",
    "OTLP_PROTOCOLS",
    "OtlpEndpoint",
    "metric_exporter_names",
    "open_output",
    "otlp_endpoint",
    "otlp_protocol",
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


#: Where run serves /metrics, /healthz and /readyz by default.
DEFAULT_PROMETHEUS_HOST = "127.0.0.1"
DEFAULT_PROMETHEUS_PORT = 9464

#: Distinct values each label of each metric takes (`OtelMetricsRecorder`); a value past them is
#: recorded as `OTHER_LABEL_VALUE`. A deployment has some tens of models and agents and a few
#: hundred tools at most (MCP servers included); a log that names thousands is hostile or broken,
#: and every value is a series a scrape serializes for as long as the process lives.
DEFAULT_MAX_LABEL_VALUES = 500

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
