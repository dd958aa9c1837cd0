"""The export adapter: records become SDK spans with their ids and times; exporters by env."""

from __future__ import annotations

import io
import logging
import threading

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind as SdkSpanKind
from opentelemetry.trace.status import StatusCode as SdkStatusCode

from otel_bridge import ConfigError
from otel_bridge.export import (
    MetricsOptions,
    SpanSink,
    build_metrics,
    build_resource,
    build_span_exporters,
)
from otel_bridge.export._common import otlp_endpoint
from otel_bridge.export._exporters import unreachable_collector
from otel_bridge.export._queue import RetryPolicy
from tests.builder import Log
from tests.spantree import assemble


def spans_through_sink(**sink_args):
    log = Log.asked()
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


ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}


@pytest.mark.parametrize(
    ("env", "traces_file", "kinds"),
    [
        ({}, False, ["ConsoleSpanExporter"]),
        (ENDPOINT, False, ["OTLPSpanExporter"]),
        (
            {"OTEL_TRACES_EXPORTER": "otlp,console"},
            False,
            ["OTLPSpanExporter", "ConsoleSpanExporter"],
        ),
        ({"OTEL_TRACES_EXPORTER": "none"}, False, []),
        # --traces-file is one more destination, never instead of the others
        ({}, True, ["OtlpJsonFileExporter"]),
        (ENDPOINT, True, ["OTLPSpanExporter", "OtlpJsonFileExporter"]),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"},
            True,
            ["OTLPSpanExporter", "OtlpJsonFileExporter"],
        ),
        (
            {**ENDPOINT, "OTEL_TRACES_EXPORTER": "otlp"},
            True,
            ["OTLPSpanExporter", "OtlpJsonFileExporter"],
        ),
        (
            {"OTEL_TRACES_EXPORTER": "console"},
            True,
            ["ConsoleSpanExporter", "OtlpJsonFileExporter"],
        ),
        ({"OTEL_TRACES_EXPORTER": "none"}, True, ["OtlpJsonFileExporter"]),
        ({**ENDPOINT, "OTEL_SDK_DISABLED": "true"}, True, []),  # the specification's kill switch
        ({**ENDPOINT, "OTEL_SDK_DISABLED": "false"}, False, ["OTLPSpanExporter"]),
    ],
)
def test_exporter_choice(env, traces_file, kinds, tmp_path) -> None:
    out = tmp_path / "t.jsonl"
    exporters = build_span_exporters(env, traces_file=out if traces_file else None)
    assert [type(e).__name__ for e in exporters] == kinds
    assert out.exists() == ("OtlpJsonFileExporter" in kinds)
    for exporter in exporters:
        exporter.shutdown()


def test_protocol_choice_picks_the_grpc_or_http_exporter() -> None:
    grpc = build_span_exporters(
        {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    )[0]
    http = build_span_exporters({"OTEL_TRACES_EXPORTER": "otlp"})[0]
    assert "grpc" in type(grpc).__module__ and "http" in type(http).__module__
    grpc.shutdown()
    http.shutdown()
    with pytest.raises(ConfigError, match="grpc or http/protobuf"):
        build_span_exporters(
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
        )


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
        r.span_id for r in records
    ]  # all, once, in order
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
    sink = SpanSink(
        [exporter], build_resource({}), retry=FAST, queue_spans=2, max_batch=1, block_when_full=True
    )
    sink.export(records)
    assert sink.flush(timeout=5)
    assert sink.stats.dropped == 0
    assert len(exporter.get_finished_spans()) == len(records)
    sink.shutdown()


# --- counted per span, whatever the number of destinations -----------------------------------


def test_two_destinations_get_every_span_and_each_span_counts_once() -> None:
    records, _, _ = spans_through_sink()
    first, second = InMemorySpanExporter(), _DownThenUp(failures=2)
    sink = SpanSink([first, second], build_resource({}), retry=FAST, max_batch=4)
    sink.export(records)
    assert sink.flush(timeout=5)
    assert len(first.get_finished_spans()) == len(second.get_finished_spans()) == len(records)
    assert sink.stats.exported == len(records)  # not twice as many
    assert sorted(sink.stats.by_exporter.values()) == [len(records), len(records)]
    assert sink.shutdown() == 0


