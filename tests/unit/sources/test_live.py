"""The live source: real SDK events (captured from github-copilot-sdk 1.0.27 talking to the real
CLI, tests/fixtures/sdk1_two_user_messages/live-events.jsonl) turned back into the SDK's own
SessionEvent objects and fed to LiveBridge."""

from __future__ import annotations

import json

import pytest
from copilot.generated.session_events import SessionEvent
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_bridge import ConfigError
from otel_bridge.export import MetricsOptions, OtelMetricsRecorder, build_metrics, build_resource
from otel_bridge.sources import LiveBridge, parent_from_traceparent
from tests import paths
from tests.builder import Log
from tests.spantree import assemble_file

CAPTURE = paths.FIXTURES / "sdk1_two_user_messages"


def live_events() -> list[dict]:
    return [json.loads(line) for line in (CAPTURE / "live-events.jsonl").read_text().splitlines()]


def run_live(events, *, sdk_objects: bool = True, **options) -> list:
    """Feed events as the SDK delivers them (SessionEvent objects), or as plain dicts."""
    exporter = InMemorySpanExporter()
    bridge = LiveBridge([exporter], environ={}, **options)
    for raw in events:
        event = SessionEvent.from_dict(raw) if sdk_objects else raw
        bridge.on_event(event, "30e81176-e0e8-4c2e-935d-833c9448ad7c")
    bridge.close()
    return list(exporter.get_finished_spans())


def test_live_and_tailed_views_of_one_session_give_the_same_span_ids() -> None:
    live = run_live(live_events())
    tailed = assemble_file(CAPTURE / "events.before_resume.jsonl")  # the same two messages
    assert {s.context.span_id for s in live} == {r.span_id for r in tailed}
    by_id = {r.span_id: r for r in tailed}
    for span in live:
        record = by_id[span.context.span_id]
        assert span.name == record.name
        assert span.context.trace_id == record.trace_id
        assert (span.parent.span_id if span.parent else None) == record.parent_span_id


def test_live_and_tailed_views_give_the_same_context_figures() -> None:
    """Each call's copilot.context.* and each task's peak, live (assistant.usage, and the
    session.usage_info events the SDK delivers, which change no span) and from the log."""
    keys = (
        "copilot.context.tokens",
        "copilot.context.limit",
        "copilot.context.utilization",
        "copilot.task.context.max_utilization",
        "copilot.task.context.tokens",
        "copilot.task.context.limit",
    )
    events = live_events()
    assert any(e["type"] == "session.usage_info" for e in events)
    live = {
        s.context.span_id: {k: s.attributes[k] for k in keys if k in s.attributes}
        for s in run_live(events)
    }
    tailed = {
        r.span_id: {k: r.attributes[k] for k in keys if k in r.attributes}
        for r in assemble_file(CAPTURE / "events.before_resume.jsonl")
    }
    assert live == tailed
    figures = [f for f in live.values() if f]
    assert len(figures) == 6  # 4 calls, 2 tasks
    assert {f.get("copilot.context.limit") for f in figures} >= {128_000}


def test_live_chat_spans_carry_the_tokens_of_the_usage_events() -> None:
    events = live_events()
    usage = {
        e["data"]["accounting"]["usageId"]: e["data"]
        for e in events
        if e["type"] == "assistant.usage"
    }
    chats = [s for s in run_live(events) if s.name.startswith("chat ")]
    assert len(chats) == len(usage) == 4
    for chat in chats:
        data = usage[chat.attributes["gen_ai.response.id"]]
        assert chat.attributes["gen_ai.usage.input_tokens"] == data["inputTokens"]
        assert chat.attributes["gen_ai.usage.output_tokens"] == data["outputTokens"]
        assert chat.attributes["copilot.usage.duration_ms"] == data["duration"]
        assert chat.end_time - chat.start_time == data["duration"] * 1_000_000


def test_redelivered_history_is_dropped() -> None:
    events = live_events()
    once = run_live(events)
    twice = run_live(events + events)  # the SDK replays the history on resume
    assert sorted(s.context.span_id for s in once) == sorted(s.context.span_id for s in twice)


