"""OTLP/HTTP requests sent with the standard library's http.client, for the SDK's exporters.

Why: by default the SDK's OTLP/HTTP exporters send through requests and urllib3, which take
3.5 MB of a daemon's resident memory (some 7% of one that follows a thousand sessions) for a
POST of protobuf to one endpoint, and about half the CPU of a live export of a few spans.
From opentelemetry-exporter-otlp-proto-http 1.45 an exporter takes its transport (the
`_transport` argument, a `BaseHTTPTransport` of the opentelemetry-exporter-http-transport
package) and keeps the rest itself: headers, compression, timeout, retries with backoff and
Retry-After, and its log records. This one keeps one connection alive per exporter, and
reads the environment as requests does, so that no setting changes meaning:

- TLS: the CA file and client certificate the SDK resolves (OTEL_EXPORTER_OTLP_CERTIFICATE,
  ..._CLIENT_CERTIFICATE, ..._CLIENT_KEY and their per-signal variants); without a CA file,
  REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE, else certifi's bundle when installed, as requests
  (requests/sessions.py `merge_environment_settings`, requests/utils.py
  `DEFAULT_CA_BUNDLE_PATH`); else the system's.
- proxies: the *_proxy variables and no_proxy (urllib's `getproxies`, `proxy_bypass`, and
  requests' CIDR entries), chosen as requests' `select_proxy` does, read once per URL.

An `https://` or SOCKS proxy it does not speak: `route` says so and the bridge keeps the
SDK's own transport for that endpoint (`_otlp`). Each request's outcome is also noted among
the export's records (`_sdk_logs.note_answer`), since the SDK's last message after its
retries no longer says it.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import http.client
import ipaddress
import os
import select
import ssl
import threading
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from opentelemetry.exporter.http.transport._base import BaseHTTPResult, BaseHTTPTransport

from .. import _env as env
from ._sdk_logs import note_answer, note_failure

__all__ = ["Route", "StdlibTransport", "route"]

_MAX_BODY = 1 << 20  # bytes of an answer kept: a collector's error text, not a payload
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Route:
    """Where a request to one URL goes: straight to its host, or through an HTTP proxy
    (absolute-form for http://, a CONNECT tunnel for https://)."""

    tls: bool
    host: str
    port: int
    target: str  # the request target: the path and query, or the whole URL via a proxy
    proxy: tuple[str, int] | None = None
    proxy_headers: dict[str, str] = field(default_factory=dict)


def route(url: str) -> Route | None:
    """The route of `url`, or None when it needs what this transport does not speak (a proxy
    other than http://, a scheme other than http or https)."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host, port = parts.hostname, parts.port or _DEFAULT_PORTS[scheme]
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    proxy_url = None if _bypass(host) else _select_proxy(scheme, host)
    if proxy_url is None:
        return Route(scheme == "https", host, port, path)
    if "://" not in proxy_url:
        proxy_url = "http://" + proxy_url  # requests' prepend_scheme_if_needed
    proxy = urllib.parse.urlsplit(proxy_url)
    if proxy.scheme.lower() != "http" or not proxy.hostname:
        return None
    headers = {}
    if proxy.username is not None:
        user = urllib.parse.unquote(proxy.username)
        password = urllib.parse.unquote(proxy.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        headers["Proxy-Authorization"] = f"Basic {token}"
    target = path if scheme == "https" else urllib.parse.urlunsplit(parts._replace(fragment=""))
    return Route(scheme == "https", host, port, target, (proxy.hostname, proxy.port or 80), headers)


def _select_proxy(scheme: str, host: str) -> str | None:
    """requests' `select_proxy`: the most specific of scheme://host, scheme, all://host, all."""
    proxies = urllib.request.getproxies()
    for key in (f"{scheme}://{host}", scheme, f"all://{host}", "all"):
        if proxies.get(key):
            return proxies[key]
    return None


def _bypass(host: str) -> bool:
    """no_proxy says to go straight to `host`: urllib's rule (suffixes, `*`), and requests'
    CIDR entries (10.0.0.0/8) for an address."""
    no_proxy = os.environ.get(env.NO_PROXY_LOWER) or os.environ.get(env.NO_PROXY) or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in (e.strip() for e in no_proxy.split(",")):
        if address is not None and "/" in entry:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                continue
    return bool(urllib.request.proxy_bypass(host))


def ca_file(verify: bool | str) -> bool | str:
    """The CA bundle requests would use: the one configured, else REQUESTS_CA_BUNDLE or
    CURL_CA_BUNDLE, else certifi's; True (the system's) when there is none; False: none."""
    if verify is not True:
        return verify
    named = os.environ.get(env.REQUESTS_CA_BUNDLE) or os.environ.get(env.CURL_CA_BUNDLE)
    if named:
        return named
    try:
        import certifi  # requests' own dependency; absent, the system's store
    except ImportError:
        return True
    return str(certifi.where())


class _Headers(Mapping[str, str]):
    """An answer's headers, case-insensitive, repeated ones joined by commas (what
    `BaseHTTPResult.headers` promises)."""

    def __init__(self, message: http.client.HTTPMessage | None) -> None:
        self._items: dict[str, str] = {}
        for name, value in message.items() if message is not None else ():
            key = name.lower()
            self._items[key] = f"{self._items[key]}, {value}" if key in self._items else value

    def __getitem__(self, key: str) -> str:
        return self._items[key.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True, slots=True)
class StdlibResult(BaseHTTPResult):
    """One request's outcome (see BaseHTTPResult)."""

    body: bytes = b""
    answer_headers: _Headers = field(default_factory=lambda: _Headers(None))

    def content(self) -> bytes:
        return self.body

    def headers(self) -> Mapping[str, str]:
        return self.answer_headers


class StdlibTransport(BaseHTTPTransport):
    """http.client for the SDK's OTLP/HTTP client (see the module), made for the one URL its
    exporter sends to and the route `route` found for it. One connection, kept alive between
    exports; the SDK calls it from its export thread, the lock keeps a flush from another
    thread from sharing the connection mid-request."""

    def __init__(
        self,
        url: str,
        way: Route,
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
    ) -> None:
        self._url, self._way = url, way
        self._verify = ca_file(verify)
        self._cert = cert
        self._context: ssl.SSLContext | None = None
        self._lock = threading.Lock()
        self._connection: http.client.HTTPConnection | None = None

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
        data: bytes | None = None,
    ) -> BaseHTTPResult:
        with self._lock:
            try:
                result = self._send(method, url, dict(headers or {}), timeout, data)
            except Exception as error:  # every failure is the export's to judge
                self._drop()
                note_failure(error)
                return StdlibResult(error=error)
        if result.status_code is not None and result.status_code >= 300:
            note_answer(result.status_code, result.reason, result.answer_headers.get("retry-after"))
        return result

    def is_connection_error(self, exception: Exception | None) -> bool:
        """What the SDK retries at once, then with backoff: the connection failed (refused,
        reset, timed out, TLS), or the peer did not answer in HTTP/1.1 (a gRPC port)."""
        return isinstance(exception, (OSError, http.client.HTTPException))

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        timeout: float | None,
        data: bytes | None,
    ) -> StdlibResult:
        if url != self._url:  # the SDK's client sends to its exporter's endpoint only
            raise ValueError(f"this transport sends to {self._url}, not to {url}")
        way = self._way
        connection = self._connection_for(timeout)
        if way.proxy is not None and not way.tls:
            headers.update(way.proxy_headers)
        connection.request(method, way.target, body=data, headers=headers)
        response = connection.getresponse()
        body = response.read(_MAX_BODY)
        if response.will_close or not response.isclosed():  # or a longer answer than kept
            self._drop()
        encoding = (response.headers.get("Content-Encoding") or "").strip().lower()
        if encoding in ("gzip", "deflate"):
            # else the bytes as they came: only an error text is ever read from them
            with contextlib.suppress(OSError, EOFError, zlib.error):
                body = gzip.decompress(body) if encoding == "gzip" else zlib.decompress(body)
        return StdlibResult(
            status_code=response.status,
            reason=response.reason,
            body=body,
            answer_headers=_Headers(response.headers),
        )

    def _connection_for(self, timeout: float | None) -> http.client.HTTPConnection:
        """The kept connection when its peer has not closed it (an idle socket that reads as
        ready is at its end, as urllib3 checks), else a new one."""
        seconds = max(timeout, 0.001) if timeout is not None else None
        kept = self._connection
        if (
            kept is not None
            and kept.sock is not None
            and not select.select([kept.sock], [], [], 0)[0]
        ):
            kept.sock.settimeout(seconds)
            return kept
        self._drop()
        way = self._way
        host, port = way.proxy or (way.host, way.port)
        connection: http.client.HTTPConnection
        if way.tls:
            connection = http.client.HTTPSConnection(
                host, port, timeout=seconds, context=self._tls_context()
            )
            if way.proxy is not None:
                connection.set_tunnel(way.host, way.port, headers=way.proxy_headers)
        else:
            connection = http.client.HTTPConnection(host, port, timeout=seconds)
        self._connection = connection
        return connection

    def _tls_context(self) -> ssl.SSLContext:
        if self._context is None:
            if self._verify is False:
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            elif isinstance(self._verify, str) and os.path.isdir(self._verify):
                context = ssl.create_default_context(capath=self._verify)
            elif isinstance(self._verify, str):
                context = ssl.create_default_context(cafile=self._verify)
            else:
                context = ssl.create_default_context()
            if isinstance(self._cert, tuple):
                context.load_cert_chain(self._cert[0], self._cert[1])
            elif self._cert:
                context.load_cert_chain(self._cert)
            self._context = context
        return self._context

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.close()
