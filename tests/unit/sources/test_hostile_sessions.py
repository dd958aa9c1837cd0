"""One bad session never changes what the bridge makes of the others, nor of its own real work:
values no exporter can carry are made valid where the record is built, junk events add a
bounded, counted number of spans and never change a real one, a session cannot take another's
ids, and what an open task holds is bounded (docs/architecture.md, "Bad input")."""

from __future__ import annotations

import json
import logging
import math

import pytest

from otel_bridge import Assembler, AssemblerConfig, JsonLinesDecoder, SpanRecord
from otel_bridge import semconv as sc
from tests import paths
from tests.builder import Log, iso
from tests.recorder import Recorder
from tests.spantree import by_name, check_invariants, turns

FIXTURES = paths.FIXTURES
UUID = "4b1d7a57-3c1e-4f5a-9d7e-0123456789ab"
OTHER_UUID = "0c6f2b9e-8d1a-4e55-b1a3-fedcba987654"
#: What OTLP carries, for every consumer: times as signed 64-bit ns, 64-bit integers.
MAX_TIME_NS = 2**63 - 1
INT64_MAX = 2**63 - 1


def replay_bytes(
    data: bytes, stream: str = "sess-1", hint: str | None = None, recorder: Recorder | None = None
) -> tuple[list[SpanRecord], Assembler, JsonLinesDecoder]:
    """What `replay` makes of one log's bytes: decoder, then assembler, then the end of input."""
    assembler = Assembler(metrics=recorder)
    decoder = JsonLinesDecoder(stream)
    events = decoder.feed(data) + decoder.finish()
    spans = assembler.feed(stream, events, hint) + assembler.end_stream(stream)
    return spans, assembler, decoder


def exportable(span: SpanRecord) -> None:
    """What OTLP carries: times in 0..2^63-1, text that is UTF-8, 64-bit integers, finite
    floats."""
    assert 0 <= span.start_ns <= span.end_ns <= MAX_TIME_NS, span.name
    span.name.encode("utf-8")
    for mapping in (span.attributes, *(e.attributes for e in span.events)):
        for key, value in mapping.items():
            key.encode("utf-8")
            for item in value if isinstance(value, list | tuple) else [value]:
                if isinstance(item, str):
                    item.encode("utf-8")
                elif isinstance(item, float):
                    assert math.isfinite(item), key
                elif isinstance(item, int) and not isinstance(item, bool):
                    assert -(2**63) <= item <= INT64_MAX, key


def one_tool_task(log: Log, usage: dict | None = None) -> None:
    log.start()
    log.user()
    log.turn("0")
    log.usage("u1", **(usage or {}))
    log.message([("c1", "grep")])
    log.tool_start("c1", "grep")
    log.tool_done("c1")
    log.turn_end("0")


# --- values no exporter can carry --------------------------------------------------------------


@pytest.mark.parametrize("bad", ["1e999", "-1e999", "NaN", "100000000000000000000000"])
def test_a_usage_field_out_of_range_drops_the_field_and_keeps_the_llm_call(bad: str) -> None:
    log = Log()
    one_tool_task(log, {"inputTokens": 123456789, "reasoningTokens": 987654321})
    text = log.jsonl().replace(b"987654321", bad.encode())
    spans, assembler, _ = replay_bytes(text)
    check_invariants(spans)
    (chat,) = by_name(spans, "chat")
    assert chat.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 123456789  # the rest stays
    assert sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS not in chat.attributes
    assert not assembler.stats.failures
    for span in spans:
        exportable(span)


def test_a_negative_or_huge_call_duration_never_puts_a_span_outside_its_times() -> None:
    log = Log()
    one_tool_task(log, {"duration": -1e30})
    log.turn("1")
    log.usage("u2", duration=1e300)
    log.turn_end("1")
    spans, _, _ = replay_bytes(log.jsonl())
    chats = sorted(by_name(spans, "chat"), key=lambda s: s.end_ns)
    usage_times = [e.timestamp_ns for e in log.events() if e.type == "session.usage_record"]
    in_order = turns(spans)
    assert [c.end_ns for c in chats] == usage_times  # an LLM call ends at its usage record
    assert chats[0].start_ns == chats[0].end_ns  # a negative duration: no duration at all
    assert chats[1].start_ns == in_order[1].start_ns  # cut to its turn
    assert sc.COPILOT_USAGE_DURATION_MS not in chats[0].attributes
    for span in spans:
        exportable(span)


