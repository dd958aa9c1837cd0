"""One hand-built event log per rule of the span model (docs/architecture.md, docs/events.md)."""

from __future__ import annotations

import ast

import pytest

from otel_bridge import Assembler, AssemblerConfig, StatusCode
from tests import paths, spantree
from tests.builder import Log
from tests.spantree import assemble, by_name, check_invariants, children, label, outline


def one(spans, prefix):
    """The one span whose name, or label (a turn: `turn #n`), starts with `prefix`."""
    found = [s for s in spans if label(s).startswith(prefix)]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def test_autopilot_continuation_stays_in_the_same_trace() -> None:
    log = Log()
    log.start()
    log.add("session.mode_changed", previousMode="interactive", newMode="autopilot")
    log.user(interaction="i1")
    log.simple_turn("0", "u1")  # the model stops without task_complete ...
    log.add(
        "user.message",
        content="",
        transformedContent="continue",
        source="autopilot",
        isAutopilotContinuation=True,
        interactionId="i2",
        turnId="0",
    )  # ... and is nudged
    log.turn("0", "i2")
    log.usage("u2")
    log.message([("c1", "task_complete")])
    log.tool_start("c1", "task_complete")
    log.tool_done("c1")
    log.add("session.task_complete", summary="done", success=True)
    log.turn_end("0")
    spans = assemble(log.events())
    check_invariants(spans)
    assert len({s.trace_id for s in spans}) == 1
    root = one(spans, "invoke_agent")
    assert [label(c) for c in children(spans, root)] == ["turn #1", "turn #2"]
    assert root.attributes["copilot.task.outcome"] == "completed"
    assert root.attributes["copilot.turns"] == 2
    assert root.attributes["copilot.autopilot.continuations"] == 1
    assert root.attributes["copilot.user_messages"] == 2
    assert "copilot.incomplete" not in root.attributes


def test_autopilot_loop_that_stops_without_task_complete_ends_complete_at_end_of_input() -> None:
    log = Log()
    log.start()
    log.add("session.mode_changed", previousMode="interactive", newMode="autopilot")
    log.user()
    log.simple_turn("0", "u1")
    last = log.now
    log.add("session.shutdown", shutdownType="routine")
    spans = assemble(log.events())
    root = one(spans, "invoke_agent")
    assert root.end_ns == last  # ends with its last turn, not at shutdown
    assert root.attributes["copilot.task.outcome"] == "no_signal"
    assert "copilot.incomplete" not in root.attributes


def test_interactive_loop_ends_at_the_turn_without_tool_requests() -> None:
    log = Log.asked()
    log.simple_turn("0", "u1", [("c1", "bash")])
    log.simple_turn("1", "u2")
    end = log.now
    assembler = Assembler()
    spans = assembler.feed("s", log.events())
    # emitted as soon as the loop ended, without end of input
    root = one(spans, "invoke_agent")
    assert root.end_ns == end
    assert root.attributes["copilot.end_reason"] == "loop_end"
    assert assembler.open_interactions == 0


def test_each_top_level_message_is_its_own_trace_and_sub_agent_messages_are_not() -> None:
    log = Log.asked()
    log.simple_turn("0", "u1")
    log.add("user.message", "agent-x", content="sub prompt", parentToolCallId="t9")
    log.user(interaction="i2")
    log.simple_turn("0", "u2", interaction="i2")
    spans = assemble(log.events())
    assert len(by_name(spans, "invoke_agent copilot")) == 2
    assert len({s.trace_id for s in spans}) == 2


def test_parallel_tools_complete_out_of_order_under_the_requesting_turn() -> None:
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("a", "bash"), ("b", "view"), ("c", "grep")])
    for call, name in (("a", "bash"), ("b", "view"), ("c", "grep")):
        log.tool_start(call, name)
    log.tool_done("c")
    log.tool_done("a")
    log.tool_done("b")
    log.turn_end("0")
    log.simple_turn("1", "u2")
    spans = assemble(log.events())
    check_invariants(spans)
    turn1 = one(spans, "turn #1")
    tools = by_name(spans, "execute_tool")
    assert sorted(t.name for t in tools) == [
        "execute_tool bash",
        "execute_tool grep",
        "execute_tool view",
    ]
    assert all(t.parent_span_id == turn1.span_id for t in tools)
    ends = {t.attributes["gen_ai.tool.call.id"]: t.end_ns for t in tools}
    assert ends["c"] < ends["a"] < ends["b"]


