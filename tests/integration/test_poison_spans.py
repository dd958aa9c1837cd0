"""A span that cannot be encoded never blocks the others: replays of healthy sessions beside
broken ones deliver every healthy span to every exporter (OTLP over HTTP and gRPC to a real
receiver, the traces file read back with protobuf's JSON parser, the console), and a span an
exporter still refuses is isolated, dropped, counted and logged once, while a collector that
refuses everything loses nothing (docs/architecture.md, "Bad input" and "Delivery")."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from otel_bridge import Assembler, JsonLinesDecoder, SpanRecord
from otel_bridge.cli import main
from otel_bridge.export import SpanSink, build_resource
from otel_bridge.export._console import ConsoleSpanExporter
from otel_bridge.export._poison import Verdict, classify, isolate
from otel_bridge.export._queue import RetryPolicy
from otel_bridge.export._sdk_logs import quiet_exporter_logs
from tests import otlp_receiver as rx
from tests import paths, spantree
from tests.otlp_receiver import OtlpReceiver, ReceivedRequest
from tests.recorder import Recorder

FIXTURES = paths.FIXTURES
HEALTHY = ("one_tool_cli1092", "subagent", "abort")
FAST = RetryPolicy(initial_seconds=0.05, max_seconds=0.2)


def lines_of(fixture: str) -> list[dict[str, Any]]:
    path = FIXTURES / fixture / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def session_id_of(events: list[dict[str, Any]]) -> str:
    return next(e["data"]["sessionId"] for e in events if e["type"] == "session.start")


def as_new_session(events: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """A copy of a log under a fresh session id (its directory is named after it)."""
    new = str(uuid.uuid4())
    text = json.dumps(events).replace(session_id_of(events), new)
    return new, json.loads(text)


def write_session(root: Path, session_id: str, events: list[dict[str, Any]]) -> Path:
    path = root / session_id / "events.jsonl"
    path.parent.mkdir(parents=True)
    # json.dumps escapes a lone surrogate as "\udxxx", as a JSON writer that cut an emoji does
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def bad_sessions() -> Iterator[list[dict[str, Any]]]:
    """One session per trigger: a time in 2555 and one before 1970, a lone surrogate in a tool
    name and in an error message, a call duration of -1e30, a usage field of 1e999."""
    base = lines_of("parallel_tools")
    for mutate in (
        lambda e: (
            e["type"] == "tool.execution_complete"
            and e.__setitem__("timestamp", "2555-06-01T00:00:00.000Z")
        ),
        lambda e: (
            e["type"] == "assistant.turn_end"
            and e.__setitem__("timestamp", "1969-06-01T00:00:00.000Z")
        ),
        lambda e: (
            e["type"] == "tool.execution_start" and e["data"].__setitem__("toolName", "view\ud83d")
        ),
        lambda e: (
            e["type"] == "tool.execution_complete"
            and e["data"].update(success=False, error={"message": "cut \ud83d", "code": "x\udc00"})
        ),
        lambda e: (
            e["type"] == "session.usage_record"
            and e["data"]["usage"].__setitem__("duration", -1e30)
        ),
        lambda e: (
            e["type"] == "session.usage_record"
            and e["data"]["usage"].__setitem__("inputTokens", float("inf"))
        ),
    ):
        _, events = as_new_session(base)
        for event in events:
            mutate(event)
        yield events


def span_ids(path: Path) -> set[str]:
    """The span ids a log gives on its own (the replay's assembler, fed it alone)."""
    assembler = Assembler()
    decoder = JsonLinesDecoder(str(path))
    stream = str(path)
    records = assembler.feed(stream, decoder.feed(path.read_bytes()) + decoder.finish(), None)
    return {f"{r.span_id:016x}" for r in records + assembler.end_stream(stream)}


@pytest.fixture
def session_state(tmp_path: Path) -> tuple[Path, set[str]]:
    """Healthy sessions and broken ones side by side; the healthy ones' span ids."""
    root = tmp_path / "session-state"
    healthy: set[str] = set()
    for fixture in HEALTHY:
        events = lines_of(fixture)
        healthy |= span_ids(write_session(root, session_id_of(events), events))
    for events in bad_sessions():
        write_session(root, session_id_of(events), events)
    return root, healthy


def replay(root: Path, *extra: str) -> int:
    return main(["replay", str(root), "--no-progress", "--export-timeout", "3", *extra])


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_broken_sessions_never_keep_the_healthy_ones_from_the_collector(
    protocol: str, session_state, otlp_receiver, monkeypatch
) -> None:
    root, healthy = session_state
    endpoint = otlp_receiver.grpc_endpoint if protocol == "grpc" else otlp_receiver.http_endpoint
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
    assert replay(root, "--capture-content") == 0
    received = {s["span_id"] for s in otlp_receiver.spans()}
    assert healthy <= received
    assert len(received) > len(healthy)  # the broken sessions' spans came too, made valid


def test_broken_sessions_write_a_traces_file_protobuf_reads(session_state, tmp_path) -> None:
    root, healthy = session_state
    out = tmp_path / "traces.jsonl"
    assert replay(root, "--capture-content", "--traces-file", str(out)) == 0
    received = set()
    for line in out.read_text().splitlines():
        json_format.Parse(line, ExportTraceServiceRequest())  # raises on a line it cannot read
        received |= {
            span["spanId"]  # hex in OTLP JSON (protobuf's own mapping would read base64)
            for resource in json.loads(line)["resourceSpans"]
            for scope in resource["scopeSpans"]
            for span in scope["spans"]
        }
    assert healthy <= received


@pytest.mark.parametrize("console_format", ["summary", "tree", "json"])
def test_broken_sessions_never_stop_the_console(
    console_format: str, session_state, capsys, monkeypatch
) -> None:
    root, healthy = session_state
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    assert replay(root, "--capture-content", "--console-format", console_format) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\ud83d" not in out
    if console_format == "json":
        printed = {json.loads(line)["context"]["span_id"][2:] for line in out.splitlines()}
        assert healthy <= printed
    else:  # a line per task: the healthy sessions' and the broken ones'
        tasks = [line for line in out.splitlines() if not line.startswith((" ", "├", "└", "│"))]
        assert len(tasks) >= len(HEALTHY) + 6


# --- a span an exporter still refuses -------------------------------------------------------


def healthy_records() -> list[SpanRecord]:
    return spantree.assemble(FIXTURES / "subagent" / "events.jsonl", "s")


def poisoned(records: list[SpanRecord]) -> tuple[list[SpanRecord], set[str]]:
    """The records with two no exporter can encode (built past the assembler, which would
    have made them valid): a time past 2^64 ns, a name with a lone surrogate."""
    records = list(records)
    records[2] = dataclasses.replace(records[2], start_ns=2**64 + 5, end_ns=2**64 + 6)
    records[7] = dataclasses.replace(records[7], name="execute_tool \ud83d")
    return records, {f"{records[i].span_id:016x}" for i in (2, 7)}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_span_the_exporter_cannot_encode_is_dropped_alone_counted_and_logged_once(
    protocol: str, otlp_receiver, caplog
) -> None:
    records, bad = poisoned(healthy_records())
    exporter = (
        GrpcExporter(endpoint=otlp_receiver.grpc_endpoint, insecure=True)
        if protocol == "grpc"
        else HttpExporter(endpoint=otlp_receiver.http_endpoint + "/v1/traces")
    )
    quiet_exporter_logs()
    recorder = Recorder()
    sink = SpanSink([exporter], build_resource({}), metrics=recorder, retry=FAST)
    with caplog.at_level(logging.WARNING, logger="otel_bridge"):
        sink.export(records)
        assert sink.flush(timeout=20)
    received = {s["span_id"] for s in otlp_receiver.spans()}
    assert received == {f"{r.span_id:016x}" for r in records} - bad
    assert sink.watermark == sink.sequence  # checkpoints pass the dropped spans
    assert sink.stats.dropped == 2
    assert sum(recorder.values("otel_bridge.spans.dropped")) == 2
    assert sum(recorder.values("otel_bridge.spans.rejected")) == 2
    warnings = [r for r in caplog.records if "cannot take" in r.getMessage()]
    assert len(warnings) == 1
    assert any(span_id in warnings[0].getMessage() for span_id in bad)
    assert "\ud83d" not in caplog.text
    sink.shutdown(timeout=2)


class RefusingReceiver(OtlpReceiver):
    """A receiver that refuses as invalid (HTTP 400, gRPC INVALID_ARGUMENT) every request that
    holds a span named with `marker`, or every request at all."""

    def __init__(self, marker: str | None) -> None:
        super().__init__()
        self.marker = marker

    def refuses(self, request: ExportTraceServiceRequest) -> bool:
        names = [
            span.name
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        return self.marker is None or any(self.marker in name for name in names)

    def _grpc_export(self, signal, request, context) -> None:  # type: ignore[no-untyped-def]
        if signal == "traces" and self.refuses(request):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "span refused")
        super()._grpc_export(signal, request, context)

    def _start_http(self) -> None:
        receiver = self

        class Handler(rx._OtlpHttpHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                if receiver.refuses(request):
                    return self._send(400, rx._status_body(3, "span refused"))
                receiver._store(ReceivedRequest("traces", "http", request, {}))
                return self._send(200, ExportTraceServiceResponse().SerializeToString())

        server = rx._OtlpHttpServer(("127.0.0.1", 0), Handler, receiver=self)
        self._http_server = server
        self._http_port = server.server_address[1]
        self._http_thread = rx.threading.Thread(target=server.serve_forever, daemon=True)
        self._http_thread.start()


def exporter_for(receiver: OtlpReceiver, protocol: str) -> Any:
    quiet_exporter_logs()
    if protocol == "grpc":
        return GrpcExporter(endpoint=receiver.grpc_endpoint, insecure=True)
    return HttpExporter(endpoint=receiver.http_endpoint + "/v1/traces")


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_span_the_collector_refuses_alone_is_dropped_the_rest_delivered(protocol) -> None:
    records = healthy_records()
    records[4] = dataclasses.replace(records[4], name="poison pill")
    with RefusingReceiver("poison") as receiver:
        sink = SpanSink([exporter_for(receiver, protocol)], build_resource({}), retry=FAST)
        sink.export(records)
        assert sink.flush(timeout=20)
        received = {s["span_id"] for s in receiver.spans()}
        sink.shutdown(timeout=2)
    assert received == {f"{r.span_id:016x}" for i, r in enumerate(records) if i != 4}
    assert sink.stats.dropped == 1


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_collector_that_refuses_everything_loses_nothing(protocol) -> None:
    """Every part refused the same way: the collector's doing, not a span's. Nothing is
    dropped; the batch waits for the back-off, and the checkpoints with it."""
    records = healthy_records()
    with RefusingReceiver(None) as receiver:
        sink = SpanSink([exporter_for(receiver, protocol)], build_resource({}), retry=FAST)
        sink.export(records)
        assert not sink.flush(timeout=1.5)
        assert sink.stats.dropped == 0
        assert sink.watermark == 0
        receiver.marker = "nothing is refused now"
        assert sink.flush(timeout=20)
        assert {s["span_id"] for s in receiver.spans()} == {f"{r.span_id:016x}" for r in records}
        sink.shutdown(timeout=2)
    assert sink.stats.dropped == 0


def test_an_endpoint_that_is_not_found_loses_nothing(otlp_receiver) -> None:
    records = healthy_records()
    exporter = HttpExporter(endpoint=otlp_receiver.http_endpoint + "/no/such/path")
    quiet_exporter_logs()
    sink = SpanSink([exporter], build_resource({}), retry=FAST)
    sink.export(records)
    assert not sink.flush(timeout=1.0)
    assert sink.stats.dropped == 0 and sink.watermark == 0
    assert sink.shutdown(timeout=0.2) == len(records)


# --- the verdict and the search, alone ----------------------------------------------------------


def record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("x", logging.ERROR, __file__, 0, msg, args, None)


#: What the SDK exporters log when a call fails (their own messages, with their arguments).
HTTP_FAILED = "Failed to export %s batch code: %s, reason: %s"
HTTP_ENCODING = "Failed to encode span batch: %s"
GRPC_FAILED = "Failed to export %s to %s, error code: %s, error details: %s"
SURROGATE = UnicodeEncodeError("utf-8", "", 0, 1, "surrogates not allowed")
CODE = grpc.StatusCode


@pytest.mark.parametrize(
    ("exc", "records", "verdict"),
    [
        (ConnectionRefusedError(111, "refused"), [], Verdict.TRANSIENT),
        (ValueError("Value out of range"), [], Verdict.DATA),
        (None, [record(HTTP_ENCODING, SURROGATE)], Verdict.DATA),
        (None, [record(HTTP_FAILED, "spans", 400, "Bad Request")], Verdict.DATA),
        (None, [record(HTTP_FAILED, "spans", 413, "Too Large")], Verdict.DATA),
        (None, [record(HTTP_FAILED, "spans", 404, "Not Found")], Verdict.ENDPOINT),
        (None, [record(HTTP_FAILED, "spans", 501, "Not Implemented")], Verdict.ENDPOINT),
        (None, [record(HTTP_FAILED, "spans", 503, "Unavailable")], Verdict.TRANSIENT),
        (None, [record(HTTP_FAILED, "spans", None, OSError("reset"))], Verdict.TRANSIENT),
        (None, [record(GRPC_FAILED, "t", "h", CODE.INVALID_ARGUMENT, "d")], Verdict.DATA),
        (None, [record(GRPC_FAILED, "t", "h", CODE.UNAVAILABLE, "d")], Verdict.TRANSIENT),
        (None, [record(GRPC_FAILED, "t", "h", CODE.UNAUTHENTICATED, "d")], Verdict.ENDPOINT),
        (None, [record(GRPC_FAILED, "t", "h", CODE.UNIMPLEMENTED, "d")], Verdict.ENDPOINT),
        (None, [], Verdict.TRANSIENT),
    ],
)  # fmt: skip
def test_a_failure_is_about_the_data_only_when_the_exporter_says_so(exc, records, verdict) -> None:
    assert classify(exc, records)[0] is verdict


def search(batch: list[int], bad: set[int], *, everything: bool = False) -> tuple[list, list, list]:
    """`isolate` against an exporter that refuses any part holding a `bad` item (or any part at
    all): what it delivered, rejected and left."""
    delivered: list[int] = []
    rejected: list[int] = []
    calls = [0]

    def attempt(part: list[int]) -> tuple[Verdict | None, str]:
        calls[0] += 1
        return (Verdict.DATA, "bad") if everything or bad & set(part) else (None, "")

    left = isolate(batch, attempt, delivered.extend, lambda i, _: rejected.append(i), lambda: False)
    return sorted(delivered), sorted(rejected), left


@pytest.mark.parametrize(
    "bad", [{0}, {511}, {3, 300}, set(range(40)), set(range(0, 512, 64)), {5, 6, 7}]
)
def test_isolating_delivers_every_good_item_and_rejects_only_the_bad(bad) -> None:
    batch = list(range(512))
    delivered, rejected, left = search(batch, bad)
    assert rejected == sorted(bad)
    assert delivered == sorted(set(batch) - bad)
    assert left == []


def test_isolating_a_batch_everything_of_which_is_refused_leaves_it_whole() -> None:
    delivered, rejected, left = search(list(range(512)), set(), everything=True)
    assert (delivered, rejected, left) == ([], [], list(range(512)))


def test_a_lone_refused_span_is_not_rejected_without_a_span_that_went_through() -> None:
    assert search([7], {7}) == ([], [], [7])


def test_spans_refused_while_the_receiver_refused_everything_are_tried_again() -> None:
    """The receiver refuses every call for a while, then only the bad span: the spans it had
    refused alone meanwhile are not taken for bad ones."""
    delivered: list[int] = []
    rejected: list[int] = []
    calls = [0]

    def attempt(part: list[int]) -> tuple[Verdict | None, str]:
        calls[0] += 1
        if calls[0] <= 8 or 5 in part:  # the eighth call refuses span 1 alone, the ninth
            return Verdict.DATA, "HTTP 400"  # (span 2 alone) goes through
        return None, ""

    left = isolate(
        list(range(8)), attempt, delivered.extend, lambda i, _: rejected.append(i), lambda: False
    )
    assert (sorted(delivered), rejected, left) == ([0, 1, 2, 3, 4, 6, 7], [5], [])


def test_the_console_never_stops_and_escapes_what_could_act_on_a_terminal() -> None:
    records = healthy_records()
    hostile = {
        "gen_ai.conversation.id": "\x1b[2J\x1b[Hforged",
        "gen_ai.tool.name": "x",
        "error.type": "boom\nFAKE LINE",
        "gen_ai.request.model": "m\u202egnp.exe\ud83d",
    }
    records = [
        dataclasses.replace(
            r, name=r.name + "\x1b]0;title\x07\r\n", attributes={**r.attributes, **hostile}
        )
        for r in records
    ]
    for console_format in ("summary", "tree", "json"):
        for stream in (io.StringIO(), io.TextIOWrapper(io.BytesIO(), encoding="ascii")):
            exporter = ConsoleSpanExporter(stream, console_format)
            sink = SpanSink([exporter], build_resource({}), retry=FAST)
            sink.export(records)
            assert sink.flush(timeout=10)
            sink.shutdown(timeout=2)
            assert sink.stats.dropped == 0 and not exporter._broken
            text = (
                stream.getvalue()
                if isinstance(stream, io.StringIO)
                else stream.buffer.getvalue().decode("ascii")  # type: ignore[attr-defined]
            )
            assert "\x1b" not in text and "\r" not in text and "\u202e" not in text
            lines = text.splitlines()
            assert not [line for line in lines if line.startswith("FAKE LINE")]
            if console_format == "json":
                assert len(lines) == len(records)