@pytest.mark.parametrize("stamp", ["2555-01-01T00:00:00.000Z", "1969-12-31T23:59:59.000Z"])
def test_an_event_time_no_span_can_carry_is_refused_as_a_bad_line(stamp: str) -> None:
    log = Log()
    one_tool_task(log)
    raw = log.raw
    good = replay_bytes(log.jsonl())[0]
    raw[-2]["timestamp"] = stamp  # the tool's completion
    spans, _, decoder = replay_bytes(log.jsonl())
    assert decoder.stats.malformed == 1
    for span in spans:
        exportable(span)
    # the rest of the task is there, the tool ended incomplete with its turn
    assert {s.span_id for s in spans} == {s.span_id for s in good}


def test_lone_surrogates_from_the_log_become_replacement_characters_counted() -> None:
    log = Log()
    one_tool_task(log)
    log.raw[-3]["data"]["toolName"] = "gr\ud83dep"  # an emoji's escape cut in half
    log.raw[-2]["data"]["result"] = {"content": "x\udc00y"}
    text = log.jsonl()
    assert b"\\ud83d" in text  # as JSON writes it (ensure_ascii)
    recorder = Recorder()
    spans, assembler, _ = replay_bytes(text, recorder=recorder)
    (tool,) = by_name(spans, "execute_tool")
    assert tool.name == "execute_tool gr\ufffdep"
    assert tool.attributes[sc.GEN_AI_TOOL_NAME] == "gr\ufffdep"
    for span in spans:
        exportable(span)
    assert assembler.stats.repaired[sc.REPAIR_TEXT] >= 2
    assert sum(recorder.values(sc.METRIC_VALUES_REPAIRED)) >= 2
    # the metric labels made of the tool's name are valid text too
    for _, _, _, attributes, _ in recorder.points:
        for value in attributes.values():
            if isinstance(value, str):
                value.encode("utf-8")


def test_compaction_fields_are_bounded_in_number_size_and_names() -> None:
    log = Log()
    one_tool_task(log)
    log.raw.pop()  # keep the task open
    fields = {f"n{i}": i for i in range(100)}
    log.add(
        "session.compaction_complete",
        success=True,
        preCompactionTokens=2**70,
        tokensRemoved=float("nan"),
        **{"bad key\n": 1, "x" * 100: 2},
        **fields,
    )
    text = log.jsonl()
    assert b"NaN" in text
    spans, assembler, _ = replay_bytes(text)
    root = by_name(spans, "invoke_agent")[0]
    (event,) = [e for e in root.events if e.name == "copilot.compaction_complete"]
    assert event.attributes["copilot.success"] is True
    assert "copilot.pre_compaction_tokens" not in event.attributes  # beyond 64 bits
    assert "copilot.tokens_removed" not in event.attributes  # NaN
    assert not [k for k in event.attributes if "\n" in k or "xxxx" in k]
    assert len(event.attributes) <= 32
    assert assembler.stats.limits[sc.LIMIT_EVENT_FIELDS] == 1


def test_line_counts_of_edits_saturate_rather_than_overflow() -> None:
    log = Log()
    one_tool_task(log)
    log.raw.pop()  # keep the task open
    for call in ("e1", "e2"):
        log.tool_start(call, "edit")
        log.tool_done(call, toolTelemetry={"metrics": {"linesAdded": INT64_MAX}})
    spans, _, _ = replay_bytes(log.jsonl())
    root = by_name(spans, "invoke_agent")[0]
    assert root.attributes[sc.COPILOT_TASK_LINES_ADDED] == INT64_MAX
    for span in spans:
        exportable(span)


