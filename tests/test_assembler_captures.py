"""The real Copilot CLI captures (../shared/copilot/captures, copied to tests/fixtures) assembled
into span trees. Expected trees are drawn by hand from the event listings in EVENTS.md and the
logs themselves; counts are cross-checked against the raw events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_bridge import StatusCode
from tests.spantree import assemble_file, by_name, check_invariants, children, outline

FIXTURES = Path(__file__).parent / "fixtures"
ALL_LOGS = sorted(FIXTURES.glob("*/events*.jsonl"))


def raw_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def test_run1_one_tool_call_then_answer() -> None:
    spans = assemble_file(FIXTURES / "run1_cli_prompt_basic" / "events.jsonl")
    assert outline(spans) == [
        "invoke_agent copilot",
        "  turn 1",
        "    chat gpt-4.1",
        "    execute_tool bash",
        "  turn 2",
        "    chat gpt-4.1",
    ]
    check_invariants(spans)
    (root,) = by_name(spans, "invoke_agent")
    assert root.parent_span_id is None
    assert root.attributes["gen_ai.conversation.id"] == "d3ebfa08-de8a-4b43-93da-591db8061cb6"
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["copilot.interaction.id"] == "0ac0a597-8cf0-44ba-be60-eda255562a78"
    assert root.attributes["copilot.task.outcome"] == "no_signal"  # interactive, no task_complete
    assert root.attributes["copilot.turns"] == 2
    assert "copilot.incomplete" not in root.attributes
    assert root.status is StatusCode.UNSET
    # user.message at 04:20:51.463, last turn_end at 04:20:52.102
    assert root.end_ns - root.start_ns == 639_000_000
    chat = by_name(spans, "chat")[0]
    assert chat.attributes["gen_ai.usage.input_tokens"] == 1234
    assert chat.attributes["gen_ai.usage.output_tokens"] == 56
    assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 100
    assert chat.attributes["gen_ai.response.id"] == "chatcmpl-2b99c565f4a6"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    # the usage record (04:20:51.765) says the call took 261 ms
    assert chat.end_ns - chat.start_ns == 261_000_000
    (tool,) = by_name(spans, "execute_tool")
    assert tool.attributes["gen_ai.tool.call.id"] == "call_44576fa8bc"
    assert tool.attributes["copilot.tool.exit_code"] == 0
    assert tool.status is StatusCode.UNSET
    turn1 = by_name(spans, "turn 1")[0]
    assert tool.parent_span_id == turn1.span_id == chat.parent_span_id


def test_run3_autopilot_ends_with_task_complete() -> None:
    spans = assemble_file(FIXTURES / "run3_cli_autopilot" / "events.jsonl")
    assert outline(spans) == [
        "invoke_agent copilot",
        "  turn 1",
        "    chat gpt-4.1",
        "    execute_tool bash",
        "  turn 2",
        "    chat gpt-4.1",
        "    execute_tool task_complete",
    ]
    check_invariants(spans)
    (root,) = by_name(spans, "invoke_agent")
    assert root.attributes["copilot.mode"] == "autopilot"
    assert root.attributes["copilot.task.outcome"] == "completed"
    assert [e.name for e in root.events] == ["copilot.task_complete"]
    assert "copilot.incomplete" not in root.attributes


def test_sdk1_resumed_session_gives_three_linked_traces() -> None:
    spans = assemble_file(FIXTURES / "sdk1_two_user_messages" / "events.jsonl")
    roots = by_name(spans, "invoke_agent")
    assert len(roots) == 3  # two messages, then one more after session.resume
    assert len({r.trace_id for r in roots}) == 3
    assert {s.trace_id for s in spans} == {r.trace_id for r in roots}
    for root in roots:
        assert [c.name for c in children(spans, root)] == ["turn 1", "turn 2"]
        assert root.attributes["gen_ai.conversation.id"] == "30e81176-e0e8-4c2e-935d-833c9448ad7c"
    roots.sort(key=lambda r: r.start_ns)
    assert roots[0].links == ()
    assert [(link.trace_id, link.span_id) for link in roots[1].links] == [
        (roots[0].trace_id, roots[0].span_id)]
    assert [(link.trace_id, link.span_id) for link in roots[2].links] == [
        (roots[1].trace_id, roots[1].span_id)]
    check_invariants(spans)


def test_before_resume_file_gives_the_same_spans_as_the_first_part_of_the_full_log() -> None:
    """The log grows on resume; the spans of what was there before must not change."""
    before = assemble_file(FIXTURES / "sdk1_two_user_messages" / "events.before_resume.jsonl")
    after = assemble_file(FIXTURES / "sdk1_two_user_messages" / "events.jsonl")
    assert len(before) == 12
    after_by_id = {s.span_id: s for s in after}
    assert all(after_by_id[s.span_id] == s for s in before)


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_counts_match_the_raw_log(path: Path) -> None:
    events = raw_events(path)
    spans = assemble_file(path)
    check_invariants(spans)
    count = lambda t: sum(1 for e in events if e["type"] == t)  # noqa: E731
    assert len(by_name(spans, "turn ")) == count("assistant.turn_start")
    assert len(by_name(spans, "execute_tool ")) == count("tool.execution_start")
    assert len(by_name(spans, "chat ")) == count("session.usage_record")
    top_level = [e for e in events if e["type"] == "user.message" and "agentId" not in e
                 and not e["data"].get("isAutopilotContinuation")]
    assert len({s.trace_id for s in spans}) == len(top_level)
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in by_name(spans, "execute_tool ")}
    turns_by_request: dict[str, int] = {}
    turn_spans = sorted(by_name(spans, "turn "), key=lambda s: s.start_ns)
    for event in events:
        if event["type"] == "assistant.message":
            owner = [t for t in turn_spans if t.start_ns <= _ns(event["timestamp"])][-1]
            for request in event["data"].get("toolRequests", []):
                turns_by_request[request["toolCallId"]] = owner.span_id
    for call_id, span in tools.items():
        assert span.parent_span_id == turns_by_request[call_id]


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_two_replays_give_identical_spans(path: Path) -> None:
    assert assemble_file(path) == assemble_file(path)


def _ns(stamp: str) -> int:
    from otel_bridge import parse_timestamp_ns

    return parse_timestamp_ns(stamp)
