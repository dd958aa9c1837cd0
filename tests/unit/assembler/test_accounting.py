"""What agents cost and what they change (assembler/_accounting.py, docs/metrics.md "Cost and
code changes"): per-call cost on chat spans and counters, the session accounting snapshot
counted once across resumes (and across a restart of the bridge), edit tools' lines on their
spans, BYOK shown as such, and no path or id in a label."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from otel_bridge import Event
from otel_bridge._records import AttributeValue, SpanRecord
from otel_bridge.app._stats import StatsAssembler, StatsCollector
from otel_bridge.app._stats_table import render_table
from otel_bridge.assembler import Assembler
from otel_bridge.decode._lines import JsonLinesDecoder
from otel_bridge.feed import StreamFeeder
from otel_bridge.processors import Scrubber, ScrubberConfig
from otel_bridge.sources import find_logs, replay_logs
from tests import paths, spantree
from tests.builder import Log
from tests.spantree import by_name

FIXTURES = paths.FIXTURES
EDIT_RESUME = FIXTURES / "edit_resume" / "events.jsonl"
#: A sub-agent creates a file, the main agent edits it; resumed, two edits at once.
EDIT_SUBAGENT = FIXTURES / "edit_subagent" / "events.jsonl"
#: Real CLI 1.0.102 logs (offline, a scripted BYOK model) with file edits across a resume.
EDIT_LOGS = pytest.mark.parametrize(
    "path", [EDIT_RESUME, EDIT_SUBAGENT], ids=lambda p: p.parent.name
)


class Recorder:
    """Every counter observation, kept (name, value, labels, session id)."""

    def __init__(self) -> None:
        self.added: list[tuple[str, float, dict[str, AttributeValue], str]] = []

    def add(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        self.added.append((name, value, dict(attributes), session_id))

    def record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        return None

    def total(self, name: str, labels: Mapping[str, AttributeValue] | None = None) -> float:
        """The sum of the counter `name` over the observations with these labels."""
        return sum(
            value
            for n, value, attributes, _ in self.added
            if n == name and all(attributes.get(k) == v for k, v in (labels or {}).items())
        )

    def names(self) -> set[str]:
        return {n for n, *_ in self.added}


def read_events(path: Path) -> list[Event]:
    decoder = JsonLinesDecoder(str(path))
    return decoder.feed(path.read_bytes()) + decoder.finish()


def raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def assemble(
    events: Sequence[Event], session: str = "sess-1", recorder: Recorder | None = None
) -> list[SpanRecord]:
    return spantree.assemble(events, "log", session, metrics=recorder)


def last_snapshot(events: list[dict[str, Any]]) -> dict[str, Any]:
    shutdowns = [e for e in events if e["type"] == "session.shutdown"]
    return shutdowns[-1]["data"]["accountingSnapshot"]


# --- a real CLI log: file edits across a resume -------------------------------------------------


@EDIT_LOGS
def test_real_log_chat_costs_sum_to_the_usage_records_and_byok_says_so(path: Path) -> None:
    events = raw(path)
    records = [e["data"]["usage"] for e in events if e["type"] == "session.usage_record"]
    assert len(records) >= 4 and all(r["isByok"] is True for r in records)
    recorder = Recorder()
    spans = assemble(read_events(path), path.parent.name, recorder)
    chats = by_name(spans, "chat ")
    assert len(chats) == len(records)
    assert sum(c.attributes.get("copilot.usage.cost", 0.0) for c in chats) == sum(
        r["cost"] for r in records
    )
    # the recording's provider is BYOK: a cost of 0 is not shown as a price, nor counted
    for chat in chats:
        assert chat.attributes["copilot.usage.byok"] is True
        assert "copilot.usage.cost" not in chat.attributes
        assert chat.attributes["copilot.usage.ai_credits.status"] == "unavailable"
    assert not {"copilot.premium_requests", "copilot.session.premium_requests"} & (recorder.names())


@pytest.mark.parametrize(
    ("path", "figures"),
    [(EDIT_RESUME, [(3, 0), (5, 1)]), (EDIT_SUBAGENT, [(5, 1), (7, 3)])],
    ids=["edit_resume", "edit_subagent"],
)
def test_real_log_lines_are_counted_once_across_the_resume(
    path: Path, figures: list[tuple[int, int]]
) -> None:
    events = raw(path)
    snapshots = [
        e["data"]["accountingSnapshot"]["codeChanges"]
        for e in events
        if e["type"] == "session.shutdown"
    ]
    # the CLI's figures are cumulative: the second shutdown repeats the first one's lines
    assert [(s["linesAdded"], s["linesRemoved"]) for s in snapshots] == figures
    recorder = Recorder()
    spans = assemble(read_events(path), path.parent.name, recorder)
    last = last_snapshot(events)["codeChanges"]
    assert recorder.total("copilot.code.lines", {"copilot.change": "added"}) == last["linesAdded"]
    assert (
        recorder.total("copilot.code.lines", {"copilot.change": "removed"}) == last["linesRemoved"]
    )
    # distinct paths (filesModifiedCount said 1 for the two files of edit_subagent)
    assert recorder.total("copilot.code.files_modified") == len(last["filesModified"])
    # the edit tools' own figures, on their spans, add up to the same here (every change was
    # made by create and edit)
    tools = by_name(spans, "execute_tool ")
    assert (
        sum(int(t.attributes.get("copilot.code.lines_added", 0)) for t in tools)
        == last["linesAdded"]
    )
    assert (
        sum(int(t.attributes.get("copilot.code.lines_removed", 0)) for t in tools)
        == last["linesRemoved"]
    )
    roots = by_name(spans, "invoke_agent copilot")
    assert (
        sum(int(r.attributes.get("copilot.task.lines_added", 0)) for r in roots)
        == last["linesAdded"]
    )
    # a task already exported is not changed, and no span is made for the snapshot
    assert not [s for s in spans if "copilot.session.lines_added" in s.attributes]
    assert {s.name.split()[0] for s in spans} == {"invoke_agent", "turn", "chat", "execute_tool"}


def test_real_log_edit_tools_carry_their_lines_and_files_on_their_spans_and_tasks() -> None:
    spans = assemble(read_events(EDIT_RESUME), EDIT_RESUME.parent.name)
    (create,) = by_name(spans, "execute_tool create")
    (edit,) = by_name(spans, "execute_tool edit")
    assert (
        create.attributes["copilot.code.lines_added"],
        create.attributes["copilot.code.lines_removed"],
    ) == (3, 0)
    assert (
        edit.attributes["copilot.code.lines_added"],
        edit.attributes["copilot.code.lines_removed"],
    ) == (2, 1)
    for tool in (create, edit):
        (path,) = tool.attributes["copilot.code.files"]
        assert isinstance(path, str) and path.endswith("/notes.txt")
    roots = sorted(by_name(spans, "invoke_agent copilot"), key=lambda s: s.start_ns)
    assert [r.attributes["copilot.task.lines_added"] for r in roots] == [3, 2]
    assert [r.attributes["copilot.task.lines_removed"] for r in roots] == [0, 1]
    # the paths follow --paths like any other text
    scrubbed = Scrubber(ScrubberConfig(paths="basename")).attributes(edit.attributes)
    assert scrubbed["copilot.code.files"] == ["notes.txt"]
    hashed = Scrubber(ScrubberConfig(paths="hash")).attributes(edit.attributes)
    files = hashed["copilot.code.files"]
    assert isinstance(files, list) and str(files[0]).startswith("path:")


def test_real_log_a_restart_between_the_segments_still_counts_only_the_difference() -> None:
    """run's checkpoint after the first segment: the session's snapshot() as JSON, restored in
    a fresh assembler that reads the rest."""
    events = read_events(EDIT_RESUME)
    cut = next(i for i, e in enumerate(events) if e.type == "session.resume")
    session = EDIT_RESUME.parent.name
    first = Recorder()
    before = Assembler(metrics=first)
    before.feed("log", events[:cut], session)
    saved = json.loads(json.dumps(before.session("log").snapshot()))
    second = Recorder()
    after = Assembler(metrics=second)
    after.session("log", session).restore(saved)
    after.feed("log", events[cut:], session)
    after.end_stream("log")
    assert first.total("copilot.code.lines", {"copilot.change": "added"}) == 3
    assert second.total("copilot.code.lines", {"copilot.change": "added"}) == 2
    assert second.total("copilot.code.lines", {"copilot.change": "removed"}) == 1
    assert second.total("copilot.code.files_modified") == 0  # the same file again


def test_real_log_stats_show_byok_and_the_last_snapshots_lines() -> None:
    collector = StatsCollector()
    replay_logs(
        find_logs([EDIT_RESUME.parent]), StreamFeeder(StatsAssembler(collector), lambda r: None)
    )
    (stats,) = collector.sessions.values()
    assert (stats.lines_added, stats.lines_removed) == (5, 1)
    assert stats.premium_requests is None and stats.byok_calls == 4
    table = render_table([stats], collector.total())
    row = table.splitlines()[3]
    assert "n/a (BYOK)" in row and "+5/-1" in row


def test_no_metric_label_carries_a_path_or_an_id() -> None:
    logs = [
        EDIT_RESUME,
        EDIT_SUBAGENT,
        FIXTURES / "subagent" / "events.jsonl",
        FIXTURES / "resume" / "events.jsonl",
    ]
    recorder = Recorder()
    for path in logs:
        assemble(read_events(path), path.parent.name, recorder)
    ids = {e["data"].get("sessionId") for p in logs for e in raw(p) if e["type"] == "session.start"}
    for name, _, labels, _ in recorder.added:
        for value in labels.values():
            text = str(value)
            assert "/" not in text and text not in ids, (name, labels)


# --- synthetic logs: real costs, several models, a sub-agent, a resume --------------------------


def billed(log: Log, usage_id: str, cost: float, nano: float, **fields: Any) -> None:
    log.usage(
        usage_id,
        cost=cost,
        isByok=False,
        aiCreditsStatus="complete",
        copilotUsage={"totalNanoAiu": nano},
        **fields,
    )


def snapshot(
    premium: float, nano: float, added: int, removed: int, files: int, models: dict[str, float]
) -> dict[str, Any]:
    return {
        "accountingSnapshot": {
            "totalPremiumRequestCost": premium,
            "totalUserRequests": 1,
            "totalNanoAiu": nano,
            "aiCreditsStatus": "complete",
            "codeChanges": {
                "linesAdded": added,
                "linesRemoved": removed,
                "filesModifiedCount": files,
                "filesModified": [f"/repo/f{i}.py" for i in range(files)],
            },
            "modelMetrics": {
                m: {"requests": {"count": 1, "cost": c}, "totalNanoAiu": c * 1e9}
                for m, c in models.items()
            },
        }
    }


def two_segments() -> Log:
    """Segment 1: a main call (gpt-4.1, 1 premium request) and a sub-agent's call
    (claude, 0.33); shutdown at 1.33. Segment 2, resumed: one call (claude, 0.33); the second
    shutdown is cumulative: 1.66."""
    log = Log.asked()
    log.turn("0")
    billed(log, "u1", 1.0, 2e9)
    log.message([("call-t", "task")])
    log.tool_start("call-t", "task")
    log.add("subagent.started", "ag-1", toolCallId="call-t", agentName="explore", agentId="ag-1")
    log.turn("0", agent="ag-1", parent="call-t")
    billed(log, "u2", 0.33, 5e8, model="claude-sonnet-4.5", parent="call-t", agent="ag-1")
    log.message(agent="ag-1", parent="call-t")
    log.turn_end("0", agent="ag-1", parent="call-t")
    log.add("subagent.completed", "ag-1", toolCallId="call-t", agentName="explore")
    log.tool_done("call-t")
    log.turn_end("0")
    log.turn("1")
    billed(log, "u3", 0.0, 0.0)
    log.message(turn="1")
    log.turn_end("1")
    log.add(
        "session.shutdown",
        **snapshot(1.33, 2.5e9, 10, 2, 2, {"gpt-4.1": 1.0, "claude-sonnet-4.5": 0.33}),
    )
    log.add("session.resume", selectedModel="claude-sonnet-4.5")
    log.user(interaction="i2")
    log.turn("0", interaction="i2")
    billed(log, "u4", 0.33, 4e8, model="claude-sonnet-4.5")
    log.message()
    log.turn_end("0")
    log.add(
        "session.shutdown",
        **snapshot(1.66, 2.9e9, 14, 2, 3, {"gpt-4.1": 1.0, "claude-sonnet-4.5": 0.66}),
    )
    return log


def test_per_call_costs_on_spans_and_counters_by_model_agent_and_mode() -> None:
    recorder = Recorder()
    spans = assemble(two_segments().events(), recorder=recorder)
    chats = by_name(spans, "chat ")
    costs = sorted(float(c.attributes["copilot.usage.cost"]) for c in chats)  # type: ignore[arg-type]
    assert costs == [0.0, 0.33, 0.33, 1.0]
    assert sum(costs) == pytest.approx(recorder.total("copilot.premium_requests"))
    assert recorder.total("copilot.ai_credits") == pytest.approx(2e9 + 5e8 + 4e8)
    by_labels: dict[tuple[Any, ...], float] = defaultdict(float)
    for name, value, labels, _ in recorder.added:
        if name == "copilot.premium_requests":
            key = (
                labels["gen_ai.request.model"],
                labels["gen_ai.agent.name"],
                labels["copilot.agent.type"],
                labels["copilot.mode"],
            )
            by_labels[key] += value
    assert by_labels == {
        ("gpt-4.1", "copilot", "main", "interactive"): 1.0,
        ("claude-sonnet-4.5", "explore", "subagent", "interactive"): 0.33,
        ("claude-sonnet-4.5", "copilot", "main", "interactive"): 0.33,
    }
    assert all(c.attributes["copilot.usage.ai_credits.status"] == "complete" for c in chats)


def test_session_snapshots_count_their_differences_only() -> None:
    recorder = Recorder()
    spans = assemble(two_segments().events(), recorder=recorder)
    assert recorder.total("copilot.session.premium_requests") == pytest.approx(1.66)
    assert recorder.total(
        "copilot.session.premium_requests", {"gen_ai.request.model": "claude-sonnet-4.5"}
    ) == pytest.approx(0.66)
    assert recorder.total("copilot.session.ai_credits") == pytest.approx(1.66e9)
    assert recorder.total("copilot.code.lines", {"copilot.change": "added"}) == 14
    assert recorder.total("copilot.code.lines", {"copilot.change": "removed"}) == 2
    assert recorder.total("copilot.code.files_modified") == 3
    assert not [s for s in spans if "copilot.session.premium_requests" in s.attributes]


def test_a_shutdown_with_the_task_still_open_puts_the_figures_on_its_root() -> None:
    log = Log.asked()
    log.turn("0")
    billed(log, "u1", 1.0, 1e9)
    log.message([("call-1", "bash")])
    log.tool_start("call-1", "bash")
    log.add("session.shutdown", **snapshot(1.0, 1e9, 4, 1, 1, {"gpt-4.1": 1.0}))
    spans = assemble(log.events())
    (root,) = by_name(spans, "invoke_agent")
    assert root.attributes["copilot.end_reason"] == "shutdown"
    assert root.attributes["copilot.session.premium_requests"] == 1.0
    assert root.attributes["copilot.session.ai_credits"] == 1e9
    assert root.attributes["copilot.session.ai_credits.status"] == "complete"
    assert (
        root.attributes["copilot.session.lines_added"],
        root.attributes["copilot.session.lines_removed"],
        root.attributes["copilot.session.files_modified"],
    ) == (4, 1, 1)


def test_a_zero_cost_without_any_billed_call_is_not_shown_as_a_price() -> None:
    """An older CLI's shutdown (no usage records, no accountingSnapshot) says 0: unknown."""
    for path in (FIXTURES / "one_tool_cli1081" / "events.jsonl", EDIT_RESUME):
        recorder = Recorder()
        assemble(read_events(path), path.parent.name, recorder)
        assert recorder.total("copilot.session.premium_requests") == 0
        assert "copilot.session.premium_requests" not in recorder.names()
    collector = StatsCollector()
    replay_logs(
        find_logs([FIXTURES / "one_tool_cli1081"]),
        StreamFeeder(StatsAssembler(collector), lambda r: None),
    )
    (stats,) = collector.sessions.values()
    assert stats.premium_requests is None
    assert "-" in render_table([stats], collector.total()).splitlines()[3]


