"""`--traces-file` writes what the SDK's OTLP JSON file exporter writes, byte for byte.

The bridge encodes the file itself (faster); the SDK's FileSpanExporter is the reference: the
spans of every fixture log, and values of every kind an attribute can hold, must give the same
lines through both.
"""

from __future__ import annotations

import io
import logging

import pytest
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags, TraceState
from opentelemetry.trace.status import Status, StatusCode

from otel_bridge import Assembler, AssemblerConfig, JsonLinesDecoder
from otel_bridge._records import LinkRecord, SpanEventRecord, SpanRecord
from otel_bridge._records import SpanKind as RecordKind
from otel_bridge._records import StatusCode as RecordStatus
from otel_bridge.export import build_resource
from otel_bridge.export._otel import _SCOPE, to_readable_span
from otel_bridge.export._otlp_json import EncodedSpan, OtlpJsonFileExporter, encode_record
from otel_bridge.processors import Scrubber
from tests import paths

FIXTURES = paths.FIXTURES


def through_both(batches: list[list[ReadableSpan]]) -> tuple[str, str]:
    """The text each exporter writes for the batches: (the bridge's, the SDK's)."""
    ours, theirs = io.StringIO(), io.StringIO()
    bridge, sdk = OtlpJsonFileExporter(ours), FileSpanExporter(stream=theirs)
    for batch in batches:
        assert bridge.export(batch) is SpanExportResult.SUCCESS
        assert sdk.export(batch) is SpanExportResult.SUCCESS
    return ours.getvalue(), theirs.getvalue()


def fixture_spans(capture_content: bool) -> list[ReadableSpan]:
    resource = build_resource({})
    return [to_readable_span(r, resource) for r in fixture_records(capture_content)]


def fixture_records(capture_content: bool) -> list[SpanRecord]:
    """The scrubbed span records of every fixture log, as the sink gets them."""
    assembler = Assembler(
        AssemblerConfig(capture_content=capture_content, keep_unknown_events=True)
    )
    scrubber = Scrubber()
    out = []
    for path in sorted(FIXTURES.glob("*/events.jsonl")):
        stream = str(path)
        events = JsonLinesDecoder(stream).feed(path.read_bytes())
        records = assembler.feed(stream, events) + assembler.end_stream(stream)
        out += scrubber.records(records)
    return out


@pytest.mark.parametrize("capture_content", [False, True])
def test_every_fixture_span_is_written_as_the_sdk_writes_it(capture_content: bool) -> None:
    spans = fixture_spans(capture_content)
    assert len(spans) > 300
    batches = [spans[i : i + 97] for i in range(0, len(spans), 97)]
    ours, theirs = through_both(batches)
    assert ours.count("\n") == len(batches)
    assert ours == theirs


def encoded(records: list[SpanRecord], resource: Resource) -> list[EncodedSpan]:
    """The records as `SpanSink` hands them to the OTLP JSON file exporter."""
    return [EncodedSpan(encode_record(r), resource, _SCOPE) for r in records]


@pytest.mark.parametrize("capture_content", [False, True])
def test_span_records_encoded_directly_are_written_as_the_sdk_writes_their_spans(
    capture_content: bool,
) -> None:
    records = fixture_records(capture_content)
    resource = build_resource({})
    ours, theirs = io.StringIO(), io.StringIO()
    bridge, sdk = OtlpJsonFileExporter(ours), FileSpanExporter(stream=theirs)
    for i in range(0, len(records), 97):
        assert bridge.export(encoded(records[i : i + 97], resource)) is SpanExportResult.SUCCESS
        sdk.export([to_readable_span(r, resource) for r in records[i : i + 97]])
    assert len(records) > 300
    assert ours.getvalue() == theirs.getvalue()


def span(**overrides: object) -> ReadableSpan:
    context = SpanContext(0xABC, 0xDEF, is_remote=False, trace_flags=TraceFlags(1))
    arguments: dict[str, object] = {
        "name": "s",
        "context": context,
        "resource": Resource.create({"service.name": "t"}),
        "start_time": 5,
        "end_time": 9,
        "instrumentation_scope": InstrumentationScope("scope", "1.0", "https://schema"),
    }
    arguments.update(overrides)
    return ReadableSpan(**arguments)  # type: ignore[arg-type]


EDGE_ATTRIBUTES = {
    "str": "plain",
    "empty": "",
    "unicode": "caf\u00e9 \u2603 \U0001f600 \u2028",
    "escapes": 'quote " backslash \\ newline \n tab \t nul \x00',
    "int": 42,
    "negative": -(2**63),
    "big": 2**64 - 1,
    "true": True,
    "false": False,
    "float": 0.1,
    "whole float": 3.0,
    "tiny": 1e-7,
    "huge": 1e22,
    "nan": float("nan"),
    "inf": float("inf"),
    "-inf": float("-inf"),
    "strings": ["a", "", "\u00e9"],
    "ints": [1, 2, 3],
    "floats": (0.5, float("nan")),
    "bools": [True, False],
    "empty list": [],
    "": "an empty key",
}

