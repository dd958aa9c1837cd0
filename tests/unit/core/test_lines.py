"""The tolerant JSON Lines decoder: bad input is counted and skipped, good data never lost."""

from __future__ import annotations

import json
import logging
import random

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_bridge import JsonLinesDecoder, ReadStats, parse_timestamp_ns
from otel_bridge.cli._common import summarize_reading
from otel_bridge.decode._lines import MAX_UNKNOWN_TYPES, OTHER_UNKNOWN_TYPES
from otel_bridge.sources._health import SkipCounter
from tests import paths
from tests.builder import Log


def line(type_: str = "user.message", **data) -> bytes:
    return json.dumps(
        {
            "type": type_,
            "data": data,
            "id": f"id-{type_}",
            "timestamp": "2026-11-30T04:20:51.463Z",
            "parentId": None,
        }
    ).encode()


def test_splits_on_newline_bytes_only() -> None:
    text = "a\u2028b\u2029c\x85d\x0ce\rf"  # all of these are str.splitlines() separators
    decoder = JsonLinesDecoder("f")
    data = line(content=text) + b"\n" + line("assistant.turn_end", turnId="0") + b"\n"
    events = decoder.feed(data)
    assert [e.type for e in events] == ["user.message", "assistant.turn_end"]
    assert events[0].data["content"] == text
    assert decoder.stats.malformed == 0


def test_partial_last_line_waits_for_its_newline() -> None:
    decoder = JsonLinesDecoder("f")
    whole = line() + b"\n"
    assert decoder.feed(whole[:10]) == []
    assert decoder.offset == 0 and decoder.pending_bytes == 10
    events = decoder.feed(whole[10:])
    assert len(events) == 1
    assert decoder.offset == len(whole) and decoder.pending_bytes == 0


def test_any_split_of_the_input_gives_the_same_events() -> None:
    log = Log.asked()
    log.simple_turn("0", "u1", [("c", "bash")])
    data = log.jsonl()
    whole = JsonLinesDecoder("f").feed(data)
    for cut in range(0, len(data), 97):
        decoder = JsonLinesDecoder("f")
        assert decoder.feed(data[:cut]) + decoder.feed(data[cut:]) == whole


def test_malformed_line_is_logged_with_place_counted_and_skipped(caplog) -> None:
    decoder = JsonLinesDecoder("events.jsonl")
    data = line() + b"\n" + b"{not json\n" + line("assistant.turn_start", turnId="0") + b"\n"
    with caplog.at_level(logging.WARNING):
        events = decoder.feed(data)
    assert [e.type for e in events] == ["user.message", "assistant.turn_start"]
    assert decoder.stats.malformed == 1
    assert "events.jsonl:2" in caplog.text


@pytest.mark.parametrize(
    "bad",
    [
        b"[1, 2]",
        b'"text"',
        b"null",
        b'{"data": {}}',
        b'{"type": "x"}',
        b'{"type": "x", "timestamp": "yesterday"}',
        b'{"type": 5, "timestamp": "2026-01-01T00:00:00Z"}',
    ],
)
def test_envelopes_without_type_or_timestamp_are_skipped(bad: bytes) -> None:
    decoder = JsonLinesDecoder("f")
    assert decoder.feed(bad + b"\n" + line() + b"\n")[0].type == "user.message"
    assert decoder.stats.malformed == 1


def test_torn_line_keeps_the_complete_event_after_the_truncated_one() -> None:
    truncated = line("tool.execution_complete", toolCallId="c1")[:-25]
    decoder = JsonLinesDecoder("f")
    events = decoder.feed(truncated + line("session.resume") + b"\n" + line() + b"\n")
    assert [e.type for e in events] == ["session.resume", "user.message"]
    assert decoder.stats.torn == 1 and decoder.stats.malformed == 0


