"""Property tests: on any sequence of events the assembler never raises, ends every span it
emits, and never emits two different spans with the same id."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_bridge import Assembler, Event
from tests.builder import BASE_NS

TYPES = [
    "session.start",
    "session.resume",
    "session.shutdown",
    "user.message",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.message",
    "session.usage_record",
    "tool.execution_start",
    "tool.execution_complete",
    "subagent.started",
    "subagent.completed",
    "subagent.failed",
    "session.task_complete",
    "session.error",
    "abort",
    "session.compaction_start",
    "session.mode_changed",
    "future.event",
]
IDS = st.sampled_from(["a", "b", "c", "t1", "t2"])
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), IDS, st.lists(IDS, max_size=2))

data_strategy = st.fixed_dictionaries(
    {},
    optional={
        "toolCallId": IDS,
        "parentToolCallId": IDS,
        "turnId": st.sampled_from(["0", "1"]),
        "interactionId": IDS,
        "toolName": st.sampled_from(["bash", "task"]),
        "success": st.booleans(),
        "isAutopilotContinuation": st.booleans(),
        "newMode": st.sampled_from(["autopilot", "interactive"]),
        "agentName": IDS,
        "toolRequests": st.lists(
            st.fixed_dictionaries({"toolCallId": IDS, "name": IDS}), max_size=3
        ),
        "usage": st.fixed_dictionaries(
            {},
            optional={
                "duration": st.integers(0, 100),
                "inputTokens": VALUES,
                "parentToolCallId": IDS,
                "accounting": st.fixed_dictionaries({"usageId": IDS}),
            },
        ),
        "junk": VALUES,
    },
)

event_strategy = st.builds(
    lambda type_, id_, dt, data, agent: (type_, id_, dt, data, agent),
    st.sampled_from(TYPES),
    st.sampled_from([f"e{i}" for i in range(12)] + [""]),
    st.integers(-5, 50),
    data_strategy,
    st.one_of(st.none(), IDS),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(event_strategy, max_size=40))
def test_any_sequence_is_safe(raw) -> None:
    now = BASE_NS
    events = []
    for type_, id_, dt, data, agent in raw:
        now += dt * 1_000_000  # sometimes backwards: reordered input
        events.append(Event(type_, id_, now, data, agent))
    assembler = Assembler()
    spans = assembler.feed("s", events) + assembler.end_stream("s")
    seen = {}
    for span in spans:
        assert span.end_ns >= span.start_ns
        assert span.trace_id and span.span_id
        if span.span_id in seen:
            assert seen[span.span_id] == span, f"two different spans share id of {span.name}"
        seen[span.span_id] = span
    assert assembler.open_interactions == 0
