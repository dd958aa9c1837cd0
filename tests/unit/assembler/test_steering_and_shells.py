"""Which task (trace) an event belongs to: steering and queued messages, and background shells
whose notification resumes the loop of their task after its final answer.

Hand-built logs (tests/builder.py) for the rules, the real CLI 1.0.102 captures
tests/fixtures/sdk_steering and tests/fixtures/sdk_background_shell (docs/recorded-captures.md)
for what the CLI writes, their live SDK stream for the live path, and the follower driven with
a fake clock for `run`. Expected values are computed from the raw events, not from the bridge.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from otel_bridge import Assembler, AssemblerConfig, JsonLinesDecoder, SpanRecord
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import Tailer, TailOptions
from tests import paths, spantree
from tests.builder import Log
from tests.spantree import by_name, check_invariants, children, outline, turns

FIXTURES = paths.FIXTURES
ROOT = "invoke_agent copilot"


def assemble(log: Log, **config: Any) -> list[SpanRecord]:
    return spantree.assemble(log, "s", log.session, config=AssemblerConfig(**config))


def assemble_path(path: Path) -> list[SpanRecord]:
    return spantree.assemble(path, "s", "s")


def raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def ns(timestamp: str) -> int:
    """An event's ISO timestamp in ns (milliseconds are all the CLI writes)."""
    import datetime as dt

    stamp = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return int(stamp.timestamp()) * 1_000_000_000 + stamp.microsecond * 1_000


def within_roots(spans: list[SpanRecord]) -> None:
    """Every span lies within its trace root's time range, and each trace has one root."""
    roots = {s.trace_id: s for s in by_name(spans, ROOT)}
    assert len(roots) == len(by_name(spans, ROOT))
    for span in spans:
        root = roots[span.trace_id]
        assert root.start_ns <= span.start_ns <= span.end_ns <= root.end_ns, span.name


# --- hand-built logs ------------------------------------------------------------------------


def steering_log(steer_interaction: str = "i1") -> Log:
    """A slow tool; a steering message during the next turn; then a second (queued) task."""
    log = Log()
    log.start()
    log.user(interaction="i1", delivery="idle")
    log.simple_turn("0", "u1", [("c1", "bash")])
    log.turn("1")
    log.add(
        "user.message",
        content="also this",
        interactionId=steer_interaction,
        turnId="1",
        delivery="steering",
    )
    log.usage("u2")
    log.message(turn="1")
    log.turn_end("1")
    log.user(interaction="i2", delivery="queued")
    log.simple_turn("0", "u3", interaction="i2")
    return log


def test_a_steering_message_joins_the_running_task_without_cutting_its_turn() -> None:
    spans = assemble(steering_log())
    check_invariants(spans)
    within_roots(spans)
    first, second = by_name(spans, ROOT)
    assert len({s.trace_id for s in spans}) == 2
    assert first.attributes["copilot.user_messages"] == 2
    assert first.attributes["copilot.steering_messages"] == 1
    assert first.attributes["copilot.turns"] == 2
    (steer,) = [e for e in first.events if e.name == "copilot.steering"]
    assert steer.attributes == {"copilot.interaction.id": "i1", "copilot.turn.id": "1"}
    (turn2,) = turns(spans, 2)
    assert "copilot.incomplete" not in turn2.attributes  # the running turn was not cut
    assert [c.name for c in children(spans, turn2)] == ["chat gpt-4.1"]
    assert turn2.trace_id == first.trace_id
    assert second.attributes["copilot.interaction.id"] == "i2"  # the queued one: a new task
    assert "copilot.steering_messages" not in second.attributes


def test_a_steering_message_of_another_interaction_is_a_new_task() -> None:
    spans = assemble(steering_log(steer_interaction="other"))
    assert len(by_name(spans, ROOT)) == 3
    assert not any("copilot.steering_messages" in s.attributes for s in by_name(spans, ROOT))


def test_user_messages_are_counted_by_delivery() -> None:
    from tests.recorder import Recorder

    recorder = Recorder()
    assembler = Assembler(metrics=recorder)
    assembler.feed("s", steering_log().events(), "sess-1")
    assembler.end_stream("s")
    labels = [
        (a["copilot.delivery"], a["copilot.continuation"])
        for _, n, _, a, _ in recorder.points
        if n == "copilot.user_messages"
    ]
    assert labels == [("idle", False), ("steering", False), ("queued", False)]
    assert len(recorder.values("copilot.turns_per_message")) == 2  # two tasks, not three


