"""What differs on older Copilot CLIs (docs/cli-versions.md).

Captures recorded with CLI 1.0.81 and 1.0.92 (tests/fixtures/*_cli1081, *_cli1092) write no
usage records: their chat spans come from assistant.message and say that their tokens are
unknown. On 1.0.81 a sub-agent whose model call failed writes `session.error` (with its agentId)
and then `subagent.completed`: its span is an error all the same. On both, a sub-agent can outlive
its `task` call: its span keeps the times the CLI wrote. Expectations are computed from the raw
events, not from the bridge's output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_bridge import StatusCode, parse_timestamp_ns
from otel_bridge._records import SpanRecord
from otel_bridge.cli import main
from tests import outlines, paths
from tests.builder import Log
from tests.spantree import assemble, assemble_file, by_name, check_invariants, label, outline, turns

FIXTURES = paths.FIXTURES
OLD_CLI_LOGS = sorted(FIXTURES.glob("*_cli10[89]*/events.jsonl"))


def raw_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def ns(stamp: str) -> int:
    """An event's ISO timestamp (ms) in ns since the epoch."""
    return parse_timestamp_ns(stamp)


def one(spans: list[SpanRecord], prefix: str) -> SpanRecord:
    """The one span whose name, or label (a turn: `turn #n`), starts with `prefix`."""
    found = [s for s in spans if label(s).startswith(prefix)]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


# --- captures of CLI 1.0.81 and 1.0.92 --------------------------------------------------------


def test_the_old_cli_fixtures_are_there() -> None:
    """The captures below are of the versions their names say, and have no usage records."""
    names = {p.parent.name for p in OLD_CLI_LOGS}
    assert names == {
        "one_tool_cli1081",
        "one_tool_cli1092",
        "subagent_cli1081",
        "subagent_cli1092",
        "subagent_failed_cli1081",
        "subagent_failed_cli1092",
    }
    for path in OLD_CLI_LOGS:
        events = raw_events(path)
        version = events[0]["data"]["copilotVersion"]
        assert path.parent.name.endswith("_cli" + version.replace(".", "")[:4])
        assert not any(e["type"] == "session.usage_record" for e in events)


@pytest.mark.parametrize("path", OLD_CLI_LOGS, ids=lambda p: p.parent.name)
def test_one_chat_per_assistant_message_each_with_unknown_tokens(path: Path) -> None:
    """Each assistant.message is one LLM call (no two share an apiCallId in these logs): a chat
    span under the turn it belongs to, ending at the message, with no token counts."""
    events = raw_events(path)
    messages = [e for e in events if e["type"] == "assistant.message"]
    assert len({m["data"]["apiCallId"] for m in messages}) == len(messages)
    spans = assemble_file(path)
    check_invariants(spans)
    chats = by_name(spans, "chat ")
    assert sorted(c.end_ns for c in chats) == sorted(ns(m["timestamp"]) for m in messages)
    assert {c.attributes["gen_ai.response.id"] for c in chats} == {
        m["data"]["apiCallId"] for m in messages
    }
    by_id = {s.span_id: s for s in spans}
    turn_of_call = {m["data"]["apiCallId"]: m["data"]["turnId"] for m in messages}
    for chat in chats:
        assert chat.attributes["copilot.usage.unknown"] is True
        assert not [k for k in chat.attributes if k.startswith("gen_ai.usage.")]
        parent = by_id[chat.parent_span_id]
        assert parent.name == "turn"
        assert (
            parent.attributes["copilot.turn.id"]
            == turn_of_call[str(chat.attributes["gen_ai.response.id"])]
        )


def test_one_tool_on_cli_1_0_81_and_1_0_92_gives_the_same_tree() -> None:
    for name in ("one_tool_cli1081", "one_tool_cli1092"):
        spans = assemble_file(FIXTURES / name / "events.jsonl")
        assert outline(spans) == outlines.outline("one_tool_then_answer"), name
        root = one(spans, "invoke_agent copilot")
        assert root.attributes["copilot.version"] == name[-4] + ".0." + name[-2:]
        assert root.status is StatusCode.UNSET