def test_a_span_one_destination_did_not_get_is_not_exported() -> None:
    records, _, _ = spans_through_sink()
    good = InMemorySpanExporter()
    sink = SpanSink([good, _Failing()], build_resource({}), retry=FAST)
    sink.export(records)
    assert sink.flush(timeout=0.3) is False
    assert len(good.get_finished_spans()) == len(records)
    assert sink.stats.exported == 0  # delivered to every destination: none
    assert sink.stats.by_exporter == {"InMemorySpanExporter": len(records), "_Failing": 0}
    assert sink.shutdown(timeout=0.1) == len(records)  # each span once, not once per exporter
    assert sink.watermark == 0


def test_a_span_dropped_by_two_full_queues_counts_once(caplog) -> None:
    records, _, _ = spans_through_sink()
    down = [_DownThenUp(failures=1000), _DownThenUp(failures=1000)]
    sink = SpanSink(down, build_resource({}), retry=FAST, queue_spans=2, max_batch=1)
    for record in records:
        sink.export([record])
    per_queue = sum(
        int(r.getMessage().split("queue full, ")[1].split()[0])
        for r in caplog.records
        if "queue full" in r.getMessage()
    )
    dropped = sink.stats.dropped
    assert 0 < dropped < per_queue  # the spans both queues dropped are counted once
    assert dropped + sink.shutdown(timeout=0.1) == len(records)  # each span is one or other


class _Stuck(InMemorySpanExporter):
    """An exporter whose export call does not return until it is shut down (as the SDK's
    exporters do in their own retry loop against a collector that does not answer)."""

    def __init__(self) -> None:
        super().__init__()
        self.released = threading.Event()
        self.entered = threading.Event()

    def export(self, spans):
        self.entered.set()
        self.released.wait(120)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.released.set()
        super().shutdown()


def test_shutdown_gives_up_at_once_when_told_to_abort() -> None:
    records, _, _ = spans_through_sink()
    stuck = _Stuck()
    sink = SpanSink([stuck], build_resource({}), retry=FAST)
    sink.export(records)
    assert stuck.entered.wait(5)
    left = sink.shutdown(timeout=120, abort=lambda: True)
    assert left == len(records)
    assert stuck.released.is_set()  # the call in progress was cut short
    assert sink.watermark == 0  # a checkpoint stays before them


def test_shutdown_cuts_a_call_still_running_at_the_deadline_short() -> None:
    records, _, _ = spans_through_sink()
    stuck = _Stuck()
    sink = SpanSink([stuck], build_resource({}), retry=FAST)
    sink.export(records)
    assert stuck.entered.wait(5)
    assert sink.shutdown(timeout=0.2) == len(records)
    assert stuck.released.is_set()


# --- OTLP endpoints --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "signal", "want"),
    [
        ({}, "traces", ("localhost", 4318, "http://localhost:4318/v1/traces", None)),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "traces",
            ("localhost", 4317, "http://localhost:4317", None),
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example/"},
            "metrics",
            (
                "collector.example",
                443,
                "https://collector.example/v1/metrics",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2/custom",
            },
            "traces",
            ("b", 2, "http://b:2/custom", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317",
            },
            "traces",
            ("collector", 4317, "collector:4317", "OTEL_EXPORTER_OTLP_ENDPOINT"),
        ),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "[::1]:4317"},
            "traces",
            ("::1", 4317, "[::1]:4317", "OTEL_EXPORTER_OTLP_ENDPOINT"),
        ),
    ],
)
def test_endpoints_the_exporters_accept(env, signal, want) -> None:
    endpoint = otlp_endpoint(env, signal)
    assert (endpoint.host, endpoint.port, endpoint.target, endpoint.variable) == want