def test_unknown_types_pass_through_and_are_counted() -> None:
    decoder = JsonLinesDecoder("f")
    events = decoder.feed(line("future.thing") + b"\n" + line() + b"\n")
    assert [e.type for e in events] == ["future.thing", "user.message"]
    assert decoder.stats.unknown_types == {"future.thing": 1}


def test_unknown_types_kept_by_name_are_capped_and_the_total_stays_exact() -> None:
    # as compactions write them: model.* types with a hash in their names, without end
    decoder = JsonLinesDecoder("f")
    types = [f"model.c{i:024x}" for i in range(MAX_UNKNOWN_TYPES + 30)]
    decoder.feed(b"".join(line(t) + b"\n" for t in [*types, types[0], types[-1]]))
    unknown = decoder.stats.unknown_types
    assert len(unknown) == MAX_UNKNOWN_TYPES + 1
    assert unknown[OTHER_UNKNOWN_TYPES] == 31  # the 30 past the cap, one of them twice
    assert unknown[types[0]] == 2  # a named type keeps counting
    assert sum(unknown.values()) == len(types) + 2 == decoder.stats.events
    assert decoder.stats.unknown_types_capped
    said = summarize_reading(decoder.stats)
    assert f"{len(types) + 2} events of more than {MAX_UNKNOWN_TYPES} unknown types (" in said
    assert " and more: counted in otel_bridge.events.unknown;" in said


def test_merged_unknown_types_stay_capped() -> None:
    total = ReadStats()
    for part in range(3):
        stats = ReadStats()
        for i in range(60):
            stats.count_unknown(f"model.p{part}x{i}")
        total.merge(stats)
    assert len(total.unknown_types) == MAX_UNKNOWN_TYPES + 1
    assert sum(total.unknown_types.values()) == 180 and total.unknown_types_capped
    few = ReadStats()
    few.count_unknown("future.thing", 3)
    assert not few.unknown_types_capped
    assert summarize_reading(few) == (
        "0 events, 3 events of 1 unknown type (future.thing: counted in "
        "otel_bridge.events.unknown; --keep-unknown-events puts them on their task's root "
        "span, docs/events.md)"
    )


def test_the_summary_names_the_unknown_types_and_what_keeps_them() -> None:
    """ "7 events of 7 unknown types" named none and said nothing of what to do."""
    stats = ReadStats()
    for number, name in enumerate(["a.one", "b.two", "c.three", "d.four", "e.five"]):
        stats.count_unknown(name, 10 - number)
    stats.count_unknown("model.c" + "f" * 64)
    said = summarize_reading(stats)
    assert said.endswith(
        "41 events of 6 unknown types (a.one, b.two, c.three and 3 more: counted in "
        "otel_bridge.events.unknown; --keep-unknown-events puts them on their task's root "
        "span, docs/events.md)"
    )
    long = ReadStats()
    name = "model." + "c" * 30 + "." + "d" * 20  # a type's shape, longer than is shown
    long.count_unknown(name)
    assert f"({name[:45]}...: counted" in summarize_reading(long)
    # a type is the log's text: one not in the shape of a type is not repeated (it could be a
    # token), as the metric's label does not repeat it either
    odd = ReadStats()
    odd.count_unknown("sk-" + "A1b2" * 12)
    odd.count_unknown("model.c" + "f" * 64)
    said = summarize_reading(odd)
    assert "sk-" not in said and "fff" not in said and "(<invalid>" in said


def test_invalid_utf8_does_not_lose_the_event() -> None:
    decoder = JsonLinesDecoder("f")
    raw = line(content="ok").replace(b"ok", b"o\xff\xfek")
    events = decoder.feed(raw + b"\n")
    assert len(events) == 1 and events[0].data["content"].startswith("o")
    assert decoder.stats.invalid_utf8 == 1


