"""The real Copilot CLI captures in tests/fixtures (docs/recorded-captures.md) assembled into
span trees. Expected trees are drawn by hand from the logs themselves and the event listings in
docs/recorded-captures.md; counts are cross-checked against the raw events."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from otel_bridge import StatusCode
from tests import outlines, paths
from tests.spantree import assemble_file, by_name, check_invariants, children, label, outline, turns

FIXTURES = paths.FIXTURES
ALL_LOGS = sorted(FIXTURES.glob("*/events*.jsonl"))


def iso_ns(stamp: str) -> int:
    """Nanoseconds since the epoch of an event's ISO timestamp (millisecond precision)."""
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def raw_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def llm_calls(events: list[dict]) -> int:
    """LLM calls the log shows: its usage records; a log without any (CLI 1.0.81, 1.0.92) has
    one per distinct apiCallId of its assistant.message events (a message without one is a
    call of its own)."""
    records = sum(1 for e in events if e["type"] == "session.usage_record")
    if records:
        return records
    return len(
        {e["data"].get("apiCallId") or e["id"] for e in events if e["type"] == "assistant.message"}
    )


def test_run1_one_tool_call_then_answer() -> None:
    spans = assemble_file(FIXTURES / "run1_cli_prompt_basic" / "events.jsonl")
    assert outline(spans) == outlines.outline("one_tool_then_answer")
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
    turn1 = turns(spans, 1)[0]
    assert tool.parent_span_id == turn1.span_id == chat.parent_span_id