@pytest.mark.parametrize(
    "value",
    [
        "not-a-url",
        "localhost:4318",
        "http://",
        "http://h:x",
        "file:///tmp/x",
        "http//collector:4318",
    ],
)
def test_endpoints_that_are_not_urls_are_refused(value) -> None:
    with pytest.raises(ConfigError, match=r"OTEL_EXPORTER_OTLP_ENDPOINT=.*expected an http://"):
        build_span_exporters({"OTEL_EXPORTER_OTLP_ENDPOINT": value})


# --- the SDK's chatter stays off the terminal ------------------------------------------------


def test_a_refused_connection_is_one_warning_with_the_reason_and_no_sdk_lines(
    monkeypatch, caplog
) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")  # the SDK exporter reads os.environ
    records, _, _ = spans_through_sink()
    exporters = build_span_exporters({"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"})
    sink = SpanSink(exporters, build_resource({}), retry=FAST)
    with caplog.at_level(logging.INFO):
        sink.export(records)
        assert sink.flush(timeout=3) is False
        assert sink.shutdown(timeout=0.1) == len(records)
    ours = [r for r in caplog.records if r.name.startswith("otel_bridge")]
    failed = [r.getMessage() for r in ours if "export failed" in r.getMessage()]
    assert failed == [
        f"otlp http://127.0.0.1:{port} (http/protobuf): export failed (Connection "
        f"refused); {len(records)} spans queued, retrying with back-off "
        f"(`otel-bridge doctor` checks the set-up)"
    ]
    assert sink.stats.failed >= len(records)  # attempts were made, and counted
    assert not [r for r in caplog.records if not r.name.startswith("otel_bridge")]
    # the same logger, on a thread that is not one of the bridge's exports, is left alone
    logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter").warning("app's")
    assert "app's" in caplog.text


def test_failed_metric_exports_are_counted_not_printed(monkeypatch, tmp_path, caplog) -> None:
    import json
    import os
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    out = tmp_path / "metrics.jsonl"
    pipeline = build_metrics(
        os.environ,
        build_resource({}),
        MetricsOptions(metrics_file=out, export_interval_millis=3_600_000),
    )
    with caplog.at_level(logging.INFO):
        pipeline.provider.force_flush()  # the OTLP export fails, and is counted...
        pipeline.provider.force_flush()
        pipeline.shutdown(timeout=1)
    counted = 0
    for line in out.read_text().splitlines():  # ...as the file says
        for resource in json.loads(line)["resourceMetrics"]:
            for scope in resource["scopeMetrics"]:
                for metric in scope["metrics"]:
                    if metric["name"] == "otel_bridge.export.failures":
                        for point in metric["sum"]["dataPoints"]:
                            labels = {
                                a["key"]: a["value"]["stringValue"] for a in point["attributes"]
                            }
                            assert labels == {"otel_bridge.exporter": "OTLPMetricExporter"}
                            counted = max(counted, int(point["asInt"]))
    assert counted >= 1
    warnings = [r.getMessage() for r in caplog.records if "metrics export failed" in r.getMessage()]
    assert len(warnings) == 1 and "Connection refused" in warnings[0]
    assert not [r for r in caplog.records if not r.name.startswith("otel_bridge")]


def test_an_unreachable_collector_is_said_in_one_line_before_anything_is_sent() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    line = unreachable_collector(env)
    assert line == (
        f"OTLP endpoint http://127.0.0.1:{port} (http/protobuf) refused the "
        f"connection: is the collector running? `otel-bridge doctor` checks the "
        f"set-up"
    )
    assert unreachable_collector({**env, "OTEL_TRACES_EXPORTER": "console"}) is None
    assert unreachable_collector({**env, "OTEL_SDK_DISABLED": "true"}) is None