def test_oversized_line_is_skipped_without_buffering_it() -> None:
    decoder = JsonLinesDecoder("f", max_line_bytes=1000)
    big = line(content="x" * 5000)
    for i in range(0, len(big), 100):  # arrives in pieces, as from a growing file
        assert decoder.feed(big[i : i + 100]) == []
        assert decoder.pending_bytes <= 1000
    events = decoder.feed(b"\n" + line() + b"\n")
    assert [e.type for e in events] == ["user.message"]
    assert decoder.stats.oversized == 1
    assert decoder.offset == len(big) + 1 + len(line()) + 1


def test_finish_decodes_a_last_line_without_newline() -> None:
    decoder = JsonLinesDecoder("f")
    assert decoder.feed(line()) == []
    assert [e.type for e in decoder.finish()] == ["user.message"]


def test_blank_lines_and_crlf_are_fine() -> None:
    decoder = JsonLinesDecoder("f")
    events = decoder.feed(b"\n\n" + line() + b"\r\n   \n")
    assert len(events) == 1 and decoder.stats.malformed == 0


@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_raise_and_offsets_stay_consistent(data: bytes) -> None:
    decoder = JsonLinesDecoder("fuzz", max_line_bytes=300)
    decoder.feed(data)
    assert decoder.offset + decoder.pending_bytes <= len(data)
    assert decoder.offset == (data.rfind(b"\n") + 1)
    decoder.finish()


# --- the fast parser (orjson) gives what the stdlib decoder gives, or leaves the line to it ---


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"123456789012345678901234567890", 123456789012345678901234567890),  # beyond 64 bits
        (b"-9223372036854775809", -9223372036854775809),  # just below int64
        (b"18446744073709551616", 18446744073709551616),  # just above uint64
        (b"9223372036854775807", 9223372036854775807),
        (b"1.5", 1.5),
        (b'"\\ud800 lone"', "\ud800 lone"),  # a lone surrogate escape
        (b'"a\\u0000b"', "a\x00b"),
        (b"1e400", float("inf")),
    ],
)
def test_values_the_fast_parser_would_change_or_reject_decode_as_the_stdlib_does(
    raw: bytes, expected: object
) -> None:
    data = b'{"type":"user.message","timestamp":"2026-11-30T04:20:51.463Z","data":{"v":%s}}' % raw
    decoder = JsonLinesDecoder("f")
    [event] = decoder.feed(data + b"\n")
    value = event.data["v"]
    assert value == expected and type(value) is type(expected)
    assert decoder.stats.malformed == 0 and decoder.stats.invalid_utf8 == 0


def test_nan_is_decoded_as_the_stdlib_does() -> None:
    data = b'{"type":"user.message","timestamp":"2026-11-30T04:20:51.463Z","data":{"v":NaN}}'
    [event] = JsonLinesDecoder("f").feed(data + b"\n")
    assert event.data["v"] != event.data["v"]  # NaN


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values, st.booleans())
def test_any_event_data_decodes_to_what_json_loads_gives(value: object, ascii_only: bool) -> None:
    envelope = {
        "type": "user.message",
        "timestamp": "2026-11-30T04:20:51.463Z",
        "data": {"v": value},
    }
    data = json.dumps(envelope, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    [event] = JsonLinesDecoder("f").feed(data + b"\n")
    expected = json.loads(data.decode("utf-8", "replace"))["data"]["v"]
    assert repr(event.data["v"]) == repr(expected)


def test_cli_timestamps_agree_with_the_general_parser() -> None:
    rng = random.Random(5)
    for _ in range(2000):
        text = (
            f"{rng.randrange(1, 10000):04d}-{rng.randrange(0, 14):02d}-{rng.randrange(0, 33):02d}"
            f"T{rng.randrange(0, 26):02d}:{rng.randrange(0, 62):02d}:{rng.randrange(0, 63):02d}"
            f".{rng.randrange(0, 1000):03d}Z"
        )
        try:
            fast: int | str = parse_timestamp_ns(text)
        except ValueError:
            fast = "invalid"
        try:
            general: int | str = parse_timestamp_ns(text + " ")  # not the CLI's exact shape
        except ValueError:
            general = "invalid"
        assert fast == general, text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30T04:20:51.463Z", 1796012451_463_000_000),
        ("2026-11-30T04:20:51Z", 1796012451_000_000_000),
        ("2026-11-30T04:20:51.123456789Z", 1796012451_123_456_789),
        ("2026-11-30T05:20:51.463+01:00", 1796012451_463_000_000),
        ("2026-11-30T04:20:51.4", 1796012451_400_000_000),
    ],
)
def test_timestamps(text: str, expected: int) -> None:
    assert parse_timestamp_ns(text) == expected


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01T00:00:00Z", "2026-11-30"])
def test_bad_timestamps_raise_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        parse_timestamp_ns(text)


