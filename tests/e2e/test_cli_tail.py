"""Real Copilot CLI sessions (`copilot -p`, offline against the scripted fake model), then the
bridge on the log they wrote: `otel-bridge replay` (traces and metrics files), `otel-bridge stats
--json`, and `otel-bridge run` following the log while the CLI wrote it.

Expectations come from the scenario scripts, the fake model's own record of what it answered
(response ids, tool call ids, token counts) and the raw log; never from the bridge's output.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from otel_bridge import parse_timestamp_ns
from tests import outlines
from tests.e2e.conftest import (
    CLI_SCENARIOS,
    E2E,
    FOLLOWED,
    SHELL_EXIT_CODES,
    USAGE_RECORDS,
    Metrics,
    Result,
    Span,
    Tree,
    label,
)

# Mission metrics: all must agree between `run` (live) and `replay` of the same log.
MISSION = (
    "copilot.tasks",
    "copilot.turns",
    "copilot.user_messages",
    "copilot.tool.calls",
    "copilot.session.errors",
    "copilot.aborts",
    "copilot.autopilot.continuations",
    "copilot.turns_per_message",
    "gen_ai.client.inference.operation.input_tokens",
    "gen_ai.client.inference.operation.output_tokens",
    "gen_ai.client.inference.usage.input_tokens",
    "gen_ai.invoke_agent.tool_calls",
)


def main_events(result: Result, kind: str) -> list[dict[str, Any]]:
    return [e for e in result.events() if e["type"] == kind and "agentId" not in e]


def turns_of(tree: Tree, agent: Span) -> list[Span]:
    return tree.children(agent, "turn")


def check_root(result: Result, root: Span, *, mode: str, outcome: str) -> None:
    assert root.name == "invoke_agent copilot"
    assert root.parent_span_id is None
    assert root.attrs["gen_ai.operation.name"] == "invoke_agent"
    assert root.attrs["gen_ai.agent.name"] == "copilot"
    assert root.attrs["gen_ai.conversation.id"] == result.run.session_id
    assert root.attrs["copilot.mode"] == mode
    assert root.attrs["copilot.task.outcome"] == outcome


def assert_tasks(metrics: Metrics, **by_outcome: int) -> None:
    assert metrics.by("copilot.tasks", "copilot.task.outcome") == {
        k: float(v) for k, v in by_outcome.items()
    }


def cli_ok(result: Result, code: int = 0) -> None:
    for run in result.run.runs:
        assert run.returncode == code, (run.describe(), run.stderr.read_text()[-2000:])
        # the key is long and odd enough that the CLI's masking never fires
        assert "******" not in run.stdout.read_text()
    optional = {str(r.get("name")) for r in result.run.script["responses"] if r.get("repeat")}
    missed = [name for name in result.run.unused_rules if name not in optional]
    assert not missed, f"the script did not play out: {missed} never used"


# --- one scenario at a time -------------------------------------------------------------------


def test_one_tool_call(e2e: E2E) -> None:
    result = e2e.run("one_tool")
    cli_ok(result)
    tree = result.tree
    tree.check_well_formed()
    assert tree.outline() == outlines.outline("one_tool_then_answer")
    (root,) = tree.roots()
    # interactive -p: the model answers and stops; it never calls task_complete
    check_root(result, root, mode="interactive", outcome="no_signal")
    (message,) = main_events(result, "user.message")
    assert root.attrs["copilot.interaction.id"] == message["data"]["interactionId"]
    assert root.status == "UNSET"
    first, second = turns_of(tree, root)
    assert (first.attrs["copilot.turn.id"], second.attrs["copilot.turn.id"]) == ("0", "1")
    (tool,) = tree.named("execute_tool")
    fake_calls = [c for r in result.run.requests for c in r.tool_call_ids]
    assert tool.attrs["gen_ai.tool.call.id"] == fake_calls[0]
    assert tool.attrs["gen_ai.tool.name"] == "bash"
    if SHELL_EXIT_CODES:
        assert tool.attrs["copilot.tool.exit_code"] == 0
    else:  # CLI 1.0.81 writes no shellExecution
        assert "copilot.tool.exit_code" not in tool.attrs
    assert tool.status == "UNSET"
    for chat in tree.named("chat"):
        assert chat.kind == "CLIENT"
        assert chat.attrs["gen_ai.request.model"] == "gpt-4.1"
    if USAGE_RECORDS:  # the initiator is a usage record's
        assert [c.attrs["copilot.initiator"] for c in tree.named("chat")] == ["user", "agent"]
    else:
        assert [c.attrs["copilot.usage.unknown"] for c in tree.named("chat")] == [True, True]

    metrics = result.metrics
    assert_tasks(metrics, no_signal=1)
    assert metrics.series("copilot.tasks", copilot__mode="interactive")
    assert metrics.total("copilot.turns", copilot__agent__type="main") == 2
    assert (
        metrics.total(
            "copilot.tool.calls", gen_ai__tool__name="bash", copilot__tool__outcome="success"
        )
        == 1
    )
    assert metrics.histogram("copilot.turns_per_message") == (1, 2)
    assert metrics.total("copilot.user_messages", copilot__continuation=False) == 1
    assert metrics.histogram("gen_ai.invoke_agent.tool_calls", gen_ai__agent__name="copilot") == (
        1,
        1,
    )
    prompt_tokens = sum(r.usage["prompt_tokens"] for r in result.run.requests if r.usage)
    if not USAGE_RECORDS:  # the log has no tokens: none are counted
        prompt_tokens = 0
    assert metrics.histogram("gen_ai.client.inference.operation.input_tokens") == (
        2 if USAGE_RECORDS else 0,
        prompt_tokens,
    )
    assert metrics.total("gen_ai.client.inference.usage.input_tokens") == prompt_tokens

    stats = result.stats
    assert (
        stats["user_messages"],
        stats["tasks"],
        stats["turns"],
        stats["tool_calls"],
        stats["tool_failures"],
        stats["llm_calls"],
    ) == (1, 1, 2, 1, 0, 2)
    # stats says unknown (null) rather than 0 when the log has no usage records
    assert stats["input_tokens"] == (prompt_tokens if USAGE_RECORDS else None)
    assert stats["turns_per_message"] == 2
    assert stats["outcomes"]["no_signal"] == 1


def test_resumed_session_with_several_user_messages(e2e: E2E) -> None:
    """Two `copilot -p` processes, the second with `--resume <id>`: one log, two segments, two
    user messages, two traces linked one to the next."""
    result = e2e.run("resume")
    cli_ok(result)
    kinds = [e["type"] for e in result.events()]
    assert kinds.count("session.start") == kinds.count("session.resume") == 1
    assert kinds.count("session.shutdown") == 2
    tree = result.tree
    tree.check_well_formed()
    first, second = tree.roots()
    assert first.trace_id != second.trace_id
    for root in (first, second):
        check_root(result, root, mode="interactive", outcome="no_signal")
        turns = turns_of(tree, root)
        assert len(turns) == 2
        assert [s.name for s in tree.children(turns[0])] == ["chat gpt-4.1", "execute_tool bash"]
        assert [s.name for s in tree.children(turns[1])] == ["chat gpt-4.1"]
    messages = main_events(result, "user.message")
    assert [r.attrs["copilot.interaction.id"] for r in (first, second)] == [
        m["data"]["interactionId"] for m in messages
    ]
    assert not first.links
    ((trace_id, span_id, _),) = second.links  # the previous interaction of the session
    assert (trace_id, span_id) == (first.trace_id, first.span_id)

    metrics = result.metrics
    assert_tasks(metrics, no_signal=2)
    assert metrics.total("copilot.user_messages", copilot__continuation=False) == 2
    assert metrics.histogram("copilot.turns_per_message") == (2, 4)
    assert metrics.total("copilot.tool.calls", gen_ai__tool__name="bash") == 2
    stats = result.stats
    assert (stats["user_messages"], stats["tasks"], stats["turns"], stats["llm_calls"]) == (
        2,
        2,
        4,
        4,
    )


def test_parallel_tool_calls(e2e: E2E) -> None:
    result = e2e.run("parallel_tools")
    cli_ok(result)
    tree = result.tree
    tree.check_well_formed()
    (root,) = tree.roots()
    check_root(result, root, mode="interactive", outcome="no_signal")
    turns = turns_of(tree, root)
    assert len(turns) == 3
    parallel = tree.children(turns[0], "execute_tool")
    assert sorted(s.attrs["gen_ai.tool.name"] for s in parallel) == ["bash", "view", "view"]
    # one model answer asked for all three: all started before any ended
    assert max(s.start_ns for s in parallel) < min(s.end_ns for s in parallel)
    first_message = main_events(result, "assistant.message")[0]
    assert {s.attrs["gen_ai.tool.call.id"] for s in parallel} == {
        r["toolCallId"] for r in first_message["data"]["toolRequests"]
    }
    # each starts when the CLI says it started (the CLI picks the order, not the bridge)
    started = {
        e["data"]["toolCallId"]: e["timestamp"] for e in main_events(result, "tool.execution_start")
    }
    for span in parallel:
        assert span.start_ns == parse_timestamp_ns(started[span.attrs["gen_ai.tool.call.id"]])
    assert len(tree.children(turns[0], "chat")) == 1
    assert [s.name for s in tree.children(turns[1])] == ["chat gpt-4.1", "execute_tool bash"]
    assert [s.name for s in tree.children(turns[2])] == ["chat gpt-4.1"]
    assert result.metrics.histogram("gen_ai.invoke_agent.tool_calls") == (1, 4)
    assert result.stats["tool_calls"] == 4


def test_failing_tool(e2e: E2E) -> None:
    """`view` of a missing path fails (success: false); a bash command exiting 3 does not: it is
    a successful call with its exit code."""
    result = e2e.run("parallel_tools")
    tree = result.tree
    views = {s.attrs["gen_ai.tool.call.id"]: s for s in tree.named("execute_tool view")}
    completes = {
        e["data"]["toolCallId"]: e["data"] for e in main_events(result, "tool.execution_complete")
    }
    failed = [s for call, s in views.items() if completes[call]["success"] is False]
    (missing,) = failed
    assert missing.status == "ERROR"
    assert missing.attrs["error.type"] == "failure"
    assert "copilot.error.message" not in missing.attrs  # no content without --capture-content
    (ok_view,) = [s for s in views.values() if s is not missing]
    assert ok_view.status == "UNSET" and "error.type" not in ok_view.attrs
    exits = sorted(
        s.attrs.get("copilot.tool.exit_code", -1) for s in tree.named("execute_tool bash")
    )
    assert exits == ([0, 3] if SHELL_EXIT_CODES else [-1, -1])  # 1.0.81: no shellExecution
    assert all(s.status == "UNSET" for s in tree.named("execute_tool bash"))
    (root,) = tree.roots()
    assert root.status == "UNSET"  # a failed tool does not fail the task

    metrics = result.metrics
    assert (
        metrics.total(
            "copilot.tool.calls", gen_ai__tool__name="view", copilot__tool__outcome="error"
        )
        == 1
    )
    assert (
        metrics.total(
            "copilot.tool.calls", gen_ai__tool__name="view", copilot__tool__outcome="success"
        )
        == 1
    )
    assert (
        metrics.total(
            "copilot.tool.calls", gen_ai__tool__name="bash", copilot__tool__outcome="success"
        )
        == 2
    )
    assert metrics.histogram("gen_ai.execute_tool.duration", error__type="failure")[0] == 1
    assert result.stats["tool_failures"] == 1


def test_autopilot_ending_in_task_complete(e2e: E2E) -> None:
    result = e2e.run("autopilot")
    cli_ok(result)
    tree = result.tree
    tree.check_well_formed()
    (root,) = tree.roots()
    check_root(result, root, mode="autopilot", outcome="completed")
    assert root.status == "UNSET"
    assert [name for name, _ in root.events] == ["copilot.task_complete"]
    first, second = turns_of(tree, root)
    assert [s.name for s in tree.children(first)] == ["chat gpt-4.1", "execute_tool bash"]
    assert [s.name for s in tree.children(second)] == ["chat gpt-4.1", "execute_tool task_complete"]
    (complete,) = [e for e in result.events() if e["type"] == "session.task_complete"]
    assert complete["data"]["success"] is True
    assert root.start_ns <= int(_ns(complete["timestamp"])) <= root.end_ns
    assert_tasks(result.metrics, completed=1)
    assert result.metrics.series("copilot.tasks", copilot__mode="autopilot")
    assert result.stats["outcomes"]["completed"] == 1


def test_autopilot_continuation_nudge_stays_in_the_task(e2e: E2E) -> None:
    """The model stops without task_complete; the CLI nudges it on with a continuation message
    (a new interactionId). The bridge keeps it in the task's one trace."""
    result = e2e.run("autopilot_nudge")
    cli_ok(result)
    messages = main_events(result, "user.message")
    assert [m["data"].get("isAutopilotContinuation", False) for m in messages] == [False, True]
    assert messages[0]["data"]["interactionId"] != messages[1]["data"]["interactionId"]
    tree = result.tree
    tree.check_well_formed()
    (root,) = tree.roots()  # one task, one trace
    check_root(result, root, mode="autopilot", outcome="completed")
    assert root.attrs["copilot.interaction.id"] == messages[0]["data"]["interactionId"]
    assert root.attrs["copilot.user_messages"] == 2
    assert root.attrs["copilot.autopilot.continuations"] == 1
    assert [name for name, _ in root.events] == [
        "copilot.autopilot.continuation",
        "copilot.task_complete",
    ]
    first, second = turns_of(tree, root)
    assert first.attrs["copilot.interaction.id"] == messages[0]["data"]["interactionId"]
    assert second.attrs["copilot.interaction.id"] == messages[1]["data"]["interactionId"]
    assert [s.name for s in tree.children(first)] == ["chat gpt-4.1"]
    assert [s.name for s in tree.children(second)] == ["chat gpt-4.1", "execute_tool task_complete"]

    metrics = result.metrics
    assert_tasks(metrics, completed=1)
    assert metrics.total("copilot.user_messages", copilot__continuation=False) == 1
    assert metrics.total("copilot.user_messages", copilot__continuation=True) == 1
    assert metrics.total("copilot.autopilot.continuations") == 1
    assert metrics.histogram("copilot.turns_per_message", copilot__mode="autopilot") == (1, 2)
    stats = result.stats
    assert (stats["user_messages"], stats["continuations"], stats["tasks"]) == (1, 1, 1)


