"""Real CLI 1.0.102 captures of tools cut off by SIGKILL and resumed, refused by permissions,
and served by an MCP server (tests/fixtures/crash_resume, permission_denied, mcp_tools;
docs/recorded-captures.md). What each span must say is computed from the raw events here, not
copied from the bridge's output. The counts every capture must match (a turn per turn_start, a
tool per execution_start, ...) are checked for these logs too, by the parametrized tests of
test_assembler_captures.py."""

from __future__ import annotations

import os
from pathlib import Path

from otel_bridge import Assembler, JsonLinesDecoder, StatusCode
from otel_bridge.checkpoint._store import CheckpointStore
from otel_bridge.decode._events import parse_timestamp_ns
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import Tailer, TailOptions
from tests import paths
from tests.recorder import Recorder
from tests.spantree import assemble_file, by_name, check_invariants
from tests.unit.assembler.test_assembler_captures import raw_events

FIXTURES = paths.FIXTURES
CRASH = FIXTURES / "crash_resume" / "events.jsonl"


def ns(event: dict) -> int:
    return parse_timestamp_ns(event["timestamp"])


def metrics_of(path: Path) -> Recorder:
    """The metric observations of a replay of `path`."""
    recorder = Recorder()
    assembler = Assembler(metrics=recorder)
    decoder = JsonLinesDecoder(str(path))
    assembler.feed(str(path), decoder.feed(path.read_bytes()) + decoder.finish(), path.parent.name)
    assembler.end_stream(str(path))
    return recorder


def killed_segment_end(events: list[dict]) -> tuple[int, int]:
    """(index of the session.resume that follows a segment without shutdown, the time of that
    segment's last event)."""
    for index, event in enumerate(events):
        if event["type"] == "session.resume" and events[index - 1]["type"] != "session.shutdown":
            return index, ns(events[index - 1])
    raise AssertionError("no killed segment in this log")


def test_crash_resume_log_is_what_the_scenario_says() -> None:
    """The recording itself: a tool started, no completion nor turn_end nor shutdown before the
    resume; after it, the resumed CLI's interrupted completion and its warning."""
    events = raw_events(CRASH)
    resume, _ = killed_segment_end(events)
    killed = events[:resume]
    assert [e["type"] for e in killed].count("tool.execution_start") == 1
    assert not any(
        e["type"] in ("tool.execution_complete", "assistant.turn_end", "session.shutdown")
        for e in killed
    )
    after = [e["type"] for e in events[resume + 1 :]]
    assert after[:2] == ["tool.execution_complete", "session.warning"]


def test_killed_tool_fails_as_interrupted_at_the_end_of_the_killed_segment() -> None:
    events = raw_events(CRASH)
    resume, killed_end = killed_segment_end(events)
    interrupted = {
        e["data"]["toolCallId"]: e
        for e in events[resume:]
        if e["type"] == "tool.execution_complete"
        and (e["data"].get("error") or {}).get("code") == "interrupted"
    }
    assert interrupted
    warnings = [e for e in events[resume:] if e["type"] == "session.warning"]
    spans = assemble_file(CRASH)
    check_invariants(spans)
    for call_id in interrupted:
        (tool,) = [s for s in spans if s.attributes.get("gen_ai.tool.call.id") == call_id]
        assert tool.status is StatusCode.ERROR
        assert tool.attributes["error.type"] == "interrupted"
        assert tool.end_ns == killed_end
        (root,) = [s for s in by_name(spans, "invoke_agent copilot") if s.trace_id == tool.trace_id]
        assert root.end_ns == killed_end
        assert root.attributes["copilot.end_reason"] == "segment_end"
        assert [
            (e.name, e.attributes["copilot.warning.type"], e.timestamp_ns) for e in root.events
        ] == [("copilot.session.warning", w["data"]["warningType"], ns(w)) for w in warnings]
    # the resumed message is a trace of its own that ended normally
    resumed = [s for s in by_name(spans, "invoke_agent copilot") if s.start_ns > killed_end]
    assert len(resumed) == 1
    assert resumed[0].attributes["copilot.end_reason"] == "loop_end"


def test_killed_tool_is_counted_once_as_a_failed_call() -> None:
    events = raw_events(CRASH)
    recorder = metrics_of(CRASH)
    spans = assemble_file(CRASH)
    completions = [e for e in events if e["type"] == "tool.execution_complete"]
    failed = sum(1 for e in completions if e["data"].get("success") is False)
    assert sum(recorder.values("copilot.tool.calls", **{"copilot.tool.outcome": "error"})) == (
        failed
    )
    assert (
        sum(recorder.values("copilot.tool.calls"))
        == len(by_name(spans, "execute_tool"))
        == (sum(1 for e in events if e["type"] == "tool.execution_start"))
    )


def follow(tmp: Path, pieces: list[bytes], store: Path | None = None) -> list:
    """`run`'s follower reading the log as it grew: each piece, then a poll. With `store`, a
    new follower (a restarted `run`) per piece, resuming from the checkpoint."""
    log = tmp / "state" / CRASH.parent.name / "events.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    out: list = []
    tailer = None
    for piece in pieces:
        with log.open("ab") as handle:
            handle.write(piece)
        if tailer is None or store is not None:
            if tailer is not None:
                tailer.save_checkpoints()
                tailer.close()
            tailer = Tailer(
                [tmp / "state"],
                StreamFeeder(Assembler(), out.extend),
                TailOptions(rescan_seconds=0, watch=False),
                clock=lambda: os.path.getmtime(log),
                checkpoints=CheckpointStore(store) if store is not None else None,
            )
            tailer.start()
        tailer.poll_once()
    assert tailer is not None
    tailer.close()
    return out