# --- bad input gets one clear line ---------------------------------------------------------

FIXTURES = paths.FIXTURES


def binary_lines(count: int, seed: int = 7) -> bytes:
    """`count` lines of random bytes (no newline inside, none blank): a binary file."""
    rng = random.Random(seed)
    return b"".join(
        bytes(rng.randrange(1, 256) for _ in range(60)).replace(b"\n", b"x") + b"\n"
        for _ in range(count)
    )


def decoder_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "otel_bridge.decode._lines" and r.levelno >= logging.WARNING
    ]


def test_a_file_without_events_logs_nothing_per_line_and_says_why_once(caplog) -> None:
    decoder = JsonLinesDecoder("bin/events.jsonl")
    with caplog.at_level(logging.WARNING):
        assert decoder.feed(binary_lines(21)) + decoder.finish() == []
    assert decoder_warnings(caplog) == []  # held back: the reader says it in one line
    assert decoder.stats.malformed == 21 and decoder.lines_read == 21
    assert decoder.without_events() == "0 of 21 lines are events (line 1: not JSON)"


def test_json_that_is_not_events_says_what_is_missing() -> None:
    decoder = JsonLinesDecoder("f")
    decoder.feed(b'{"name": "x"}\n{"name": "y"}\n[1]\n')
    assert (
        decoder.without_events() == "0 of 3 lines are events (line 1: event has no string 'type')"
    )


@pytest.mark.parametrize("data", [b"", b"\n\n  \n"])
def test_an_empty_file_is_not_judged(data: bytes) -> None:
    decoder = JsonLinesDecoder("f")
    decoder.feed(data)
    decoder.finish()
    assert decoder.without_events() is None and decoder.lines_read == 0


def test_bad_lines_before_the_first_event_are_one_line_and_lose_no_event(caplog) -> None:
    real = (FIXTURES / "run1_cli_prompt_basic" / "events.jsonl").read_bytes()
    clean = JsonLinesDecoder("clean").feed(real)
    decoder = JsonLinesDecoder("s/events.jsonl")
    with caplog.at_level(logging.WARNING):
        events = decoder.feed(b"{not json\n" + binary_lines(2) + real)
    assert events == clean
    assert decoder.without_events() is None and decoder.stats.malformed == 3
    (message,) = decoder_warnings(caplog)
    assert (
        message == "s/events.jsonl: 3 bad lines before its first event skipped (the first, "
        "line 1: not JSON)"
    )


@pytest.mark.parametrize("cut", [1, 40, -2])
def test_a_log_whose_first_line_is_torn_keeps_every_later_event(cut: int) -> None:
    """The first line cut (its start or its end lost), as a crash or a copy can leave it."""
    real = (FIXTURES / "subagent_nested" / "events.jsonl").read_bytes()
    first, rest = real.split(b"\n", 1)
    clean = JsonLinesDecoder("clean").feed(rest)
    for broken in (
        first[cut:] + b"\n" + rest,
        first[:cut] + b"\n" + rest,
        first[:cut] + rest,
    ):  # the last: torn, it runs into the second line
        decoder = JsonLinesDecoder("f")
        events = decoder.feed(broken) + decoder.finish()
        assert events == clean  # only the broken first event is lost
        assert decoder.without_events() is None