def test_session_idle_ends_an_autopilot_interaction_at_once() -> None:
    log = Log()
    log.start()
    log.add("session.mode_changed", previousMode="interactive", newMode="autopilot")
    log.user()
    log.simple_turn("0", "u1")  # stops without task_complete: on disk, the end is open
    log.add("session.idle", aborted=False)
    idle = log.now
    exporter = InMemorySpanExporter()
    bridge = LiveBridge([exporter], environ={})
    for raw in log.raw:
        bridge.on_event(raw)
    bridge.flush()
    (root,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent copilot"]
    assert root.end_time == idle
    assert root.attributes["copilot.end_reason"] == "idle"
    bridge.close()


def test_failed_calls_retries_and_interrupts() -> None:
    log = Log.asked()
    log.turn("0")
    log.wait(100)
    log.add(
        "model.call_failure",
        model="gpt-4.1",
        statusCode=500,
        durationMs=40,
        source="top_level",
        errorMessage="upstream said no",
        retryAttempt=0,
    )
    log.add("assistant.turn_retry", turnId="0", reason="server_error")
    log.usage("u1")
    log.message([("slow", "bash")])
    log.tool_start("slow", "bash")
    log.add(
        "agent.interrupted",
        activity="tool_call",
        elapsedMs=900,
        turn=0,
        toolCallIds=["slow"],
        toolNames=["bash"],
    )
    log.add("session.idle", aborted=True)
    spans = run_live(log.raw, sdk_objects=False)  # hand-built ids are not UUIDs
    failed = [s for s in spans if s.name.startswith("chat") and not s.status.is_ok]
    assert len(failed) == 1
    assert failed[0].attributes["error.type"] == "500"
    assert failed[0].status.description is None  # error text is content: off by default
    assert failed[0].end_time - failed[0].start_time == 40_000_000
    (turn,) = [s for s in spans if s.name == "turn"]  # one turn
    assert turn.attributes["copilot.turn.index"] == 1
    assert [e.name for e in turn.events] == ["copilot.turn_retry"]
    (tool,) = [s for s in spans if s.name == "execute_tool bash"]
    assert tool.attributes["error.type"] == "aborted"
    (root,) = [s for s in spans if s.name == "invoke_agent copilot"]
    assert root.attributes["copilot.task.outcome"] == "aborted"


def test_traceparent_puts_every_interaction_under_the_given_span() -> None:
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    spans = run_live(live_events(), parent=parent)
    assert {s.context.trace_id for s in spans} == {0x0AF7651916CD43DD8448EB211C80319C}
    roots = [s for s in spans if s.name == "invoke_agent copilot"]
    assert len(roots) == 2
    assert all(r.parent.span_id == 0xB7AD6B7169203331 for r in roots)


def test_parent_current_uses_the_apps_current_span() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("app")
    with tracer.start_as_current_span("handle request") as request_span:
        exporter = InMemorySpanExporter()
        bridge = LiveBridge([exporter], environ={}, parent="current")
    for raw in live_events():
        bridge.on_event(raw)
    bridge.close()
    context = request_span.get_span_context()
    roots = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent copilot"]
    assert roots and all(r.parent.span_id == context.span_id for r in roots)
    assert all(r.context.trace_id == context.trace_id for r in roots)
    provider.shutdown()
    assert trace.get_current_span().get_span_context().is_valid is False


def test_parent_current_falls_back_to_the_traceparent_variable() -> None:
    exporter = InMemorySpanExporter()
    bridge = LiveBridge(
        [exporter],
        parent="current",
        environ={"TRACEPARENT": "00-11111111111111111111111111111111-2222222222222222-01"},
    )
    for raw in live_events():
        bridge.on_event(raw)
    bridge.close()
    assert {s.context.trace_id for s in exporter.get_finished_spans()} == {int("1" * 32, 16)}


@pytest.mark.parametrize("bad", ["", "00-abc-def-01", "00-" + "0" * 32 + "-" + "1" * 16 + "-01"])
def test_bad_traceparent_is_a_clear_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="traceparent"):
        parent_from_traceparent(bad)


def test_bad_events_are_counted_not_raised(caplog) -> None:
    exporter = InMemorySpanExporter()
    bridge = LiveBridge([exporter], environ={})
    bridge.on_event({"type": "user.message"})  # no timestamp
    bridge.on_event(42)
    bridge.on_event(object())
    assert bridge.rejected == 3
    bridge.close()


class FakeSession:
    """What attach needs of a CopilotSession: `.on(handler)` returning an unsubscribe."""

    def __init__(self) -> None:
        self.session_id = "30e81176-e0e8-4c2e-935d-833c9448ad7c"
        self.handlers: list = []

    def on(self, handler):
        self.handlers.append(handler)
        return lambda: self.handlers.remove(handler)


def test_attach_subscribes_and_close_unsubscribes() -> None:
    exporter = InMemorySpanExporter()
    bridge = LiveBridge([exporter], environ={})
    session = FakeSession()
    bridge.attach(session)
    for raw in live_events():
        for handler in list(session.handlers):
            handler(SessionEvent.from_dict(raw))
    bridge.close()
    assert session.handlers == []
    assert sum(s.name == "invoke_agent copilot" for s in exporter.get_finished_spans()) == 2


