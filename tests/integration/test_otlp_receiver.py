"""Tests for the OTLP receiver fixture, driven by the real OpenTelemetry SDK exporters.

Why: every other export test trusts this receiver, so it must be proven against the same
exporters the bridge uses (gRPC and HTTP/protobuf, with compression, retries and timeouts),
not against hand-made requests only.  Raw gRPC/HTTP calls are used only to pin down the
wire contract the exporters rely on (status codes, Retry-After, RetryInfo).
"""

from __future__ import annotations

import gzip
import os
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import grpc
import pytest
from google.rpc import error_details_pb2
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
    OTLPMetricExporter as GrpcMetricExporter,
)
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetricExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, StatusCode

try:  # tests/ on sys.path (pytest rootdir-relative "prepend" import of a non-package dir)
    from otlp_receiver import OtlpReceiver, otlp_receiver
except ModuleNotFoundError:  # tests/ became a package
    from tests.otlp_receiver import OtlpReceiver, otlp_receiver  # noqa: F401 - registers fixture

ProtocolName = Literal["grpc", "http"]
PROTOCOLS: tuple[ProtocolName, ...] = ("grpc", "http")
RESOURCE = Resource.create({"service.name": "otel-bridge-tests", "deployment.environment": "ci"})


@pytest.fixture(autouse=True)
def _clean_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """OTEL_* variables silently change exporter endpoint, headers, compression, timeout and
    can disable the SDK entirely (OTEL_SDK_DISABLED), so a developer's shell must not leak in.
    """
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)


def span_exporter(
    receiver: OtlpReceiver, protocol: ProtocolName, *, timeout: float = 5.0, **kwargs: Any
) -> SpanExporter:
    """The real OTLP span exporter for ``protocol`` pointed at ``receiver``."""
    if protocol == "grpc":
        return GrpcSpanExporter(
            endpoint=receiver.grpc_endpoint, insecure=True, timeout=timeout, **kwargs
        )
    return HttpSpanExporter(
        endpoint=receiver.http_endpoint + "/v1/traces", timeout=timeout, **kwargs
    )


@contextmanager
def tracer_provider(exporter: SpanExporter, *, batch: bool = False) -> Iterator[TracerProvider]:
    """A TracerProvider exporting to ``exporter``; always shut down (which shuts the exporter)."""
    provider = TracerProvider(resource=RESOURCE)
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    try:
        yield provider
    finally:
        provider.shutdown()