def test_failed_tool_is_an_error_and_nonzero_exit_is_not() -> None:
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("v", "view"), ("b", "bash")])
    log.tool_start("v", "view")
    log.tool_start("b", "bash")
    log.tool_done("v", success=False)
    log.tool_done("b", shellExecution={"exitCode": 3})
    log.turn_end("0")
    log.simple_turn("1", "u2")
    spans = assemble(log.events())
    view = one(spans, "execute_tool view")
    bash = one(spans, "execute_tool bash")
    assert view.status is StatusCode.ERROR
    assert view.attributes["error.type"] == "failure"
    assert view.status_message is None  # the message is log content: off by default
    assert bash.status is StatusCode.UNSET
    assert bash.attributes["copilot.tool.exit_code"] == 3
    assert "error.type" not in bash.attributes


def test_failed_tool_message_only_with_content_capture() -> None:
    log = Log.asked()
    log.turn("0")
    log.message([("v", "view")])
    log.tool_start("v", "view")
    log.tool_done("v", success=False)
    log.turn_end("0")
    spans = spantree.assemble(log, "s", config=AssemblerConfig(capture_content=True))
    assert one(spans, "execute_tool view").status_message == "no such file /secret/path"


def test_session_error_after_a_turn_whose_calls_all_failed() -> None:
    """The turn opens and closes with no usage and no message, then session.error
    (docs/events.md)."""
    log = Log.asked()
    log.turn("0")
    log.turn_end("0")
    log.wait(17_000)
    log.add("session.error", errorType="model_call", message="500 from provider", statusCode=500)
    spans = assemble(log.events())
    root = one(spans, "invoke_agent")
    assert root.status is StatusCode.ERROR
    assert root.attributes["error.type"] == "model_call"
    assert root.attributes["copilot.task.outcome"] == "error"
    assert [e.name for e in root.events] == ["copilot.session.error"]
    assert root.events[0].attributes["copilot.error.status_code"] == 500
    assert one(spans, "turn #1").status is StatusCode.UNSET
    assert by_name(spans, "chat") == []


def test_abort_closes_every_open_span_as_aborted() -> None:
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("t1", "task"), ("b1", "bash")])
    log.tool_start("t1", "task")
    log.tool_start("b1", "bash")
    log.add(
        "subagent.started",
        toolCallId="t1",
        agentName="explore",
        agentDisplayName="E",
        agentDescription="d",
    )
    log.turn("0", "si", agent="sub1", parent="t1")
    abort_at = log.now + log.step
    log.add("abort", reason="user_initiated")
    spans = assemble(log.events())
    check_invariants(spans)
    assert outline(spans) == [
        "invoke_agent copilot",
        "  turn #1",
        "    chat gpt-4.1",
        "    execute_tool task",
        "      invoke_agent explore",
        "        turn #1",
        "    execute_tool bash",
    ]
    for span in spans:
        if span.name.startswith("chat"):
            continue
        assert span.status is StatusCode.ERROR, span.name
        assert span.attributes["error.type"] == "aborted", span.name
        assert span.end_ns == abort_at, span.name
    assert one(spans, "invoke_agent copilot").attributes["copilot.task.outcome"] == "aborted"


def test_tool_that_never_completes_is_closed_with_its_turn() -> None:
    log = Log.asked()
    log.turn("0")
    log.message([("x", "bash")])
    log.tool_start("x", "bash")
    end = log.now + log.step
    log.turn_end("0")
    log.simple_turn("1", "u2")
    spans = assemble(log.events())
    tool = one(spans, "execute_tool bash")
    assert tool.end_ns == end
    assert tool.attributes["copilot.incomplete"] is True