def test_subagents_nested(e2e: E2E) -> None:
    """main -> task -> general-purpose -> task -> general-purpose -> bash."""
    result = e2e.run("subagent_nested")
    cli_ok(result)
    tree = result.tree
    tree.check_well_formed()
    (root,) = tree.roots()
    check_root(result, root, mode="interactive", outcome="no_signal")
    (bash,) = tree.named("execute_tool bash")
    chain = [label(s) for s in reversed(tree.ancestors(bash))]
    assert chain == [
        "invoke_agent copilot",
        "turn #1",
        "execute_tool task",
        "invoke_agent general-purpose",
        "turn #1",
        "execute_tool task",
        "invoke_agent general-purpose",
        "turn #1",
    ]
    started = {
        e["data"]["toolCallId"]: e for e in result.events() if e["type"] == "subagent.started"
    }
    agents = tree.named("invoke_agent general-purpose")
    assert len(agents) == len(started) == 2
    for agent in agents:
        spawn = tree.parent(agent)
        assert spawn is not None and spawn.name == "execute_tool task"
        call = spawn.attrs["gen_ai.tool.call.id"]
        assert agent.attrs["gen_ai.tool.call.id"] == call
        assert agent.attrs["copilot.agent.id"] == started[call]["agentId"]
        assert agent.status == "UNSET"
        assert len(turns_of(tree, agent)) == 2
        for turn in turns_of(tree, agent):
            assert len(tree.children(turn, "chat")) == 1
    assert len(turns_of(tree, root)) == 2

    metrics = result.metrics
    assert metrics.total("copilot.turns", copilot__agent__type="main") == 2
    assert metrics.total("copilot.turns", copilot__agent__type="subagent") == 4
    assert (
        metrics.total("copilot.tool.calls", gen_ai__tool__name="task", copilot__agent__type="main")
        == 1
    )
    assert (
        metrics.total(
            "copilot.tool.calls", gen_ai__tool__name="task", copilot__agent__type="subagent"
        )
        == 1
    )
    assert (
        metrics.total(
            "copilot.tool.calls", gen_ai__tool__name="bash", copilot__agent__type="subagent"
        )
        == 1
    )
    # turns per message counts the main agent only; sub-agent prompts are not user messages
    assert metrics.histogram("copilot.turns_per_message") == (1, 2)
    assert metrics.total("copilot.user_messages") == 1
    assert (
        metrics.histogram("gen_ai.invoke_agent.duration", gen_ai__agent__name="general-purpose")[0]
        == 2
    )
    assert result.stats["turns"] == 6 and result.stats["llm_calls"] == 6