def test_bad_lines_after_events_are_logged_five_times_then_counted(caplog) -> None:
    decoder = JsonLinesDecoder("events.jsonl")
    with caplog.at_level(logging.WARNING):
        events = decoder.feed(line() + b"\n" + b"{bad\n" * 12 + line("session.resume") + b"\n")
    assert [e.type for e in events] == ["user.message", "session.resume"]
    assert decoder.stats.malformed == 12
    messages = decoder_warnings(caplog)
    assert [m.split(" ")[0] for m in messages[:5]] == [f"events.jsonl:{n}" for n in range(2, 7)]
    assert messages[5:] == ["events.jsonl: further bad lines in this file are counted, not logged"]


def test_a_decoder_started_inside_a_file_logs_at_once_and_does_not_judge(caplog) -> None:
    decoder = JsonLinesDecoder("events.jsonl", start_offset=4096)  # resumed from a checkpoint
    with caplog.at_level(logging.WARNING):
        decoder.feed(b"{bad\n")
    assert len(decoder_warnings(caplog)) == 1
    assert decoder.without_events() is None  # its start, with its events, was not read here


def test_json_nested_too_deep_is_counted_as_such_not_a_crash() -> None:
    decoder = JsonLinesDecoder("f")
    events = decoder.feed(b"[" * 100_000 + b"\n" + b'x{"a":' * 5_000 + b"\n" + line() + b"\n")
    assert [e.type for e in events] == ["user.message"]
    # the first stops the decoder by its depth; the second is not JSON from its first byte
    assert decoder.stats.too_deep == 1 and decoder.stats.malformed == 1


def nested(depth: int) -> bytes:
    """An event whose data holds a value nested `depth` levels deep."""
    return (
        b'{"type":"tool.execution_complete","timestamp":"2026-11-30T04:20:51.463Z","data":{"v":'
        + b"[" * depth
        + b"]" * depth
        + b"}}"
    )


def test_an_event_nested_too_deep_is_counted_as_too_deeply_nested(caplog) -> None:
    decoder = JsonLinesDecoder("events.jsonl")
    torn = line("tool.execution_complete", toolCallId="c1")[:-25]
    with caplog.at_level(logging.WARNING):
        events = decoder.feed(
            line()
            + b"\n"
            + nested(5_000)
            + b"\n"
            + torn
            + nested(5_000)
            + b"\n"
            + nested(10)
            + b"\n"
        )
    assert [e.type for e in events] == ["user.message", "tool.execution_complete"]
    # the second: a torn line whose complete event is the one too deep
    assert decoder.stats.too_deep == 2 and decoder.stats.malformed == 0
    assert decoder.stats.torn == 0
    assert decoder.stats.skips()["too_deep"] == 2
    assert summarize_reading(decoder.stats) == "2 events, 2 too deeply nested lines skipped"
    assert "nested too deeply" in caplog.text


def test_too_deep_lines_are_counted_in_lines_skipped_by_their_own_reason() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.added: list[tuple[str, float, dict[str, object]]] = []

        def add(self, name: str, value: float, attributes, session_id: str) -> None:
            self.added.append((name, value, dict(attributes)))

        def record(self, name: str, value: float, attributes, session_id: str) -> None:
            raise AssertionError(name)

    stats = ReadStats()
    recorder = Recorder()
    counter = SkipCounter(stats, recorder)
    decoder = JsonLinesDecoder("f", stats=stats)
    decoder.feed(line() + b"\n" + nested(5_000) + b"\n" + b"{bad\n")
    counter.update()
    assert sorted(recorder.added, key=repr) == [
        ("otel_bridge.lines.skipped", 1, {"otel_bridge.reason": "malformed"}),
        ("otel_bridge.lines.skipped", 1, {"otel_bridge.reason": "too_deep"}),
    ]


def test_merged_stats_keep_too_deep() -> None:
    total = ReadStats()
    part = ReadStats(too_deep=2)
    total.merge(part)
    total.merge(part)
    assert total.too_deep == 4