def test_subagents_nested_and_parallel() -> None:
    """main -> task t1 (agent A) -> task t3 (agent C, nested); main -> task t2 (agent B) in
    parallel with t1; the sub-agents' events interleave as they do in the real log, and
    subagent.* events carry the sub-agent's own agentId (tests/fixtures/subagent_*)."""
    log = Log.asked()
    log.turn("0")
    log.usage("u-main-0")
    log.message([("t1", "task"), ("t2", "task")])
    log.tool_start("t1", "task")
    log.tool_start("t2", "task")
    log.add(
        "subagent.started",
        "A",
        toolCallId="t1",
        agentName="explore",
        agentDisplayName="Ex",
        agentDescription="d",
    )
    log.add(
        "subagent.started",
        "B",
        toolCallId="t2",
        agentName="review",
        agentDisplayName="Rv",
        agentDescription="d",
    )
    log.turn("0", "ia", agent="A", parent="t1")
    log.turn("0", "ib", agent="B", parent="t2")
    log.usage("u-a-0", agent="A", parent="t1")
    log.usage("u-b-0", agent="B", parent="t2")
    log.message([("t3", "task")], agent="A", parent="t1")
    log.message([("g1", "grep")], agent="B", parent="t2")
    log.tool_start("t3", "task", agent="A", parent="t1")
    log.tool_start("g1", "grep", agent="B", parent="t2")
    log.add(
        "subagent.started",
        "C",
        toolCallId="t3",
        agentName="deep",
        parentId="A",
        agentDisplayName="Deep",
        agentDescription="d",
    )
    log.turn("0", "ic", agent="C", parent="t3")
    log.usage("u-c-0", agent="C", parent="t3")
    log.tool_done("g1", agent="B", parent="t2")
    log.message(agent="C", parent="t3")
    log.turn_end("0", agent="C", parent="t3")
    log.add("subagent.completed", "C", toolCallId="t3", agentName="deep", agentDisplayName="Deep")
    log.tool_done("t3", agent="A", parent="t1")
    log.turn_end("0", agent="B", parent="t2")
    log.turn_end("0", agent="A", parent="t1")
    log.add("subagent.completed", toolCallId="t2", agentName="review", agentDisplayName="Rv")
    log.tool_done("t2")
    log.tool_done("t1")  # before its subagent.completed: either order occurs
    log.add("subagent.completed", toolCallId="t1", agentName="explore", agentDisplayName="Ex")
    log.turn_end("0")
    log.simple_turn("1", "u-main-1")
    spans = assemble(log.events())
    check_invariants(spans)
    assert outline(spans) == [
        "invoke_agent copilot",
        "  turn #1",
        "    chat gpt-4.1",
        "    execute_tool task",
        "      invoke_agent explore",
        "        turn #1",
        "          chat gpt-4.1",
        "          execute_tool task",
        "            invoke_agent deep",
        "              turn #1",
        "                chat gpt-4.1",
        "    execute_tool task",
        "      invoke_agent review",
        "        turn #1",
        "          chat gpt-4.1",
        "          execute_tool grep",
        "  turn #2",
        "    chat gpt-4.1",
    ]
    explore = one(spans, "invoke_agent explore")
    assert explore.attributes["copilot.agent.id"] == "A"
    assert explore.attributes["gen_ai.agent.name"] == "explore"
    assert all("copilot.incomplete" not in s.attributes for s in spans)
    assert len({s.trace_id for s in spans}) == 1
    root = one(spans, "invoke_agent copilot")
    assert root.attributes["copilot.turns"] == 2  # main-agent turns only


def test_subagent_failure_sets_error() -> None:
    log = Log.asked()
    log.turn("0")
    log.message([("t1", "task")])
    log.tool_start("t1", "task")
    log.add(
        "subagent.started",
        toolCallId="t1",
        agentName="explore",
        agentDisplayName="E",
        agentDescription="d",
    )
    log.add(
        "subagent.failed",
        toolCallId="t1",
        agentName="explore",
        agentDisplayName="E",
        error="model refused",
    )
    log.tool_done("t1", success=False)
    log.turn_end("0")
    log.simple_turn("1", "u2")
    spans = assemble(log.events())
    sub = one(spans, "invoke_agent explore")
    assert sub.status is StatusCode.ERROR
    assert sub.attributes["error.type"] == "subagent_failed"
    assert one(spans, "execute_tool task").status is StatusCode.ERROR