def finished_spans(count: int = 1) -> tuple[ReadableSpan, ...]:
    """Real SDK spans, captured in memory so a test can call ``exporter.export`` itself and
    see the SpanExportResult (processors swallow it)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("fault-tests")
    for index in range(count):
        with tracer.start_as_current_span(f"span-{index}"):
            pass
    provider.shutdown()
    return memory.get_finished_spans()


def hex_id(value: int, width: int) -> str:
    return format(value, f"0{width}x")


# ---------------------------------------------------------------------- happy path


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_span_tree_round_trips(otlp_receiver: OtlpReceiver, protocol: ProtocolName) -> None:
    """Parent/child ids, kinds, attributes (incl. arrays), status, events, links, resource and
    scope survive the real exporter -> wire -> receiver path unchanged."""
    with tracer_provider(span_exporter(otlp_receiver, protocol)) as provider:
        tracer = provider.get_tracer("otel_bridge.tests", "1.2.3")
        with tracer.start_as_current_span("linked-target") as target:
            pass
        with tracer.start_as_current_span(
            "parent",
            kind=SpanKind.SERVER,
            attributes={"s": "x", "i": 7, "f": 1.5, "b": True, "arr": ["a", "b"]},
        ) as parent:
            with tracer.start_as_current_span(
                "child",
                kind=SpanKind.CLIENT,
                links=[Link(target.get_span_context(), {"link.reason": "follows"})],
            ) as child:
                child.add_event("retry", {"attempt": 2, "ids": [1, 2, 3]})
                child.set_status(StatusCode.ERROR, "boom")
            parent.set_status(StatusCode.OK)

        spans = otlp_receiver.wait_for_spans(3)

    by_name = {span["name"]: span for span in spans}
    assert set(by_name) == {"linked-target", "parent", "child"}
    got_parent, got_child = by_name["parent"], by_name["child"]
    parent_ctx, child_ctx = parent.get_span_context(), child.get_span_context()

    assert got_parent["trace_id"] == hex_id(parent_ctx.trace_id, 32)
    assert got_child["trace_id"] == got_parent["trace_id"]
    assert got_parent["span_id"] == hex_id(parent_ctx.span_id, 16)
    assert got_child["span_id"] == hex_id(child_ctx.span_id, 16)
    assert got_child["parent_span_id"] == got_parent["span_id"]
    assert got_parent["parent_span_id"] == ""

    assert got_parent["kind"] == "SERVER"
    assert got_child["kind"] == "CLIENT"
    assert by_name["linked-target"]["kind"] == "INTERNAL"
    assert got_parent["attributes"] == {"s": "x", "i": 7, "f": 1.5, "b": True, "arr": ["a", "b"]}
    assert (got_parent["status_code"], got_parent["status_message"]) == ("OK", "")
    assert (got_child["status_code"], got_child["status_message"]) == ("ERROR", "boom")
    assert by_name["linked-target"]["status_code"] == "UNSET"

    [event] = got_child["events"]
    assert event["name"] == "retry"
    assert event["attributes"] == {"attempt": 2, "ids": [1, 2, 3]}
    assert got_child["start_time_unix_nano"] <= event["time_unix_nano"]
    assert event["time_unix_nano"] <= got_child["end_time_unix_nano"]
    assert got_parent["start_time_unix_nano"] <= got_child["start_time_unix_nano"]
    assert got_child["end_time_unix_nano"] <= got_parent["end_time_unix_nano"]

    assert got_child["links"] == [
        {
            "trace_id": by_name["linked-target"]["trace_id"],
            "span_id": by_name["linked-target"]["span_id"],
            "attributes": {"link.reason": "follows"},
        }
    ]
    for span in spans:
        assert span["resource"]["service.name"] == "otel-bridge-tests"
        assert span["resource"]["deployment.environment"] == "ci"
        assert (span["scope_name"], span["scope_version"]) == ("otel_bridge.tests", "1.2.3")
        assert span["protocol"] == protocol
    assert {r.protocol for r in otlp_receiver.requests()} == {protocol}
    assert otlp_receiver.refused_requests == 0
    assert otlp_receiver.errors() == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_gzip_and_custom_headers_arrive(
    otlp_receiver: OtlpReceiver, protocol: ProtocolName
) -> None:
    """The HTTP exporter really sends Content-Encoding: gzip when asked; gRPC compression is
    negotiated inside grpc (``grpc-encoding`` is not visible as metadata), so for gRPC this
    only proves the compressed call decodes.  Configured headers must reach the receiver."""
    compression: Any = grpc.Compression.Gzip if protocol == "grpc" else HttpCompression.Gzip
    exporter = span_exporter(
        otlp_receiver, protocol, compression=compression, headers={"x-api-key": "secret"}
    )
    with tracer_provider(exporter) as provider:
        with provider.get_tracer("t").start_as_current_span("compressed"):
            pass
        [span] = otlp_receiver.wait_for_spans(1)

    assert span["name"] == "compressed"
    [request] = otlp_receiver.requests("traces")
    assert request.headers["x-api-key"] == "secret"
    if protocol == "http":
        assert request.headers["content-encoding"] == "gzip"
        assert request.headers["content-type"] == "application/x-protobuf"
    else:
        assert str(request.headers["user-agent"]).startswith("OTel-OTLP-Exporter-Python/")


def test_concurrent_batches_over_both_protocols(otlp_receiver: OtlpReceiver) -> None:
    """Thread safety: BatchSpanProcessors on both transports, spans started from many threads,
    force_flush, and not a single span lost or duplicated."""
    per_thread, threads_per_protocol = 50, 4
    with (
        tracer_provider(span_exporter(otlp_receiver, "grpc"), batch=True) as grpc_provider,
        tracer_provider(span_exporter(otlp_receiver, "http"), batch=True) as http_provider,
    ):

        def work(provider: TracerProvider, prefix: str) -> None:
            tracer = provider.get_tracer("load")
            for index in range(per_thread):
                with tracer.start_as_current_span(f"{prefix}-{index}"):
                    pass

        workers = [
            threading.Thread(target=work, args=(provider, f"{name}{n}"))
            for name, provider in (("grpc", grpc_provider), ("http", http_provider))
            for n in range(threads_per_protocol)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert grpc_provider.force_flush(5_000)
        assert http_provider.force_flush(5_000)

        expected = 2 * threads_per_protocol * per_thread
        spans = otlp_receiver.wait_for_spans(expected)

    assert len(spans) == expected
    assert len({span["span_id"] for span in spans}) == expected
    assert sum(span["protocol"] == "grpc" for span in spans) == expected // 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_metrics_flat_view(otlp_receiver: OtlpReceiver, protocol: ProtocolName) -> None:
    """Counter and histogram points arrive over both transports with values and attributes."""
    exporter: Any
    if protocol == "grpc":
        exporter = GrpcMetricExporter(endpoint=otlp_receiver.grpc_endpoint, insecure=True)
    else:
        exporter = HttpMetricExporter(endpoint=otlp_receiver.http_endpoint + "/v1/metrics")
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    provider = MeterProvider(resource=RESOURCE, metric_readers=[reader])
    try:
        meter = provider.get_meter("otel_bridge.metrics")
        meter.create_counter("bridge.events", unit="1").add(3, {"source": "file"})
        histogram = meter.create_histogram("bridge.latency", unit="ms")
        histogram.record(10.0)
        histogram.record(30.0)
        assert provider.force_flush(5_000)
        points = otlp_receiver.wait_for_metrics(2)
    finally:
        provider.shutdown()

    by_name = {point["name"]: point for point in points}
    counter, latency = by_name["bridge.events"], by_name["bridge.latency"]
    assert (counter["type"], counter["value"], counter["attributes"]) == (
        "sum",
        3,
        {"source": "file"},
    )
    assert (latency["type"], latency["count"], latency["sum"]) == ("histogram", 2, 40.0)
    assert latency["unit"] == "ms"
    assert counter["resource"]["service.name"] == "otel-bridge-tests"
    assert counter["protocol"] == protocol


# ---------------------------------------------------------------------- fault injection


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_unavailable_then_recovery(otlp_receiver: OtlpReceiver, protocol: ProtocolName) -> None:
    """503/UNAVAILABLE makes the export fail (Retry-After 1 s exceeds the 0.5 s exporter
    budget, so no retry is attempted); after the receiver recovers the same exporter works."""
    spans = finished_spans(2)
    exporter = span_exporter(otlp_receiver, protocol, timeout=0.5)
    started = time.monotonic()
    try:
        otlp_receiver.mode = "unavailable"
        assert exporter.export(spans[:1]) is SpanExportResult.FAILURE
        assert otlp_receiver.refused_requests == 1
        assert otlp_receiver.spans() == []

        otlp_receiver.mode = "ok"
        assert exporter.export(spans[1:]) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()

    [received] = otlp_receiver.wait_for_spans(1, timeout=2.0)
    assert received["name"] == "span-1"
    assert otlp_receiver.refused_requests == 1
    assert time.monotonic() - started < 5.0


@pytest.mark.parametrize("mode", ["unavailable", "throttle"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_exporter_retries_after_hint(
    otlp_receiver: OtlpReceiver, protocol: ProtocolName, mode: Literal["unavailable", "throttle"]
) -> None:
    """Both exporters honour the receiver's back-off hint (HTTP Retry-After, gRPC RetryInfo)
    and deliver on the retry; the refused attempt is counted, the data stored exactly once."""
    otlp_receiver.retry_after = 0.2
    otlp_receiver.fail_next(1, mode)
    exporter = span_exporter(otlp_receiver, protocol, timeout=5.0)
    started = time.monotonic()
    try:
        assert exporter.export(finished_spans(1)) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    elapsed = time.monotonic() - started

    assert otlp_receiver.refused_requests == 1
    assert [span["name"] for span in otlp_receiver.spans()] == ["span-0"]
    assert 0.15 <= elapsed < 3.0  # waited for the hint, not the 1 s default back-off


def test_delay_times_out_client_and_stop_interrupts_it() -> None:
    """A delay longer than the exporter timeout produces a client-side failure, and stop()
    does not wait for the delay to elapse (teardown stays fast)."""
    receiver = OtlpReceiver().start()
    receiver.delay = 30.0
    exporter = span_exporter(receiver, "http", timeout=0.3)
    try:
        started = time.monotonic()
        assert exporter.export(finished_spans(1)) is SpanExportResult.FAILURE
        assert time.monotonic() - started < 2.0
    finally:
        exporter.shutdown()
        started = time.monotonic()
        receiver.stop()
    assert time.monotonic() - started < 3.0


# ---------------------------------------------------------------------- wire contract


def post(
    url: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """Minimal raw OTLP/HTTP client; returns (status, lower-cased headers, body)."""
    all_headers = {"Content-Type": "application/x-protobuf", **(headers or {})}
    request = urllib.request.Request(url, data=body, headers=all_headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return (
                response.status,
                {k.lower(): v for k, v in response.headers.items()},
                response.read(),
            )
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def trace_request_bytes(name: str) -> bytes:
    request = trace_service_pb2.ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.name, span.trace_id, span.span_id = name, b"\x01" * 16, b"\x02" * 8
    return request.SerializeToString()


def test_http_contract(otlp_receiver: OtlpReceiver) -> None:
    """Status codes, headers and encodings the OTLP/HTTP exporters depend on."""
    url = otlp_receiver.http_endpoint + "/v1/traces"

    status, headers, body = post(
        url, gzip.compress(trace_request_bytes("gz")), {"Content-Encoding": "gzip"}
    )
    assert status == 200
    assert headers["content-type"] == "application/x-protobuf"
    trace_service_pb2.ExportTraceServiceResponse.FromString(body)  # must parse
    deflated = zlib.compress(trace_request_bytes("zl"))
    assert post(url, deflated, {"Content-Encoding": "deflate"})[0] == 200
    assert [s["name"] for s in otlp_receiver.spans()] == ["gz", "zl"]
    assert otlp_receiver.spans()[0]["trace_id"] == "01" * 16

    otlp_receiver.mode = "unavailable"
    status, headers, _ = post(url, trace_request_bytes("refused"))
    assert (status, headers["retry-after"]) == (503, "1")
    otlp_receiver.mode = "throttle"
    assert post(url, trace_request_bytes("refused"))[0] == 429
    otlp_receiver.mode = "ok"
    assert otlp_receiver.refused_requests == 2

    assert post(otlp_receiver.http_endpoint + "/v1/logs", b"")[0] == 404
    assert post(url, b"{}", {"Content-Type": "application/json"})[0] == 415
    assert post(url, b"\xff\xff\xff", {})[0] == 400
    assert post(url, b"not gzip", {"Content-Encoding": "gzip"})[0] == 400
    assert post(url, b"", {"Content-Encoding": "br"})[0] == 415
    assert len(otlp_receiver.errors()) == 5
    assert len(otlp_receiver.spans()) == 2  # nothing refused or malformed was stored


def test_grpc_contract(otlp_receiver: OtlpReceiver) -> None:
    """gRPC status codes plus the google.rpc.RetryInfo trailer the gRPC exporter reads."""
    target = otlp_receiver.grpc_endpoint.removeprefix("http://")
    request = trace_service_pb2.ExportTraceServiceRequest.FromString(trace_request_bytes("g"))
    with grpc.insecure_channel(target) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        stub.Export(request, timeout=5, metadata=(("x-tenant", "t1"),))

        for mode, code in (
            ("unavailable", grpc.StatusCode.UNAVAILABLE),
            ("throttle", grpc.StatusCode.RESOURCE_EXHAUSTED),
        ):
            otlp_receiver.mode = mode  # type: ignore[assignment]
            with pytest.raises(grpc.RpcError) as raised:
                stub.Export(request, timeout=5)
            error: Any = raised.value
            assert error.code() == code
            trailer = dict(error.trailing_metadata())["google.rpc.retryinfo-bin"]
            retry = error_details_pb2.RetryInfo.FromString(trailer)
            assert retry.retry_delay.ToTimedelta().total_seconds() == 1.0

    assert otlp_receiver.refused_requests == 2
    [stored] = otlp_receiver.requests()
    assert (stored.protocol, stored.headers["x-tenant"]) == ("grpc", "t1")


# ---------------------------------------------------------------------- lifecycle / API


def test_lifecycle_and_validation() -> None:
    """Endpoints are loopback-only, start/stop are idempotent, restart and bad input refused."""
    receiver = OtlpReceiver()
    with pytest.raises(RuntimeError, match="not started"):
        _ = receiver.grpc_endpoint
    receiver.stop()  # never started: harmless no-op

    receiver = OtlpReceiver()
    with receiver:
        assert receiver.start() is receiver  # idempotent while running
        for endpoint in (receiver.grpc_endpoint, receiver.http_endpoint):
            assert endpoint.startswith("http://127.0.0.1:")
        assert receiver.grpc_endpoint != receiver.http_endpoint
        with pytest.raises(ValueError, match="mode must be one of"):
            receiver.mode = "broken"  # type: ignore[assignment]
        with pytest.raises(ValueError, match="delay must be"):
            receiver.delay = -1
        with pytest.raises(ValueError, match="fail_next mode"):
            receiver.fail_next(1, "ok")
        http_url = receiver.http_endpoint + "/v1/traces"
    receiver.stop()  # second stop is a no-op
    with pytest.raises(RuntimeError, match="cannot be restarted"):
        receiver.start()
    with pytest.raises(urllib.error.URLError):
        post(http_url, trace_request_bytes("late"))
    leftovers = [t.name for t in threading.enumerate() if t.name.startswith("otlp-receiver")]
    assert leftovers == []  # stop() joined the HTTP serve loop and the gRPC worker pool


def test_wait_for_spans_reports_what_arrived(otlp_receiver: OtlpReceiver) -> None:
    """A timeout names the arrived count and refusals, so failing bridge tests explain
    themselves; stop() also wakes waiters instead of letting them sit out the timeout."""
    otlp_receiver.mode = "unavailable"
    post(otlp_receiver.http_endpoint + "/v1/traces", trace_request_bytes("x"))
    with pytest.raises(
        AssertionError, match=r"at least 1 spans .* 0 arrived .*refused requests: 1"
    ):
        otlp_receiver.wait_for_spans(1, timeout=0.2)

    otlp_receiver.mode = "ok"
    post(otlp_receiver.http_endpoint + "/v1/traces", trace_request_bytes("x"))
    assert len(otlp_receiver.wait_for_spans(1, timeout=1.0)) == 1
    otlp_receiver.clear()
    assert otlp_receiver.spans() == []
    assert otlp_receiver.refused_requests == 0

    threading.Timer(0.2, otlp_receiver.stop).start()
    started = time.monotonic()
    with pytest.raises(AssertionError, match="receiver state: stopped"):
        otlp_receiver.wait_for_spans(1, timeout=10.0)
    assert time.monotonic() - started < 5.0