# --- torn lines: the complete event found from the line's end, at a bounded cost -----------


def test_torn_line_recovery_ignores_brackets_and_quotes_inside_strings() -> None:
    tricky = {"a": 'x{"y\\', "b": ["}", "{", "]", '\\"', '"}'], "c": {"d": [1, {"e": "\\"}]}}
    complete = line("session.resume", **tricky)
    for cut in (5, 40, 61, len(complete) - 3):
        truncated = line("tool.execution_complete", content='{"k": "v"} [x]')[:cut]
        decoder = JsonLinesDecoder("f")
        [event] = decoder.feed(truncated + complete + b"\n")
        assert event.data == json.loads(complete)["data"]
        assert decoder.stats.torn == 1 and decoder.stats.malformed == 0


def test_torn_line_whose_truncated_event_has_many_objects_keeps_the_complete_one() -> None:
    """The search does not depend on what the truncated event holds: a hundred objects in it
    (a tool's arguments, say) do not hide the complete event after it."""
    many = line("tool.execution_start", toolCallId="c1", items=[{"k": i} for i in range(100)])
    decoder = JsonLinesDecoder("f")
    [event] = decoder.feed(many[:-30] + line("session.resume") + b"\n")
    assert event.type == "session.resume" and decoder.stats.torn == 1


@given(json_values, st.integers(min_value=1, max_value=400), st.booleans())
def test_any_torn_line_gives_its_complete_event(value: object, cut: int, ascii_only: bool) -> None:
    envelope = {
        "type": "session.resume",
        "timestamp": "2026-11-30T04:20:51.463Z",
        "data": {"v": value},
    }
    complete = json.dumps(envelope, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    truncated = line("tool.execution_complete", content='a "quoted" {text}\\', n=[1, {"m": None}])
    decoder = JsonLinesDecoder("f")
    [event] = decoder.feed(truncated[: min(cut, len(truncated) - 1)] + complete + b"\n")
    expected = json.loads(complete.decode("utf-8", "replace"))["data"]["v"]
    assert repr(event.data["v"]) == repr(expected)
    assert decoder.stats.torn == 1


class ParseCost:
    """Counts the characters handed to the JSON parsers (from where each call starts to the
    end of its input): what decoding a line costs, whatever the code's shape."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.chars = 0
        raw_decode = json.JSONDecoder.raw_decode
        loads = orjson.loads

        def counted_raw_decode(decoder, s, idx=0):  # json.loads goes through it too
            self.chars += len(s) - idx
            return raw_decode(decoder, s, idx)

        def counted_loads(data):
            self.chars += len(data)
            return loads(data)

        monkeypatch.setattr(json.JSONDecoder, "raw_decode", counted_raw_decode)
        monkeypatch.setattr(orjson, "loads", counted_loads)


@pytest.mark.parametrize(
    "hostile",
    [
        # 64 nested objects at the start, each a candidate start parsed to the line's end
        b'{"a":' * 64 + b"[" + b"0," * 100_000 + b"0",
        b'{"a":' * 64 + b"[" + b"0," * 100_000 + b"0]" + b"}" * 63,
        # candidates spread along the line
        (b'{"a":[' + b"0," * 2_000) * 64 + b"}",
        # many brackets to walk through before any candidate
        b'{"a":[' + b"[0]," * 60_000 + b"[0]]}",
        b"x" + b"}" * 200_000,
        b'x{"a":"' + b'\\"' * 100_000 + b'"}',
    ],
)
def test_a_line_built_against_torn_line_recovery_costs_a_few_parses(
    hostile: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    cost = ParseCost(monkeypatch)
    decoder = JsonLinesDecoder("f")
    assert decoder.feed(hostile + b"\n" + line() + b"\n")[0].type == "user.message"
    assert decoder.stats.malformed == 1
    # orjson's try, the stdlib's, at most one candidate: never one parse per candidate
    assert cost.chars <= 3 * len(hostile) + 2 * len(line())