# --- junk sub-agent events -----------------------------------------------------------------


def real_task() -> Log:
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("t1", "task")])
    log.tool_start("t1", "task")
    log.add("subagent.started", "sub", toolCallId="t1", agentName="explore")
    log.turn("0", "si", agent="sub", parent="t1")
    log.usage("u-sub", agent="sub", parent="t1")
    log.message(agent="sub", parent="t1")
    log.turn_end("0", agent="sub", parent="t1")
    log.add("subagent.completed", "sub", toolCallId="t1", agentName="explore")
    log.tool_done("t1")
    log.turn_end("0")
    log.turn("1")
    log.usage("u2")
    log.message()
    log.turn_end("1")  # the loop ends here: no tools asked for
    return log


def with_junk(log: Log, at: int, count: int, distinct: bool) -> Log:
    """`count` assistant.turn_start lines of sub-agents nobody announced, inserted before event
    `at`, an hour later than anything else."""
    junk = []
    for n in range(count):
        junk.append(
            {
                "type": "assistant.turn_start",
                "data": {"turnId": "0"},
                "id": f"junk{n}",
                "timestamp": iso(log.now + 3_600_000_000_000 + n * 1_000_000),
                "agentId": f"ghost-{n if distinct else 0}",
            }
        )
    log.raw[at:at] = junk
    return log


@pytest.mark.parametrize("distinct", [True, False])
def test_junk_subagent_events_never_change_a_real_span_and_add_a_bounded_number(
    distinct: bool,
) -> None:
    clean, _, _ = replay_bytes(real_task().jsonl())
    log = with_junk(real_task(), at=len(real_task().raw) - 2, count=200, distinct=distinct)
    spans, assembler, _ = replay_bytes(log.jsonl())
    check_invariants(spans)
    by_id = {s.span_id: s for s in spans}
    for span in clean:  # every real span, unchanged: same times, same attributes
        assert by_id[span.span_id] == span, span.name
    added = len(spans) - len(clean)
    assert 0 < added <= 40, added
    assert sum(assembler.stats.limits.values()) > 0


def test_a_real_task_still_ends_at_its_turn_end_after_junk_subagent_events() -> None:
    """A sub-agent nobody announced is not waited for: the loop ends as it would have."""
    clean, _, _ = replay_bytes(real_task().jsonl())
    log = with_junk(real_task(), at=len(real_task().raw) - 4, count=3, distinct=True)
    spans, _, _ = replay_bytes(log.jsonl())
    (root,) = [s for s in by_name(spans, "invoke_agent copilot")]
    (clean_root,) = [s for s in by_name(clean, "invoke_agent copilot")]
    assert root.end_ns == clean_root.end_ns
    assert root.attributes[sc.COPILOT_END_REASON] == sc.END_LOOP


# --- a session that claims another's id ------------------------------------------------------


def session_log(session_id: str) -> bytes:
    log = Log(session=session_id)
    one_tool_task(log)
    return log.jsonl()


def conversations(spans: list[SpanRecord]) -> set[object]:
    return {s.attributes.get(sc.GEN_AI_CONVERSATION_ID) for s in spans} - {None}


def test_a_session_claiming_another_sessions_id_gets_ids_of_its_own(caplog) -> None:
    victim, _, _ = replay_bytes(session_log(UUID), f"/s/{UUID}/events.jsonl", UUID)
    recorder = Recorder()
    with caplog.at_level(logging.WARNING, logger="otel_bridge"):
        forged, assembler, _ = replay_bytes(
            session_log(UUID), f"/s/{OTHER_UUID}/events.jsonl", OTHER_UUID, recorder
        )
    assert not {s.span_id for s in victim} & {s.span_id for s in forged}
    assert not {s.trace_id for s in victim} & {s.trace_id for s in forged}
    assert conversations(forged) == {OTHER_UUID}
    assert assembler.stats.mismatched == 1
    assert sum(recorder.values(sc.METRIC_SESSION_MISMATCHES)) == 1
    assert caplog.text.count("names session") == 1


