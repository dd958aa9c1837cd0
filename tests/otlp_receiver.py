"""A real, in-process OTLP receiver (gRPC + HTTP/protobuf) for tests.

Why this exists: asserting on what the bridge *exports* is only honest if the bytes go over
the wire through the real OpenTelemetry exporters and are decoded by an independent OTLP
server.  Mocking the exporter would hide encoding, compression, retry and endpoint bugs.

The receiver listens on 127.0.0.1 only, on ephemeral ports, so parallel test runs never
collide and nothing is exposed outside the machine.  It decodes every accepted
``ExportTraceServiceRequest`` / ``ExportMetricsServiceRequest``, keeps the raw messages, and
offers flat ``dict`` views (:meth:`OtlpReceiver.spans`, :meth:`OtlpReceiver.metrics`) that are
easy to assert on.  Fault injection (``mode``, ``fail_next``, ``delay``) lets reliability tests
exercise the exporters' retry and timeout paths against real status codes.

Usage::

    with OtlpReceiver() as receiver:
        exporter = OTLPSpanExporter(endpoint=receiver.grpc_endpoint, insecure=True)
        ...
        spans = receiver.wait_for_spans(2)

or, in pytest, request the ``otlp_receiver`` fixture defined at the bottom of this module.
"""

from __future__ import annotations

import gzip
import logging
import socketserver
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self, TypeAlias, get_args

import grpc
import pytest
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

__all__ = [
    "FaultMode",
    "OtlpReceiver",
    "Protocol",
    "ReceivedRequest",
    "Signal",
    "otlp_receiver",
]

_log = logging.getLogger(__name__)

FaultMode: TypeAlias = Literal[
    "ok", "unavailable", "throttle", "bad_request", "not_found", "not_implemented"
]
Protocol: TypeAlias = Literal["grpc", "http"]
Signal: TypeAlias = Literal["traces", "metrics"]
ExportRequest: TypeAlias = (
    trace_service_pb2.ExportTraceServiceRequest | metrics_service_pb2.ExportMetricsServiceRequest
)

_FAULT_MODES: tuple[str, ...] = get_args(FaultMode)
_HOST = "127.0.0.1"
# Same ceiling as the OTel HTTP exporter's default max_request_size, so a batch the exporter
# is willing to send is never rejected by the receiver's transport limits.
_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_GRPC_CODES: dict[str, grpc.StatusCode] = {
    "unavailable": grpc.StatusCode.UNAVAILABLE,
    "throttle": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "bad_request": grpc.StatusCode.INVALID_ARGUMENT,
    "not_found": grpc.StatusCode.NOT_FOUND,
    "not_implemented": grpc.StatusCode.UNIMPLEMENTED,
}
_HTTP_CODES: dict[str, tuple[int, int]] = {  # mode -> (HTTP status, google.rpc.Code)
    "unavailable": (503, code_pb2.UNAVAILABLE),
    "throttle": (429, code_pb2.RESOURCE_EXHAUSTED),
    "bad_request": (400, code_pb2.INVALID_ARGUMENT),
    "not_found": (404, code_pb2.NOT_FOUND),
    "not_implemented": (501, code_pb2.UNIMPLEMENTED),
}
#: The refusals a client should try again later: only these carry the ``retry_after`` hint
#: (the OTLP specification's retryable answers); the others are final.
_TRANSIENT: frozenset[str] = frozenset({"unavailable", "throttle"})
_HTTP_PATHS: dict[str, Signal] = {"/v1/traces": "traces", "/v1/metrics": "metrics"}
_REQUEST_TYPES: dict[Signal, type[ExportRequest]] = {
    "traces": trace_service_pb2.ExportTraceServiceRequest,
    "metrics": metrics_service_pb2.ExportMetricsServiceRequest,
}
_RESPONSE_TYPES = {
    "traces": trace_service_pb2.ExportTraceServiceResponse,
    "metrics": metrics_service_pb2.ExportMetricsServiceResponse,
}


