"""The export adapter: records become SDK spans with their ids and times; exporters by env."""

from __future__ import annotations

import io

import pytest
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind as SdkSpanKind
from opentelemetry.trace.status import StatusCode as SdkStatusCode

from otel_bridge import ConfigError
from otel_bridge.export import SpanSink, build_resource, build_span_exporters
from otel_bridge.export._queue import RetryPolicy
from tests.builder import Log
from tests.spantree import assemble


def spans_through_sink(**sink_args):
    log = Log()
    log.start()
    log.user()
    log.turn("0")
    log.usage("u1")
    log.message([("v", "view")])
    log.tool_start("v", "view")
    log.tool_done("v", success=False)
    log.turn_end("0")
    log.user(interaction="i2")
    log.simple_turn("0", "u2", interaction="i2")
    records = assemble(log.events())
    memory = InMemorySpanExporter()
    sink = SpanSink([memory], build_resource({}), **sink_args)
    sink.export(records)
    sink.shutdown()
    return records, memory.get_finished_spans(), sink


def test_records_keep_ids_times_parents_status_and_links() -> None:
    records, spans, sink = spans_through_sink(max_batch=3)
    assert sink.stats.exported == len(records) == len(spans)
    by_id = {s.context.span_id: s for s in spans}
    for record in records:
        span = by_id[record.span_id]
        assert span.context.trace_id == record.trace_id
        assert span.context.trace_flags.sampled
        assert (span.parent.span_id if span.parent else None) == record.parent_span_id
        assert (span.start_time, span.end_time) == (record.start_ns, record.end_ns)
        assert span.name == record.name
    view = next(s for s in spans if s.name == "execute_tool view")
    assert view.status.status_code is SdkStatusCode.ERROR
    chat = next(s for s in spans if s.name.startswith("chat"))
    assert chat.kind is SdkSpanKind.CLIENT
    first_root, second_root = (s for s in spans if s.name == "invoke_agent copilot")
    assert second_root.links[0].context.span_id == first_root.context.span_id
    assert spans[0].resource.attributes["service.name"] == "github-copilot"
    assert spans[0].instrumentation_scope.name == "otel_bridge"


def test_service_name_from_environment_wins(monkeypatch) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "my-agents")
    import os

    assert build_resource(os.environ).attributes["service.name"] == "my-agents"


@pytest.mark.parametrize(("env", "kinds"), [
    ({}, ["ConsoleSpanExporter"]),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, ["OTLPSpanExporter"]),
    ({"OTEL_TRACES_EXPORTER": "otlp,console"}, ["OTLPSpanExporter", "ConsoleSpanExporter"]),
    ({"OTEL_TRACES_EXPORTER": "none"}, []),
])
def test_exporter_choice(env, kinds) -> None:
    exporters = build_span_exporters(env)
    assert [type(e).__name__ for e in exporters] == kinds
    for exporter in exporters:
        exporter.shutdown()


def test_protocol_choice_picks_the_grpc_or_http_exporter() -> None:
    grpc = build_span_exporters({"OTEL_TRACES_EXPORTER": "otlp",
                                 "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})[0]
    http = build_span_exporters({"OTEL_TRACES_EXPORTER": "otlp"})[0]
    assert "grpc" in type(grpc).__module__ and "http" in type(http).__module__
    grpc.shutdown()
    http.shutdown()
    with pytest.raises(ConfigError, match="grpc or http/protobuf"):
        build_span_exporters({"OTEL_TRACES_EXPORTER": "otlp",
                              "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})


def test_traces_file_alone_means_only_the_file(tmp_path) -> None:
    exporters = build_span_exporters({}, traces_file=tmp_path / "t.jsonl")
    assert len(exporters) == 1 and not isinstance(exporters[0], ConsoleSpanExporter)
    exporters[0].shutdown()


def test_unwritable_traces_file_is_a_config_error(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="cannot write traces"):
        build_span_exporters({}, traces_file=blocker / "sub" / "t.jsonl")


def test_console_exporter_writes_one_json_object_per_span() -> None:
    stream = io.StringIO()
    (exporter,) = build_span_exporters({}, console_stream=stream)
    records, _, _ = spans_through_sink()
    sink = SpanSink([exporter], build_resource({}))
    sink.export(records)
    sink.flush()
    assert len(stream.getvalue().splitlines()) == len(records)


class _Failing(InMemorySpanExporter):
    def export(self, spans):
        raise RuntimeError("boom")


FAST = RetryPolicy(initial_seconds=0.01, max_seconds=0.05)


def test_a_failing_exporter_is_retried_counted_and_never_raises(caplog) -> None:
    records, _, _ = spans_through_sink()
    sink = SpanSink([_Failing()], build_resource({}), retry=FAST)
    sink.export(records)
    assert sink.flush(timeout=0.3) is False
    assert sink.stats.failed >= 2 * len(records)  # attempted again and again
    assert sink.watermark == 0  # nothing delivered: no checkpoint may pass these spans
    assert sink.shutdown(timeout=0.1) == len(records)
    assert "raised" in caplog.text


class _DownThenUp(InMemorySpanExporter):
    """Fails its first `failures` calls, like a collector that comes back."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def export(self, spans):
        if self.failures > 0:
            self.failures -= 1
            return SpanExportResult.FAILURE
        return super().export(spans)


def test_what_was_queued_during_an_outage_is_delivered_after_it() -> None:
    records, _, _ = spans_through_sink()
    exporter = _DownThenUp(failures=5)
    sink = SpanSink([exporter], build_resource({}), retry=FAST, max_batch=4)
    sink.export(records[:4])
    sink.export(records[4:])
    assert sink.flush(timeout=5) is True
    assert [s.context.span_id for s in exporter.get_finished_spans()] == [
        r.span_id for r in records]  # all, once, in order
    assert sink.watermark == sink.sequence == len(records)
    sink.shutdown()


def test_a_full_queue_drops_the_oldest_and_counts_it() -> None:
    records, _, _ = spans_through_sink()
    exporter = _DownThenUp(failures=1000)
    sink = SpanSink([exporter], build_resource({}), retry=FAST, queue_spans=3, max_batch=1)
    for record in records:
        sink.export([record])
    assert sink.stats.dropped >= len(records) - 3 - 1
    assert sink.queued <= 3
    sink.shutdown(timeout=0.1)


def test_replay_mode_waits_for_room_instead_of_dropping() -> None:
    records, _, _ = spans_through_sink()
    exporter = _DownThenUp(failures=3)
    sink = SpanSink([exporter], build_resource({}), retry=FAST, queue_spans=2, max_batch=1,
                    block_when_full=True)
    sink.export(records)
    assert sink.flush(timeout=5)
    assert sink.stats.dropped == 0
    assert len(exporter.get_finished_spans()) == len(records)
    sink.shutdown()