def test_several_segments_and_a_crash_without_shutdown() -> None:
    log = Log.asked()
    log.turn("0")
    crash = log.now
    log.add("session.resume", resumeTime="x")  # the CLI died mid-turn, then was resumed
    log.user(interaction="i2")
    log.simple_turn("0", "u1", interaction="i2")
    log.add("session.shutdown", shutdownType="routine")
    log.add("session.resume", resumeTime="y")
    log.user(interaction="i3")
    log.simple_turn("0", "u2", interaction="i3")
    spans = assemble(log.events())
    check_invariants(spans)
    roots = sorted(by_name(spans, "invoke_agent"), key=lambda s: s.start_ns)
    assert len(roots) == 3
    assert roots[0].attributes["copilot.incomplete"] is True
    assert roots[0].attributes["copilot.end_reason"] == "segment_end"
    assert roots[0].end_ns == crash
    assert "copilot.incomplete" not in roots[1].attributes
    assert all(r.attributes["gen_ai.conversation.id"] == "sess-1" for r in roots)


def test_compaction_and_truncation_are_span_events_on_the_interaction() -> None:
    log = Log.asked()
    log.turn("0")
    log.add("session.compaction_start", trigger="threshold", currentTokens=90000)
    log.add(
        "session.compaction_complete",
        success=True,
        preCompactionTokens=90000,
        postCompactionTokens=20000,
        summaryContent="SECRET SUMMARY",
    )
    log.add(
        "session.truncation",
        tokenLimit=64000,
        tokensRemovedDuringTruncation=500,
        preTruncationTokensInMessages=1,
        preTruncationMessagesLength=1,
        postTruncationTokensInMessages=1,
        postTruncationMessagesLength=1,
        messagesRemovedDuringTruncation=1,
        performedBy="BasicTruncator",
    )
    log.usage("u1")
    log.message()
    log.turn_end("0")
    spans = assemble(log.events())
    root = one(spans, "invoke_agent")
    assert [e.name for e in root.events] == [
        "copilot.compaction_start",
        "copilot.compaction_complete",
        "copilot.truncation",
    ]
    assert root.events[1].attributes["copilot.post_compaction_tokens"] == 20000
    assert root.events[2].attributes["copilot.performed_by"] == "BasicTruncator"
    assert not any("SECRET" in str(v) for e in root.events for v in e.attributes.values())


@pytest.mark.parametrize(
    ("data", "outcome"),
    [
        ({"success": True}, "completed"),
        ({"success": True, "outcome": "completed"}, "completed"),
        ({"success": False}, "failed"),
        ({"outcome": "blocked"}, "failed"),
    ],
)
def test_task_complete_outcome(data, outcome) -> None:
    log = Log.asked()
    log.turn("0")
    log.message([("c", "task_complete")])
    log.tool_start("c", "task_complete")
    log.tool_done("c")
    log.add("session.task_complete", **data)
    log.turn_end("0")
    spans = assemble(log.events())
    assert one(spans, "invoke_agent").attributes["copilot.task.outcome"] == outcome


def test_end_of_input_closes_open_spans_at_the_last_event_marked_incomplete() -> None:
    log = Log.asked()
    log.turn("0")
    log.message([("x", "bash")])
    log.tool_start("x", "bash")
    last = log.now
    spans = assemble(log.events())
    assert {label(s) for s in spans} == {
        "invoke_agent copilot",
        "turn #1",
        "execute_tool bash",
        "chat gpt-4.1",
    }
    for span in spans:
        assert span.end_ns <= last
        if not span.name.startswith("chat"):
            assert span.attributes["copilot.incomplete"] is True, span.name


