"""The console exporter: a line per task (summary), the span tree, or OpenTelemetry's JSON.

The spans are the real ones: fixtures (real Copilot CLI logs) through the assembler, as replay
makes them, handed to the exporter in batches as the export worker does.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import ConsoleSpanExporter as SdkConsoleSpanExporter

from otel_bridge import Assembler, AssemblerConfig, JsonLinesDecoder
from otel_bridge._records import SpanKind, SpanRecord
from otel_bridge.cli import main
from otel_bridge.export import build_resource, build_span_exporters
from otel_bridge.export._console import ConsoleSpanExporter
from otel_bridge.export._otel import to_readable_span
from tests import paths

FIXTURES = paths.FIXTURES
LOGS = sorted(FIXTURES.glob("*/events.jsonl"))
RESOURCE = build_resource({})
# time, session, outcome (in words: _words.py), tools and failures, tokens, duration, then
# why, sub-agents, model; fixed columns up to the duration
SUMMARY = re.compile(
    r"^\d\d:\d\d  (?P<session>[0-9a-f]{8})  (?P<outcome>[a-z]+) +"
    r"(?P<tools>\d+) tools?(?:, (?P<failed>\d+) failed)? +"
    r"(?P<tokens>(?:\S+/\S+|n/a) tok)? +(?P<duration>\d+\.\ds|\d+m\d\ds|\d+h\d\dm)"
    r"(?:  \((?P<why>[^)]+)\))?(?:  (?P<agents>\d+) sub-agents?)?(?:  (?P<model>\S+))?"
    r"(?:  ctx (?P<ctx>\d+)% of (?P<limit>\S+))?$"
)
DAY = re.compile(r"^-- \d{4}-\d\d-\d\d \w{3} --$")
WORDS = {"completed": "completed", "no_signal": "done", "failed": "failed"}
WORDS.update(error="error", aborted="aborted")


class Tty(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def spans_of(
    paths: Sequence[Path], config: AssemblerConfig | None = None
) -> list[list[ReadableSpan]]:
    """The SDK spans replay makes of `paths`, in the batches the assembler emits them."""
    assembler = Assembler(config)
    batches = []
    for path in paths:
        decoder = JsonLinesDecoder(str(path))
        events = decoder.feed(path.read_bytes()) + decoder.finish()
        for records in (
            assembler.feed(str(path), events, path.parent.name),
            assembler.end_stream(str(path)),
        ):
            if records:
                batches.append([to_readable_span(r, RESOURCE) for r in records])
    return batches


def printed(
    batches: Sequence[Sequence[ReadableSpan]], fmt: str, *, days: bool = False, **kwargs: object
) -> str:
    """What the exporter prints of `batches` (without the lines that say the date)."""
    stream = io.StringIO()
    exporter = ConsoleSpanExporter(stream, fmt, color=False, **kwargs)  # type: ignore[arg-type]
    for batch in batches:
        exporter.export(batch)
    exporter.shutdown()
    lines = stream.getvalue().splitlines(keepends=True)
    return "".join(line for line in lines if days or not DAY.match(line))


def roots(batches: Sequence[Sequence[ReadableSpan]]) -> list[ReadableSpan]:
    return [s for batch in batches for s in batch if s.parent is None]


def subtree(batches: Sequence[Sequence[ReadableSpan]], root: ReadableSpan) -> list[ReadableSpan]:
    spans = [s for batch in batches for s in batch if s.context.trace_id == root.context.trace_id]
    return spans


def test_summary_is_one_line_per_task_with_its_numbers() -> None:
    batches = spans_of(LOGS)
    lines = printed(batches, "summary").splitlines()
    tasks = sorted(roots(batches), key=lambda s: s.context.trace_id)
    # one task per top-level user message of the fixtures (autopilot nudges join their task,
    # and so do steering messages)
    messages = [
        event
        for path in LOGS
        for event in map(json.loads, path.read_text().splitlines())
        if event["type"] == "user.message"
        and "agentId" not in event
        and not event["data"].get("isAutopilotContinuation")
        and event["data"].get("delivery") != "steering"
    ]
    assert len(lines) == len(tasks) == len(messages)
    parsed = [SUMMARY.match(line) for line in lines]
    assert all(parsed), [line for line, m in zip(lines, parsed, strict=True) if not m]
    # the same tasks, in the order they started
    in_order = sorted(roots(batches), key=lambda s: s.start_time or 0)
    for match, root in zip(parsed, in_order, strict=True):
        assert match is not None
        spans = subtree(batches, root)
        attributes = root.attributes or {}
        assert str(attributes["gen_ai.conversation.id"]).startswith(match["session"])
        outcome = str(attributes["copilot.task.outcome"])
        unfinished = attributes.get("copilot.incomplete") is True
        assert match["outcome"] == ("unfinished" if unfinished else WORDS[outcome])
        tools = [s for s in spans if s.name.startswith("execute_tool ")]
        assert int(match["tools"]) == len(tools)
        failed = sum(1 for s in tools if not s.status.is_ok)
        assert int(match["failed"] or 0) == failed
        assert int(match["agents"] or 0) == sum(
            1 for s in spans if s.name.startswith("invoke_agent ") and s.parent is not None
        )
        assert match["model"] == "gpt-4.1"
    outcomes = {m["outcome"] for m in parsed if m}
    assert {"completed", "aborted", "error", "done", "unfinished"} <= outcomes
    assert any(m and m["failed"] for m in parsed)


def test_summary_names_the_error_and_sums_the_tokens() -> None:
    batches = spans_of(
        [FIXTURES / "provider_error" / "events.jsonl", FIXTURES / "subagent_deep" / "events.jsonl"]
    )
    deep_line, error_line = printed(batches, "summary").splitlines()  # in the order they started
    root = roots(batches)[0]
    match = SUMMARY.match(error_line)
    assert match and match["outcome"] == "error" and match["why"] == root.attributes["error.type"]
    chats = [s for s in subtree(batches, roots(batches)[1]) if s.name.startswith("chat ")]
    total_in = sum(int(s.attributes["gen_ai.usage.input_tokens"]) for s in chats)
    total_out = sum(int(s.attributes["gen_ai.usage.output_tokens"]) for s in chats)
    assert 10_000 < total_in < 20_000 and total_out < 1000
    assert f"  {round(total_in / 1000)}k/{total_out} tok  " in deep_line


def test_batches_split_anywhere_print_the_same() -> None:
    batches = spans_of(LOGS)
    one_by_one = [[span] for batch in batches for span in batch]
    all_at_once = [[span for batch in batches for span in batch]]
    for fmt in ("summary", "tree"):
        assert printed(one_by_one, fmt) == printed(batches, fmt) == printed(all_at_once, fmt)


def test_tree_shows_every_span_once_under_its_parent() -> None:
    batches = spans_of(
        [
            FIXTURES / "subagent_nested" / "events.jsonl",
            FIXTURES / "parallel_tools" / "events.jsonl",
        ]
    )
    lines = printed(batches, "tree").splitlines()
    spans = [s for batch in batches for s in batch]
    # a summary line per root, a line per other span
    assert len(lines) == len(spans)
    assert sum(1 for line in lines if SUMMARY.match(line)) == len(roots(batches)) == 2
    by_id = {s.context.span_id: s for s in spans}

    def depth(span: ReadableSpan) -> int:
        return 0 if span.parent is None else 1 + depth(by_id[span.parent.span_id])

    nodes = [line for line in lines if not SUMMARY.match(line)]
    names = re.compile(r"^(?P<indent>(?:[│ ] {2})*)[├└]─ (?P<name>.+?)  \d+\.\ds")
    seen = sorted((len(m["indent"]) // 3 + 1, m["name"]) for m in map(names.match, nodes) if m)
    expected = sorted((depth(s), s.name) for s in spans if s.parent is not None)
    assert seen == expected
    assert any("ERROR" in line and "execute_tool view" in line for line in nodes)
    assert any(re.search(r"execute_tool bash .* exit 3$", line) for line in nodes)


def test_json_is_opentelemetry_console_output_unchanged() -> None:
    batches = spans_of([FIXTURES / "subagent" / "events.jsonl"])
    reference = io.StringIO()
    sdk = SdkConsoleSpanExporter(
        out=reference, formatter=lambda span: span.to_json(indent=None) + "\n"
    )
    for batch in batches:
        sdk.export(batch)
    assert printed(batches, "json") == reference.getvalue()
    assert len(reference.getvalue().splitlines()) == sum(map(len, batches))
    json.loads(reference.getvalue().splitlines()[0])


def test_default_is_summary_on_a_terminal_and_json_elsewhere() -> None:
    assert ConsoleSpanExporter(Tty()).format == "summary"
    assert ConsoleSpanExporter(io.StringIO()).format == "json"
    (exporter,) = build_span_exporters({}, console_stream=Tty(), console_format="tree")
    assert isinstance(exporter, ConsoleSpanExporter) and exporter.format == "tree"
    with pytest.raises(ValueError, match="summary, tree, json"):
        ConsoleSpanExporter(io.StringIO(), "yaml")


def test_colours_only_on_a_terminal_and_never_with_no_color(monkeypatch) -> None:
    batches = spans_of([FIXTURES / "abort" / "events.jsonl"])
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    for stream, coloured in ((Tty(), True), (io.StringIO(), False)):
        exporter = ConsoleSpanExporter(stream, "summary")
        for batch in batches:
            exporter.export(batch)
        exporter.force_flush()
        assert ("\x1b[" in stream.getvalue()) is coloured
        assert "aborted" in stream.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    stream = Tty()
    exporter = ConsoleSpanExporter(stream)
    for batch in batches:
        exporter.export(batch)
    exporter.force_flush()
    assert "aborted" in stream.getvalue() and "\x1b[" not in stream.getvalue()


def test_interactions_under_an_outside_parent_are_told_apart() -> None:
    """LiveBridge(parent=...): every task in one trace, each root with a (remote) parent."""
    parent = (0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331)
    batches = spans_of(
        [FIXTURES / "sdk1_two_user_messages" / "events.jsonl"], AssemblerConfig(parent=parent)
    )
    assert {s.context.trace_id for batch in batches for s in batch} == {parent[0]}
    lines = printed(batches, "summary").splitlines()
    assert len(lines) == 3  # one per user message, none left over as "unfinished"
    assert all(SUMMARY.match(line) for line in lines)
    assert [m["tools"] for m in map(SUMMARY.match, lines) if m] == ["1", "1", "1"]


def _record(
    trace: int, span: int, parent: int | None, name: str, start: int, attributes: dict | None = None
) -> ReadableSpan:
    return to_readable_span(
        SpanRecord(
            trace,
            span,
            parent,
            name,
            SpanKind.INTERNAL,
            start,
            start + 1_000_000_000,
            attributes or {},
        ),
        RESOURCE,
    )


def test_late_spans_of_a_printed_task_make_a_continued_line() -> None:
    """An autopilot continuation that came after its task was exported hangs under the root
    printed before: it gets a line of its own, not a wait until shutdown."""
    root = _record(
        1,
        10,
        None,
        "invoke_agent copilot",
        1_700_000_000_000_000_000,
        {
            "copilot.task.outcome": "completed",
            "copilot.end_reason": "loop_end",
            "copilot.turns": 1,
            "gen_ai.conversation.id": "abcdef0123456789",
        },
    )
    turn = _record(1, 11, 10, "turn", 1_700_000_010_000_000_000)
    tool = _record(
        1,
        12,
        11,
        "execute_tool bash",
        1_700_000_010_000_000_000,
        {"gen_ai.operation.name": "execute_tool"},
    )
    stream = io.StringIO()
    exporter = ConsoleSpanExporter(stream, "summary", color=False, hold_seconds=0)
    exporter.export([root])
    exporter.export([tool])
    assert len(stream.getvalue().splitlines()) == 2  # the date, the task; the tool waits
    exporter.export([turn])
    _, first, late = stream.getvalue().splitlines()
    assert "completed" in first
    assert re.search(r"continued +1 tool  ", late)


def test_held_tasks_are_bounded_and_printed_at_shutdown() -> None:
    stream = io.StringIO()
    exporter = ConsoleSpanExporter(
        stream, "summary", color=False, max_held_traces=2, hold_seconds=0
    )
    for trace in (1, 2, 3):  # turns whose task root never comes
        exporter.export(
            [_record(trace, trace * 10 + 1, trace * 10, "turn", 1_700_000_000_000_000_000 + trace)]
        )
    assert stream.getvalue().count("unfinished") == 1  # the oldest, to keep two
    exporter.shutdown()
    lines = [line for line in stream.getvalue().splitlines() if not DAY.match(line)]
    assert len(lines) == 2 and re.search(r"unfinished +0 tools ", lines[0])
    assert lines[1] == (
        "2 tasks still open at the stop, not printed: a task's line is printed when it ends"
    )


@pytest.mark.parametrize("console_format", ["summary", "tree"])
def test_tasks_still_open_at_shutdown_are_one_line_whatever_their_spans(
    console_format: str,
) -> None:
    """5 open tasks of 2 or 3 finished turns each printed 11 "unfinished" lines at a Ctrl-C."""
    stream = io.StringIO()
    exporter = ConsoleSpanExporter(stream, console_format, color=False, hold_seconds=0)
    for trace in range(1, 6):
        root = trace * 100  # the task's root: open, never exported
        for turn in range(2 + trace % 2):
            start = 1_700_000_000_000_000_000 + trace * 10**9 + turn
            exporter.export([_record(trace, root + 1 + turn, root, "turn", start)])
    exporter.shutdown()
    assert stream.getvalue().splitlines() == [
        "5 tasks still open at the stop, not printed: a task's line is printed when it ends"
    ]


def test_a_closed_pipe_stops_the_output_without_failing_the_export(caplog) -> None:
    class Closed(io.StringIO):
        writes = 0

        def write(self, text: str) -> int:
            Closed.writes += 1
            raise BrokenPipeError(32, "Broken pipe")

    exporter = ConsoleSpanExporter(Closed(), "json")
    batches = spans_of([FIXTURES / "abort" / "events.jsonl"])
    results = [exporter.export(batch) for batch in batches * 2]
    assert all(r.name == "SUCCESS" for r in results)
    assert Closed.writes == 1
    assert caplog.text.count("console output stopped") == 1


def test_replay_prints_the_chosen_format(capsys) -> None:
    fixture = str(FIXTURES / "resume")
    assert main(["replay", fixture, "--no-progress", "--console-format", "summary"]) == 0
    day, *summary = capsys.readouterr().out.splitlines()
    assert DAY.match(day)
    assert len(summary) == 2 and all(SUMMARY.match(line) for line in summary)
    assert main(["replay", fixture, "--no-progress"]) == 0  # not a terminal: JSON
    spans = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sum(1 for s in spans if s["parent_id"] is None) == 2
    assert main(["replay", fixture, "--no-progress", "--console-format", "tree"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(spans) + 1  # the date too