def test_run3_autopilot_ends_with_task_complete() -> None:
    spans = assemble_file(FIXTURES / "run3_cli_autopilot" / "events.jsonl")
    assert outline(spans) == [
        "invoke_agent copilot",
        "  turn #1",
        "    chat gpt-4.1",
        "    execute_tool bash",
        "  turn #2",
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
        assert [label(c) for c in children(spans, root)] == ["turn #1", "turn #2"]
        assert root.attributes["gen_ai.conversation.id"] == "30e81176-e0e8-4c2e-935d-833c9448ad7c"
    roots.sort(key=lambda r: r.start_ns)
    assert roots[0].links == ()
    assert [(link.trace_id, link.span_id) for link in roots[1].links] == [
        (roots[0].trace_id, roots[0].span_id)
    ]
    assert [(link.trace_id, link.span_id) for link in roots[2].links] == [
        (roots[1].trace_id, roots[1].span_id)
    ]
    check_invariants(spans)


def test_before_resume_file_gives_the_same_spans_as_the_first_part_of_the_full_log() -> None:
    """The log grows on resume; the spans of what was there before must not change."""
    before = assemble_file(FIXTURES / "sdk1_two_user_messages" / "events.before_resume.jsonl")
    after = assemble_file(FIXTURES / "sdk1_two_user_messages" / "events.jsonl")
    assert len(before) == 12
    after_by_id = {s.span_id: s for s in after}
    assert all(after_by_id[s.span_id] == s for s in before)


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_counts_and_parents_match_the_raw_log(path: Path) -> None:
    """The checks the issue names, computed from the raw log independently of the assembler."""
    events = raw_events(path)
    spans = assemble_file(path)
    check_invariants(spans)
    count = lambda t: sum(1 for e in events if e["type"] == t)  # noqa: E731
    assert len(turns(spans)) == count("assistant.turn_start")
    assert len(by_name(spans, "execute_tool ")) == count("tool.execution_start")
    assert len(by_name(spans, "chat ")) == llm_calls(events)
    top_level = [
        e
        for e in events
        if e["type"] == "user.message"
        and "agentId" not in e
        and not e["data"].get("isAutopilotContinuation")
        and e["data"].get("delivery") != "steering"  # joins the running task
    ]
    assert len({s.trace_id for s in spans}) == len(top_level)
    roots = [s for s in spans if s.parent_span_id is None]
    assert len(roots) == len(top_level)
    # the root is named after the agent that runs the task: a custom agent selected with
    # `--agent` (subagent.selected without agentId, before the message), else copilot
    selected = [e for e in events if e["type"] == "subagent.selected" and "agentId" not in e]
    main_name = selected[-1]["data"]["agentName"] if selected else "copilot"
    assert {r.name for r in roots} <= {f"invoke_agent {main_name}"}
    # every span lies within its trace root's time range (late work would not)
    root_of = {r.trace_id: r for r in roots}
    for span in spans:
        root = root_of[span.trace_id]
        assert root.start_ns <= span.start_ns <= span.end_ns <= root.end_ns, span.name
    by_id = {s.span_id: s for s in spans}
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in by_name(spans, "execute_tool ")}
    # a tool's parent is the turn of the agent whose assistant.message requested it
    requested_in_turn = {
        r["toolCallId"]: ("turnId" in e["data"], e.get("agentId"))
        for e in events
        if e["type"] == "assistant.message"
        for r in e["data"].get("toolRequests", [])
    }
    for call_id, tool in tools.items():
        parent = by_id[tool.parent_span_id]
        in_turn, agent_id = requested_in_turn[call_id]
        assert parent.name.startswith("turn" if in_turn else "invoke_agent"), call_id
        owner = by_id[parent.parent_span_id] if in_turn else parent
        assert owner.attributes.get("copilot.agent.id") == agent_id
    # each sub-agent hangs under the `task` call that spawned it
    started = [e for e in events if e["type"] == "subagent.started"]
    subagents = [s for s in by_name(spans, "invoke_agent ") if s.parent_span_id is not None]
    assert len(subagents) == len(started)
    for event in started:
        (span,) = [
            s
            for s in subagents
            if s.attributes["gen_ai.tool.call.id"] == event["data"]["toolCallId"]
        ]
        assert span.name == f"invoke_agent {event['data']['agentName']}"
        assert span.attributes["copilot.agent.id"] == event["agentId"]
        assert span.parent_span_id == tools[event["data"]["toolCallId"]].span_id
        assert tools[event["data"]["toolCallId"]].name == "execute_tool task"
    # every chat span carries the tokens of its usage record
    usage = {
        e["data"]["usage"]["accounting"]["usageId"]: e["data"]["usage"]
        for e in events
        if e["type"] == "session.usage_record"
    }
    chats = by_name(spans, "chat ")
    if not usage:  # CLI < 1.0.102: calls known from assistant.message, tokens unknown
        assert all(c.attributes["copilot.usage.unknown"] is True for c in chats)
        assert not any(k.startswith("gen_ai.usage.") for c in chats for k in c.attributes)
        return
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == sum(
        u["inputTokens"] for u in usage.values()
    )
    assert not any("copilot.usage.unknown" in c.attributes for c in chats)


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_two_replays_give_identical_spans(path: Path) -> None:
    assert assemble_file(path) == assemble_file(path)


def test_nested_subagents_form_a_chain_under_task_calls() -> None:
    spans = assemble_file(FIXTURES / "subagent_nested" / "events.jsonl")
    assert outline(spans) == [
        "invoke_agent copilot",
        "  turn #1",
        "    chat gpt-4.1",
        "    execute_tool task",
        "      invoke_agent general-purpose",
        "        turn #1",
        "          chat gpt-4.1",
        "          execute_tool task",
        "            invoke_agent general-purpose",
        "              turn #1",
        "                chat gpt-4.1",
        "                execute_tool bash",
        "              turn #2",
        "                chat gpt-4.1",
        "        turn #2",
        "          chat gpt-4.1",
        "  turn #2",
        "    chat gpt-4.1",
    ]
    assert all(s.status is StatusCode.UNSET for s in spans)


def test_parallel_subagents_are_siblings_under_one_turn() -> None:
    spans = assemble_file(FIXTURES / "subagent_parallel" / "events.jsonl")
    (root,) = by_name(spans, "invoke_agent copilot")
    (main_turn,) = [t for t in turns(spans, 1) if t.parent_span_id == root.span_id]
    tasks = [c for c in children(spans, main_turn) if c.name == "execute_tool task"]
    assert len(tasks) == 2
    for task in tasks:
        (sub,) = children(spans, task)
        assert sub.name == "invoke_agent general-purpose"
        assert [label(c) for c in children(spans, sub)] == ["turn #1", "turn #2"]