def test_a_session_id_that_agrees_with_its_directory_changes_nothing() -> None:
    as_named, _, _ = replay_bytes(session_log(UUID), "x", None)
    in_its_directory, assembler, _ = replay_bytes(
        session_log(UUID), f"/s/{UUID}/events.jsonl", UUID
    )
    assert as_named == in_its_directory
    assert assembler.stats.mismatched == 0


def test_a_fixture_directory_that_is_not_a_session_id_keeps_the_claimed_id() -> None:
    """tests/fixtures/<name>/events.jsonl: the name is no session id; the log's is used."""
    spans, assembler, _ = replay_bytes(session_log(UUID), "fixtures/abort/events.jsonl", "abort")
    assert conversations(spans) == {UUID}
    assert assembler.stats.mismatched == 0


def test_a_checkpoint_naming_another_session_does_not_give_its_id() -> None:
    """A checkpoint saved before this rule (or forged) is held to it too."""
    assembler = Assembler()
    session = assembler.session(f"/s/{OTHER_UUID}/events.jsonl", OTHER_UUID)
    session.restore({"session_id": UUID, "named": True})
    assert session.session_id == OTHER_UUID
    fixture = assembler.session("fixtures/abort/events.jsonl", "abort")
    fixture.restore({"session_id": UUID, "named": True})
    assert fixture.session_id == UUID


# --- what an open task holds ------------------------------------------------------------------


def sizes(assembler: Assembler, stream: str) -> dict[str, int]:
    """How much the open task of `stream` holds, container by container."""
    session = assembler.session(stream)
    interaction = session.interaction
    assert interaction is not None
    turn = interaction.main.turn
    return {
        "requested_by": len(interaction.requested_by),
        "chat_keys": len(interaction.chat_keys),
        "interaction_ids": len(interaction.interaction_ids),
        "shells": len(interaction.shells),
        "tools": len(interaction.tools),
        "subagents": len(interaction.subagents),
        "agents_by_id": len(interaction.agents_by_id),
        "root_events": len(interaction.root.events),
        "messages": len(turn.messages) if turn else 0,
        "answer": len(turn.answer) if turn else 0,
        "held": len(turn.held) if turn else 0,
    }


def endless_task(events: int) -> list[bytes]:
    """A task that never ends: turns that each make an LLM call, ask for two tools and start
    them (one never completes, one moves a shell to the background), spawn a sub-agent that
    ends, compact, steer; autopilot nudges with an interactionId each."""
    log = Log()
    log.start()
    log.add("session.mode_changed", newMode="autopilot")
    log.user(interaction="i0")
    n = 0
    while len(log.raw) < events:
        n += 1
        log.add("assistant.turn_start", turnId=str(n), interactionId="i0")
        log.usage(f"u{n}")
        log.message([(f"c{n}", "bash"), (f"open{n}", "view"), (f"never{n}", "view")])
        log.tool_start(f"c{n}", "bash")
        log.tool_start(f"open{n}", "view")  # never completes
        log.tool_done(
            f"c{n}", result={"content": f"<command started in background with shellId: s{n}>"}
        )
        log.add("subagent.started", f"sub{n}", toolCallId=f"t{n}", agentName="explore")
        log.add("subagent.completed", f"sub{n}", toolCallId=f"t{n}", agentName="explore")
        log.add("session.compaction_start", trigger="threshold")
        log.add("user.message", content="more", interactionId="i0", delivery="steering")
        log.add("user.message", content="", isAutopilotContinuation=True, interactionId=f"n{n}")
        log.add("assistant.message", content="x" * 100, messageId=f"m{n}")
    return [json.dumps(obj).encode() for obj in log.raw[:events]]


