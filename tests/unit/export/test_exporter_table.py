"""The exporter table is the one place an exporter is added: a row registered there (and
nowhere else) is chosen by OTEL_TRACES_EXPORTER, built, labelled, sent spans by a replay,
checked by doctor, and named wherever the accepted names are listed."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_bridge import semconv
from otel_bridge._exceptions import ConfigError
from otel_bridge.app import ReplayOptions, SigtermStops, replay
from otel_bridge.app._doctor import diagnose
from otel_bridge.app._pipeline import PipelineConfig
from otel_bridge.cli._parser import build_parser
from otel_bridge.export import (
    TRACE_EXPORTERS,
    MetricsOptions,
    build_metrics,
    build_resource,
    build_span_exporters,
    trace_exporter_choices,
)
from otel_bridge.export._exporters import exporter_label
from otel_bridge.export._metrics import _METRIC_ROWS, METRIC_READERS
from otel_bridge.export._table import _TRACE_ROWS, Finding, Looked, SpanExporterRow, SpanOptions
from tests.unit.sources.test_tail import two_messages


@pytest.fixture
def memory(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """A throwaway exporter named "probe", registered in the table only."""
    made = InMemorySpanExporter()

    def build(environ: Mapping[str, str], options: SpanOptions) -> tuple[SpanExporter, str]:
        return made, f"probe {environ.get('PROBE_WHERE', 'memory')}"

    def check(environ: Mapping[str, str], looked: Looked) -> Finding:
        return Finding(True, "exporter probe: spans kept in memory")

    monkeypatch.setitem(_TRACE_ROWS, "probe", SpanExporterRow(build, check))
    return made


def test_a_row_of_the_table_is_chosen_built_and_labelled(memory: InMemorySpanExporter) -> None:
    environ = {"OTEL_TRACES_EXPORTER": "probe,console", "PROBE_WHERE": "here"}
    probe, console = build_span_exporters(environ)
    assert probe is memory
    assert exporter_label(probe) == "probe here"
    assert exporter_label(console) == "console"


def test_a_replay_sends_its_spans_to_a_row_of_the_table(
    memory: InMemorySpanExporter, tmp_path
) -> None:
    log = tmp_path / "s1" / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(two_messages())
    config = PipelineConfig(block_when_full=True)
    with SigtermStops() as sigterm:
        options = ReplayOptions(paths=(log,), progress=False)
        assert replay(config, options, {"OTEL_TRACES_EXPORTER": "probe"}, sigterm) == 0
    assert memory.get_finished_spans()


def test_doctor_checks_a_row_of_the_table_with_its_own_check(
    memory: InMemorySpanExporter, tmp_path
) -> None:
    checks = diagnose([tmp_path], {"OTEL_TRACES_EXPORTER": "probe"}, None)
    assert [c.message for c in checks if "probe" in c.message] == [
        "exporter probe: spans kept in memory"
    ]
    assert all(c.ok for c in checks)


def test_the_accepted_names_are_the_table_s_wherever_they_are_listed(
    memory: InMemorySpanExporter, tmp_path
) -> None:
    assert list(TRACE_EXPORTERS)[-1] == "probe"
    choices = trace_exporter_choices()
    assert choices.startswith("otlp, console, ") and choices.endswith(", probe or none")
    with pytest.raises(ConfigError, match=f"use {re.escape(choices)} \\(comma-separated\\)"):
        build_span_exporters({"OTEL_TRACES_EXPORTER": "otlpp"})
    (unknown,) = [
        c for c in diagnose([tmp_path], {"OTEL_TRACES_EXPORTER": "otlpp"}, None) if not c.ok
    ]
    assert unknown.message == f"exporter 'otlpp' is not supported: use {choices}"
    assert choices in " ".join(build_parser().format_help().split())


def test_without_the_row_the_name_is_refused() -> None:
    assert "probe" not in TRACE_EXPORTERS
    choices = trace_exporter_choices()
    assert choices.startswith("otlp, console") and choices.endswith(" or none")
    with pytest.raises(ConfigError, match=f"'probe' is not supported: use {re.escape(choices)}"):
        build_span_exporters({"OTEL_TRACES_EXPORTER": "probe"})


def test_a_row_of_the_metric_readers_is_chosen_and_built(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = InMemoryMetricReader()

    def add(built, environ: Mapping[str, str], options: MetricsOptions, disabled: bool) -> None:
        built.readers.append(reader)

    monkeypatch.setitem(_METRIC_ROWS, "probe", add)
    environ = {"OTEL_METRICS_EXPORTER": "probe"}
    pipeline = build_metrics(environ, build_resource({}), MetricsOptions())
    try:
        assert pipeline.recorder is not None
        pipeline.recorder.add(
            semconv.METRIC_EXPORT_FAILURES, 1, {semconv.OTEL_BRIDGE_EXPORTER: "probe"}, ""
        )
        data = reader.get_metrics_data()
        assert data is not None
        names = [
            metric.name
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        ]
        assert semconv.METRIC_EXPORT_FAILURES in names
        choices = ", ".join(METRIC_READERS)
        assert choices.endswith(", probe")
        with pytest.raises(ConfigError, match=f"use {choices} or none"):
            build_metrics({"OTEL_METRICS_EXPORTER": "otlpp"}, build_resource({}), MetricsOptions())
    finally:
        pipeline.shutdown(timeout=5)