def test_subagents_in_parallel(e2e: E2E) -> None:
    result = e2e.run("subagent_parallel")
    cli_ok(result)
    tree = result.tree
    tree.check_well_formed()
    (root,) = tree.roots()
    first_turn = turns_of(tree, root)[0]
    tasks = tree.children(first_turn, "execute_tool task")
    assert len(tasks) == 2
    agents = [a for t in tasks for a in tree.children(t, "invoke_agent")]
    assert [a.name for a in agents] == ["invoke_agent general-purpose"] * 2
    # both ran at the same time; their events interleave in the one log
    assert max(a.start_ns for a in agents) < min(a.end_ns for a in agents)
    assert len({a.attrs["copilot.agent.id"] for a in agents}) == 2
    tools = sorted(
        s.attrs["gen_ai.tool.name"]
        for a in agents
        for turn in turns_of(tree, a)
        for s in tree.children(turn, "execute_tool")
    )
    assert tools == ["bash", "view"]
    for agent in agents:
        turns = turns_of(tree, agent)
        assert len(turns) == 2
        assert all(len(tree.children(t, "chat")) == 1 for t in turns)
        # every span below a sub-agent belongs to it: its call id chain leads to its task call
        below = [s for s in tree.spans if agent in tree.ancestors(s)]
        assert len(below) == 5  # 2 turns, 2 chats, 1 tool
    assert result.metrics.total("copilot.tool.calls", gen_ai__tool__name="task") == 2
    assert result.metrics.total("copilot.turns", copilot__agent__type="subagent") == 4