@dataclass(frozen=True)
class ReceivedRequest:
    """One accepted export request, kept raw so tests can inspect anything the flat views drop.

    ``headers`` holds HTTP headers or gRPC invocation metadata with lower-cased keys, which is
    how tests check that configured auth headers or ``content-encoding`` really went out.
    """

    signal: Signal
    protocol: Protocol
    message: ExportRequest
    headers: dict[str, str | bytes] = field(default_factory=dict)
    received_at: float = field(default_factory=time.time)


class OtlpReceiver:
    """OTLP/gRPC and OTLP/HTTP(protobuf) receiver for traces and metrics.

    Both transports feed one thread-safe store guarded by a single ``threading.Condition`` so
    that :meth:`wait_for_spans` can block without polling.  A receiver has one lifecycle:
    ``start()`` once, ``stop()`` any number of times.
    """

    def __init__(
        self,
        *,
        grpc_workers: int = 8,
        keep_alive: bool = False,
        signals: Iterable[Signal] = ("traces", "metrics"),
    ) -> None:
        """Create a stopped receiver; ``grpc_workers`` bounds concurrent gRPC exports.

        ``keep_alive``: OTLP/HTTP over persistent HTTP/1.1 connections, as a real Collector
        serves it (the benchmarks measure the exporter's cost with it); the default, HTTP/1.0,
        closes each connection after its response, so that ``stop()`` never waits for an
        idle client.

        ``signals``: what it receives. A signal left out is answered as by a backend with no
        receiver for it (Jaeger's OTLP ports take traces only): HTTP 404 at its path, gRPC
        UNIMPLEMENTED (its service is not registered).
        """
        self._keep_alive = keep_alive
        self.signals: frozenset[Signal] = frozenset(signals)
        self._cond = threading.Condition()
        self._requests: list[ReceivedRequest] = []
        self._errors: list[str] = []
        self._span_count = 0
        self._point_count = 0
        self._refused = 0
        self._mode: FaultMode = "ok"
        self._fail_next_count = 0
        self._fail_next_mode: FaultMode = "unavailable"
        self._delay = 0.0
        #: Seconds advertised to clients on refusal (HTTP ``Retry-After`` and the gRPC
        #: ``google.rpc.RetryInfo`` trailer); both OTel exporters use it as their backoff.
        #: ``None`` omits the hint so the exporters fall back to exponential backoff (1s, 2s..).
        self.retry_after: float | None = 1.0
        self._grpc_workers = grpc_workers
        self._state: Literal["new", "running", "stopped"] = "new"
        self._stopping = threading.Event()
        self._grpc_server: grpc.Server | None = None
        self._grpc_executor: ThreadPoolExecutor | None = None
        self._http_server: _OtlpHttpServer | None = None
        self._http_thread: threading.Thread | None = None
        self._grpc_port = 0
        self._http_port = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Bind both servers on free 127.0.0.1 ports and start serving; returns ``self``.

        Calling it again while running is a no-op.  Restarting after ``stop()`` is refused,
        because the ports would change under tests that already captured the endpoints.
        """
        with self._cond:
            if self._state == "running":
                return self
            if self._state == "stopped":
                raise RuntimeError("OtlpReceiver cannot be restarted; create a new one")
            self._state = "running"
        try:
            self._start_grpc()
            self._start_http()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_grpc(self) -> None:
        self._grpc_executor = ThreadPoolExecutor(
            max_workers=self._grpc_workers, thread_name_prefix="otlp-receiver-grpc"
        )
        server = grpc.server(
            self._grpc_executor,
            options=[
                # Never share the port with another process that happens to pick it.
                ("grpc.so_reuseport", 0),
                ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
            ],
        )
        if "traces" in self.signals:
            trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceServicer(self), server)
        if "metrics" in self.signals:
            metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(
                _MetricsServicer(self), server
            )
        port = server.add_insecure_port(f"{_HOST}:0")
        if port == 0:
            raise RuntimeError(f"could not bind gRPC server on {_HOST}")
        self._grpc_server = server
        self._grpc_port = port
        server.start()

    def _start_http(self) -> None:
        handler = _OtlpHttp11Handler if self._keep_alive else _OtlpHttpHandler
        server = _OtlpHttpServer((_HOST, 0), handler, receiver=self)
        self._http_server = server
        self._http_port = server.server_address[1]
        self._http_thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="otlp-receiver-http",
            daemon=True,
        )
        self._http_thread.start()

    def stop(self) -> None:
        """Stop both servers and join their threads.  Idempotent and safe if never started.

        Pending ``delay`` waits are interrupted first, so a test that configured a long delay
        does not hang at teardown.
        """
        with self._cond:
            if self._state == "stopped":
                return
            self._state = "stopped"
            self._cond.notify_all()
        self._stopping.set()
        if self._grpc_server is not None:
            self._grpc_server.stop(grace=None).wait(timeout=5.0)
        if self._grpc_executor is not None:
            self._grpc_executor.shutdown(wait=True)
        if self._http_server is not None:
            if self._http_thread is not None and self._http_thread.is_alive():
                self._http_server.shutdown()
            # Joins the per-request handler threads (block_on_close=True).
            self._http_server.server_close()
        if self._http_thread is not None:
            self._http_thread.join(timeout=5.0)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def grpc_endpoint(self) -> str:
        """``http://127.0.0.1:PORT`` for ``OTLPSpanExporter(endpoint=..., insecure=True)``."""
        return f"http://{_HOST}:{self._require_port(self._grpc_port)}"

    @property
    def http_endpoint(self) -> str:
        """Base URL ``http://127.0.0.1:PORT``; the HTTP exporters need ``+ "/v1/traces"``."""
        return f"http://{_HOST}:{self._require_port(self._http_port)}"

    @staticmethod
    def _require_port(port: int) -> int:
        if not port:
            raise RuntimeError("OtlpReceiver is not started")
        return port

    # ------------------------------------------------------------------ fault injection

    @property
    def mode(self) -> FaultMode:
        """Persistent answer policy: ``"ok"``, or a refusal.

        Transient, carrying the ``retry_after`` hint: ``unavailable`` -> gRPC UNAVAILABLE /
        HTTP 503; ``throttle`` -> gRPC RESOURCE_EXHAUSTED / HTTP 429. Final (the OTLP
        specification says not to retry them), with no hint: ``bad_request`` -> gRPC
        INVALID_ARGUMENT / HTTP 400; ``not_found`` -> gRPC NOT_FOUND / HTTP 404;
        ``not_implemented`` -> gRPC UNIMPLEMENTED / HTTP 501. Refused requests are counted
        in :attr:`refused_requests` but not stored.
        """
        with self._cond:
            return self._mode

    @mode.setter
    def mode(self, value: FaultMode) -> None:
        if value not in _FAULT_MODES:
            raise ValueError(f"mode must be one of {_FAULT_MODES}, got {value!r}")
        with self._cond:
            self._mode = value

    def fail_next(self, count: int, mode: FaultMode = "unavailable") -> None:
        """Refuse exactly the next ``count`` requests with ``mode``, then resume :attr:`mode`.

        Why: "fail once, then recover" is the common reliability scenario, and flipping
        ``mode`` from the test thread while an exporter is mid-retry is racy.
        """
        if mode not in _FAULT_MODES or mode == "ok":
            raise ValueError(f"fail_next mode must be a refusal, got {mode!r}")
        if count < 0:
            raise ValueError("count must be >= 0")
        with self._cond:
            self._fail_next_count = count
            self._fail_next_mode = mode

    @property
    def delay(self) -> float:
        """Seconds to wait before answering any export (to provoke client timeouts).

        The fault decision is taken *after* the delay, and an ``ok`` request is stored even if
        the client gave up meanwhile - exactly like a slow real collector, which is why
        at-least-once duplicates are possible after a client-side timeout.
        """
        with self._cond:
            return self._delay

    @delay.setter
    def delay(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("delay must be >= 0")
        with self._cond:
            self._delay = float(seconds)

    @property
    def refused_requests(self) -> int:
        """How many export attempts were refused by fault injection (retries included)."""
        with self._cond:
            return self._refused

    # ------------------------------------------------------------------ stored data

    def requests(self, signal: Signal | None = None) -> list[ReceivedRequest]:
        """Accepted requests in arrival order, optionally only one signal."""
        with self._cond:
            return [r for r in self._requests if signal is None or r.signal == signal]

    def errors(self) -> list[str]:
        """Descriptions of malformed HTTP requests (bad path, type, encoding or protobuf)."""
        with self._cond:
            return list(self._errors)

    def clear(self) -> None:
        """Forget stored requests, errors and the refusal counter (fault settings are kept)."""
        with self._cond:
            self._requests.clear()
            self._errors.clear()
            self._span_count = self._point_count = self._refused = 0

    def spans(self) -> list[dict[str, Any]]:
        """Every received span as a flat dict; see :func:`_flatten_spans` for the keys."""
        result: list[dict[str, Any]] = []
        for record in self.requests("traces"):
            result.extend(_flatten_spans(record))
        return result

    def metrics(self) -> list[dict[str, Any]]:
        """Every received metric data point as a flat dict (name, type, attributes, value...)."""
        result: list[dict[str, Any]] = []
        for record in self.requests("metrics"):
            result.extend(_flatten_metrics(record))
        return result

    def wait_for_spans(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Block until at least ``n`` spans arrived, then return :meth:`spans`.

        Raises ``AssertionError`` with the arrived count (plus refusals and malformed requests,
        which are the usual reasons) so a failing test explains itself.
        """
        self._wait_until(lambda: self._span_count, n, "spans", timeout)
        return self.spans()

    def wait_for_metrics(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Block until at least ``n`` metric data points arrived, then return :meth:`metrics`."""
        self._wait_until(lambda: self._point_count, n, "metric data points", timeout)
        return self.metrics()

    def _wait_until(self, count: Callable[[], int], n: int, what: str, timeout: float) -> None:
        """Condition wait (no polling); also wakes up early if the receiver is stopped."""
        with self._cond:
            self._cond.wait_for(lambda: count() >= n or self._state == "stopped", timeout)
            arrived = count()
            if arrived >= n:
                return
            raise AssertionError(
                f"expected at least {n} {what} within {timeout}s, but {arrived} arrived "
                f"(refused requests: {self._refused}, malformed requests: {len(self._errors)}, "
                f"receiver state: {self._state})"
            )

    # ------------------------------------------------------------------ request handling

    def _admit(self) -> FaultMode:
        """Apply the delay, then decide (and count) whether this request is refused."""
        delay = self.delay
        if delay > 0:
            self._stopping.wait(delay)
        with self._cond:
            if self._fail_next_count > 0:
                self._fail_next_count -= 1
                mode = self._fail_next_mode
            else:
                mode = self._mode
            if mode != "ok":
                self._refused += 1
            return mode

    def _store(self, record: ReceivedRequest) -> None:
        with self._cond:
            self._requests.append(record)
            if isinstance(record.message, trace_service_pb2.ExportTraceServiceRequest):
                self._span_count += sum(
                    len(ss.spans) for rs in record.message.resource_spans for ss in rs.scope_spans
                )
            else:
                self._point_count += sum(
                    len(getattr(metric, metric.WhichOneof("data")).data_points)
                    for rm in record.message.resource_metrics
                    for sm in rm.scope_metrics
                    for metric in sm.metrics
                    if metric.WhichOneof("data")
                )
            self._cond.notify_all()

    def _record_error(self, message: str) -> None:
        _log.warning("otlp receiver rejected request: %s", message)
        with self._cond:
            self._errors.append(message)
            self._cond.notify_all()

    def _grpc_export(
        self, signal: Signal, request: ExportRequest, context: grpc.ServicerContext
    ) -> None:
        mode = self._admit()
        if mode != "ok":
            if self.retry_after is not None and mode in _TRANSIENT:
                context.set_trailing_metadata(
                    (("google.rpc.retryinfo-bin", _retry_info(self.retry_after)),)
                )
            context.abort(_GRPC_CODES[mode], f"otlp receiver fault injection: {mode}")
        headers = {key.lower(): value for key, value in context.invocation_metadata()}
        self._store(ReceivedRequest(signal, "grpc", request, headers))


class _TraceServicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: OtlpReceiver) -> None:
        self._receiver = receiver

    def Export(
        self,
        request: trace_service_pb2.ExportTraceServiceRequest,
        context: grpc.ServicerContext,
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        self._receiver._grpc_export("traces", request, context)
        return trace_service_pb2.ExportTraceServiceResponse()


class _MetricsServicer(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, receiver: OtlpReceiver) -> None:
        self._receiver = receiver

    def Export(
        self,
        request: metrics_service_pb2.ExportMetricsServiceRequest,
        context: grpc.ServicerContext,
    ) -> metrics_service_pb2.ExportMetricsServiceResponse:
        self._receiver._grpc_export("metrics", request, context)
        return metrics_service_pb2.ExportMetricsServiceResponse()


class _OtlpHttpServer(ThreadingHTTPServer):
    """ThreadingHTTPServer whose handler threads are joined on close (clean teardown)."""

    daemon_threads = False
    block_on_close = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        receiver: OtlpReceiver,
    ) -> None:
        self.receiver = receiver
        super().__init__(address, handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a reverse DNS lookup that can stall
        # for seconds in sandboxes; the name is unused here.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class _OtlpHttpHandler(BaseHTTPRequestHandler):
    """OTLP/HTTP binary protobuf handler (``POST /v1/traces`` and ``POST /v1/metrics``).

    It speaks HTTP/1.0 (the stdlib default), so every connection closes after one response
    and no idle keep-alive thread can block ``stop()``; the exporters reconnect transparently.
    """

    server: _OtlpHttpServer
    timeout = 5.0  # a stalled client cannot pin a handler thread (and stop()) for long

    def do_POST(self) -> None:
        receiver = self.server.receiver
        signal = _HTTP_PATHS.get(self.path.split("?", 1)[0])
        length = (self.headers.get("Content-Length") or "").strip()
        if not length.isdigit():
            # Chunked uploads are not produced by the OTel exporters; refuse rather than guess.
            return self._reject(411, f"valid Content-Length required, got {length!r}")
        body = self.rfile.read(int(length))
        if signal is None or signal not in receiver.signals:
            return self._reject(404, f"unknown path {self.path!r}")
        if self.headers.get_content_type() != "application/x-protobuf":
            return self._reject(415, f"unsupported Content-Type {self.headers['Content-Type']!r}")

        mode = receiver._admit()
        if mode != "ok":
            status, rpc_code = _HTTP_CODES[mode]
            extra = {}
            if receiver.retry_after is not None and mode in _TRANSIENT:
                extra["Retry-After"] = _format_retry_after(receiver.retry_after)
            detail = f"otlp receiver fault injection: {mode}"
            return self._send(status, _status_body(rpc_code, detail), extra)

        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        try:
            payload = _decompress(body, encoding)
        except ValueError as exc:
            return self._reject(415, str(exc))
        except (OSError, EOFError, zlib.error) as exc:
            return self._reject(400, f"cannot decode {encoding} body: {exc}")
        try:
            message = _REQUEST_TYPES[signal].FromString(payload)
        except DecodeError as exc:
            return self._reject(400, f"invalid {signal} protobuf: {exc}")

        headers = {key.lower(): value for key, value in self.headers.items()}
        receiver._store(ReceivedRequest(signal, "http", message, headers))
        self._send(200, _RESPONSE_TYPES[signal]().SerializeToString())

    def _reject(self, status: int, detail: str) -> None:
        self.server.receiver._record_error(f"HTTP {status} {self.command} {self.path}: {detail}")
        self._send(status, _status_body(code_pb2.INVALID_ARGUMENT, detail))

    def _send(self, status: int, body: bytes, extra: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt: str, *args: Any) -> None:
        """Route access logs to ``logging`` instead of spamming stderr during tests."""
        _log.debug("otlp receiver http: " + fmt, *args)


class _OtlpHttp11Handler(_OtlpHttpHandler):
    """The same over persistent connections (every response has a Content-Length); an idle
    connection is closed after ``timeout`` seconds, which bounds how long ``stop()`` waits."""

    protocol_version = "HTTP/1.1"
    timeout = 2.0


# ---------------------------------------------------------------------- helpers


def _decompress(body: bytes, encoding: str) -> bytes:
    """Undo ``Content-Encoding``; the OTel HTTP exporters can send gzip or deflate."""
    if encoding in ("", "identity", "none"):
        return body
    if encoding in ("gzip", "x-gzip"):
        return gzip.decompress(body)
    if encoding == "deflate":
        try:
            return zlib.decompress(body)  # zlib-wrapped, what the OTel exporter sends
        except zlib.error:
            return zlib.decompress(body, -zlib.MAX_WBITS)  # raw deflate, seen in the wild
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


def _status_body(code: int, message: str) -> bytes:
    """OTLP/HTTP error bodies are a serialized ``google.rpc.Status``."""
    return status_pb2.Status(code=code, message=message).SerializeToString()


def _retry_info(seconds: float) -> bytes:
    info = error_details_pb2.RetryInfo()
    info.retry_delay.FromNanoseconds(int(seconds * 1_000_000_000))
    return info.SerializeToString()


def _format_retry_after(seconds: float) -> str:
    """RFC 9110 wants integer seconds; fractions are kept only when given on purpose."""
    return str(int(seconds)) if float(seconds).is_integer() else str(seconds)


def _enum_name(enum: Any, value: int, prefix: str) -> str:
    try:
        return str(enum.Name(value)).removeprefix(prefix)
    except ValueError:
        return str(value)


def _any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind)


def _attributes(pairs: Iterable[KeyValue]) -> dict[str, Any]:
    return {pair.key: _any_value(pair.value) for pair in pairs}


def _flatten_spans(record: ReceivedRequest) -> Iterator[dict[str, Any]]:
    """Yield one dict per span with ids as lowercase hex and enums as short names."""
    message = record.message
    assert isinstance(message, trace_service_pb2.ExportTraceServiceRequest)
    for resource_spans in message.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": _enum_name(Span.SpanKind, span.kind, "SPAN_KIND_"),
                    "start_time_unix_nano": span.start_time_unix_nano,
                    "end_time_unix_nano": span.end_time_unix_nano,
                    "status_code": _enum_name(Status.StatusCode, span.status.code, "STATUS_CODE_"),
                    "status_message": span.status.message,
                    "attributes": _attributes(span.attributes),
                    "events": [
                        {
                            "name": event.name,
                            "time_unix_nano": event.time_unix_nano,
                            "attributes": _attributes(event.attributes),
                        }
                        for event in span.events
                    ],
                    "links": [
                        {
                            "trace_id": link.trace_id.hex(),
                            "span_id": link.span_id.hex(),
                            "attributes": _attributes(link.attributes),
                        }
                        for link in span.links
                    ],
                    "resource": resource,
                    "scope_name": scope_spans.scope.name,
                    "scope_version": scope_spans.scope.version,
                    "protocol": record.protocol,
                }