@pytest.mark.parametrize("name", ["subagent_cli1081", "subagent_cli1092"])
def test_a_subagent_that_outlives_its_task_call_keeps_its_own_times(name: str) -> None:
    """The CLI completes the `task` call before the sub-agent's last turn ends: the sub-agent's
    span still hangs under that call and starts and ends when the CLI says, not cut to it."""
    events = raw_events(FIXTURES / name / "events.jsonl")
    started = next(e for e in events if e["type"] == "subagent.started")
    completed = next(e for e in events if e["type"] == "subagent.completed")
    call = started["data"]["toolCallId"]
    task_done = next(
        e
        for e in events
        if e["type"] == "tool.execution_complete" and e["data"]["toolCallId"] == call
    )
    last_sub_turn_end = max(
        ns(e["timestamp"])
        for e in events
        if e["type"] == "assistant.turn_end" and e.get("agentId") == started["agentId"]
    )
    assert ns(task_done["timestamp"]) < last_sub_turn_end  # what makes this capture worth it

    spans = assemble_file(FIXTURES / name / "events.jsonl")
    check_invariants(spans)
    task = one(spans, "execute_tool task")
    sub = one(spans, "invoke_agent general-purpose")
    assert sub.parent_span_id == task.span_id
    assert task.end_ns == ns(task_done["timestamp"])
    assert sub.start_ns == ns(started["timestamp"])
    assert sub.end_ns == ns(completed["timestamp"]) > task.end_ns
    assert sub.status is StatusCode.UNSET and "copilot.incomplete" not in sub.attributes
    root = one(spans, "invoke_agent copilot")
    assert root.start_ns <= sub.start_ns and sub.end_ns <= root.end_ns
    sub_turns = [s for s in turns(spans) if s.parent_span_id == sub.span_id]
    assert len(sub_turns) == sum(
        1
        for e in events
        if e["type"] == "assistant.turn_start" and e.get("agentId") == started["agentId"]
    )
    assert max(t.end_ns for t in sub_turns) == last_sub_turn_end


def test_cli_1_0_81_subagent_with_a_provider_error_is_an_error_though_it_completed() -> None:
    """1.0.81: the sub-agent's HTTP 400 gives its `session.error` (with agentId), then
    `subagent.completed`, not `subagent.failed`."""
    events = raw_events(FIXTURES / "subagent_failed_cli1081" / "events.jsonl")
    error = next(e for e in events if e["type"] == "session.error")
    assert error["data"]["statusCode"] == 400 and error.get("agentId")
    types = [e["type"] for e in events if e.get("agentId") == error["agentId"]]
    assert "subagent.completed" in types and "subagent.failed" not in types

    spans = assemble_file(FIXTURES / "subagent_failed_cli1081" / "events.jsonl")
    check_invariants(spans)
    sub = one(spans, "invoke_agent general-purpose")
    assert sub.attributes["copilot.agent.id"] == error["agentId"]
    assert sub.status is StatusCode.ERROR
    assert sub.attributes["error.type"] == error["data"]["errorType"]
    assert [e.name for e in sub.events] == ["copilot.session.error"]
    assert sub.status_message is None  # the provider's message is content: off by default
    assert one(spans, "execute_tool task").status is StatusCode.ERROR
    root = one(spans, "invoke_agent copilot")
    assert root.status is StatusCode.UNSET  # the main agent answered after it


def test_cli_1_0_92_subagent_with_a_provider_error_fails_as_on_1_0_102() -> None:
    """1.0.92 ends it with `subagent.failed` after its `session.error`: the failure's type."""
    events = raw_events(FIXTURES / "subagent_failed_cli1092" / "events.jsonl")
    error = next(e for e in events if e["type"] == "session.error")
    failed = next(e for e in events if e["type"] == "subagent.failed")
    assert error.get("agentId") == failed.get("agentId") is not None
    spans = assemble_file(FIXTURES / "subagent_failed_cli1092" / "events.jsonl")
    check_invariants(spans)
    sub = one(spans, "invoke_agent general-purpose")
    assert sub.status is StatusCode.ERROR
    assert sub.attributes["error.type"] == "subagent_failed"
    assert sub.end_ns == ns(failed["timestamp"])
    assert one(spans, "invoke_agent copilot").status is StatusCode.UNSET


# --- the same rules on hand-built logs ----------------------------------------------------------


