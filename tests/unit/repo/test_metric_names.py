"""Metric names live in one place: `semconv.METRIC_*`, each defined once in the catalogue. No
other module spells one, and recording a name the catalogue lacks is an error in tests (a
counted, logged drop in production, never a crash)."""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

import pytest

from otel_bridge import semconv as sc
from otel_bridge.assembler import SessionAssembler
from otel_bridge.assembler._config import AssemblerStats
from otel_bridge.assembler._meter import SessionMeter
from otel_bridge.assembler._state import SessionFacts
from otel_bridge.metrics import _recorder as _metrics
from otel_bridge.metrics._recorder import CATALOGUE, UnknownMetric, known_metric, unknown_metrics
from tests import paths
from tests.builder import Log
from tests.recorder import Recorder

PACKAGE = paths.PACKAGE
#: Where metric names are spelled: the names, and the catalogue that defines them.
HOMES = {"semconv.py", "metrics/_catalogue.py"}
#: What looks like a metric's name where a name is recorded (`recorder.add("x.y", ...)`).
LOOKS_LIKE_A_NAME = re.compile(r"(copilot|gen_ai|otel_bridge)\.[a-z_.]+")
RECORDING = {"add", "add_value", "record", "gauge"}


def spelled_names(path: Path, names: set[str]) -> set[str]:
    """The metric names `path` spells: a string that is a catalogue name, or a string that
    looks like one given as the name of a recording call."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and node.value in names:
            found.add(node.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in RECORDING
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and LOOKS_LIKE_A_NAME.fullmatch(node.args[0].value)
        ):
            found.add(node.args[0].value)
    return found


def test_the_names_are_semconvs_and_the_catalogues_exactly() -> None:
    named = {v for k, v in vars(sc).items() if k.startswith("METRIC_")}
    catalogued = [spec.name for spec in CATALOGUE]
    assert len(catalogued) == len(set(catalogued)), "a metric defined twice"
    assert named == set(catalogued)


def test_the_finder_finds_a_spelled_name(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('N = "copilot.tasks"\nrecorder.add("otel_bridge.made.up", 1, {}, "")\n')
    assert spelled_names(module, {"copilot.tasks"}) == {"copilot.tasks", "otel_bridge.made.up"}


def test_no_module_spells_a_metric_name_but_semconv_and_the_catalogue() -> None:
    names = {spec.name for spec in CATALOGUE}
    spelled = {
        (str(path.relative_to(PACKAGE)), name)
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in HOMES
        for name in spelled_names(path, names)
    }
    assert spelled == set(), "use semconv.METRIC_* (the catalogue's names)"


def meter(recorder: Recorder | None = None) -> SessionMeter:
    return SessionMeter(recorder or Recorder(), SessionFacts("s"), AssemblerStats())


def test_recording_a_name_the_catalogue_lacks_raises_in_tests() -> None:
    assert _metrics.STRICT  # tests/conftest.py
    with pytest.raises(UnknownMetric):
        meter().add(sc.MetricName("copilot.made_up"))
    with pytest.raises(UnknownMetric):
        meter().record(sc.MetricName("copilot.made_up"), 1.0, {})


def test_a_handler_recording_an_unknown_name_fails_the_test_not_only_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The session turns a handler's exception into a counted skip; not this one."""
    monkeypatch.setattr(sc, "METRIC_TURNS", sc.MetricName("copilot.made_up"))
    log = Log.asked()
    log.turn("0")
    session = SessionAssembler("s", metrics=Recorder())  # type: ignore[arg-type]
    with pytest.raises(UnknownMetric):
        for event in log.events():
            session.feed(event)


def test_in_production_an_unknown_name_is_dropped_counted_and_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_metrics, "STRICT", False)
    monkeypatch.setattr(_metrics, "_unknown", {})
    recorder = Recorder()
    with caplog.at_level(logging.ERROR, logger="otel_bridge.metrics._recorder"):
        for _ in range(3):
            meter(recorder).add(sc.MetricName("copilot.made_up"))
        meter(recorder).add(sc.METRIC_TURNS)
    failed = [p[3] for p in recorder.points if p[1] == sc.METRIC_EVENTS_FAILED]
    assert failed == [{sc.OTEL_BRIDGE_STEP: sc.STEP_METRIC}] * 3
    assert [p[1] for p in recorder.points if p[1] != sc.METRIC_EVENTS_FAILED] == [sc.METRIC_TURNS]
    assert unknown_metrics() == {"copilot.made_up": 3}
    said = [r for r in caplog.records if "copilot.made_up" in r.getMessage()]
    assert len(said) == 1
    assert known_metric(sc.METRIC_TASKS)


def test_the_sdk_recorder_asks_the_catalogue_of_a_name_it_has_no_instrument_for() -> None:
    """Daemon and sink counts reach the SDK's recorder without the assembler's meter: a name
    it has no instrument for raises in tests too, and a known one is recorded."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from otel_bridge.export import OtelMetricsRecorder

    reader = InMemoryMetricReader()
    recorder = OtelMetricsRecorder(MeterProvider(metric_readers=[reader]))
    with pytest.raises(UnknownMetric):
        recorder.add("copilot.made_up", 1, {}, "")
    with pytest.raises(UnknownMetric):
        recorder.record("copilot.made_up", 1.0, {}, "")
    recorder.add(sc.METRIC_SPANS_EXPORTED, 2, {}, "")
    data = reader.get_metrics_data()
    assert data is not None
    points = [
        point.value
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == sc.METRIC_SPANS_EXPORTED
        for point in metric.data.data_points
    ]
    assert points == [2]