def shell_log(gap_ms: int = 3_000, result: str | None = None, detach: bool = False) -> Log:
    """An async bash, the final answer, then (`gap_ms` later) the shell's notification, the
    CLI's read_bash outside any turn and a new turn "0" under the old interactionId."""
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("c1", "bash")], turn="0")
    arguments: dict[str, Any] = {"command": "sleep 3", "mode": "async", "shellId": "job"}
    if detach:
        arguments["detach"] = True
    log.add("tool.execution_start", toolCallId="c1", toolName="bash", arguments=arguments)
    content = result or "<command started in background with shellId: job>"
    log.tool_done("c1", result={"content": content})
    log.turn_end("0")
    log.simple_turn("1", "u2")  # the final answer
    log.wait(gap_ms)
    log.add(
        "system.notification",
        content="<system_notification>done</system_notification>",
        kind={"type": "shell_completed", "shellId": "job", "exitCode": 0},
    )
    log.add(
        "assistant.message",
        messageId="m-read",
        content="",
        toolRequests=[{"toolCallId": "r1", "name": "read_bash", "arguments": {}}],
    )
    log.add("tool.execution_start", toolCallId="r1", toolName="read_bash", arguments={})
    log.tool_done("r1")
    log.simple_turn("0", "u3")
    return log


def test_a_background_shell_keeps_its_task_open_until_the_resumed_loop_ends() -> None:
    log = shell_log()
    spans = assemble(log)
    check_invariants(spans)
    within_roots(spans)
    (root,) = by_name(spans, ROOT)
    assert root.end_ns == log.now  # the resumed turn's turn_end, the last event
    assert root.attributes["copilot.end_reason"] == "loop_end"
    assert "copilot.incomplete" not in root.attributes
    assert root.attributes["copilot.turns"] == 3
    (read,) = by_name(spans, "execute_tool read_bash")
    assert read.parent_span_id == root.span_id  # no turnId: directly under its agent
    (done,) = [e for e in root.events if e.name == "copilot.shell_completed"]
    assert done.attributes == {"copilot.shell.id": "job", "copilot.tool.exit_code": 0}


def test_a_sync_shell_moved_to_the_background_is_waited_for_too() -> None:
    result = "<command with shellId: job moved to background by the user. You will be notified>"
    spans = assemble(shell_log(result=result))
    assert len(by_name(spans, ROOT)) == 1
    within_roots(spans)


def test_a_shell_that_finished_in_its_call_is_not_waited_for() -> None:
    """A plain result: the task ends at its final answer; the read_bash is late work."""
    spans = assemble(shell_log(result="bg-done\n<shellId: job completed with exit code 0>"))
    (root,) = by_name(spans, ROOT)
    (final,) = turns(spans, 2)
    assert root.end_ns == final.end_ns


def test_a_detached_shell_is_not_waited_for() -> None:
    spans = assemble(shell_log(detach=True))
    (root,) = by_name(spans, ROOT)
    assert root.end_ns == turns(spans, 2)[0].end_ns


def test_past_the_background_wait_the_task_ends_at_its_last_event() -> None:
    """The notification comes 20 s after the final answer, the wait is 10 s: the task ended
    at its final answer; the resumed work still goes into its trace (late work)."""
    log = shell_log(gap_ms=20_000)
    spans = assemble(log, background_wait_seconds=10)
    (root,) = by_name(spans, ROOT)
    (final,) = turns(spans, 2)
    assert root.end_ns == final.end_ns
    assert root.attributes["copilot.end_reason"] == "loop_end"
    assert "copilot.incomplete" not in root.attributes
    assert {s.trace_id for s in spans} == {root.trace_id}
    assert by_name(spans, "execute_tool read_bash")[0].parent_span_id == root.span_id
    waited = assemble(log, background_wait_seconds=30)
    assert by_name(waited, ROOT)[0].end_ns == log.now


