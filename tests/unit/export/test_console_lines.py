"""The console's lines for people: fixed columns that fit the terminal, outcomes in words,
unknown tokens said as unknown, tasks in the order they started, and a line per task however
many copies of a log there are (docs/architecture.md, "The console")."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from otel_bridge.export._console import ConsoleSpanExporter
from tests import paths
from tests.builder import Log
from tests.unit.export.test_console import DAY, FIXTURES, LOGS, SUMMARY, printed, roots, spans_of

OLD_CLIS = sorted(FIXTURES.glob("*_cli10[89]*/events.jsonl"))


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if not DAY.match(line)]


@pytest.mark.parametrize("width", [80, 100, 120])
def test_summary_lines_fit_the_width_with_fixed_columns(width: int) -> None:
    lines = _lines(printed(spans_of(LOGS), "summary", width=width))
    assert len(lines) == len(roots(spans_of(LOGS)))
    assert max(map(len, lines)) <= width
    # the columns up to the duration are where they are on every line
    assert {line.index(" tool") for line in lines} == {line.index(" tool") for line in lines[:1]}
    ends = {m.end("duration") for m in map(SUMMARY.match, lines) if m}
    assert len(ends) == 1, ends
    if width >= 100:  # room for the sub-agents and the model
        assert all(m and m["model"] == "gpt-4.1" for m in map(SUMMARY.match, lines))
        assert any(m and m["agents"] for m in map(SUMMARY.match, lines))


def test_without_a_width_a_line_takes_80_columns_and_100_with_sub_agents() -> None:
    # (and a few more for why a task failed: "(query)"), then the context of its fullest call
    lines = _lines(printed(spans_of(LOGS), "summary"))  # a pipe: nothing is cut
    matched = [SUMMARY.match(line) for line in lines]
    assert all(matched)
    cut = [line[: m.end("model")] for line, m in zip(lines, matched, strict=True) if m]
    plain = [line for line in cut if "sub-agent" not in line and "(" not in line]
    agents = [line for line in cut if "sub-agent" in line]
    assert plain and agents
    assert max(map(len, plain)) <= 80 and max(map(len, agents)) <= 100
    assert all(line.endswith("gpt-4.1") for line in cut)
    # every fixture with usage records says its model's limit: 64k (copilot -p), 128k (SDK)
    limits = {m["limit"] for m in matched if m and m["ctx"]}
    assert limits == {"64k", "128k"}


@pytest.mark.parametrize("console_format", ["summary", "tree"])
def test_the_fullest_context_of_a_task_and_of_each_call(
    tmp_path: Path, console_format: str
) -> None:
    log = Log.asked("0123abcd-4567-489a-9bcd-0123456789ab")
    log.turn("0")
    log.usage("u1", inputTokens=40_000, maxPromptTokens=128_000)
    log.message([("c1", "bash")], turn="0")
    log.tool_start("c1", "bash")
    log.tool_done("c1")
    log.turn_end("0")
    log.turn("1")
    log.usage("u2", inputTokens=111_360, maxPromptTokens=128_000)
    log.usage("u3", inputTokens=20_000)  # no limit: no context
    log.message([], turn="1")
    log.turn_end("1")
    (tmp_path / "events.jsonl").write_bytes(log.jsonl())
    text = printed(spans_of([tmp_path / "events.jsonl"]), console_format)
    (summary,) = [m for m in map(SUMMARY.match, _lines(text)) if m]
    assert (summary["ctx"], summary["limit"]) == ("87", "128k")  # the fullest call's
    if console_format == "tree":
        calls = [line for line in text.splitlines() if "chat gpt-4.1" in line]
        assert [line.split("tok", 1)[1].strip() for line in calls] == [
            "ctx 31% of 128k",
            "ctx 87% of 128k",
            "",
        ]


def test_a_long_model_is_shortened_to_fit_and_still_tells_models_apart() -> None:
    batches = spans_of([FIXTURES / "abort" / "events.jsonl"])
    out = []
    for model in ("gpt-4.1-mini", "gpt-4.1-nano"):
        renamed = [[_with_model(span, model) for span in batch] for batch in batches]
        out += _lines(printed(renamed, "summary", width=80))
    assert max(map(len, out)) <= 80
    assert out[0].endswith("g-4.1-mini") and out[1].endswith("g-4.1-nano")


def _with_model(span: ReadableSpan, model: str) -> ReadableSpan:
    attributes = dict(span.attributes or {})
    if "gen_ai.request.model" in attributes:
        attributes["gen_ai.request.model"] = model
    span._attributes = attributes  # type: ignore[assignment]  # a copy per test run
    return span


@pytest.mark.parametrize("console_format", ["summary", "tree"])
def test_tokens_of_clis_without_usage_records_are_unknown_not_zero(console_format: str) -> None:
    text = printed(spans_of(OLD_CLIS), console_format)
    summary = [m for m in map(SUMMARY.match, _lines(text)) if m]
    assert len(summary) == len(OLD_CLIS)
    assert all(m["tokens"] == "n/a tok" for m in summary)
    assert "0/0" not in text and " 0 in " not in text
    if console_format == "tree":
        chats = [line for line in text.splitlines() if "chat gpt-4.1" in line]
        assert chats and all(line.endswith("n/a tok") for line in chats)


def test_outcomes_read_in_words() -> None:
    words = {m["outcome"] for m in map(SUMMARY.match, _lines(printed(spans_of(LOGS), "summary")))}
    assert words == {"done", "completed", "aborted", "error", "unfinished"}
    assert "no_signal" not in printed(spans_of(LOGS), "tree")


def test_tasks_print_in_the_order_they_started_whatever_order_logs_come_in() -> None:
    # run catching up: each log read whole, one after the other, in the order of their paths
    backwards = spans_of(sorted(LOGS, reverse=True))
    lines = _lines(printed(backwards, "summary", hold_seconds=60))  # printed at shutdown
    starts = sorted((s.start_time or 0) for s in roots(backwards))
    assert len(lines) == len(starts)
    assert lines == _lines(printed(spans_of(LOGS), "summary", hold_seconds=60))
    # a date line before the first task of each day; within a day, HH:MM sorts
    by_day: list[list[str]] = []
    days = []
    for line in printed(backwards, "summary", days=True).splitlines():
        if DAY.match(line):
            days.append(line)
            by_day.append([])
        elif by_day:
            by_day[-1].append(line[:5])
    assert days == sorted(set(days)) and days
    assert all(times == sorted(times) for times in by_day)
    assert sum(map(len, by_day)) == len(lines)


def test_what_waits_is_printed_once_no_span_has_come_for_a_while() -> None:
    stream = io.StringIO()
    exporter = ConsoleSpanExporter(stream, "summary", color=False, hold_seconds=0.05)
    for batch in spans_of(sorted(LOGS, reverse=True)[:6]):
        exporter.export(batch)
    deadline = time.monotonic() + 30
    while not stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    lines = _lines(stream.getvalue())
    assert lines and [line[:5] for line in lines] == sorted(line[:5] for line in lines)
    exporter.shutdown()


def _copies(path: Path, count: int) -> list[list[ReadableSpan]]:
    """The batches of `count` copies of one log: the same session id, the same span ids."""
    return [batch for _ in range(count) for batch in spans_of([path])]


@pytest.mark.parametrize("console_format", ["summary", "tree"])
def test_copies_of_a_session_print_a_line_per_task_each(console_format: str) -> None:
    """A session folder copied 5 times printed 22 lines, most of them "continued"."""
    path = FIXTURES / "resume" / "events.jsonl"
    one = _lines(printed(spans_of([path]), console_format))
    five = _lines(printed(_copies(path, 5), console_format))
    assert "continued" not in "".join(five)
    assert sorted(five) == sorted(one * 5)


def test_interleaved_copies_of_a_session_each_print_whole() -> None:
    """`run` reads several logs in one poll: batches of copies can come interleaved."""
    path = FIXTURES / "subagent" / "events.jsonl"
    one = _lines(printed(spans_of([path]), "summary"))
    copies = [spans_of([path]) for _ in range(3)]
    spans: list[list[ReadableSpan]] = []
    for at in range(max(map(len, copies[0]), default=0)):
        for batches in copies:
            for batch in batches:
                if at < len(batch):
                    spans.append([batch[at]])
    assert _lines(printed(spans, "summary")) == one * 3


def test_late_work_after_its_task_is_still_continued() -> None:
    """A span under a printed root that was not printed there is late work; one that was is
    the same span again (another copy), which waits for its own root."""
    batches = spans_of([FIXTURES / "run1_cli_prompt_basic" / "events.jsonl"])
    spans = [s for batch in batches for s in batch]
    root = next(s for s in spans if s.parent is None)
    child = next(
        s for s in spans if s.parent is not None and s.parent.span_id == root.context.span_id
    )
    stream = io.StringIO()
    exporter = ConsoleSpanExporter(stream, "summary", color=False, hold_seconds=0)
    exporter.export(spans)
    exporter.export([child])  # printed before: a repeat, held for its root
    assert len(_lines(stream.getvalue())) == 1
    exporter.export([root])
    assert len(_lines(stream.getvalue())) == 2 and "continued" not in stream.getvalue()


def test_a_line_is_never_wider_than_the_terminal(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "72")
    lines = _lines(printed(spans_of(LOGS), "summary"))
    assert max(map(len, lines)) <= 72
    monkeypatch.delenv("COLUMNS")  # a pipe has no width: nothing is cut
    assert max(map(len, _lines(printed(spans_of(LOGS), "summary")))) > 72


def test_counts_have_their_noun_in_the_singular_and_the_plural() -> None:
    text = "\n".join(_lines(printed(spans_of(LOGS), "summary")))
    for right in ("  1 tool  ", "  0 tools  ", "  2 tools", "  1 sub-agent  ", "  2 sub-agents  "):
        assert right in text, right
    for wrong in (" 1 tools", " 1 sub-agents", " 0 tool ", " 2 tool "):
        assert wrong not in text, wrong


def test_the_docs_say_what_every_outcome_word_means() -> None:
    from otel_bridge._words import CONTINUED, OUTCOMES, UNFINISHED

    readme = (paths.REPO / "docs" / "commands.md").read_text()
    rows = {
        row.split("|")[1].strip(): row.split("|")[2].strip()
        for row in readme.splitlines()
        if row.startswith("| ") and row.count("|") == 4
    }
    for outcome in OUTCOMES:
        assert rows[outcome.word] == f"`{outcome.value}`"
    assert rows[UNFINISHED.word].startswith("`no_signal`, with `copilot.incomplete=true`")
    assert CONTINUED.word in rows
