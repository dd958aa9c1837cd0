"""Context-window pressure (assembler/_context.py, docs/spans.md "Context window", docs/metrics.md
"Context window"): each chat span's tokens, limit and utilization as its usage record says, each
task's peak and its compactions and truncations as its events say, the running-now gauges, and
bad numbers that give no utilization, are counted, and stop nothing.

The fixtures have usage records with `maxPromptTokens`; one (compaction_manual) has a real
compaction, typed `/compact` after its task ended. No recording has a compaction inside a task
or a truncation: those tests build their events from the CLI schema's field names
(`session.compaction_start`, `session.compaction_complete`, `session.truncation`, live
`session.usage_info`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_bridge import semconv as sc
from otel_bridge._records import SpanRecord
from otel_bridge.app._stats import StatsAssembler, StatsCollector
from otel_bridge.app._stats_table import render_context
from otel_bridge.assembler import Assembler, AssemblerConfig, TroubleOptions
from otel_bridge.decode._events import event_from_json
from tests import paths, spantree
from tests.builder import Log
from tests.recorder import Recorder

MAIN = (sc.MODE_INTERACTIVE, None, None, sc.MAIN_AGENT_NAME)
CONTEXT_KEYS = (sc.COPILOT_CONTEXT_TOKENS, sc.COPILOT_CONTEXT_LIMIT, sc.COPILOT_CONTEXT_UTILIZATION)


def raw_events(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn line: the bridge skips it too
    return out


def usage_records(path: Path) -> list[dict[str, Any]]:
    return [
        e["data"]["usage"]
        for e in raw_events(path)
        if e.get("type") == "session.usage_record" and isinstance(e.get("data"), dict)
    ]


FIXTURES_WITH_USAGE = sorted(p for p in paths.FIXTURES.glob("*/events.jsonl") if usage_records(p))


def event_ns(event: dict[str, Any]) -> int:
    return event_from_json(event).timestamp_ns


def chats(spans: list[SpanRecord]) -> list[SpanRecord]:
    return [s for s in spans if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT]


def tasks(spans: list[SpanRecord]) -> list[SpanRecord]:
    return [s for s in spans if sc.COPILOT_TASK_OUTCOME in s.attributes]


def test_the_fixtures_with_usage_records_are_many() -> None:
    assert len(FIXTURES_WITH_USAGE) >= 20


@pytest.mark.parametrize("path", FIXTURES_WITH_USAGE, ids=lambda p: p.parent.name)
def test_every_chat_span_and_task_says_what_its_records_say(path: Path) -> None:
    spans = spantree.assemble(path)
    by_call: dict[str, set[tuple[Any, Any]]] = {}
    for usage in usage_records(path):
        by_call.setdefault(usage["apiCallId"], set()).add(
            (usage.get("inputTokens"), usage.get("maxPromptTokens"))
        )
    calls = [s for s in chats(spans) if sc.COPILOT_USAGE_UNKNOWN not in s.attributes]
    assert calls
    for span in calls:
        attributes = span.attributes
        record = (attributes[sc.COPILOT_CONTEXT_TOKENS], attributes[sc.COPILOT_CONTEXT_LIMIT])
        assert record in by_call[str(attributes[sc.GEN_AI_RESPONSE_ID])]
        # the rule: inputTokens already holds the cache reads; never added to them
        assert attributes[sc.COPILOT_CONTEXT_TOKENS] == attributes[sc.GEN_AI_USAGE_INPUT_TOKENS]
        assert attributes[sc.COPILOT_CONTEXT_UTILIZATION] == record[0] / record[1]
    for task in tasks(spans):
        # the raw events of the task: those between its root's start and end
        inside = [
            e["type"]
            for e in raw_events(path)
            if task.start_ns <= event_ns(e) <= task.end_ns and e.get("agentId") is None
        ]
        own = [
            s.attributes[sc.COPILOT_CONTEXT_UTILIZATION]
            for s in calls
            if s.trace_id == task.trace_id
        ]
        if own:
            assert task.attributes[sc.COPILOT_TASK_CONTEXT_MAX_UTILIZATION] == max(own)
        else:
            assert sc.COPILOT_TASK_CONTEXT_MAX_UTILIZATION not in task.attributes
        compactions = inside.count("session.compaction_complete")
        truncations = inside.count("session.truncation")
        assert task.attributes.get(sc.COPILOT_TASK_COMPACTIONS) == (compactions or None)
        assert task.attributes.get(sc.COPILOT_TASK_TRUNCATIONS) == (truncations or None)


RECORDED = paths.FIXTURES / "compaction_manual" / "events.jsonl"


def test_a_recorded_compaction_has_the_fields_the_schema_gives() -> None:
    """tests/fixtures/compaction_manual: the interactive CLI 1.0.102 answered a prompt, then
    `/compact` (scripts/record_compaction.py). The fields the bridge reads are there, as
    numbers; a manual compaction of so short a history removes nothing (its summary is longer
    than what it replaced)."""
    events = raw_events(RECORDED)
    (start,) = [e["data"] for e in events if e["type"] == "session.compaction_start"]
    (done,) = [e["data"] for e in events if e["type"] == "session.compaction_complete"]
    assert start["trigger"] == "manual"
    assert start["tokenLimit"] == 64_000
    assert start["currentTokens"] == 12_448
    parts = start["systemTokens"] + start["conversationTokens"] + start["toolDefinitionsTokens"]
    assert abs(parts - start["currentTokens"]) < 10  # the CLI's own estimate, nearly its parts
    assert done["success"] is True and done["outcome"] == "applied"
    assert (done["preCompactionTokens"], done["postCompactionTokens"]) == (12_448, 12_467)
    assert done["tokensRemoved"] == 0
    (usage,) = usage_records(RECORDED)
    # the fake model said prompt_tokens 9000, cached_tokens 4000 (script.json)
    assert (usage["inputTokens"], usage["cacheReadTokens"], usage["maxPromptTokens"]) == (
        9000,
        4000,
        64_000,
    )


def test_a_compaction_between_tasks_is_counted_and_belongs_to_no_task() -> None:
    """`/compact` after the task's answer: the task had ended (its loop ended with the
    answer), so no task counts it and no signal can come of it; copilot.compactions does."""
    recorder = Recorder()
    spans = spantree.assemble(RECORDED, metrics=recorder)  # type: ignore[arg-type]
    (task,) = tasks(spans)
    assert sc.COPILOT_TASK_COMPACTIONS not in task.attributes
    assert task.attributes[sc.COPILOT_TASK_CONTEXT_MAX_UTILIZATION] == 9000 / 64_000
    assert task.attributes[sc.COPILOT_TASK_CONTEXT_LIMIT] == 64_000
    assert recorder.values(sc.METRIC_COMPACTIONS, copilot__compaction__outcome="success") == [1]


def test_the_recorded_cache_reads_are_inside_the_input_tokens() -> None:
    """The evidence for the rule, in the recordings: the fake model server reports
    `prompt_tokens` 1200 + 7n and `cached_tokens` 100 (tests/e2e/fake_llm.py); the CLI writes
    them as they are, so inputTokens is the whole prompt, cache reads included."""
    records = usage_records(paths.FIXTURES / "custom_agent" / "events.jsonl")
    assert [(u["inputTokens"], u["cacheReadTokens"]) for u in records[:3]] == [
        (1200, 100),
        (1207, 100),
        (1214, 100),
    ]


def one_call(**usage: Any) -> Log:
    log = Log.asked()
    log.turn("0")
    log.usage("u1", **usage)
    log.message([], turn="0")
    log.turn_end("0")
    return log


def test_a_call_and_its_task_with_a_limit() -> None:
    recorder = Recorder()
    spans = spantree.assemble(
        one_call(inputTokens=96_000, cacheReadTokens=90_000, maxPromptTokens=128_000),
        metrics=recorder,  # type: ignore[arg-type]
    )
    (chat,) = chats(spans)
    assert {k: chat.attributes[k] for k in CONTEXT_KEYS} == {
        sc.COPILOT_CONTEXT_TOKENS: 96_000,
        sc.COPILOT_CONTEXT_LIMIT: 128_000,
        sc.COPILOT_CONTEXT_UTILIZATION: 0.75,
    }
    (task,) = tasks(spans)
    assert task.attributes[sc.COPILOT_TASK_CONTEXT_MAX_UTILIZATION] == 0.75
    assert task.attributes[sc.COPILOT_TASK_CONTEXT_TOKENS] == 96_000
    assert task.attributes[sc.COPILOT_TASK_CONTEXT_LIMIT] == 128_000
    for key in (
        sc.COPILOT_TASK_COMPACTIONS,
        sc.COPILOT_TASK_TRUNCATIONS,
        sc.COPILOT_TASK_CONTEXT_TOKENS_REMOVED,
    ):
        assert key not in task.attributes
    assert recorder.values(
        sc.METRIC_CONTEXT_UTILIZATION,
        gen_ai__request__model="gpt-4.1",
        copilot__mode=sc.MODE_INTERACTIVE,
    ) == [0.75]


def test_a_call_without_a_limit_has_no_limit_no_utilization_and_no_series() -> None:
    recorder = Recorder()
    spans = spantree.assemble(one_call(), metrics=recorder)  # type: ignore[arg-type]
    (chat,) = chats(spans)
    assert chat.attributes[sc.COPILOT_CONTEXT_TOKENS] == 100
    assert sc.COPILOT_CONTEXT_LIMIT not in chat.attributes
    assert sc.COPILOT_CONTEXT_UTILIZATION not in chat.attributes
    (task,) = tasks(spans)
    assert sc.COPILOT_TASK_CONTEXT_MAX_UTILIZATION not in task.attributes
    assert recorder.values(sc.METRIC_CONTEXT_UTILIZATION) == []
    assert recorder.values(sc.METRIC_VALUES_REPAIRED) == []


@pytest.mark.parametrize(
    ("fields", "tokens", "limit"),
    [
        ({"maxPromptTokens": 0}, 100, None),
        ({"maxPromptTokens": -128_000}, 100, None),
        ({"maxPromptTokens": "128000"}, 100, None),
        ({"maxPromptTokens": True}, 100, None),
        ({"maxPromptTokens": 1e30}, 100, None),
        ({"maxPromptTokens": 2**70}, 100, None),
        ({"maxPromptTokens": 5_000_000_000}, 100, None),
        ({"maxPromptTokens": float("nan")}, 100, None),
        ({"maxPromptTokens": 50}, 100, 50),  # smaller than its tokens
        ({"maxPromptTokens": 1000, "inputTokens": "100"}, None, 1000),
    ],
    ids=["zero", "negative", "text", "bool", "1e30", "2^70", "5e9", "nan", "small", "text-tokens"],
)
def test_a_limit_no_window_can_have_gives_no_utilization_and_is_counted(
    fields: dict[str, Any], tokens: int | None, limit: int | None
) -> None:
    recorder = Recorder()
    spans = spantree.assemble(one_call(**fields), metrics=recorder)  # type: ignore[arg-type]
    (chat,) = chats(spans)
    assert chat.attributes.get(sc.COPILOT_CONTEXT_TOKENS) == tokens
    assert chat.attributes.get(sc.COPILOT_CONTEXT_LIMIT) == limit
    assert sc.COPILOT_CONTEXT_UTILIZATION not in chat.attributes
    assert (
        sum(recorder.values(sc.METRIC_VALUES_REPAIRED, otel_bridge__reason=sc.REPAIR_IMPLAUSIBLE))
        == 1
    )
    assert recorder.values(sc.METRIC_CONTEXT_UTILIZATION) == []
    (task,) = tasks(spans)
    assert sc.COPILOT_TASK_CONTEXT_MAX_UTILIZATION not in task.attributes


def test_a_full_window_is_a_utilization_of_one() -> None:
    spans = spantree.assemble(one_call(inputTokens=64_000, maxPromptTokens=64_000))
    (chat,) = chats(spans)
    assert chat.attributes[sc.COPILOT_CONTEXT_UTILIZATION] == 1.0


def compaction(log: Log, pre: int, post: int, **complete: Any) -> None:
    """A compaction as the CLI schema describes its two events (no recording has one)."""
    log.add(
        "session.compaction_start",
        systemTokens=4_000,
        conversationTokens=pre - 8_000,
        toolDefinitionsTokens=4_000,
        currentTokens=pre,
        tokenLimit=128_000,
        trigger="threshold",
        compactionAttemptId="a",
    )
    log.add(
        "session.compaction_complete",
        **{
            "success": True,
            "preCompactionTokens": pre,
            "postCompactionTokens": post,
            "tokensRemoved": pre - post,
            "messagesRemoved": 10,
            "compactionAttemptId": "a",
            **complete,
        },
    )


def truncation(log: Log, pre: int, post: int) -> None:
    log.add(
        "session.truncation",
        tokenLimit=128_000,
        preTruncationTokensInMessages=pre,
        preTruncationMessagesLength=40,
        postTruncationTokensInMessages=post,
        postTruncationMessagesLength=20,
        tokensRemovedDuringTruncation=pre - post,
        messagesRemovedDuringTruncation=20,
        performedBy="BasicTruncator",
    )


def test_compactions_and_truncations_on_the_task_and_a_signal_from_three() -> None:
    recorder = Recorder()
    config = AssemblerConfig(trouble=TroubleOptions(compactions=3))
    log = Log.asked()
    log.turn("0")
    log.usage("u1", inputTokens=120_000, maxPromptTokens=128_000)
    compaction(log, 120_000, 30_000)
    compaction(log, 110_000, 40_000)
    truncation(log, 100_000, 60_000)
    compaction(log, 125_000, 20_000, success=False, tokensRemoved=None)
    log.message([], turn="0")
    log.turn_end("0")
    spans = spantree.assemble(log, config=config, metrics=recorder)  # type: ignore[arg-type]
    (task,) = tasks(spans)
    assert task.attributes[sc.COPILOT_TASK_COMPACTIONS] == 3
    assert task.attributes[sc.COPILOT_TASK_TRUNCATIONS] == 1
    # 90k + 70k + 40k (truncated) + 105k (no tokensRemoved: before minus after)
    assert task.attributes[sc.COPILOT_TASK_CONTEXT_TOKENS_REMOVED] == 305_000
    assert task.attributes[sc.COPILOT_TASK_CONTEXT_MAX_UTILIZATION] == 120_000 / 128_000
    signals = [dict(e.attributes) for e in task.events if e.name == sc.EVENT_TROUBLE]
    assert signals == [
        {
            sc.COPILOT_TROUBLE_SIGNAL: sc.TROUBLE_COMPACTIONS,
            sc.COPILOT_TROUBLE_VALUE: 3,
            sc.COPILOT_TROUBLE_THRESHOLD: 3,
        }
    ]
    assert recorder.values(
        sc.METRIC_TASK_TROUBLE, copilot__trouble__signal="repeated_compactions"
    ) == [1]
    assert recorder.values(sc.METRIC_CONTEXT_TRUNCATIONS) == [1]
    assert len(recorder.values(sc.METRIC_COMPACTIONS)) == 3


def test_two_compactions_raise_no_signal_and_bad_numbers_remove_nothing() -> None:
    log = Log.asked()
    log.turn("0")
    compaction(log, 120_000, 30_000)
    log.add(
        "session.compaction_complete",
        success=True,
        preCompactionTokens="a lot",
        postCompactionTokens=-5,
        tokensRemoved=1e30,
    )
    log.message([], turn="0")
    log.turn_end("0")
    (task,) = tasks(spantree.assemble(log))
    assert task.attributes[sc.COPILOT_TASK_COMPACTIONS] == 2
    assert task.attributes[sc.COPILOT_TASK_CONTEXT_TOKENS_REMOVED] == 90_000
    assert not [e for e in task.events if e.name == sc.EVENT_TROUBLE]


def test_the_open_task_gauges_follow_calls_compactions_and_live_usage_info() -> None:
    assembler = Assembler()
    log = Log.asked()
    log.turn("0")
    log.usage("u1", inputTokens=50_000, maxPromptTokens=100_000)
    fed = 0

    def step() -> dict[str, dict[tuple[Any, ...], float]]:
        nonlocal fed
        assembler.feed("sess-1", log.events()[fed:])
        fed = len(log.raw)
        view = assembler.in_flight(log.now)
        return {
            name: dict(view.get(name, {}))
            for name in (sc.METRIC_TASKS_OPEN_CONTEXT, sc.METRIC_TASKS_OPEN_CONTEXT_HIGH)
        }

    key = ("gpt-4.1", *MAIN)
    assert step() == {
        sc.METRIC_TASKS_OPEN_CONTEXT: {key: 0.5},
        sc.METRIC_TASKS_OPEN_CONTEXT_HIGH: {key: 0},
    }
    log.usage("u2", inputTokens=95_000, maxPromptTokens=100_000)
    assert step() == {
        sc.METRIC_TASKS_OPEN_CONTEXT: {key: 0.95},
        sc.METRIC_TASKS_OPEN_CONTEXT_HIGH: {key: 1},
    }
    compaction(log, 95_000, 25_600)  # its window: 128k
    assert step()[sc.METRIC_TASKS_OPEN_CONTEXT] == {key: 0.2}
    log.add("session.usage_info", tokenLimit=128_000, currentTokens=115_200, messagesLength=9)
    assert step() == {
        sc.METRIC_TASKS_OPEN_CONTEXT: {key: 0.9},
        sc.METRIC_TASKS_OPEN_CONTEXT_HIGH: {key: 1},
    }
    log.add("session.usage_info", tokenLimit=0, currentTokens=5, messagesLength=9)  # ignored
    assert step()[sc.METRIC_TASKS_OPEN_CONTEXT] == {key: 0.9}
    log.message([], turn="0")
    log.turn_end("0")
    assert step() == {sc.METRIC_TASKS_OPEN_CONTEXT: {}, sc.METRIC_TASKS_OPEN_CONTEXT_HIGH: {}}


def test_an_open_task_without_a_limit_has_no_context_series() -> None:
    assembler = Assembler()
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    assembler.feed("sess-1", log.events())
    view = assembler.in_flight(log.now)
    assert view[sc.METRIC_TASKS_OPEN][MAIN] == 1
    assert not view[sc.METRIC_TASKS_OPEN_CONTEXT]
    assert not view[sc.METRIC_TASKS_OPEN_CONTEXT_HIGH]


def test_usage_info_changes_no_span() -> None:
    """A live-only event moves the gauges, never the spans: a log with it and one without give
    the same spans (a span is what the log on disk says)."""
    with_info = Log.asked()
    without = Log.asked()
    for log in (with_info, without):
        log.turn("0")
        log.usage("u1", inputTokens=50_000, maxPromptTokens=100_000)
        log.message([("c1", "bash")], turn="0")
        log.turn_end("0")
    with_info.add("session.usage_info", tokenLimit=100_000, currentTokens=99_000, messagesLength=3)
    without.add("session.mode_changed", newMode="interactive")  # keeps the clocks in step
    for log in (with_info, without):
        log.tool_start("c1", "bash")
        log.tool_done("c1")
        log.turn("1")
        log.message([], turn="1")
        log.turn_end("1")

    def shape(spans: list[SpanRecord]) -> list[tuple[str, int, int, dict[str, Any]]]:
        return [(s.name, s.start_ns, s.end_ns, dict(s.attributes)) for s in spans]

    assert shape(spantree.assemble(with_info)) == shape(spantree.assemble(without))


def test_stats_percentiles_and_compactions_per_task_by_model() -> None:
    collector = StatsCollector()
    assembler = StatsAssembler(collector)
    log = Log.asked()
    log.turn("0")
    for n in range(1, 11):  # 10%, 20% ... 100% of the window
        log.usage(f"u{n}", inputTokens=n * 10_000, maxPromptTokens=100_000)
    log.usage("other", model="claude-sonnet-4.5", inputTokens=5)  # no limit: no row
    for _ in range(3):
        compaction(log, 100_000, 10_000)
    log.message([], turn="0")
    log.turn_end("0")
    log.user(interaction="i2")
    log.turn("0", interaction="i2")
    log.usage("u11", inputTokens=50_000, maxPromptTokens=100_000)
    log.message([], turn="0")
    log.turn_end("0")
    assembler.feed("sess-1", log.events(), "sess-1")
    assembler.end_stream("sess-1")
    assert set(collector.context) == {"gpt-4.1"}
    context = collector.context["gpt-4.1"].to_dict()
    assert context == {
        "calls": 11,
        "p50": 0.5,  # the 6th of 10%, 20%, ..., 50%, 50%, ..., 100%
        "p90": 0.9,
        "p99": 1.0,
        "max": 1.0,
        "tasks": 2,
        "compactions": 3,
        "compactions_per_task": 1.5,
    }
    assert render_context(collector.context).splitlines() == [
        "context window (LLM calls with a prompt limit), by model",
        "model    calls  p50  p90   p99   max  tasks  compact/task",
        "gpt-4.1     11  50%  90%  100%  100%      2          1.50",
    ]
    assert max(map(len, render_context(collector.context, 40).splitlines())) == 40


def test_stats_without_limits_show_no_context() -> None:
    collector = StatsCollector()
    assembler = StatsAssembler(collector)
    assembler.feed("sess-1", one_call().events(), "sess-1")
    assembler.end_stream("sess-1")
    assert render_context(collector.context) == ""
    assert collector.context["gpt-4.1"].to_dict()["calls"] == 0