def _flatten_metrics(record: ReceivedRequest) -> list[dict[str, Any]]:
    """One dict per data point: ``value`` for gauge/sum, ``count``/``sum`` for distributions."""
    message = record.message
    assert isinstance(message, metrics_service_pb2.ExportMetricsServiceRequest)
    points: list[dict[str, Any]] = []
    for resource_metrics in message.resource_metrics:
        resource = _attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                if kind is None:
                    continue
                data_points: Sequence[Any] = getattr(metric, kind).data_points
                for point in data_points:
                    flat: dict[str, Any] = {
                        "name": metric.name,
                        "type": kind,
                        "unit": metric.unit,
                        "attributes": _attributes(point.attributes),
                        "resource": resource,
                        "scope_name": scope_metrics.scope.name,
                        "protocol": record.protocol,
                    }
                    if kind in ("gauge", "sum"):
                        which = point.WhichOneof("value")
                        flat["value"] = getattr(point, which) if which else None
                    else:
                        flat["count"] = point.count
                        has_sum = kind == "summary" or point.HasField("sum")
                        flat["sum"] = point.sum if has_sum else None
                    points.append(flat)
    return points


@pytest.fixture
def otlp_receiver() -> Iterator[OtlpReceiver]:
    """A started :class:`OtlpReceiver`, stopped at teardown even if the test fails."""
    with OtlpReceiver() as receiver:
        yield receiver