def test_a_snapshot_smaller_than_the_previous_counts_nothing_negative() -> None:
    log = Log.asked()
    log.simple_turn("0", "u1")
    log.add("session.shutdown", **snapshot(2.0, 0, 10, 5, 2, {"gpt-4.1": 2.0}))
    log.add("session.resume")
    log.add("session.shutdown", **snapshot(1.0, 0, 3, 1, 1, {"gpt-4.1": 1.0}))
    recorder = Recorder()
    assemble(log.events(), recorder=recorder)
    assert all(value >= 0 for _, value, _, _ in recorder.added)
    assert recorder.total("copilot.code.lines", {"copilot.change": "added"}) == 10


def test_byok_calls_beside_billed_ones_count_no_cost_and_unreported_credits_are_absent() -> None:
    log = Log.asked()
    log.turn("0")
    log.usage("u1", cost=0.0, isByok=True, aiCreditsStatus="unavailable", model="local")
    log.message(turn="0")
    log.turn_end("0")
    log.turn("1")
    log.usage("u2", cost=1.0, isByok=False, aiCreditsStatus="unavailable")
    log.message(turn="1")
    log.turn_end("1")
    log.add("session.shutdown", **snapshot(1.0, 0, 0, 0, 0, {"gpt-4.1": 1.0, "local": 0.0}))
    recorder = Recorder()
    spans = assemble(log.events(), recorder=recorder)
    local, billed_chat = sorted(by_name(spans, "chat "), key=lambda s: s.start_ns)
    assert local.attributes["copilot.usage.byok"] is True
    assert "copilot.usage.cost" not in local.attributes
    assert billed_chat.attributes["copilot.usage.cost"] == 1.0
    assert "copilot.usage.byok" not in billed_chat.attributes
    # an amount the CLI marks unavailable is not an amount of 0
    assert "copilot.usage.ai_credits" not in billed_chat.attributes
    assert "copilot.ai_credits" not in recorder.names()
    assert recorder.total("copilot.premium_requests") == 1.0
    assert recorder.total("copilot.premium_requests", {"gen_ai.request.model": "local"}) == 0
    # a session with one billed call has a known cost, 0 included for the BYOK model
    assert recorder.total("copilot.session.premium_requests") == 1.0
    assert "copilot.session.ai_credits" in recorder.names()  # the snapshot says complete