def test_the_traces_file_gets_the_same_text_from_records_scrubbed_or_encoded_elsewhere() -> None:
    """`replay --jobs` hands the sink spans scrubbed (and encoded) in its workers: the file
    must read as if the sink had done it, and a sink that drops or has other destinations
    refuses what it cannot take."""
    from otel_bridge.export._otlp_json import OtlpJsonFileExporter, encode_record
    from otel_bridge.processors import Scrubber, TraceSampler

    records, _, _ = spans_through_sink()
    scrubbed = Scrubber().records(records)
    resource = build_resource({})
    written = []
    for how in ("export", "scrubbed", "encoded"):
        stream = io.StringIO()
        stream.close = lambda: None  # type: ignore[method-assign]  # read after shutdown
        sink = SpanSink([OtlpJsonFileExporter(stream)], resource, max_batch=3)
        if how == "export":
            queued = sink.export(records)
        elif how == "scrubbed":
            queued = sink.export_scrubbed(scrubbed)
        else:
            queued = sink.export_encoded(
                [r.span_id for r in scrubbed], [encode_record(r) for r in scrubbed]
            )
        assert [span_id for _, span_id in queued] == [r.span_id for r in records]
        assert sink.shutdown() == 0 and sink.stats.exported == len(records)
        written.append(stream.getvalue())
    assert written[0] == written[1] == written[2]
    assert len(written[0].splitlines()) == -(-len(records) // 3)
    memory = InMemorySpanExporter()
    mixed = SpanSink([OtlpJsonFileExporter(io.StringIO()), memory], resource)
    assert mixed.takes_json and not mixed.json_only
    with pytest.raises(ValueError):
        mixed.export_encoded([1], ["{}"])
    mixed.export_scrubbed(scrubbed)
    assert mixed.flush(timeout=5) and len(memory.get_finished_spans()) == len(records)
    nowhere = SpanSink([], resource)
    assert nowhere.export_encoded([7, 8]) == [(1, 7), (2, 8)] and not nowhere.json_only
    sampled = SpanSink([OtlpJsonFileExporter(io.StringIO())], resource, sampler=TraceSampler(0.5))
    with pytest.raises(ValueError):
        sampled.export_scrubbed(scrubbed)


def test_a_last_metrics_export_that_misses_its_deadline_is_no_traceback(monkeypatch) -> None:
    """The SDK's MeterProvider.shutdown raises when a reader missed the deadline ("Didn't get
    to execute, deadline already exceeded", seen with a collector down on a loaded machine):
    raised on the metrics-shutdown thread, it printed a traceback at the stop."""
    import threading

    from otel_bridge.export._metrics import MetricsPipeline

    class Late:
        def shutdown(self, timeout_millis: float = 0) -> None:
            raise Exception("MeterProvider.shutdown failed: deadline already exceeded")

    escaped: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_value))
    closed: list[bool] = []
    pipeline = MetricsPipeline(Late(), None, [lambda: closed.append(True)], None)  # type: ignore[arg-type]
    pipeline.shutdown(timeout=1)
    assert escaped == [] and closed == [True]


def test_the_http_session_reads_the_environment_once_and_keeps_its_proxies(monkeypatch) -> None:
    """requests reads every environment variable twice a request for its proxies (a quarter
    of a live export's CPU); the exporters' session reads them once per endpoint, and still
    takes what they say."""
    import requests.sessions

    from otel_bridge.export._sdk_logs import http_session

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    reads: list[str] = []
    real = requests.sessions.get_environ_proxies

    def counted(url: str, no_proxy: str | None = None) -> dict[str, str]:
        reads.append(url)
        return real(url, no_proxy=no_proxy)

    monkeypatch.setattr(requests.sessions, "get_environ_proxies", counted)
    session = http_session({}, "traces")
    url = "https://collector.example:4318/v1/traces"
    settings = [session.merge_environment_settings(url, {}, None, None, None) for _ in range(3)]
    assert reads == [url]
    assert all(s["proxies"]["https"] == "http://proxy.example:3128" for s in settings)
    settings[0]["proxies"]["https"] = "changed by a caller"  # each call gets its own copy
    again = session.merge_environment_settings(url, {}, None, None, None)
    assert again["proxies"]["https"] == "http://proxy.example:3128"
    internal = "https://internal.example:4318/v1/traces"
    assert (
        "https" not in session.merge_environment_settings(internal, {}, None, None, None)["proxies"]
    )
    assert reads == [url, internal]
    session.close()
