"""The OTLP/HTTP exporters on the standard library's transport
(otel_bridge/export/_http_transport.py), against real servers: the OTLP receiver that decodes
the protobuf, a forwarding HTTP proxy, and a TLS endpoint whose certificate the test makes.
And that building the exporters loads neither requests nor urllib3, which is why it exists."""

from __future__ import annotations

import base64
import datetime
import http.client
import ipaddress
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "opentelemetry.exporter.http.transport._base",
    reason="an SDK before 1.45: its OTLP/HTTP exporters take no transport",
)

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from otel_bridge.export._common import otlp_endpoint
from otel_bridge.export._otlp import otlp_span_exporter
from otel_bridge.export._sdk_logs import capture_exporter_logs
from tests.otlp_receiver import OtlpReceiver
from tests.processes import run_probe

_PROXY_VARIABLES = (
    "http_proxy", "https_proxy", "all_proxy", "no_proxy",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
)  # fmt: skip


@pytest.fixture(autouse=True)
def _no_proxy_of_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _spans(names: list[str]) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    for name in names:
        tracer.start_span(name).end()
    provider.shutdown()
    return list(memory.get_finished_spans())


def _export(environ: dict[str, str], names: list[str], timeout: float = 5.0) -> tuple[Any, list]:
    """Export spans of `names` through the bridge's OTLP/HTTP exporter: its result and the
    records noted during the export."""
    exporter = otlp_span_exporter(otlp_endpoint(environ, "traces"), environ, timeout=timeout)
    try:
        with capture_exporter_logs() as records:
            result = exporter.export(_spans(names))
    finally:
        exporter.shutdown()
    return result, records


def test_building_the_exporters_loads_neither_requests_nor_urllib3() -> None:
    probe = (
        "import sys\n"
        "from otel_bridge.export._common import otlp_endpoint\n"
        "from otel_bridge.export._otlp import otlp_metric_exporter, otlp_span_exporter\n"
        "environ = {'OTEL_EXPORTER_OTLP_ENDPOINT': 'http://127.0.0.1:9'}\n"
        "otlp_span_exporter(otlp_endpoint(environ, 'traces'), environ).shutdown()\n"
        "otlp_metric_exporter(environ).shutdown()\n"
        "print(sorted(m for m in ('requests', 'urllib3') if m in sys.modules))\n"
    )
    assert run_probe(probe).strip() == "[]"


def test_spans_reach_the_receiver_and_a_connection_its_peer_closed_is_not_a_failure() -> None:
    with OtlpReceiver(keep_alive=True) as receiver:  # closes a connection idle for 2 s
        environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint}
        exporter = otlp_span_exporter(otlp_endpoint(environ, "traces"), environ, timeout=5.0)
        try:
            with capture_exporter_logs() as records:
                assert exporter.export(_spans(["a", "b"])) is SpanExportResult.SUCCESS
                assert exporter.export(_spans(["c"])) is SpanExportResult.SUCCESS
                receiver.wait_for_spans(3)
                threading.Event().wait(2.5)  # the receiver closes the idle connection
                assert exporter.export(_spans(["d"])) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
        names = sorted(span["name"] for span in receiver.wait_for_spans(4))
    assert names == ["a", "b", "c", "d"]
    assert [r.getMessage() for r in records] == []  # no failure noted, nothing retried


class _Proxy(ThreadingHTTPServer):
    """A forwarding HTTP proxy: a POST to an absolute URL is sent on to it, and the answer
    back; what it carried is kept."""

    daemon_threads = True

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        super().__init__(("127.0.0.1", 0), _ProxyHandler)


class _ProxyHandler(BaseHTTPRequestHandler):
    server: _Proxy

    def do_POST(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Proxy-Authorization")))
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        target = urllib.parse.urlsplit(self.path)
        upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=5)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "proxy-authorization"}
        upstream.request("POST", target.path, body=body, headers=headers)
        answer = upstream.getresponse()
        content = answer.read()
        upstream.close()
        self.send_response(answer.status)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[_Proxy]:
    server = _Proxy()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_the_environment_s_proxy_carries_the_export_and_no_proxy_goes_around_it(
    monkeypatch: pytest.MonkeyPatch, proxy: _Proxy
) -> None:
    port = proxy.server_address[1]
    monkeypatch.setenv("http_proxy", f"http://me:pw@127.0.0.1:{port}")
    with OtlpReceiver() as receiver:
        environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint}
        result, _ = _export(environ, ["through"])
        assert result is SpanExportResult.SUCCESS
        assert proxy.seen == [
            (f"{receiver.http_endpoint}/v1/traces", "Basic " + base64.b64encode(b"me:pw").decode())
        ]
        monkeypatch.setenv("no_proxy", "127.0.0.0/8")
        result, _ = _export(environ, ["around"])
        assert result is SpanExportResult.SUCCESS
        assert len(proxy.seen) == 1
        names = sorted(span["name"] for span in receiver.wait_for_spans(2))
    assert names == ["around", "through"]


def _certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, and its key."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "otel-bridge test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


class _TlsHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        self.server.names.extend(  # type: ignore[attr-defined]
            span.name for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans
        )
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_tls_trusts_the_configured_ca_file_and_no_other(tmp_path: Path) -> None:
    cert_file, key_file = _certificate(tmp_path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TlsHandler)
    server.daemon_threads = True
    server.names = []  # type: ignore[attr-defined]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"https://127.0.0.1:{server.server_address[1]}"
        trusted = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_CERTIFICATE": str(cert_file),
        }
        result, _ = _export(trusted, ["secured"])
        assert result is SpanExportResult.SUCCESS
        result, records = _export({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, ["untrusted"], 1.0)
        assert result is SpanExportResult.FAILURE
        assert any("CERTIFICATE_VERIFY_FAILED" in r.getMessage() for r in records), [
            r.getMessage() for r in records
        ]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert server.names == ["secured"]  # type: ignore[attr-defined]