def test_an_endless_task_holds_a_bounded_amount() -> None:
    """What the open task holds after 90,000 events is no more than after 30,000 (and some
    slack for the compact set of LLM calls, which forgets by halves)."""
    lines = endless_task(90_000)
    assembler = Assembler()
    decoder = JsonLinesDecoder("endless")
    at_third: dict[str, int] = {}
    for start in range(0, len(lines), 1000):
        assembler.feed("endless", decoder.feed(b"\n".join(lines[start : start + 1000]) + b"\n"))
        if start + 1000 == len(lines) // 3:
            at_third = sizes(assembler, "endless")
    at_end = sizes(assembler, "endless")
    assert assembler.session("endless").interaction is not None  # one task all along
    grown = {k: (at_third[k], at_end[k]) for k in at_end if at_end[k] > 2 * max(at_third[k], 64)}
    assert not grown, grown  # nothing grows with the task's events
    assert assembler.stats.limits  # the bounds that were reached are counted


# --- the live stream ---------------------------------------------------------------------------


def test_live_events_with_values_no_exporter_can_carry_give_valid_spans(caplog) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_bridge.sources import LiveBridge

    log = Log(session=UUID)
    one_tool_task(log, {"inputTokens": 2**70})
    log.raw[-3]["data"]["toolName"] = "gr\ud83dep"  # as an app's own string may hold
    log.raw[-2]["timestamp"] = "2555-01-01T00:00:00.000Z"
    exporter = InMemorySpanExporter()
    bridge = LiveBridge([exporter], environ={})
    with caplog.at_level(logging.WARNING, logger="otel_bridge"):
        for raw in log.raw:
            bridge.on_event(raw, UUID)
        for bad in (42, {"type": "x"}, {"type": "x", "timestamp": "1900-01-01T00:00:00Z"}):
            bridge.on_event(bad, UUID)
    bridge.close()
    spans = exporter.get_finished_spans()
    assert {s.name for s in spans} >= {"invoke_agent copilot", "execute_tool gr\ufffdep"}
    for span in spans:
        span.name.encode("utf-8")
        for value in (span.attributes or {}).values():
            if isinstance(value, int):
                assert -(2**63) <= value <= INT64_MAX
    assert bridge.rejected == 4  # the 2555 completion, and the three bad events
    assert caplog.text.count("live event skipped") == 1  # said once, not once per event


def test_a_turn_that_never_ends_holds_a_bounded_amount_and_says_its_full_size() -> None:
    """One turn, thousands of LLM calls and messages, with content capture: the messages kept
    for its chat spans, its answer's text and the chat spans held for their messages stay
    bounded; the answer's size on the turn is all of it."""
    log = Log.asked()
    log.turn("0")
    for n in range(3000):
        log.usage(f"u{n}", apiCallId=f"never{n}")  # their messages never come
        log.add("assistant.message", content="y" * 1000, messageId=f"m{n}", apiCallId=f"a{n}")
    assembler = Assembler(AssemblerConfig(capture_content=True))
    decoder = JsonLinesDecoder("turn")
    emitted = assembler.feed("turn", decoder.feed(log.jsonl()))
    turn = assembler.session("turn").interaction.main.turn  # type: ignore[union-attr]
    assert len(turn.messages) <= 1000 and len(turn.held) <= 100
    assert len(turn.answer) <= 1 << 20
    assert len(by_name(emitted, "chat")) >= 2900  # held ones went out, oldest first
    spans = emitted + assembler.end_stream("turn")
    (turn_span,) = turns(spans)
    # 3000 messages of 1000 characters, joined by a newline
    assert turn_span.attributes[sc.COPILOT_RESPONSE + sc.LENGTH_SUFFIX] == 3000 * 1000 + 2999
    assert {sc.LIMIT_TURN_MESSAGES, sc.LIMIT_ANSWER, sc.LIMIT_HELD_CHATS} <= set(
        assembler.stats.limits
    )


