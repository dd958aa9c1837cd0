"""Where the standard library's OTLP/HTTP transport sends a request: straight, or through the
proxy the environment names, by requests' rules (otel_bridge/export/_http_transport.py); and
that a proxy it does not speak leaves the exporter on the SDK's own transport."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip(
    "opentelemetry.exporter.http.transport._base",
    reason="an SDK before 1.45: its OTLP/HTTP exporters take no transport",
)

from otel_bridge.export._common import otlp_endpoint
from otel_bridge.export._http_transport import Route, StdlibTransport, route
from otel_bridge.export._otlp import otlp_span_exporter, stdlib_transport

_PROXY_VARIABLES = (
    "http_proxy", "https_proxy", "all_proxy", "no_proxy",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD",
)  # fmt: skip


@pytest.fixture(autouse=True)
def _no_proxy_of_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_without_a_proxy_the_request_goes_to_the_host_with_its_path_and_query() -> None:
    assert route("http://collector:4318/v1/traces?x=1") == Route(
        False, "collector", 4318, "/v1/traces?x=1"
    )
    assert route("https://collector/v1/metrics") == Route(True, "collector", 443, "/v1/metrics")


def test_an_http_proxy_takes_the_whole_url_with_its_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("http_proxy", "http://me:s%40cret@proxy.example:3128")
    way = route("http://collector:4318/v1/traces")
    assert way is not None
    assert (way.proxy, way.target) == (("proxy.example", 3128), "http://collector:4318/v1/traces")
    token = way.proxy_headers["Proxy-Authorization"].removeprefix("Basic ")
    assert base64.b64decode(token) == b"me:s@cret"


def test_https_goes_through_a_tunnel_and_all_proxy_is_the_last_choice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ALL_PROXY", "proxy.example:8080")  # no scheme: http, as requests reads it
    way = route("https://collector/v1/traces")
    assert way is not None
    assert (way.tls, way.proxy, way.target) == (True, ("proxy.example", 8080), "/v1/traces")
    monkeypatch.setenv("https_proxy", "http://closer.example:1")
    assert (route("https://collector/v1/traces") or way).proxy == ("closer.example", 1)


@pytest.mark.parametrize(
    ("no_proxy", "host"),
    [
        ("collector", "collector"),
        (".example", "collector.example"),
        ("*", "collector"),
        ("10.0.0.0/8", "10.1.2.3"),  # requests' CIDR entries, which urllib lacks
        ("other, 10.1.2.3", "10.1.2.3"),
    ],
)
def test_no_proxy_sends_straight(monkeypatch: pytest.MonkeyPatch, no_proxy: str, host: str) -> None:
    monkeypatch.setenv("http_proxy", "http://proxy.example:3128")
    monkeypatch.setenv("no_proxy", no_proxy)
    way = route(f"http://{host}:4318/v1/traces")
    assert way is not None and way.proxy is None, way
    monkeypatch.setenv("no_proxy", "elsewhere")
    way = route(f"http://{host}:4318/v1/traces")
    assert way is not None and way.proxy == ("proxy.example", 3128)


@pytest.mark.parametrize("proxy", ["https://proxy.example:443", "socks5h://proxy.example:1080"])
def test_a_proxy_it_does_not_speak_keeps_the_sdk_transport(
    monkeypatch: pytest.MonkeyPatch, proxy: str
) -> None:
    monkeypatch.setenv("https_proxy", proxy)
    assert route("https://collector:4318/v1/traces") is None
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318"}
    endpoint = otlp_endpoint(environ, "traces")
    exporter = otlp_span_exporter(endpoint, environ)
    try:
        transport = exporter._client._transport  # type: ignore[attr-defined]
        assert not isinstance(transport, StdlibTransport)
        assert type(transport).__name__ == "RequestsHTTPTransport"
    finally:
        exporter.shutdown()


def test_a_credential_provider_keeps_the_sdk_transport() -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    environ = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
        "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER": "mine",
    }
    endpoint = otlp_endpoint(environ, "traces")
    assert stdlib_transport(OTLPSpanExporter, endpoint, environ, "traces") is None
    del environ["OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER"]
    assert isinstance(
        stdlib_transport(OTLPSpanExporter, endpoint, environ, "traces"), StdlibTransport
    )


def test_the_tls_files_are_read_in_the_sdk_s_order() -> None:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    environ = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318",
        "OTEL_EXPORTER_OTLP_CERTIFICATE": "/general/ca.pem",
        "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE": "/metrics/ca.pem",
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/general/client.pem",
        "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY": "/metrics/client.key",
    }
    endpoint = otlp_endpoint(environ, "metrics")
    transport = stdlib_transport(OTLPMetricExporter, endpoint, environ, "metrics")
    assert isinstance(transport, StdlibTransport)
    assert (transport._verify, transport._cert) == (
        "/metrics/ca.pem",
        ("/general/client.pem", "/metrics/client.key"),
    )
