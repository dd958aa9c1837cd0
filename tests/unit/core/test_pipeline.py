"""The one pipeline builder (otel_bridge/app/_pipeline.py) that replay, run and LiveBridge share."""

from __future__ import annotations

import socket
import time

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_bridge.app._pipeline import CollectorUnreachable, Pipeline, PipelineConfig
from otel_bridge.assembler import AssemblerConfig
from otel_bridge.export import MetricsOptions
from otel_bridge.processors import ScrubberConfig
from tests.builder import Log


def _refusing_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _one_task() -> Log:
    log = Log.asked()
    log.simple_turn("0", "u1", [("c1", "bash")])
    return log


@pytest.mark.parametrize(
    "bad",
    [
        {"sample_ratio": 1.5},
        {"sample_ratio": -0.1},
        {"traces_file_mode": "x"},
        {"console_format": "pretty"},
        {"queue_spans": 0},
        {"collector_check": "maybe"},
    ],
)
def test_a_bad_config_is_refused_when_made(bad) -> None:
    with pytest.raises(ValueError):
        PipelineConfig(**bad)


def test_fail_check_raises_before_the_traces_file_is_touched(tmp_path) -> None:
    traces = tmp_path / "traces.jsonl"
    traces.write_text("kept\n")
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{_refusing_port()}"}
    config = PipelineConfig(traces_file=traces, collector_check="fail")
    with pytest.raises(CollectorUnreachable, match="is the collector running"):
        Pipeline(config, environ)
    assert traces.read_text() == "kept\n"  # "w" would have truncated it


def test_warn_check_builds_anyway_and_says_why(tmp_path) -> None:
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{_refusing_port()}"}
    pipeline = Pipeline(PipelineConfig(collector_check="warn"), environ)
    try:
        assert pipeline.unreachable is not None
        assert "is the collector running" in pipeline.unreachable
        assert pipeline.sink.destinations == 1  # the OTLP exporter, waiting for it
    finally:
        pipeline.shutdown(1.0)


class _SlowExporter(InMemorySpanExporter):
    """Takes a moment over each batch, as a collector does: spans are still on their way when
    shutdown starts."""

    def export(self, spans):
        time.sleep(0.3)
        return super().export(spans)


def test_the_last_metrics_export_counts_every_span_delivered(tmp_path) -> None:
    """Spans are shut down before metrics: the metrics file's last export counts every span
    the exporter got, even those delivered during shutdown."""
    metrics = tmp_path / "metrics.jsonl"
    config = PipelineConfig(
        assembler=AssemblerConfig(capture_content=False),
        scrubber=ScrubberConfig(),
        metrics=MetricsOptions(metrics_file=metrics, prometheus_port=None),
        block_when_full=True,
    )
    exporter = _SlowExporter()
    pipeline = Pipeline(config, {}, span_exporters=[exporter])
    log = _one_task()
    records = pipeline.assembler.feed("s", log.events()) + pipeline.assembler.end_stream("s")
    pipeline.sink.export(records)
    assert pipeline.shutdown(5.0) == 0
    delivered = len(exporter.get_finished_spans())
    assert delivered == len(records) > 0
    last = json_format.Parse(metrics.read_text().splitlines()[-1], ExportMetricsServiceRequest())
    exported = [
        point.as_int
        for resource_metrics in last.resource_metrics
        for scope_metrics in resource_metrics.scope_metrics
        for metric in scope_metrics.metrics
        if metric.name == "otel_bridge.spans.exported"
        for point in metric.sum.data_points
    ]
    assert exported == [delivered]


def test_sdk_disabled_exports_nothing_but_given_exporters_still_get_spans(tmp_path) -> None:
    """OTEL_SDK_DISABLED turns off the exporters the environment would choose; exporters an
    app passes itself (LiveBridge) are its own call."""
    environ = {"OTEL_SDK_DISABLED": "true"}
    traces = tmp_path / "traces.jsonl"
    chosen = Pipeline(PipelineConfig(traces_file=traces), environ)
    assert chosen.disabled and chosen.sink.destinations == 0
    chosen.shutdown(1.0)
    assert not traces.exists()

    memory = InMemorySpanExporter()
    given = Pipeline(PipelineConfig(), environ, span_exporters=[memory])
    log = _one_task()
    records = given.assembler.feed("s", log.events()) + given.assembler.end_stream("s")
    given.sink.export(records)
    assert given.shutdown(5.0) == 0
    assert sorted(s.name for s in memory.get_finished_spans()) == sorted(r.name for r in records)


def test_no_metrics_pipeline_unless_asked() -> None:
    pipeline = Pipeline(PipelineConfig(), {"OTEL_TRACES_EXPORTER": "none"})
    try:
        assert pipeline.metrics is None and pipeline.recorder is None
    finally:
        pipeline.shutdown(1.0)
