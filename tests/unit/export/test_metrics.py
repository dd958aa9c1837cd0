"""Metrics from the same events as the spans: checked against the raw logs, not the code."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_bridge import Assembler
from otel_bridge.cli import main
from otel_bridge.export import OtelMetricsRecorder
from otel_bridge.export._common import DEFAULT_MAX_SESSION_LABEL_VALUES
from otel_bridge.export._metric_recorder import DEFAULT_MAX_LABEL_VALUES, OTHER_LABEL_VALUE
from otel_bridge.metrics._recorder import CATALOGUE, Instrument, prometheus_name
from tests import paths, spantree
from tests.builder import Log
from tests.recorder import Recorder

FIXTURES = paths.FIXTURES
LOGS = sorted(FIXTURES.glob("*/events.jsonl"))


def observe(path: Path) -> Recorder:
    recorder = Recorder()
    spantree.assemble(path, "s", metrics=recorder)
    return recorder


def raw(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def expected_outcomes(events: list[dict]) -> Counter:
    """Task outcomes as the issue defines them, computed from the raw log."""
    outcomes: Counter = Counter()
    current = None
    for event in events:
        main = "agentId" not in event
        kind, data = event["type"], event["data"]
        if (
            kind == "user.message"
            and main
            and not data.get("isAutopilotContinuation")
            and data.get("delivery") != "steering"  # joins the running task
        ):
            if current is not None:
                outcomes[current] += 1
            current = "no_signal"
        elif current is None:
            continue
        elif kind == "abort" and main:
            current = "aborted"
        elif kind == "session.error" and main:
            current = "error"
        elif kind == "session.task_complete" and main and current == "no_signal":
            current = "failed" if data.get("success") is False else "completed"
    if current is not None:
        outcomes[current] += 1
    return outcomes


def expected_limit_stops(events: list[dict]) -> int:
    """Autopilot tasks the CLI stopped nudging: no task_complete, abort or error, and the CLI
    shut down (or a new task began) right after a main-agent turn that asked for no tool."""
    stops = 0
    autopilot = open_task = asked_for_tools = after_turn_end = False
    for event in events:
        kind, data, main = event["type"], event["data"], "agentId" not in event
        if kind == "session.mode_changed":
            autopilot = data.get("newMode") == "autopilot"
        elif kind in ("session.start", "session.resume"):
            autopilot = open_task = False
        elif kind == "user.message" and main and data.get("isAutopilotContinuation"):
            after_turn_end = False
        elif kind in ("user.message", "session.shutdown") and main:
            stops += open_task and autopilot and after_turn_end and not asked_for_tools
            open_task = kind == "user.message"
            autopilot = autopilot or data.get("agentMode") == "autopilot"
            after_turn_end = False
        elif kind in ("session.task_complete", "abort", "session.error") and main:
            open_task = False
        elif kind == "assistant.message" and main:
            asked_for_tools = bool(data.get("toolRequests"))
        elif kind == "assistant.turn_end" and main:
            after_turn_end = True
        elif kind == "assistant.turn_start" and main:
            after_turn_end = False
    return stops


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.parent.name)
def test_metrics_match_the_raw_log(path: Path) -> None:
    events = raw(path)
    recorder = observe(path)
    top_level = [
        e
        for e in events
        if e["type"] == "user.message"
        and "agentId" not in e
        and not e["data"].get("isAutopilotContinuation")
        and e["data"].get("delivery") != "steering"
    ]
    steering = [
        e
        for e in events
        if e["type"] == "user.message"
        and "agentId" not in e
        and e["data"].get("delivery") == "steering"
    ]
    main_turns = [e for e in events if e["type"] == "assistant.turn_start" and "agentId" not in e]
    turns_per_message = recorder.values("copilot.turns_per_message")
    assert len(turns_per_message) == len(top_level)
    assert sum(turns_per_message) == len(main_turns)
    tasks = Counter()
    for _, name, value, attributes, _ in recorder.points:
        if name == "copilot.tasks":
            tasks[attributes["copilot.task.outcome"]] += value
    assert tasks == expected_outcomes(events)
    # tool calls by outcome
    completes = {
        e["data"]["toolCallId"]: e["data"]["success"]
        for e in events
        if e["type"] == "tool.execution_complete"
    }
    starts = [e["data"]["toolCallId"] for e in events if e["type"] == "tool.execution_start"]
    calls = Counter()
    for _, name, value, attributes, _ in recorder.points:
        if name == "copilot.tool.calls":
            calls[attributes["copilot.tool.outcome"]] += value
    assert calls["success"] == sum(1 for c in starts if completes.get(c) is True)
    assert calls["error"] == sum(1 for c in starts if completes.get(c) is False)
    assert calls["incomplete"] + calls["aborted"] == sum(1 for c in starts if c not in completes)
    usage = [e["data"]["usage"] for e in events if e["type"] == "session.usage_record"]
    for metric, key in (
        ("gen_ai.client.inference.operation.input_tokens", "inputTokens"),
        ("gen_ai.client.inference.operation.output_tokens", "outputTokens"),
        ("gen_ai.client.inference.usage.input_tokens", "inputTokens"),
        ("gen_ai.client.inference.usage.output_tokens", "outputTokens"),
    ):
        assert sum(recorder.values(metric)) == sum(u[key] for u in usage), metric
    assert not recorder.values("gen_ai.client.token.usage")  # the previous name: recorder's
    assert len(recorder.values("copilot.user_messages", copilot__continuation=False)) == len(
        top_level
    ) + len(steering)
    assert len(recorder.values("copilot.user_messages", copilot__delivery="steering")) == len(
        steering
    )
    assert len(recorder.values("copilot.user_messages", copilot__delivery="queued")) == sum(
        1 for e in top_level if e["data"].get("delivery") == "queued"
    )
    assert len(recorder.values("copilot.aborts")) == sum(1 for e in events if e["type"] == "abort")
    assert len(recorder.values("copilot.session.errors")) == sum(
        1 for e in events if e["type"] == "session.error"
    )
    skills = Counter(
        e["data"]["name"] for e in events if e["type"] in ("skill.invoked", "skill.invoked_ref")
    )
    counted = Counter()
    for _, name, value, attributes, _ in recorder.points:
        if name == "copilot.skills.invoked":
            counted[attributes["copilot.skill.name"]] += value
    assert counted == skills
    assert len(recorder.values("copilot.autopilot.limit_stops")) == expected_limit_stops(events)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.parent.name)
def test_no_unbounded_value_is_a_label(path: Path) -> None:
    events = raw(path)
    forbidden = {e["data"]["sessionId"] for e in events if e["type"] == "session.start"}
    forbidden |= {e["id"] for e in events}
    forbidden |= {e["data"].get("content") for e in events if e["type"] == "user.message"}
    forbidden |= {e["data"].get("toolCallId") for e in events if "toolCallId" in e["data"]}
    forbidden.discard(None)
    specs = {s.name: s for s in CATALOGUE}
    for _, name, _, attributes, _ in observe(path).points:
        assert name in specs, name
        assert set(attributes) <= set(specs[name].attributes), (name, attributes)
        assert not forbidden & {str(v) for v in attributes.values()}, name


def test_unknown_event_types_are_counted_with_a_bounded_label() -> None:
    recorder = Recorder()
    assembler = Assembler(metrics=recorder)
    from otel_bridge import Event

    events = [Event(f"hostile.{i}", f"id{i}", 1_000 + i, {}) for i in range(200)]
    assembler.feed("s", events)
    labels = {
        a["copilot.event.type"]
        for _, n, _, a, _ in recorder.points
        if n == "otel_bridge.events.unknown"
    }
    assert len(recorder.values("otel_bridge.events.unknown")) == 200
    assert len(labels) <= 51 and "other" in labels


def test_replay_metrics_file_holds_the_histogram_the_issue_asks_for(tmp_path) -> None:
    out = tmp_path / "metrics.jsonl"
    assert main(["replay", str(FIXTURES), "--metrics-file", str(out), "--no-progress"]) == 0
    request = json_format.Parse(out.read_text().splitlines()[-1], ExportMetricsServiceRequest())
    points = {}
    for resource_metrics in request.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                points[metric.name] = metric
    histogram = points["copilot.turns_per_message"].histogram
    count = sum(p.count for p in histogram.data_points)
    total = sum(p.sum for p in histogram.data_points)
    events = [e for path in LOGS for e in raw(path)]
    assert count == sum(
        1
        for e in events
        if e["type"] == "user.message"
        and "agentId" not in e
        and not e["data"].get("isAutopilotContinuation")
        and e["data"].get("delivery") != "steering"
    )
    assert total == sum(
        1 for e in events if e["type"] == "assistant.turn_start" and "agentId" not in e
    )
    assert points["otel_bridge.events.read"].sum.data_points[0].as_int == len(events)


def test_replay_writes_no_metrics_unless_asked(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert main(["replay", str(FIXTURES / "subagent"), "--no-progress"]) == 0
    assert capsys.readouterr().out == ""


def test_stats_json_matches_the_raw_logs(capsys) -> None:
    assert main(["stats", str(FIXTURES), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    events = [e for path in LOGS for e in raw(path)]
    total = report["total"]
    top_level = sum(
        1
        for e in events
        if e["type"] == "user.message"
        and "agentId" not in e
        and not e["data"].get("isAutopilotContinuation")
        and e["data"].get("delivery") != "steering"
    )
    steering = sum(
        1 for e in events if e["type"] == "user.message" and e["data"].get("delivery") == "steering"
    )
    assert total["tasks"] == top_level
    assert total["user_messages"] == top_level + steering  # a steering message is one too
    assert total["turns"] == sum(1 for e in events if e["type"] == "assistant.turn_start")
    assert total["tool_calls"] == sum(1 for e in events if e["type"] == "tool.execution_start")
    assert total["tool_failures"] == sum(
        1 for e in events if e["type"] == "tool.execution_complete" and not e["data"]["success"]
    )
    expected = sum((expected_outcomes(raw(p)) for p in LOGS), Counter())
    assert {k: v for k, v in total["outcomes"].items() if v} == dict(expected)
    assert len(report["sessions"]) == len(LOGS)


def test_stats_table_has_a_row_per_session_and_a_total(capsys) -> None:
    assert main(["stats", str(FIXTURES / "subagent"), str(FIXTURES / "abort")]) == 0
    sessions, context = capsys.readouterr().out.split("\n\n")  # the context table follows
    lines = sessions.splitlines()
    assert lines[-1].startswith("total")
    assert sum(1 for line in lines if line[:8].count("-") == 0 and line[8:9] == "-") == 2
    assert context.startswith("context window")


def test_prometheus_names_follow_the_exporter_rules() -> None:
    names = {s.name: prometheus_name(s) for s in CATALOGUE}
    assert names["copilot.tasks"] == "copilot_tasks_total"
    assert names["copilot.turns_per_message"] == "copilot_turns_per_message"
    assert names["gen_ai.client.inference.duration"] == "gen_ai_client_inference_duration_seconds"
    assert (
        names["gen_ai.client.inference.usage.input_tokens"]
        == "gen_ai_client_inference_usage_input_tokens_total"
    )
    assert all(
        n.endswith("_total") == (s.instrument is Instrument.COUNTER)
        for s in CATALOGUE
        for n in [prometheus_name(s)]
    )


COMMON_GENAI_LABELS = {"gen_ai.operation.name", "gen_ai.provider.name"}


def test_docs_define_every_metric() -> None:
    """docs/metrics.md has a section per metric naming its Prometheus name and a PromQL example
    that uses it."""
    text = (paths.REPO / "docs" / "metrics.md").read_text()
    sections = text.split("\n### ")[1:]
    documented = {section.split("`")[1]: section for section in sections}
    assert set(documented) == {spec.name for spec in CATALOGUE}
    for spec in CATALOGUE:
        section = documented[spec.name]
        assert f"`{prometheus_name(spec)}`" in section, spec.name
        assert "```promql" in section and prometheus_name(spec) in section.split("```promql")[1]
        assert f"({spec.instrument.value}, `{spec.unit}`)" in section, spec.name
        for attribute in spec.attributes:
            # the two GenAI labels every GenAI metric has are named once, above the group
            where = text if attribute in COMMON_GENAI_LABELS else section
            assert attribute.replace(".", "_") in where, (spec.name, attribute)


def test_every_metric_name_in_semconv_is_in_the_catalogue() -> None:
    """The assembler takes metric names from semconv; each must be a catalogue entry."""
    from otel_bridge import semconv

    names = {value for key, value in vars(semconv).items() if key.startswith("METRIC_")}
    assert names and names <= {spec.name for spec in CATALOGUE}


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.parent.name)
def test_metrics_of_finished_spans_agree_with_the_spans(path: Path) -> None:
    """Durations and counts by outcome are computed from the span records (as the Collector's
    spanmetrics connector does): one observation per span, with its duration."""
    recorder = Recorder()
    spans = spantree.assemble(path, "s", metrics=recorder)

    def durations(prefix: str) -> list[float]:
        return sorted((s.end_ns - s.start_ns) / 1e9 for s in spans if s.name.startswith(prefix))

    assert sorted(recorder.values("gen_ai.execute_tool.duration")) == durations("execute_tool")
    assert sorted(recorder.values("gen_ai.invoke_agent.duration")) == durations("invoke_agent")
    assert len(recorder.values("copilot.tool.calls")) == len(durations("execute_tool"))
    roots = [s for s in spans if s.parent_span_id is None]
    assert sorted(recorder.values("copilot.turns_per_message")) == sorted(
        s.attributes["copilot.turns"] for s in roots
    )


# --- label values are capped at the recorder over the SDK -----------------------------------


def sdk_points(reader, *, zeros: bool = False) -> dict[str, list[tuple[dict, float]]]:
    """Metric name -> (attributes, value) of each point: a counter's sum, a histogram's count;
    without the points still at 0 (the series that exist from the start) unless `zeros`."""
    found: dict[str, list[tuple[dict, float]]] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                for point in metric.data.data_points:
                    value = getattr(point, "value", None)
                    value = point.count if value is None else value
                    if value or zeros:
                        found.setdefault(metric.name, []).append((dict(point.attributes), value))
    return found


def many_tools_log(count: int, first: int = 0, session: str = "sess-1") -> list:
    log = Log.asked(session)
    for turn in range(first, first + count, 100):
        tools = [(f"c{i}", f"mcp_tool_{i}") for i in range(turn, min(turn + 100, first + count))]
        log.simple_turn(str(turn), f"u{turn}", tools)
    return log.events()


def test_tool_names_past_the_cap_are_recorded_as_other_counted_and_said_once(caplog) -> None:
    """Logs naming 600 tools, 50 each (a session's share): 500 keep their names, the rest
    are one `other` series, nothing is lost from the counts, the capping is counted and logged
    once per metric."""
    reader = InMemoryMetricReader()
    recorder = OtelMetricsRecorder(MeterProvider(metric_readers=[reader]))
    assembler = Assembler(metrics=recorder)
    with caplog.at_level(logging.WARNING):
        for part in range(12):
            stream = f"s{part}"
            assembler.feed(stream, many_tools_log(50, part * 50, f"sess-{part}"))
            assembler.end_stream(stream)
    points = sdk_points(reader)
    calls = points["copilot.tool.calls"]
    names = {attributes["gen_ai.tool.name"] for attributes, _ in calls}
    assert len(names) == DEFAULT_MAX_LABEL_VALUES + 1 == 501
    assert {f"mcp_tool_{i}" for i in range(500)} < names and OTHER_LABEL_VALUE in names
    assert sum(v for _, v in calls) == 600
    assert sum(v for a, v in calls if a["gen_ai.tool.name"] == OTHER_LABEL_VALUE) == 100
    durations = points["gen_ai.execute_tool.duration"]
    assert len({a["gen_ai.tool.name"] for a, _ in durations}) == 501
    assert sum(v for _, v in durations) == 600
    assert sorted(
        (a["otel_bridge.metric"], a["otel_bridge.label"], v)
        for a, v in points["otel_bridge.labels.capped"]
    ) == [
        ("copilot.tool.calls", "gen_ai.tool.name", 100),
        ("gen_ai.execute_tool.duration", "gen_ai.tool.name", 100),
    ]
    warnings = [r.getMessage() for r in caplog.records if "distinct values" in r.getMessage()]
    assert len(warnings) == 2  # once per metric, not per value
    assert all("mcp_tool_5" not in message for message in warnings)  # no value from the log


def test_one_hostile_session_cannot_take_the_label_cap_from_the_others() -> None:
    """The cap was first come for the life of the process: one log naming 600 tools first
    sent every later real tool name to `other` until a restart. A session now brings at most
    DEFAULT_MAX_SESSION_LABEL_VALUES new values of a label; the others keep theirs."""
    reader = InMemoryMetricReader()
    recorder = OtelMetricsRecorder(MeterProvider(metric_readers=[reader]))
    assembler = Assembler(metrics=recorder)
    assembler.feed("hostile", many_tools_log(600, 0, "hostile"))
    assembler.end_stream("hostile")
    real = Log.asked("real")
    real.simple_turn("0", "u0", [("r1", "bash"), ("r2", "view")])
    assembler.feed("real", real.events())
    assembler.end_stream("real")
    calls = sdk_points(reader)["copilot.tool.calls"]
    names = {attributes["gen_ai.tool.name"] for attributes, _ in calls}
    assert {"bash", "view"} <= names
    assert len(names - {"bash", "view", OTHER_LABEL_VALUE}) == DEFAULT_MAX_SESSION_LABEL_VALUES
    assert sum(v for a, v in calls if a["gen_ai.tool.name"] == OTHER_LABEL_VALUE) == 550
    assert sum(v for _, v in calls) == 602  # nothing lost from the counts


def test_the_bridge_s_own_observations_are_held_to_the_cap_only() -> None:
    reader = InMemoryMetricReader()
    recorder = OtelMetricsRecorder(
        MeterProvider(metric_readers=[reader]), max_label_values=4, max_session_values=2
    )
    for name in ["a", "b", "c", "d", "e"]:
        recorder.add("copilot.tool.calls", 1, {"gen_ai.tool.name": name}, "")
    counts = {a["gen_ai.tool.name"]: v for a, v in sdk_points(reader)["copilot.tool.calls"]}
    assert counts == {"a": 1, "b": 1, "c": 1, "d": 1, OTHER_LABEL_VALUE: 1}


def test_a_value_seen_before_the_cap_keeps_its_own_series() -> None:
    reader = InMemoryMetricReader()
    recorder = OtelMetricsRecorder(MeterProvider(metric_readers=[reader]), max_label_values=2)
    for name in ["a", "b", "c", "a", "d", "b"]:
        recorder.add("copilot.tool.calls", 1, {"gen_ai.tool.name": name}, "s")
    recorder.add("copilot.tasks", 1, {"copilot.task.outcome": "completed"}, "s")
    counts = {a["gen_ai.tool.name"]: v for a, v in sdk_points(reader)["copilot.tool.calls"]}
    assert counts == {"a": 2, "b": 2, OTHER_LABEL_VALUE: 2}
    # each metric and label has its own fill
    assert sdk_points(reader)["copilot.tasks"] == [({"copilot.task.outcome": "completed"}, 1)]


def test_the_counters_dashboards_divide_by_exist_at_0_from_the_start() -> None:
    """A fresh bridge: the completion rate and the tool error rate divide by copilot.tasks and
    copilot.tool.calls, which showed "No data" until a task ended. Their label sets the bridge
    knows (outcome and mode, tool outcome and agent type) are there at 0; those that come from
    logs (a tool's name, a repository) are not."""
    reader = InMemoryMetricReader()
    OtelMetricsRecorder(MeterProvider(metric_readers=[reader]))
    points = sdk_points(reader, zeros=True)
    tasks = {(a["copilot.task.outcome"], a["copilot.mode"]) for a, v in points["copilot.tasks"]}
    assert tasks == {
        (outcome, mode)
        for outcome in ("completed", "failed", "error", "aborted", "no_signal")
        for mode in ("interactive", "plan", "autopilot")
    }
    calls = {tuple(sorted(a.items())) for a, _ in points["copilot.tool.calls"]}
    assert len(calls) == 8 and all(len(labels) == 2 for labels in calls)
    assert all(v == 0 for name in ("copilot.tasks", "copilot.tool.calls") for _, v in points[name])
    assert points["otel_bridge.spans.exported"] == [({}, 0)]  # as before, without labels


def test_counts_reach_the_sdk_once_a_series_a_collection_and_none_is_lost(monkeypatch) -> None:
    """An event read is counted at every read of a live log: the recorder sums counts by
    series and hands them to the SDK at each collection (one measurement a series, not one an
    observation, each some 10 microseconds of the SDK's), to every reader, from any thread."""
    import threading

    from opentelemetry.sdk.metrics._internal.instrument import Counter as SdkCounter

    readers = [InMemoryMetricReader(), InMemoryMetricReader()]
    recorder = OtelMetricsRecorder(MeterProvider(metric_readers=readers))
    sdk_adds: list[float] = []
    real_add = SdkCounter.add

    def counted(self, amount, attributes=None, *args, **kwargs):
        sdk_adds.append(amount)
        return real_add(self, amount, attributes, *args, **kwargs)

    monkeypatch.setattr(SdkCounter, "add", counted)
    name = "otel_bridge.events.read"

    def count(times: int) -> None:
        for _ in range(times):
            recorder.add(name, 2, {}, "")

    threads = [threading.Thread(target=count, args=(5000,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    collected = [sdk_points(readers[1]).get(name, [({}, 0)])[0][1] for _ in range(20)]
    for thread in threads:
        thread.join()
    count(3)
    assert sdk_points(readers[0])[name] == [({}, 20_006)]
    assert sdk_points(readers[1])[name] == [({}, 20_006)]
    assert collected == sorted(collected)  # cumulative, never a count twice
    assert len(sdk_adds) <= 22 and sum(sdk_adds) == 20_006


def test_histogram_values_reach_the_sdk_at_collection_and_are_held_in_bounds(
    monkeypatch,
) -> None:
    """A value recorded at each event read is held and handed to the SDK at the next
    collection, in one loop (the SDK's path for one value, taken cold after every line `run`
    waits for, costs three times as much); a bridge nobody collects from holds a bounded
    number."""
    from opentelemetry.sdk.metrics._internal.instrument import Histogram as SdkHistogram

    from otel_bridge.export import _metric_recorder

    reader = InMemoryMetricReader()
    recorder = OtelMetricsRecorder(MeterProvider(metric_readers=[reader]))
    sdk_records: list[float] = []
    real_record = SdkHistogram.record

    def counted(self, amount, attributes=None, *args, **kwargs):
        sdk_records.append(amount)
        return real_record(self, amount, attributes, *args, **kwargs)

    monkeypatch.setattr(SdkHistogram, "record", counted)
    name = "otel_bridge.event.lag"
    for value in (0.01, 0.02, 0.5):
        recorder.record(name, value, {}, "")
    assert sdk_records == []  # held until a reader collects
    data = reader.get_metrics_data()
    (point,) = [
        p
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == name
        for p in m.data.data_points
    ]
    assert (point.count, round(point.sum, 6), point.max) == (3, 0.53, 0.5)
    assert sdk_records == [0.01, 0.02, 0.5]
    for _ in range(3 * _metric_recorder._MAX_HELD):
        recorder.record(name, 1.0, {}, "")
    assert len(recorder._held) < _metric_recorder._MAX_HELD  # handed over, not piling up
    assert sdk_points(reader)[name] == [({}, 3 + 3 * _metric_recorder._MAX_HELD)]