def test_without_a_notification_the_task_ends_at_its_final_answer() -> None:
    log = shell_log()
    cut = next(i for i, e in enumerate(log.raw) if e["type"] == "system.notification")
    log.raw = log.raw[:cut]
    spans = assemble(log)
    (root,) = by_name(spans, ROOT)
    assert root.end_ns == turns(spans, 2)[0].end_ns
    assert root.attributes["copilot.end_reason"] == "loop_end"
    assert "copilot.incomplete" not in root.attributes


def test_a_new_message_while_a_shell_runs_ends_the_task_complete() -> None:
    log = shell_log()
    cut = next(i for i, e in enumerate(log.raw) if e["type"] == "system.notification")
    log.raw = log.raw[:cut]
    log.user(interaction="i2")
    log.simple_turn("0", "u9", interaction="i2")
    first, _ = by_name(assemble(log), ROOT)
    assert first.attributes["copilot.end_reason"] == "next_message"
    assert "copilot.incomplete" not in first.attributes


# --- run: the follower must end a waiting task where replay does ----------------------------


def follow(path: Path, wait: float) -> tuple[Tailer, list[SpanRecord], list[float]]:
    out: list[SpanRecord] = []
    clock = [0.0]
    tailer = Tailer(
        [path.parent.parent],
        StreamFeeder(Assembler(AssemblerConfig(background_wait_seconds=wait)), out.extend),
        TailOptions(rescan_seconds=0, idle_timeout_seconds=5, backfill=True),
        clock=lambda: clock[0],
    )
    return tailer, out, clock


def run_in_two_parts(tmp_path: Path, log: Log, quiet_s: float, wait: float) -> list[SpanRecord]:
    """`run` reads the log up to the notification, stays quiet for `quiet_s` seconds of wall
    clock (counted from the last event), then reads the rest."""
    data = log.jsonl()
    cut = data.index(b'"system.notification"')
    cut = data.rindex(b"\n", 0, cut) + 1
    path = tmp_path / "sess-1" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(data[:cut])
    last_ns = max(ns(e["timestamp"]) for e in raw(path))
    tailer, out, clock = follow(path, wait)
    clock[0] = last_ns / 1e9
    tailer.start()
    tailer.poll_once()
    assert not by_name(out, ROOT)  # waiting for its shell: the root is not out yet
    clock[0] = last_ns / 1e9 + quiet_s  # well past --idle-timeout (5 s)
    tailer.poll_once()
    with path.open("ab") as handle:
        handle.write(data[cut:])
    clock[0] = ns(log.raw[-1]["timestamp"]) / 1e9
    tailer.poll_once()
    tailer.close()
    return out


def test_run_waits_for_a_shell_past_its_idle_timeout_and_gives_replays_spans(
    tmp_path: Path,
) -> None:
    log = shell_log(gap_ms=60_000)
    spans = run_in_two_parts(tmp_path, log, quiet_s=50, wait=900)
    assert sorted(spans, key=lambda s: s.span_id) == sorted(
        assemble(log, background_wait_seconds=900), key=lambda s: s.span_id
    )
    assert by_name(spans, ROOT)[0].end_ns == log.now


def test_run_ends_a_task_past_the_background_wait_as_replay_does(tmp_path: Path) -> None:
    log = shell_log(gap_ms=60_000)
    spans = run_in_two_parts(tmp_path, log, quiet_s=45, wait=30)
    replayed = assemble(log, background_wait_seconds=30)
    assert sorted(spans, key=lambda s: s.span_id) == sorted(replayed, key=lambda s: s.span_id)
    (root,) = by_name(spans, ROOT)
    assert root.end_ns == turns(spans, 2)[0].end_ns


def test_expire_ends_a_waiting_task_only_past_the_background_wait() -> None:
    from otel_bridge.assembler import SessionAssembler

    log = shell_log()
    cut = next(i for i, e in enumerate(log.raw) if e["type"] == "system.notification")
    session = SessionAssembler("sess-1")
    for event in log.events()[:cut]:
        session.feed(event)
    assert session.waiting
    last_ns = ns(log.raw[cut - 1]["timestamp"])
    assert session.expire(last_ns + 10**9) == []  # 1 s later: still waiting
    assert session.has_open_interaction
    (root,) = by_name(session.expire(last_ns + 901 * 10**9), ROOT)  # past 900 s: ended
    assert root.end_ns == last_ns