def test_failed_subagent_and_its_task_call_are_errors_the_interaction_is_not() -> None:
    spans = assemble_file(FIXTURES / "subagent_failed" / "events.jsonl")
    sub = by_name(spans, "invoke_agent general-purpose")[0]
    assert sub.status is StatusCode.ERROR
    assert sub.attributes["error.type"] == "subagent_failed"
    assert [e.name for e in sub.events] == ["copilot.session.error"]  # the sub-agent's own
    assert by_name(spans, "execute_tool task")[0].status is StatusCode.ERROR
    root = by_name(spans, "invoke_agent copilot")[0]
    assert root.status is StatusCode.UNSET
    assert root.attributes["copilot.task.outcome"] == "no_signal"


def test_background_subagent_keeps_the_interaction_open_until_the_main_agent_resumes() -> None:
    spans = assemble_file(FIXTURES / "subagent_background" / "events.jsonl")
    (root,) = by_name(spans, "invoke_agent copilot")
    assert [label(c) for c in children(spans, root)] == [
        "turn #1",
        "turn #2",
        "execute_tool read_agent",
        "turn #3",
    ]
    assert root.attributes["copilot.turns"] == 3
    assert "copilot.incomplete" not in root.attributes
    assert root.end_ns == max(s.end_ns for s in spans)


@pytest.mark.parametrize("case", ["abort", "abort_try1", "abort_subagent", "sdk_abort"])
def test_abort_ends_the_interaction_as_aborted(case: str) -> None:
    spans = assemble_file(FIXTURES / case / "events.jsonl")
    root = sorted(by_name(spans, "invoke_agent copilot"), key=lambda s: s.start_ns)[0]
    assert root.status is StatusCode.ERROR
    assert root.attributes["error.type"] == "aborted"
    assert root.attributes["copilot.task.outcome"] == "aborted"
    slow = [
        s
        for s in by_name(spans, "execute_tool bash")
        if s.attributes.get("copilot.tool.exit_code") is None
    ]  # the one cut short
    assert slow and all(s.end_ns <= root.end_ns for s in slow)
    # whether the CLI wrote turn_end just before or just after the abort
    assert all(s.attributes.get("error.type") == "aborted" for s in slow)


def test_provider_error_ends_the_interaction_in_error() -> None:
    spans = assemble_file(FIXTURES / "provider_error" / "events.jsonl")
    assert outline(spans) == ["invoke_agent copilot", "  turn #1"]
    root = by_name(spans, "invoke_agent copilot")[0]
    assert root.status is StatusCode.ERROR
    assert root.attributes["error.type"] == "query"
    assert root.attributes["copilot.task.outcome"] == "error"
    assert root.events[0].attributes["copilot.error.status_code"] == 500


def test_autopilot_nudge_is_one_task_in_one_trace() -> None:
    spans = assemble_file(FIXTURES / "autopilot_nudge" / "events.jsonl")
    (root,) = by_name(spans, "invoke_agent copilot")
    assert root.attributes["copilot.autopilot.continuations"] == 1
    assert root.attributes["copilot.task.outcome"] == "completed"
    assert [label(c) for c in children(spans, root)] == ["turn #1", "turn #2"]


def test_parallel_tools_with_a_failing_view_and_a_nonzero_exit() -> None:
    spans = assemble_file(FIXTURES / "parallel_tools" / "events.jsonl")
    turn1 = turns(spans, 1)[0]
    assert sorted(c.name for c in children(spans, turn1)) == [
        "chat gpt-4.1",
        "execute_tool bash",
        "execute_tool view",
        "execute_tool view",
    ]
    errors = [s for s in spans if s.status is StatusCode.ERROR]
    assert [s.name for s in errors] == ["execute_tool view"]
    exit_codes = sorted(
        s.attributes["copilot.tool.exit_code"] for s in by_name(spans, "execute_tool bash")
    )
    assert exit_codes == [0, 3]


