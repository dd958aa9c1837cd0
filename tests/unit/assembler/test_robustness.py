"""Nothing in one event stops a session: a handler that raises on a real log is logged once,
counted, and the session goes on (docs/architecture.md, "When handling an event fails")."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from otel_bridge import Assembler, JsonLinesDecoder, StatusCode
from otel_bridge import semconv as sc
from otel_bridge.assembler import _session
from otel_bridge.assembler.handlers import HANDLERS
from otel_bridge.cli import main
from tests import paths, spantree
from tests.recorder import Recorder
from tests.spantree import assemble_file, by_name, check_invariants, turns
from tests.traces_file import read_traces_file

FIXTURES = paths.FIXTURES
LOG = FIXTURES / "one_tool_cli1092" / "events.jsonl"


def event_ids(path: Path, event_type: str) -> list[str]:
    return [
        e["id"] for e in map(json.loads, path.read_text().splitlines()) if e["type"] == event_type
    ]


def fail_on(monkeypatch: pytest.MonkeyPatch, event_type: str, ids: set[str]) -> None:
    """Make the handler of `event_type` raise for the events `ids` (and work for the rest)."""
    handler = HANDLERS[event_type]

    def broken(session, event) -> None:  # type: ignore[no-untyped-def]
        if event.id in ids:
            raise RuntimeError("a bug met by an unusual event")
        handler(session, event)

    monkeypatch.setattr(_session, "HANDLERS", {**HANDLERS, event_type: broken})


def feed(path: Path) -> tuple[list, Recorder]:
    recorder = Recorder()
    spans = spantree.assemble(path, metrics=recorder)
    return spans, recorder


def test_a_failing_tool_completion_leaves_the_rest_of_the_task(monkeypatch, caplog) -> None:
    healthy = assemble_file(LOG)
    (complete,) = event_ids(LOG, "tool.execution_complete")
    fail_on(monkeypatch, "tool.execution_complete", {complete})
    with caplog.at_level(logging.WARNING, logger="otel_bridge"):
        spans, recorder = feed(LOG)
    check_invariants(spans)
    # every span still comes out, with the same ids
    assert sorted(s.span_id for s in spans) == sorted(s.span_id for s in healthy)
    (root,) = by_name(spans, "invoke_agent")
    assert root.attributes[sc.COPILOT_END_REASON] == sc.END_LOOP  # the task ended as before
    # the tool whose completion was lost ends with its turn, incomplete, not as a success
    (tool,) = by_name(spans, "execute_tool")
    assert tool.attributes.get(sc.COPILOT_INCOMPLETE) is True
    assert tool.status is not StatusCode.OK
    assert recorder.values(
        sc.METRIC_EVENTS_FAILED,
        otel_bridge__step=sc.STEP_FEED,
        copilot__event__type="tool.execution_complete",
    ) == [1]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert str(LOG) in message and complete in message and "tool.execution_complete" in message
    (stamp,) = (
        e["timestamp"] for e in map(json.loads, LOG.read_text().splitlines()) if e["id"] == complete
    )
    assert stamp in message  # the event's time, as the log writes it
    assert "a bug met" not in message  # the exception's text may quote the log: DEBUG only


def test_failures_are_logged_once_per_session_and_each_counted(monkeypatch, caplog) -> None:
    log = FIXTURES / "subagent_deep" / "events.jsonl"
    starts = event_ids(log, "assistant.turn_start")
    assert len(starts) > 2
    fail_on(monkeypatch, "assistant.turn_start", set(starts[1:]))
    with caplog.at_level(logging.DEBUG, logger="otel_bridge"):
        spans, recorder = feed(log)
    check_invariants(spans)
    assert len(turns(spans)) == 1
    assert by_name(spans, "invoke_agent copilot")  # the interaction still ends
    assert sum(recorder.values(sc.METRIC_EVENTS_FAILED)) == len(starts) - 1
    assert [r.levelno for r in caplog.records if "failed" in r.getMessage()].count(
        logging.WARNING
    ) == 1
    tracebacks = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert len(tracebacks) == len(starts) - 1


def test_a_failing_close_drops_the_open_task_and_the_session_goes_on(monkeypatch) -> None:
    recorder = Recorder()
    assembler = Assembler(metrics=recorder)
    decoder = JsonLinesDecoder(str(LOG))
    events = decoder.feed(LOG.read_bytes())
    first_turn_end = next(i for i, e in enumerate(events) if e.type == "assistant.turn_end")
    assembler.feed("s", events[:first_turn_end])
    session = assembler.session("s")
    assert session.has_open_interaction

    def broken(*args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        raise RuntimeError("close failed")

    monkeypatch.setattr(type(session.lifecycle), "end_of_input", broken)
    assert assembler.close_stream("s") == []
    assert not session.has_open_interaction  # dropped, not stuck open for ever
    assert recorder.values(sc.METRIC_EVENTS_FAILED, otel_bridge__step=sc.STEP_END_OF_INPUT) == [1]
    monkeypatch.undo()
    assert session.snapshot()["session_id"] == session.session_id


def test_snapshot_and_restore_never_raise(monkeypatch) -> None:
    recorder = Recorder()
    session = Assembler(metrics=recorder).session("s", "sess-1")

    def broken(*args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        raise RuntimeError("bad state")

    monkeypatch.setattr(_session, "snapshot", broken)
    monkeypatch.setattr(_session, "restore", broken)
    assert session.snapshot() == {"session_id": "sess-1"}
    session.restore({"session_id": "other"})
    assert [a[sc.OTEL_BRIDGE_STEP] for _, n, _, a, _ in recorder.points if "failed" in n] == [
        sc.STEP_SNAPSHOT,
        sc.STEP_RESTORE,
    ]


def test_replay_goes_on_past_a_failing_event(monkeypatch, tmp_path) -> None:
    healthy = sorted(s.name for s in assemble_file(LOG))
    (complete,) = event_ids(LOG, "tool.execution_complete")
    fail_on(monkeypatch, "tool.execution_complete", {complete})
    out = tmp_path / "traces.jsonl"
    assert main(["replay", str(LOG), "--traces-file", str(out), "--no-progress"]) == 0
    assert sorted(s["name"] for s in read_traces_file(out)) == healthy
