"""The reader's fast path (otel_bridge/decode/_envelope.py) gives what the stdlib's json gives, on
every real line and on the lines it must hand to the tolerant path; a large data is decoded
only when read."""

from __future__ import annotations

import json
import pickle

import pytest

from otel_bridge import JsonLinesDecoder, ReadStats, event_from_json
from otel_bridge.decode._envelope import LAZY_DATA_BYTES, LazyData, fast_event
from tests import paths

TS = "2026-11-30T04:20:51.463Z"


def _line(data: object, kind: str = "tool.execution_complete") -> bytes:
    return json.dumps({"type": kind, "id": "e1", "timestamp": TS, "data": data}).encode()


def _fixture_lines() -> list[bytes]:
    lines = []
    for log in sorted(paths.FIXTURES.glob("*/events.jsonl")):
        lines += [line for line in log.read_bytes().split(b"\n") if line.strip()]
    return lines


def test_every_fixture_line_gives_the_event_json_gives() -> None:
    lines = _fixture_lines()
    assert len(lines) > 800
    lazy = 0
    for line in lines:
        event = fast_event(line, ReadStats())
        assert event is not None, line[:200]
        assert event == event_from_json(json.loads(line))
        lazy += isinstance(event.data, LazyData)
    assert lazy > 0  # some data was large enough to be left for later


def test_a_large_data_is_decoded_when_read_and_not_before() -> None:
    big = {"result": {"content": "x" * LAZY_DATA_BYTES}, "success": True}
    event = fast_event(_line(big), ReadStats())
    assert event is not None and isinstance(event.data, LazyData)
    assert event.data._value is None  # not decoded yet
    assert event.data.get("success") is True
    assert event.data == big and dict(event.data) == big
    assert pickle.loads(pickle.dumps(event.data)) == big


def _raw(data: str, *, kind: str = '"a.b"', after: str = "") -> str:
    return '{"type":' + kind + ',"timestamp":"' + TS + '","data":' + data + "}" + after


@pytest.mark.parametrize(
    "text",
    [
        _raw('{"n":NaN}'),  # json takes NaN
        _raw('{"s":"\\ud800"}'),  # a lone surrogate
        _raw('{"n":12345678901234567890123}'),  # beyond 64 bits
        _raw("{}", kind="1"),  # not an event: the tolerant path says why
        _raw("{}", after=' {"x":1}'),  # trailing text
        "[1,2]",
        _raw("[" * 3000 + "]" * 3000),  # deeper than the decoders go
    ],
)
def test_what_the_fast_path_cannot_take_as_json_would_goes_to_the_tolerant_path(
    text: str,
) -> None:
    assert fast_event(text.encode(), ReadStats()) is None


def test_a_large_data_keeps_integers_beyond_64_bits_exact() -> None:
    big = {"n": 12345678901234567890123, "pad": "y" * LAZY_DATA_BYTES}
    event = fast_event(_line(big), ReadStats())
    assert event is not None and event.data["n"] == 12345678901234567890123


def test_bytes_that_are_not_utf8_in_a_large_data_are_replaced_and_counted_when_read() -> None:
    line = _line({"text": "PAD" * LAZY_DATA_BYTES, "tail": "@"}).replace(b"@", b"\xff")
    stats = ReadStats()
    decoder = JsonLinesDecoder("log", stats=stats)
    [event] = decoder.feed(line + b"\n")
    assert stats.invalid_utf8 == 0  # not read yet
    assert event.data["tail"] == "\ufffd"
    assert stats.invalid_utf8 == 1


def test_a_small_data_with_bytes_that_are_not_utf8_is_counted_at_once() -> None:
    stats = ReadStats()
    decoder = JsonLinesDecoder("log", stats=stats)
    [event] = decoder.feed(_line({"tail": "@"}).replace(b"@", b"\xff") + b"\n")
    assert stats.invalid_utf8 == 1 and event.data["tail"] == "\ufffd"


def test_a_data_that_is_not_an_object_is_no_data() -> None:
    for data in (None, [1], "text", 3):
        event = fast_event(_line(data), ReadStats())
        assert event is not None and dict(event.data) == {}