def _subagent_log(end: str) -> Log:
    """A task call whose sub-agent (agent a1) hits a session.error, then ends with `end`."""
    log = Log.asked()
    log.turn("0")
    log.message([("t1", "task")])
    log.tool_start("t1", "task")
    log.add("subagent.started", "a1", toolCallId="t1", agentName="worker")
    log.turn("0", "i2", agent="a1")
    log.add("session.error", "a1", errorType="query", statusCode=500, message="boom")
    log.add(end, "a1", toolCallId="t1", agentName="worker", error="x")
    log.tool_done("t1", success=False)
    log.turn_end("0")
    log.simple_turn("1", "u2")
    return log


@pytest.mark.parametrize(
    ("end", "error_type"),
    [("subagent.completed", "query"), ("subagent.failed", "subagent_failed")],
)
def test_a_subagent_session_error_makes_its_span_an_error_however_it_ends(
    end: str, error_type: str
) -> None:
    spans = assemble(_subagent_log(end).events())
    sub = one(spans, "invoke_agent worker")
    assert sub.status is StatusCode.ERROR
    assert sub.attributes["error.type"] == error_type
    assert one(spans, "invoke_agent copilot").status is StatusCode.UNSET


def test_a_subagent_without_an_error_that_completes_is_not_an_error() -> None:
    log = _subagent_log("subagent.completed")
    log.raw = [e for e in log.raw if e["type"] != "session.error"]
    sub = one(assemble(log.events()), "invoke_agent worker")
    assert sub.status is StatusCode.UNSET


def test_chat_spans_from_messages_say_tokens_unknown_and_usage_records_do_not() -> None:
    old = Log()
    old.start()
    old.user()
    old.turn("0")
    old.message(api_call="c1")
    old.turn_end("0")
    chat = one(assemble(old.events()), "chat ")
    assert chat.attributes["copilot.usage.unknown"] is True
    assert "gen_ai.usage.input_tokens" not in chat.attributes

    new = Log()
    new.start()
    new.user()
    new.simple_turn("0", "u1")
    chat = one(assemble(new.events()), "chat ")
    assert "copilot.usage.unknown" not in chat.attributes
    assert chat.attributes["gen_ai.usage.input_tokens"] == 100


# --- through the command line ---------------------------------------------------------------------


@pytest.mark.parametrize("path", OLD_CLI_LOGS, ids=lambda p: p.parent.name)
def test_stats_counts_llm_calls_of_logs_without_usage_records(
    path: Path, capsys, monkeypatch
) -> None:
    """`stats` counts LLM calls from token metrics, which such logs cannot have: their chat
    spans are counted instead (one per assistant.message here), and their tokens are unknown,
    not 0: null in JSON, "n/a" in the table and on the console's line."""
    assert main(["stats", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    (session,) = report["sessions"]
    messages = [e for e in raw_events(path) if e["type"] == "assistant.message"]
    assert session["llm_calls"] == session["llm_calls_without_usage"] == len(messages) > 0
    assert session["input_tokens"] is None and session["output_tokens"] is None
    assert report["total"]["input_tokens"] is None
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["stats", str(path)]) == 0
    row = capsys.readouterr().out.splitlines()[2]
    assert row.endswith("  n/a") and " 0/0" not in row
    assert main(["replay", str(path), "--no-progress", "--console-format", "summary"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert lines and all("  n/a tok  " in line and "0/0" not in line for line in lines)


def test_a_tool_its_turn_end_left_running_is_aborted_within_that_turn() -> None:
    """Seen on 1.0.92: `assistant.turn_end` 6 ms before the `abort` that cuts the tool short.
    The tool is aborted, and ends with its turn rather than after it."""
    log = Log.asked()
    log.turn("0")
    log.message([("b1", "bash")])
    log.tool_start("b1", "bash")
    log.turn_end("0")
    turn_end = log.now
    log.wait(6)
    log.add("abort", reason="user_abort")
    spans = assemble(log.events())
    tool, turn = one(spans, "execute_tool bash"), one(spans, "turn #1")
    assert tool.attributes["error.type"] == "aborted" and tool.status is StatusCode.ERROR
    assert tool.end_ns == turn.end_ns == turn_end
    assert one(spans, "invoke_agent copilot").end_ns == log.now