def test_run_gives_the_killed_tool_once_with_the_replay_s_id(tmp_path: Path) -> None:
    """`run` saw the killed process's events, then (later) the resume: the tool left open is
    closed after the resume, once, as replay does; the killed interaction is not exported
    before then."""
    data = CRASH.read_bytes()
    resume, _ = killed_segment_end(raw_events(CRASH))
    lines = data.splitlines(keepends=True)
    killed, rest = b"".join(lines[:resume]), b"".join(lines[resume:])
    replay = sorted(assemble_file(CRASH), key=lambda s: s.span_id)
    for store in (None, tmp_path / "checkpoints"):
        out = follow(tmp_path / ("restart" if store else "live"), [killed, rest], store)
        tools = [s for s in out if s.name == "execute_tool bash"]
        assert len(tools) == 1
        assert tools[0].attributes["error.type"] == "interrupted"
        # A restarted `run` reads the open interaction again from its first event: spans
        # finished before the restart (its chat span) may come twice, identical (at least once).
        unique = {s.span_id: s for s in out}
        assert all(unique[s.span_id] == s for s in out)
        assert len(out) == len(replay) if store is None else len(out) >= len(replay)
        assert sorted(unique.values(), key=lambda s: s.span_id) == replay


def test_permission_denials_are_failed_tool_spans_with_the_decision() -> None:
    path = FIXTURES / "permission_denied" / "events.jsonl"
    events = raw_events(path)
    decided = {
        e["data"]["toolCallId"]: e["data"] for e in events if e["type"] == "permission.completed"
    }
    denied = {
        e["data"]["toolCallId"]
        for e in events
        if e["type"] == "tool.execution_complete"
        and (e["data"].get("error") or {}).get("code") == "denied"
    }
    assert len(denied) == 2 and len(decided) == 1  # one by a rule, one by the permission check
    spans = assemble_file(path)
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in by_name(spans, "execute_tool")}
    for call_id, tool in tools.items():
        if call_id not in denied:
            assert tool.status is StatusCode.UNSET
            assert "copilot.permission.decision" not in tool.attributes
            continue
        assert tool.status is StatusCode.ERROR
        assert tool.attributes["error.type"] == "denied"
        assert tool.attributes["copilot.permission.decision"] == "denied"
        if call_id in decided:
            assert (
                tool.attributes["copilot.permission.result"] == decided[call_id]["result"]["kind"]
            )
            assert (
                tool.attributes["copilot.permission.decision_source"]
                == decided[call_id]["decisionSource"]
            )
        else:
            assert "copilot.permission.decision_source" not in tool.attributes


def test_permission_wait_is_in_the_histogram() -> None:
    path = FIXTURES / "permission_denied" / "events.jsonl"
    events = raw_events(path)
    asked = {e["data"]["requestId"]: ns(e) for e in events if e["type"] == "permission.requested"}
    waits = sorted(
        (ns(e) - asked[e["data"]["requestId"]]) / 1e9
        for e in events
        if e["type"] == "permission.completed"
    )
    recorder = metrics_of(path)
    assert sorted(recorder.values("copilot.permission.wait.duration")) == waits


def test_mcp_tools_carry_the_mcp_conventions_and_the_crash_is_the_error() -> None:
    path = FIXTURES / "mcp_tools" / "events.jsonl"
    events = raw_events(path)
    starts = {
        e["data"]["toolCallId"]: e["data"]
        for e in events
        if e["type"] == "tool.execution_start" and e["data"].get("mcpServerName")
    }
    completions = {
        e["data"]["toolCallId"]: e["data"] for e in events if e["type"] == "tool.execution_complete"
    }
    assert len(starts) == 2
    spans = assemble_file(path)
    for call_id, start in starts.items():
        (tool,) = [s for s in spans if s.attributes.get("gen_ai.tool.call.id") == call_id]
        assert tool.name == f"execute_tool {start['toolName']}"
        assert tool.attributes["mcp.method.name"] == "tools/call"
        assert tool.attributes["copilot.tool.mcp_server"] == start["mcpServerName"]
        assert tool.attributes["copilot.tool.mcp_tool"] == start["mcpToolName"]
        assert tool.attributes["copilot.tool.mcp_transport"] == start["mcpTransport"] == "stdio"
        assert tool.attributes["network.transport"] == "pipe"
        assert tool.attributes["gen_ai.tool.type"] == "extension"
        done = completions[call_id]
        if done["success"]:
            assert tool.status is StatusCode.UNSET
        else:  # the server exited mid-call
            assert "transport closed" in done["error"]["message"]
            assert tool.status is StatusCode.ERROR
            assert tool.attributes["error.type"] == done["error"]["code"]
            assert (
                tool.attributes["copilot.tool.failure_category"]
                == done["toolTelemetry"]["properties"]["failure_category"]
            )
