"""Fuzz: a real session log, mutated at random, beside healthy ones, through the whole pipeline
(`Pipeline`, as `replay` and `run` build it) to every exporter at once: OTLP over HTTP and gRPC
to a real receiver, the OTLP JSON traces file (each line read back by protobuf's JSON parser),
and the console in its three formats. Whatever the mutation, nothing raises, no exporter
refuses a span, and every span of the healthy sessions reaches every exporter.

Mutations: text with lone surrogates, control characters, escape sequences, bidirectional
overrides; numbers huge, negative, NaN and infinite; times far before 1970 and after 2262;
values of other types, deeply nested, in the data or the envelope; unknown agentIds; repeated
event ids; events turned into sub-agent starts and turns. The profile is
bounded and derandomized (the same examples in every run) to keep the run to some seconds.
"""

from __future__ import annotations

import io
import json
import math
import uuid
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_bridge import Assembler, AssemblerConfig, JsonLinesDecoder, SpanRecord
from otel_bridge.app._pipeline import Pipeline, PipelineConfig
from otel_bridge.export._console import ConsoleSpanExporter
from otel_bridge.export._otlp_json import OtlpJsonFileExporter
from otel_bridge.export._sdk_logs import quiet_exporter_logs
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import find_logs, replay_logs
from tests import paths
from tests.otlp_receiver import OtlpReceiver

FIXTURES = paths.FIXTURES
HEALTHY = ("one_tool_cli1092", "subagent_cli1092", "abort")
MUTABLE = ("parallel_tools", "subagent", "mcp_tools", "sdk_steering", "crash_resume")
FUZZ = settings(
    max_examples=100,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
MAX_TIME_NS = 2**63 - 1


def events_of(fixture: str) -> list[dict[str, Any]]:
    path = FIXTURES / fixture / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def session_id_of(events: list[dict[str, Any]]) -> str:
    return next(e["data"]["sessionId"] for e in events if e["type"] == "session.start")


# --- what goes wrong in a log ---------------------------------------------------------------

nasty_text = st.one_of(
    st.sampled_from(
        [
            "\ud800",
            "\udfff",
            "cut \ud83d",
            "\x1b[2J\x1b[H",
            "\x1b]0;title\x07",
            "line\nforged",
            "\r",
            "\u202egnp.exe",
            "\x00",
            "",
            "x" * 5000,
        ]
    ),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=20),
)
nasty_number = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, -1e30, 1e30, 2**63, -(2**63) - 1, 10**30]),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
)
nasty_time = st.one_of(
    st.sampled_from(
        [
            "2555-01-01T00:00:00.000Z",
            "1969-12-31T23:59:59.999Z",
            "0001-01-01T00:00:00.000Z",
            "9999-12-31T23:59:59.999Z",
            "2262-04-11T23:47:16.854Z",
            "2262-04-11T23:47:16.855Z",
            "1970-01-01T00:00:00.000Z",
            "2026-13-40T99:99:99Z",
        ]
    ),
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"),
)
nasty_value = st.one_of(
    nasty_text,
    nasty_number,
    st.none(),
    st.booleans(),
    st.lists(st.one_of(nasty_text, nasty_number), max_size=3),
    st.dictionaries(nasty_text, nasty_number, max_size=3),
    st.integers(1, 60).map(lambda depth: json.loads("[" * depth + "]" * depth)),
)


def mutated_session(data: st.DataObject) -> tuple[str, bytes]:
    """A fixture's log under a fresh session id, with some of its values replaced (each draw
    is shown when an example fails)."""
    draw = data.draw
    events = events_of(draw(st.sampled_from(MUTABLE)))
    old, new = session_id_of(events), str(uuid.uuid4())
    events = json.loads(json.dumps(events).replace(old, new))
    for _ in range(draw(st.integers(1, 8))):
        event = events[draw(st.integers(0, len(events) - 1))]
        what = draw(
            st.sampled_from(["data", "data", "data", "time", "agent", "id", "type", "envelope"])
        )
        if what == "envelope":
            field = draw(st.sampled_from(["data", "type", "timestamp", "agentId", "parentId"]))
            event[field] = draw(nasty_value)
        elif what == "time":
            event["timestamp"] = draw(nasty_time)
        elif what == "agent":
            event["agentId"] = draw(st.one_of(nasty_text, st.just(str(uuid.uuid4()))))
        elif what == "id":
            event["id"] = draw(st.sampled_from([e.get("id") for e in events]))
        elif what == "type":
            event["type"] = draw(st.sampled_from(["assistant.turn_start", "subagent.started"]))
        else:
            place: Any = event.setdefault("data", {})
            if not isinstance(place, dict):
                continue
            while True:  # down to a mapping inside the data, at any depth
                keys = [k for k, v in place.items() if isinstance(v, dict)]
                if not keys or draw(st.booleans()):
                    break
                place = place[draw(st.sampled_from(sorted(keys)))]
            key = draw(st.one_of(st.sampled_from(sorted(place) or ["x"]), nasty_text))
            place[key] = draw(nasty_value)
    # as a JSON writer would: lone surrogates escaped, NaN and infinities as their tokens
    return new, b"".join(json.dumps(e, allow_nan=True).encode() + b"\n" for e in events)