def test_provider_http_500_is_a_session_error(e2e: E2E) -> None:
    result = e2e.run("provider_error")
    cli_ok(result, code=1)  # the CLI gives up after its retries and exits 1
    posts = [r for r in result.run.requests if r.method == "POST"]
    assert len(posts) == 6 and {r.status for r in posts} == {500}  # 1 call + 5 retries
    tree = result.tree
    tree.check_well_formed()
    assert tree.outline() == ["invoke_agent copilot", "  turn #1"]  # no answer, no chat span
    (root,) = tree.roots()
    check_root(result, root, mode="interactive", outcome="error")
    assert root.status == "ERROR"
    assert root.attrs["error.type"] == "query"
    ((name, attributes),) = root.events
    assert name == "copilot.session.error"
    assert attributes["error.type"] == "query"
    assert attributes["copilot.error.status_code"] == 500

    metrics = result.metrics
    assert_tasks(metrics, error=1)
    assert (
        metrics.total("copilot.session.errors", error__type="query", copilot__agent__type="main")
        == 1
    )
    assert metrics.histogram("gen_ai.client.inference.operation.input_tokens") == (0, 0)
    assert result.stats["outcomes"]["error"] == 1 and result.stats["llm_calls"] == 0


def test_abort_during_a_slow_tool(e2e: E2E) -> None:
    """SIGINT to `copilot -p` while `sleep 30` runs: the CLI writes `abort` and exits 0; the tool
    never completes."""
    result = e2e.run("abort")
    cli_ok(result)
    (run,) = result.run.runs
    assert run.seconds < 25, "the CLI did not stop at the interrupt"
    kinds = [e["type"] for e in result.events()]
    assert "abort" in kinds and "tool.execution_complete" not in kinds
    order = [k for k in kinds if k in ("abort", "assistant.turn_end")]
    tree = result.tree
    tree.check_well_formed()
    (root,) = tree.roots()
    check_root(result, root, mode="interactive", outcome="aborted")
    assert root.status == "ERROR"
    assert root.attrs["error.type"] == "aborted"
    aborts = [e for e in result.events() if e["type"] == "abort"]
    # one, or (seen on 1.0.81) two 3 ms apart, user_abort then user_initiated: the first ends the
    # task, the second finds nothing open
    assert len(aborts) in (1, 2)
    abort = aborts[0]
    assert root.attrs["copilot.abort.reason"] == abort["data"]["reason"]
    (tool,) = tree.named("execute_tool bash")
    assert tool.end_ns <= root.end_ns
    assert (tool.end_ns - tool.start_ns) / 1e9 < 20  # ended at the abort, not after the sleep
    # README: "An abort ends every open span with error.type=aborted": the interrupted tool too,
    # whichever of turn_end and abort the CLI writes first (both orders occur).
    assert (tool.status, tool.attrs.get("error.type")) == ("ERROR", "aborted"), (
        f"interrupted tool not marked aborted; log order {order}, attributes {tool.attrs}"
    )

    metrics = result.metrics
    assert_tasks(metrics, aborted=1)
    assert metrics.total("copilot.aborts", copilot__abort__reason=abort["data"]["reason"]) == 1
    assert (
        metrics.total(
            "copilot.tool.calls", gen_ai__tool__name="bash", copilot__tool__outcome="aborted"
        )
        == 1
    )
    assert result.stats["outcomes"]["aborted"] == 1