@pytest.mark.parametrize(
    ("fields", "left_out"),
    [
        ({"inputTokens": 10**18, "outputTokens": 2_000_000_000}, 2),
        ({"inputTokens": -5, "cacheReadTokens": -1}, 2),
        ({"cost": 1e30}, 1),
        ({"cost": -1.0, "copilotUsage": {"totalNanoAiu": 1e30}}, 2),
        # beyond 64 bits, no token count can be read at all: left out as silently before
        ({"inputTokens": 1e30, "reasoningTokens": 10**30, "cacheWriteTokens": -1e300}, 3),
    ],
)
def test_an_implausible_usage_number_is_left_out_and_counted(fields: dict, left_out: int) -> None:
    """A usage record with 1e30 tokens or cost was taken as it was, and would own every total
    of its model for good. Such a number is left out of the chat span (so of every metric made
    from it) and counted in otel_bridge.values.repaired, reason implausible; the plausible
    numbers of the same record stay."""
    log = Log()
    one_tool_task(log, {"inputTokens": 100, "outputTokens": 10, "cost": 1.0, **fields})
    recorder = Recorder()
    spans, assembler, _ = replay_bytes(log.jsonl(), recorder=recorder)
    (chat,) = by_name(spans, "chat")
    kept = chat.attributes
    for key in (
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS,
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        sc.COPILOT_USAGE_COST,
        sc.COPILOT_USAGE_AI_CREDITS,
    ):
        value = kept.get(key)
        assert value is None or 0 <= value <= 1_000_000_000, (key, value)
    if "outputTokens" not in fields:
        assert kept[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 10
    assert assembler.stats.repaired[sc.REPAIR_IMPLAUSIBLE] == left_out
    counted = recorder.values(sc.METRIC_VALUES_REPAIRED, otel_bridge__reason="implausible")
    assert sum(counted) == left_out
    for name in (sc.METRIC_PREMIUM_REQUESTS, sc.METRIC_AI_CREDITS, sc.METRIC_USAGE_INPUT_TOKENS):
        assert all(0 <= v <= 1_000_000_000 for v in recorder.values(name)), name


def test_a_plausible_usage_record_is_kept_whole() -> None:
    log = Log()
    usage = {"inputTokens": 900_000_000, "cost": 50.0, "copilotUsage": {"totalNanoAiu": 5e11}}
    one_tool_task(log, usage)
    spans, assembler, _ = replay_bytes(log.jsonl(), recorder=Recorder())
    (chat,) = by_name(spans, "chat")
    assert chat.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 900_000_000
    assert chat.attributes[sc.COPILOT_USAGE_COST] == 50.0
    assert chat.attributes[sc.COPILOT_USAGE_AI_CREDITS] == 5e11
    assert not assembler.stats.repaired[sc.REPAIR_IMPLAUSIBLE]


def test_a_turns_messages_are_joined_so_that_a_secret_at_the_start_of_one_is_scrubbed() -> None:
    """A turn's answer glued its messages together: `...restart nginx` and `echo 'P' | sudo -S
    ...` made `nginxecho 'P' | sudo -S`, where the scrubber's rule for a secret piped into
    sudo, which needs `echo` to start a word, no longer saw one. They are joined by a newline."""
    from otel_bridge.processors import Scrubber, ScrubberConfig

    secret = "Tr0ub4dor-and-3" + "-more-words"
    log = Log.asked()
    log.turn("0")
    log.add("assistant.message", content="I will restart nginx", messageId="m1")
    log.add("assistant.message", content=f"echo '{secret}' | sudo -S true", messageId="m2")
    log.turn_end("0")
    assembler = Assembler(AssemblerConfig(capture_content=True))
    spans = assembler.feed("s", JsonLinesDecoder("s").feed(log.jsonl()))
    spans += assembler.end_stream("s")
    (turn_span,) = turns(spans)
    response = turn_span.attributes[sc.OUTPUT_VALUE]
    assert response == f"I will restart nginx\necho '{secret}' | sudo -S true"
    scrubbed = Scrubber(ScrubberConfig()).record(turn_span)
    assert secret not in json.dumps(dict(scrubbed.attributes))
    assert "restart nginx" in str(scrubbed.attributes[sc.OUTPUT_VALUE])