# --- the pipeline ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def receiver() -> Any:
    with OtlpReceiver() as started:
        yield started


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], set[str]]:
    """The healthy logs, each in a directory named after its session, and their span ids."""
    root = tmp_path_factory.mktemp("healthy")
    paths, ids = [], set()
    for fixture in HEALTHY:
        events = events_of(fixture)
        path = root / session_id_of(events) / "events.jsonl"
        path.parent.mkdir()
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
        paths.append(path)
        assembler = Assembler()
        decoder = JsonLinesDecoder(str(path))
        records = assembler.feed("h", decoder.feed(path.read_bytes()) + decoder.finish())
        ids |= {f"{r.span_id:016x}" for r in records + assembler.end_stream("h")}
    return paths, ids


def exportable(records: list[SpanRecord]) -> None:
    for span in records:
        assert 0 <= span.start_ns <= span.end_ns <= MAX_TIME_NS
        span.name.encode("utf-8")


@FUZZ
@given(data=st.data())
def test_a_mutated_session_never_keeps_a_healthy_span_from_any_exporter(
    data: st.DataObject, receiver: OtlpReceiver, healthy, tmp_path_factory
) -> None:
    session_id, text = mutated_session(data)
    tmp = tmp_path_factory.mktemp("fuzz")
    bad_log = tmp / session_id / "events.jsonl"
    bad_log.parent.mkdir()
    bad_log.write_bytes(text)
    healthy_logs, healthy_ids = healthy
    receiver.clear()
    traces = _Kept()
    consoles = {fmt: io.StringIO() for fmt in ("summary", "tree", "json")}
    quiet_exporter_logs()
    exporters = [
        HttpExporter(endpoint=receiver.http_endpoint + "/v1/traces"),
        GrpcExporter(endpoint=receiver.grpc_endpoint, insecure=True),
        OtlpJsonFileExporter(traces),
        *(ConsoleSpanExporter(stream, fmt) for fmt, stream in consoles.items()),
    ]
    pipeline = Pipeline(
        PipelineConfig(assembler=AssemblerConfig(capture_content=True), block_when_full=True),
        {},
        span_exporters=exporters,
    )
    emitted: list[SpanRecord] = []

    def emit(records: list[SpanRecord]) -> None:
        emitted.extend(records)
        pipeline.sink.export(records)

    logs = find_logs([*healthy_logs[:1], bad_log, *healthy_logs[1:]])
    replay_logs(logs, StreamFeeder(pipeline.assembler, emit))
    assert pipeline.shutdown_spans(timeout=20) == 0  # every span went everywhere
    assert pipeline.sink.stats.dropped == 0  # no exporter refused one
    exportable(emitted)

    by_protocol: dict[str, set[str]] = {"http": set(), "grpc": set()}
    for span in receiver.spans():
        by_protocol[span["protocol"]].add(span["span_id"])
    assert healthy_ids <= by_protocol["http"]
    assert healthy_ids <= by_protocol["grpc"]
    in_file = set()
    for line in traces.getvalue().splitlines():
        json_format.Parse(line, ExportTraceServiceRequest())  # a line it cannot read raises
        in_file |= {
            span["spanId"]
            for resource in json.loads(line)["resourceSpans"]
            for scope in resource["scopeSpans"]
            for span in scope["spans"]
        }
    assert healthy_ids <= in_file
    printed = {
        json.loads(line)["context"]["span_id"][2:]
        for line in consoles["json"].getvalue().splitlines()
    }
    assert healthy_ids <= printed
    for stream in consoles.values():
        text = stream.getvalue()
        assert "\x1b" not in text and "\r" not in text
        text.encode("utf-8")


class _Kept(io.StringIO):
    """A StringIO the file exporter may close at shutdown, and whose text stays readable."""

    def close(self) -> None:
        """Kept open: the test reads it after the exporter's shutdown."""