@pytest.mark.parametrize("thing", [object(), None, "session", {"on": print}])
def test_attach_to_something_that_is_not_a_session_is_a_clear_type_error(thing) -> None:
    bridge = LiveBridge([InMemorySpanExporter()], environ={})
    with pytest.raises(
        TypeError,
        match=r"expects a Copilot SDK session \(copilot.CopilotSession, "
        r"an object with .on\(handler\)\); got " + type(thing).__name__,
    ):
        bridge.attach(thing)
    bridge.close()


def test_attach_to_a_session_not_yet_awaited_says_to_await_it() -> None:
    async def create_session() -> FakeSession:
        return FakeSession()

    bridge = LiveBridge([InMemorySpanExporter()], environ={})
    pending = create_session()
    with pytest.raises(TypeError, match=r"got coroutine \(await it first"):
        bridge.attach(pending)
    pending.close()
    bridge.close()


def metric_names(reader: InMemoryMetricReader) -> set[str]:
    data = reader.get_metrics_data()
    return {
        m.name
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if any(getattr(p, "value", getattr(p, "count", 0)) for p in m.data.data_points)
    }


def test_metrics_are_recorded_only_when_given_a_recorder_of_the_apps_provider() -> None:
    """docs/live.md: LiveBridge(metrics=OtelMetricsRecorder(provider))."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    bridge = LiveBridge([InMemorySpanExporter()], environ={}, metrics=OtelMetricsRecorder(provider))
    for raw in live_events():
        bridge.on_event(SessionEvent.from_dict(raw))
    bridge.close()
    names = metric_names(reader)
    assert {
        "copilot.user_messages",
        "copilot.turns",
        "copilot.tasks",
        "gen_ai.client.inference.operation.input_tokens",
        "gen_ai.client.inference.usage.output_tokens",
        "otel_bridge.events.read",
    } <= names
    provider.shutdown()


def test_metrics_exported_from_the_environment_as_the_readme_shows(tmp_path) -> None:
    """docs/live.md: build_metrics(...), LiveBridge(metrics=pipeline.recorder), then
    bridge.close() and pipeline.shutdown() (here to a file, as --metrics-file)."""
    out = tmp_path / "metrics.jsonl"
    pipeline = build_metrics({}, build_resource({}), MetricsOptions(metrics_file=out))
    assert pipeline.recorder is not None
    bridge = LiveBridge([InMemorySpanExporter()], environ={}, metrics=pipeline.recorder)
    for raw in live_events():
        bridge.on_event(SessionEvent.from_dict(raw))
    bridge.close()
    pipeline.shutdown()
    written = out.read_text()
    assert '"copilot.user_messages"' in written and '"copilot.turns"' in written


def test_without_a_recorder_no_metric_is_recorded_and_nothing_fails() -> None:
    bridge = LiveBridge([InMemorySpanExporter()], environ={})
    for raw in live_events():
        bridge.on_event(SessionEvent.from_dict(raw))
    assert type(bridge.assembler.metrics).__name__ == "NullRecorder"
    bridge.close()


@pytest.mark.parametrize(
    ("mode", "keys"),
    [
        ("released", {"gen_ai.usage.cache_write.input_tokens"}),
        ("previous", {"gen_ai.usage.cache_creation.input_tokens"}),
        (
            "both",
            {"gen_ai.usage.cache_write.input_tokens", "gen_ai.usage.cache_creation.input_tokens"},
        ),
    ],
)
def test_live_bridge_takes_the_semconv_mode_for_span_attributes(mode: str, keys: set[str]) -> None:
    """LiveBridge(semconv=...) as `--semconv` (docs/metrics.md, "Convention version")."""
    names = {"gen_ai.usage.cache_write.input_tokens", "gen_ai.usage.cache_creation.input_tokens"}
    chats = [
        s
        for s in run_live(live_events(), semconv=mode)
        if (s.attributes or {}).get("gen_ai.usage.input_tokens") is not None
    ]
    assert chats
    for span in chats:
        assert names & set(span.attributes or {}) == keys


def test_live_roots_take_the_root_name_template() -> None:
    """`LiveBridge(root_name=...)` is `--root-name` (docs/viewers.md)."""
    spans = run_live(live_events(), root_name="invoke_agent {agent} · {mode} · {outcome}")
    roots = [s for s in spans if s.parent is None]
    assert roots
    for root in roots:
        attributes = root.attributes
        assert root.name == (
            f"invoke_agent copilot · {attributes['copilot.mode']} · "
            f"{attributes['copilot.task.outcome']}"
        )