def test_real_log_a_subagents_edit_is_on_its_tool_span_and_counted_by_the_snapshot() -> None:
    recorder = Recorder()
    spans = assemble(read_events(EDIT_SUBAGENT), EDIT_SUBAGENT.parent.name, recorder)
    by_id = {s.span_id: s for s in spans}
    (create, *_) = sorted(by_name(spans, "execute_tool create"), key=lambda s: s.start_ns)
    assert (
        create.attributes["copilot.code.lines_added"],
        create.attributes["copilot.code.lines_removed"],
    ) == (4, 0)
    agent = by_id[by_id[create.parent_span_id].parent_span_id]  # turn, then its agent
    assert agent.name == "invoke_agent general-purpose"
    first = min(by_name(spans, "invoke_agent copilot"), key=lambda s: s.start_ns)
    assert (
        first.attributes["copilot.task.lines_added"],
        first.attributes["copilot.task.lines_removed"],
    ) == (5, 1)  # the sub-agent's 4 and the main agent's edit
    # per-call counters: none, every call was BYOK; the sub-agent's calls are spans all the same
    assert len(by_name(spans, "chat ")) == 7
    assert "copilot.premium_requests" not in recorder.names()


def test_an_implausible_snapshot_figure_is_left_out_counted_and_not_counted_again_later() -> None:
    """A shutdown whose snapshot says 1e30 (premium requests, lines, a model's cost) fed the
    session counters as it was, and one such figure would own every total for good. It is
    left out (it keeps the last snapshot's value, so the next snapshot does not count all of
    it again) and counted in otel_bridge.values.repaired, reason implausible."""
    log = Log.asked()
    log.simple_turn("0", "u1")
    log.add("session.shutdown", **snapshot(1.0, 1e9, 10, 2, 1, {"gpt-4.1": 1.0}))
    log.add("session.resume")
    hostile = snapshot(1e30, 2e9, 10**30, 3, 1, {"gpt-4.1": 1e30})
    hostile["accountingSnapshot"]["codeChanges"]["linesRemoved"] = -5
    log.add("session.shutdown", **hostile)
    log.add("session.resume")
    log.add("session.shutdown", **snapshot(3.0, 3e9, 30, 4, 1, {"gpt-4.1": 3.0}))
    recorder = Recorder()
    assemble(log.events(), recorder=recorder)
    assert recorder.total("copilot.session.premium_requests") == pytest.approx(3.0)
    assert recorder.total("copilot.session.ai_credits") == pytest.approx(3e9)
    assert recorder.total("copilot.code.lines", {"copilot.change": "added"}) == 30
    assert recorder.total("copilot.code.lines", {"copilot.change": "removed"}) == 4
    # premium, the model's cost (and nano-AIU from it), lines added, lines removed
    repaired = recorder.total("otel_bridge.values.repaired", {"otel_bridge.reason": "implausible"})
    assert repaired == 5