def test_run_does_not_end_a_waiting_task_while_its_log_is_still_unread(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Catching up a months-old log in small chunks: at the poll that has read the final
    answer but not yet the notification, the clock is far past the wait, but the task must
    not end there."""
    from otel_bridge.sources.tail import _reading

    monkeypatch.setattr(_reading, "_READ_LIMIT", 512)
    log = shell_log()
    path = tmp_path / "sess-1" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(log.jsonl())
    tailer, out, clock = follow(path, 900)
    clock[0] = os.path.getmtime(path)  # months after the events
    tailer.start()
    for _ in range(200):
        if not tailer.poll_once():
            break
    tailer.poll_once()
    tailer.close()
    assert sorted(out, key=lambda s: s.span_id) == sorted(assemble(log), key=lambda s: s.span_id)
    assert by_name(out, ROOT)[0].end_ns == log.now


# --- the real CLI -------------------------------------------------------------------------


def test_capture_steering_and_queued_messages() -> None:
    path = FIXTURES / "sdk_steering" / "events.jsonl"
    events = raw(path)
    spans = assemble_path(path)
    check_invariants(spans)
    within_roots(spans)
    messages = [e for e in events if e["type"] == "user.message" and "agentId" not in e]
    steering = [e for e in messages if e["data"].get("delivery") == "steering"]
    queued = [e for e in messages if e["data"].get("delivery") == "queued"]
    assert len(steering) == len(queued) == 1
    roots = by_name(spans, ROOT)
    assert len(roots) == len(messages) - len(steering) == 2
    first = next(
        r
        for r in roots
        if r.attributes["copilot.interaction.id"] == steering[0]["data"]["interactionId"]
    )
    assert first.attributes["copilot.steering_messages"] == 1
    assert first.attributes["copilot.user_messages"] == 2
    (event,) = [e for e in first.events if e.name == "copilot.steering"]
    assert event.timestamp_ns == ns(steering[0]["timestamp"])
    # the turn it was sent in stays one turn, in the task's trace, with its LLM call
    turn_starts = [
        e
        for e in events
        if e["type"] == "assistant.turn_start"
        and e["data"]["interactionId"] == steering[0]["data"]["interactionId"]
    ]
    running = max(
        (e for e in turn_starts if ns(e["timestamp"]) <= ns(steering[0]["timestamp"])),
        key=lambda e: ns(e["timestamp"]),
    )
    assert running["data"]["turnId"] == steering[0]["data"]["turnId"]
    first_turns = [s for s in turns(spans) if s.trace_id == first.trace_id]
    assert len(first_turns) == len(turn_starts)
    (turn,) = [t for t in first_turns if t.start_ns == ns(running["timestamp"])]
    assert "copilot.incomplete" not in turn.attributes
    assert [c.name.split()[0] for c in children(spans, turn)] == ["chat"]
    second = next(r for r in roots if r is not first)
    assert second.attributes["copilot.interaction.id"] == queued[0]["data"]["interactionId"]
    assert second.start_ns == ns(queued[0]["timestamp"]) >= first.end_ns


def test_capture_background_shell_resumes_its_task() -> None:
    path = FIXTURES / "sdk_background_shell" / "events.jsonl"
    events = raw(path)
    spans = assemble_path(path)
    check_invariants(spans)
    within_roots(spans)
    assert outline(spans) == [
        "invoke_agent copilot",
        "  turn #1",
        "    chat gpt-4.1",
        "    execute_tool bash",
        "  turn #2",
        "    chat gpt-4.1",
        "  execute_tool read_bash",
        "  turn #3",
        "    chat gpt-4.1",
    ]
    (root,) = by_name(spans, ROOT)
    notification = next(e for e in events if e["type"] == "system.notification")
    # the turn after the notification: turnId "0" again, under the task's interactionId
    resumed = next(
        e
        for e in events
        if e["type"] == "assistant.turn_start"
        and ns(e["timestamp"]) > ns(notification["timestamp"])
    )
    assert resumed["data"]["turnId"] == "0"
    assert resumed["data"]["interactionId"] == root.attributes["copilot.interaction.id"]
    last_turn_end = max(ns(e["timestamp"]) for e in events if e["type"] == "assistant.turn_end")
    assert root.end_ns == last_turn_end
    (read,) = by_name(spans, "execute_tool read_bash")
    start = next(
        e for e in events if e["type"] == "tool.execution_start" and "turnId" not in e["data"]
    )
    assert read.attributes["gen_ai.tool.call.id"] == start["data"]["toolCallId"]
    assert read.parent_span_id == root.span_id
    (done,) = [e for e in root.events if e.name == "copilot.shell_completed"]
    assert done.attributes["copilot.shell.id"] == notification["data"]["kind"]["shellId"]


def live_spans(fixture: str) -> list[Any]:
    from copilot.generated.session_events import SessionEvent
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_bridge.sources import LiveBridge

    directory = FIXTURES / fixture
    session = raw(directory / "events.jsonl")[0]["data"]["sessionId"]
    exporter = InMemorySpanExporter()
    bridge = LiveBridge([exporter], environ={})
    for line in (directory / "live-events.jsonl").read_text().splitlines():
        bridge.on_event(SessionEvent.from_dict(json.loads(line)), session)
    bridge.close()
    return list(exporter.get_finished_spans())


@pytest.mark.sdk  # conftest.EXTRAS: the rest of the module runs without it
def test_the_live_stream_gives_the_logs_spans() -> None:
    """Same ids, parents and names, and the same task boundaries (roots' start and end)."""
    for fixture in ("sdk_steering", "sdk_background_shell"):
        path = FIXTURES / fixture / "events.jsonl"
        session = raw(path)[0]["data"]["sessionId"]
        assembler = Assembler()
        decoder = JsonLinesDecoder(str(path))
        logged = assembler.feed("s", decoder.feed(path.read_bytes()) + decoder.finish(), session)
        logged += assembler.end_stream("s")
        by_id = {s.span_id: s for s in logged}
        live = live_spans(fixture)
        assert {s.context.span_id for s in live} == set(by_id), fixture
        for span in live:
            record = by_id[span.context.span_id]
            assert span.name == record.name
            assert span.context.trace_id == record.trace_id
            assert (span.parent.span_id if span.parent else None) == record.parent_span_id
            if record.name == ROOT:
                assert (span.start_time, span.end_time) == (record.start_ns, record.end_ns)
                assert (
                    span.attributes["copilot.user_messages"]
                    == (record.attributes["copilot.user_messages"])
                )


def test_replay_takes_the_background_wait_from_the_command_line(tmp_path: Path) -> None:
    """`--background-wait` decides whether the shell's late work extends the task's root."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from otel_bridge.cli import main

    log = shell_log(gap_ms=60_000)
    path = tmp_path / "sess-1" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(log.jsonl())
    final_answer = ns(
        log.raw[next(i for i, e in enumerate(log.raw) if e["type"] == "system.notification") - 1][
            "timestamp"
        ]
    )
    ends = {}
    for wait in ("30", "900"):
        out = tmp_path / f"{wait}.jsonl"
        argv = ["replay", str(path), "--traces-file", str(out), "--no-progress"]
        assert main([*argv, "--background-wait", wait]) == 0
        for line in out.read_text().splitlines():
            request = json_format.Parse(line, ExportTraceServiceRequest())
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        if span.name == ROOT:
                            ends[wait] = span.end_time_unix_nano
    assert ends == {"30": final_answer, "900": log.now}


def test_a_steering_message_sent_as_its_task_stopped_still_joins_it() -> None:
    """The loop ended (the bridge closed the task) just as the user steered: the CLI runs the
    message under the task's interactionId, so its turn goes into that task's trace."""
    log = Log.asked()
    log.simple_turn("0", "u1")
    log.add("user.message", content="and", interactionId="i1", turnId="1", delivery="steering")
    log.simple_turn("1", "u2")
    spans = assemble(log)
    (root,) = by_name(spans, ROOT)
    assert {s.trace_id for s in spans} == {root.trace_id}
    (late,) = [s for s in turns(spans) if s.start_ns > root.end_ns]
    assert late.parent_span_id == root.span_id


def test_the_checkpoint_carries_the_previous_tasks_interaction_ids() -> None:
    """A restart of `run` between a task and a late steering message into it must place that
    message as a reading of the whole log does."""
    from otel_bridge.assembler import SessionAssembler

    log = Log.asked()
    log.simple_turn("0", "u1")
    cut = len(log.raw)
    log.add("user.message", content="and", interactionId="i1", turnId="1", delivery="steering")
    log.simple_turn("1", "u2")
    whole = assemble(log)
    before = SessionAssembler("sess-1")
    for event in log.events()[:cut]:
        before.feed(event)
    saved = json.loads(json.dumps(before.snapshot()))
    assert saved["previous_ids"] == ["i1"]
    after = SessionAssembler("sess-1")
    after.restore(saved)
    resumed: list[SpanRecord] = []
    for event in log.events()[cut:]:
        resumed.extend(after.feed(event))
    resumed.extend(after.end_of_input())
    whole_by_id = {s.span_id: s for s in whole}
    assert resumed and all(whole_by_id[s.span_id] == s for s in resumed)


def test_run_restarted_while_a_task_waits_gives_replays_spans(tmp_path: Path) -> None:
    """`run` stops after the final answer (the shell still running) and starts again from its
    checkpoint; the notification comes; the spans are those of a replay."""
    from otel_bridge.checkpoint._store import CheckpointStore

    log = shell_log(gap_ms=60_000)
    data = log.jsonl()
    cut = data.index(b'"system.notification"')
    cut = data.rindex(b"\n", 0, cut) + 1
    path = tmp_path / "state" / "sess-1" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(data[:cut])
    store = tmp_path / "bridge"
    last = ns(log.raw[-1]["timestamp"]) / 1e9
    out: list[SpanRecord] = []
    for part in (1, 2):
        tailer = Tailer(
            [path.parent.parent],
            StreamFeeder(Assembler(), out.extend),
            TailOptions(rescan_seconds=0, idle_timeout_seconds=5, backfill=True),
            clock=lambda: last,
            checkpoints=CheckpointStore(store),
        )
        tailer.start()
        tailer.poll_once()
        tailer.save_checkpoints()
        tailer.close()
        if part == 1:
            assert not by_name(out, ROOT)
            with path.open("ab") as handle:
                handle.write(data[cut:])
    replayed = {s.span_id: s for s in assemble(log)}
    assert {s.span_id for s in out} == set(replayed)
    for span in out:  # what was exported before the stop, and again after it, is identical
        assert span == replayed[span.span_id]


def test_run_says_once_that_a_stopped_task_waits_for_its_background_shell(
    tmp_path: Path, caplog
) -> None:
    """Its line comes only when the shell reports: until then the console would say nothing
    for up to the background wait, as if the bridge were stuck."""
    caplog.set_level("INFO", logger="otel_bridge.sources._tail")
    log = shell_log(gap_ms=60_000)
    spans = run_in_two_parts(tmp_path, log, quiet_s=50, wait=900)
    said = [r.getMessage() for r in caplog.records if "waiting up to" in r.getMessage()]
    assert said == [
        f"{tmp_path / 'sess-1' / 'events.jsonl'}: its task's agent loop stopped; "
        "waiting up to 15 min for 1 background shell"
    ]
    assert by_name(spans, ROOT)  # and the task ended when the shell reported


def test_a_task_whose_wait_is_over_already_is_not_said_to_wait(tmp_path: Path, caplog) -> None:
    """An old log caught up at start: its waiting task ends at once, nothing to wait for."""
    caplog.set_level("INFO", logger="otel_bridge.sources._tail")
    log = shell_log(gap_ms=60_000)
    data = log.jsonl()
    cut = data.rindex(b"\n", 0, data.index(b'"system.notification"')) + 1
    path = tmp_path / "sess-1" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(data[:cut])  # the log stopped while its shell ran, 100 s ago
    tailer, out, clock = follow(path, 30)
    clock[0] = max(ns(e["timestamp"]) for e in raw(path)) / 1e9 + 100
    tailer.start()
    tailer.poll_once()
    tailer.poll_once()
    tailer.close()
    assert not [r for r in caplog.records if "waiting up to" in r.getMessage()]
    assert by_name(out, ROOT)  # ended at once, at its last event