# --- every scenario -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", CLI_SCENARIOS)
def test_every_model_answer_and_tool_call_is_one_span(e2e: E2E, name: str) -> None:
    """What the fake model handed out (its response ids = the CLI's apiCallIds, its token
    counts, its tool call ids) is exactly what the chat and execute_tool spans carry."""
    result = e2e.run(name)
    tree = result.tree
    answered = {r.response_id: r for r in result.run.requests if r.response_id}
    chats = {s.attrs["gen_ai.response.id"]: s for s in tree.named("chat")}
    assert len(chats) == len(tree.named("chat"))
    assert set(chats) == set(answered)
    for response_id, chat in chats.items():
        usage = answered[response_id].usage
        if USAGE_RECORDS:
            assert chat.attrs["gen_ai.usage.input_tokens"] == usage["prompt_tokens"]
            assert chat.attrs["gen_ai.usage.output_tokens"] == usage["completion_tokens"]
            assert chat.attrs["gen_ai.usage.cache_read.input_tokens"] == usage["cached_tokens"]
        else:  # the log has no usage records: the span says its tokens are unknown
            assert chat.attrs["copilot.usage.unknown"] is True
            assert not [k for k in chat.attrs if k.startswith("gen_ai.usage.")]
        assert tree.parent(chat).name == "turn"
    asked = {call for r in answered.values() for call in r.tool_call_ids}
    tools = {s.attrs["gen_ai.tool.call.id"]: s for s in tree.named("execute_tool")}
    assert set(tools) == asked
    for tool in tools.values():
        assert tree.parent(tool).name == "turn"
    assert len(tree.named("turn")) == sum(
        e["type"] == "assistant.turn_start" for e in result.events()
    )
    assert result.stats["llm_calls"] == len(answered)
    assert result.stats["tool_calls"] == len(asked)


@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_run_following_the_growing_log_exports_what_replay_does(e2e: E2E, name: str) -> None:
    """`otel-bridge run` started before the CLI and followed the log as it grew: the same spans
    (ids, parents, times, status, attributes, events, links) and the same mission metrics."""
    result = e2e.run(name)
    assert result.followed is not None
    assert result.follower_exit == 0, result.followed.stderr
    assert "Traceback" not in result.followed.stderr
    live = sorted(s.key() for s in result.followed.spans)
    replayed = sorted(s.key() for s in result.replayed.spans)
    assert len(live) == len(replayed), "run exported a different number of spans"
    assert live == replayed
    for metric in MISSION:
        run_points = _series(result.followed.metrics, metric)
        replay_points = _series(result.replayed.metrics, metric)
        assert run_points == replay_points, metric


def _series(metrics: Metrics, name: str) -> dict[str, tuple]:
    return {
        json.dumps(p.attributes, sort_keys=True): (p.value, p.count, p.sum)
        for p in metrics.series(name)
        if p.value or p.count
    }


def _ns(timestamp: str) -> int:
    from datetime import datetime

    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