#: values the bridge never puts on a span, but an attribute could hold
ODD_ATTRIBUTES = {
    "mapping": {"a": 1, "": "x", 2: [1, None], "nested": {}},
    "empty mapping": {},
    "bytes": b"\x00\xff",
    "no bytes": b"",
    "none": None,
    "int enum": SpanKind.CLIENT,
    "mixed": [1, "a", 2.5, True, None, [b"x"]],
}


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"attributes": EDGE_ATTRIBUTES},
        {"attributes": ODD_ATTRIBUTES},
        {"name": ""},
        {"start_time": None, "end_time": 0},
        {"kind": SpanKind.CLIENT},
        {"kind": SpanKind.SERVER},
        {"kind": SpanKind.PRODUCER},
        {"kind": SpanKind.CONSUMER},
        {"parent": SpanContext(0xABC, 0x1, is_remote=False)},
        {"parent": SpanContext(0xABC, 0x1, is_remote=True)},
        {"status": Status(StatusCode.ERROR, "it \u00e9 failed")},
        {"status": Status(StatusCode.ERROR)},
        {"status": Status(StatusCode.OK)},
        {
            "events": [
                Event("e1", EDGE_ATTRIBUTES, 7),
                Event("", {}, 8),
                Event("e3", None, 0),  # type: ignore[arg-type]
            ]
        },
        {
            "links": [
                Link(SpanContext(1, 2, is_remote=True), EDGE_ATTRIBUTES),
                Link(SpanContext(3, 4, is_remote=False)),
            ]
        },
        {
            "context": SpanContext(
                2**128 - 1,
                2**64 - 1,
                is_remote=False,
                trace_state=TraceState([("vendor", "value"), ("other", "x")]),
            )
        },
        {"resource": Resource.create({}, schema_url="https://resource-schema")},
        {"resource": Resource({})},
        {"instrumentation_scope": None},
        {"instrumentation_scope": InstrumentationScope("")},
        {"instrumentation_scope": InstrumentationScope("s", None, None, {"scope.a": "v"})},
    ],
    ids=lambda overrides: ",".join(overrides) or "defaults",
)
def test_each_kind_of_value_and_field_is_written_as_the_sdk_writes_it(
    overrides: dict[str, object],
) -> None:
    ours, theirs = through_both([[span(**overrides)]])
    assert ours == theirs


def test_spans_of_several_resources_and_scopes_are_grouped_as_the_sdk_groups_them() -> None:
    first, second = Resource.create({"service.name": "a"}), Resource.create({"service.name": "b"})
    equal_to_first = Resource.create({"service.name": "a"})  # equal, not the same object
    scope_a, scope_b = InstrumentationScope("a"), InstrumentationScope("b")
    batch = [
        span(name="1", resource=first, instrumentation_scope=scope_a),
        span(name="2", resource=second, instrumentation_scope=scope_a),
        span(name="3", resource=equal_to_first, instrumentation_scope=scope_b),
        span(name="4", resource=first, instrumentation_scope=scope_a),
        span(name="5", resource=second, instrumentation_scope=None),
    ]
    ours, theirs = through_both([batch, batch[2:], []])
    assert ours == theirs
    assert ours.count("\n") == 2  # an empty batch writes nothing


def test_a_value_the_format_cannot_hold_is_left_out_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    attributes = {"ok": 1, "bad": object(), "nested bad": [object()]}
    with caplog.at_level(logging.ERROR, logger="otel_bridge"):
        ours, theirs = through_both([[span(attributes=attributes)]])
    assert ours == theirs
    assert '"ok"' in ours and "bad" not in ours
    assert any("Failed to encode key bad" in r.getMessage() for r in caplog.records)


def test_after_shutdown_the_stream_is_closed_and_exports_are_refused() -> None:
    stream = io.StringIO()
    exporter = OtlpJsonFileExporter(stream)
    assert exporter.export([span()]) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert stream.closed
    assert exporter.export([span()]) is SpanExportResult.FAILURE
    exporter.shutdown()  # a second time: a warning, no error


def record(**overrides: object) -> SpanRecord:
    arguments: dict[str, object] = {
        "trace_id": 0xABC,
        "span_id": 0xDEF,
        "parent_span_id": None,
        "name": "s",
        "kind": RecordKind.INTERNAL,
        "start_ns": 5,
        "end_ns": 9,
    }
    arguments.update(overrides)
    return SpanRecord(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"name": "", "start_ns": 0, "end_ns": 0},
        {"kind": RecordKind.CLIENT, "parent_span_id": 1},
        {"trace_id": 2**128 - 1, "span_id": 2**64 - 1, "parent_span_id": 0},
        {"attributes": EDGE_ATTRIBUTES},
        {"status": RecordStatus.ERROR, "status_message": "it \u00e9 failed"},
        {"status": RecordStatus.ERROR, "status_message": ""},
        {"status": RecordStatus.ERROR},
        {"status": RecordStatus.OK},
        {"status": RecordStatus.UNSET, "status_message": "ignored unless an error"},
        {
            "events": (
                SpanEventRecord("e1", 7, {"a": 1, "b": ["x"]}),
                SpanEventRecord("", 8),
                SpanEventRecord("e3", 0, {}),
            )
        },
        {"links": (LinkRecord(1, 2, {"k": "v"}), LinkRecord(3, 4))},
    ],
    ids=lambda overrides: ",".join(overrides) or "defaults",
)
def test_each_field_of_a_record_is_encoded_as_its_sdk_span_is_written(
    overrides: dict[str, object],
) -> None:
    resource = Resource.create({"service.name": "t"})
    spans = [record(**overrides)]
    ours, theirs = io.StringIO(), io.StringIO()
    OtlpJsonFileExporter(ours).export(encoded(spans, resource))
    FileSpanExporter(stream=theirs).export([to_readable_span(r, resource) for r in spans])
    assert ours.getvalue() == theirs.getvalue()