def test_custom_agent_names_the_task_root_and_explore_keeps_its_own_name() -> None:
    """`--agent reviewer`: subagent.selected (no agentId) before the message names the root;
    the explore sub-agent's own subagent.selected (with agentId) does not touch it."""
    path = FIXTURES / "custom_agent" / "events.jsonl"
    events = raw_events(path)
    selected = [e for e in events if e["type"] == "subagent.selected"]
    assert [("agentId" in e, e["data"]["agentName"]) for e in selected] == [
        (False, "reviewer"),
        (True, "explore"),
    ]
    spans = assemble_file(path)
    check_invariants(spans)
    (root,) = [s for s in spans if s.parent_span_id is None]
    assert root.name == "invoke_agent reviewer"
    assert root.attributes["gen_ai.agent.name"] == "reviewer"
    (explore,) = by_name(spans, "invoke_agent explore")
    assert explore.attributes["copilot.agent.id"] == selected[1]["agentId"]
    assert explore.parent_span_id == by_name(spans, "execute_tool task")[0].span_id
    assert root.attributes["copilot.turns"] == sum(
        1 for e in events if e["type"] == "assistant.turn_start" and "agentId" not in e
    )


def test_skill_events_land_on_the_turn_that_called_the_skill_tool() -> None:
    path = FIXTURES / "skill" / "events.jsonl"
    events = raw_events(path)
    spans = assemble_file(path)
    check_invariants(spans)
    (invoked,) = [e for e in events if e["type"] == "skill.invoked"]
    (delivered,) = [e for e in events if e["type"] == "skill.context_delivered_ref"]
    (call,) = by_name(spans, "execute_tool skill")
    turn = next(s for s in spans if s.span_id == call.parent_span_id)
    assert [e.name for e in turn.events] == [
        "copilot.skill.invoked",
        "copilot.skill.context_delivered",
    ]
    event = turn.events[0]
    assert event.attributes == {
        "copilot.skill.name": invoked["data"]["name"],
        "copilot.skill.source": invoked["data"]["source"],
        "copilot.skill.trigger": invoked["data"]["trigger"],
        "copilot.skill.content.length": len(invoked["data"]["content"]),
    }
    assert turn.events[1].attributes == {
        "copilot.skill.name": delivered["data"]["source"].removeprefix("skill-")
    }
    assert turn.start_ns <= event.timestamp_ns <= turn.end_ns
    # neither the skill's text nor its path is copied anywhere
    text = repr(spans)
    assert invoked["data"]["content"] not in text and invoked["data"]["path"] not in text


def test_autopilot_limit_is_a_no_signal_task_with_its_own_end_reason() -> None:
    """`--autopilot --max-autopilot-continues 2`, a model that never calls task_complete:
    two continuations, a last turn without tools, then the CLI shuts down without nudging."""
    path = FIXTURES / "autopilot_limit" / "events.jsonl"
    events = raw_events(path)
    assert not any(e["type"] == "session.task_complete" for e in events)
    continuations = [e for e in events if e["data"].get("isAutopilotContinuation") is True]
    assert len(continuations) == 2
    spans = assemble_file(path)
    check_invariants(spans)
    (root,) = by_name(spans, "invoke_agent copilot")
    assert root.attributes["copilot.task.outcome"] == "no_signal"
    assert root.attributes["copilot.end_reason"] == "autopilot_limit"
    assert root.attributes["copilot.autopilot.continuations"] == len(continuations)
    assert "copilot.incomplete" not in root.attributes
    last_turn_end = [e for e in events if e["type"] == "assistant.turn_end"][-1]
    assert root.end_ns == max(s.end_ns for s in spans)
    assert iso_ns(last_turn_end["timestamp"]) == root.end_ns


def test_an_autopilot_task_with_task_complete_is_not_a_limit_stop() -> None:
    spans = assemble_file(FIXTURES / "autopilot_nudge" / "events.jsonl")
    (root,) = by_name(spans, "invoke_agent copilot")
    assert root.attributes["copilot.end_reason"] == "task_complete"