def test_old_logs_without_usage_records_get_one_chat_span_per_call() -> None:
    log = Log.asked()
    log.turn("0")
    log.message([("x", "bash")], api_call="call-A")
    log.tool_start("x", "bash")
    log.tool_done("x")
    log.turn_end("0")
    log.turn("1")
    log.message(api_call="call-B", turn="1")
    log.message(api_call="call-B", turn="1")  # two chunks of one call
    log.turn_end("1")
    spans = assemble(log.events())
    chats = by_name(spans, "chat")
    assert len(chats) == 2
    assert {c.attributes["gen_ai.response.id"] for c in chats} == {"call-A", "call-B"}
    check_invariants(spans)


def test_ids_are_deterministic_and_distinct_across_sessions() -> None:
    def build(session: str):
        log = Log(session=session)
        log.start()
        log.user()
        log.simple_turn("0", "u1", [("call_1", "bash")])
        log.simple_turn("1", "u2")
        return assemble(log.events())

    first, again, other = build("s-A"), build("s-A"), build("s-B")
    assert first == again
    assert not {s.span_id for s in first} & {s.span_id for s in other}
    assert not {s.trace_id for s in first} & {s.trace_id for s in other}


def test_work_without_a_user_message_gets_a_synthetic_interaction() -> None:
    """A log read from its middle: no session.start, no user.message."""
    log = Log()
    log.turn("3")
    log.usage("u1")
    log.message()
    log.turn_end("3")
    spans = assemble(log.events(), session="from-dir-name")
    root = one(spans, "invoke_agent")
    assert root.attributes["copilot.synthetic"] is True
    assert root.attributes["gen_ai.conversation.id"] == "from-dir-name"
    check_invariants(spans)


def test_unknown_and_sparse_events_do_not_break_anything() -> None:
    log = Log()
    log.start()
    log.add("some.future_event", whatever=[1, 2])
    log.user()
    log.add("tool.execution_complete")  # no toolCallId
    log.add("assistant.turn_end")  # no open turn
    log.add("subagent.completed")  # nothing to complete
    log.add("assistant.message", toolRequests="not a list")
    log.add("session.usage_record", usage="junk")
    log.simple_turn("0", "u1")
    spans = assemble(log.events())
    check_invariants(spans)
    assert len(by_name(spans, "invoke_agent")) == 1


PACKAGE = paths.PACKAGE
ASSEMBLER = sorted(str(p.relative_to(PACKAGE)) for p in (PACKAGE / "assembler").rglob("*.py"))
PROCESSORS = sorted(str(p.relative_to(PACKAGE)) for p in (PACKAGE / "processors").rglob("*.py"))
PURE_MODULES = [
    "_records.py",
    "decode/_events.py",
    "decode/_event_types.py",
    "_ids.py",
    "semconv.py",
    "decode/_lines.py",
    "metrics/_recorder.py",
    "metrics/_catalogue.py",
    *ASSEMBLER,
    *PROCESSORS,
]
FORBIDDEN = {
    "os",
    "time",
    "threading",
    "watchdog",
    "opentelemetry",
    "socket",
    "subprocess",
    "datetime",
    "random",
    "pathlib",
}


@pytest.mark.parametrize("module", PURE_MODULES)
def test_core_modules_do_no_io_and_read_no_clock(module: str) -> None:
    source = (PACKAGE / module).read_text()
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & FORBIDDEN


def test_an_abort_after_turn_end_aborts_the_cut_tool_even_past_an_ignored_event() -> None:
    """`copilot -p` under SIGINT may write turn_end before abort, and other events (a hook, a
    system message) between them: the tool the turn left running is still aborted, not
    incomplete."""
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("b1", "bash")])
    log.tool_start("b1", "bash")
    log.turn_end("0")
    log.add("hook.start", hookType="postToolUse")  # no handler: the bridge ignores it
    log.add("abort", reason="user_initiated")
    spans = assemble(log.events())
    check_invariants(spans)
    tool = one(spans, "execute_tool bash")
    assert tool.status is StatusCode.ERROR
    assert tool.attributes["error.type"] == "aborted"
