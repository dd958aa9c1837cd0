"""A line of megabytes whose JSON has more values or containers than its size holds as text is
refused before it is decoded (otel_bridge/decode/_wide.py); a long line of text never is."""

from __future__ import annotations

import json
from typing import Any

from otel_bridge import JsonLinesDecoder
from otel_bridge.decode._wide import WIDE_CHECK_BYTES, too_wide
from tests import paths

TS = "2026-11-30T04:20:51.463Z"
BIG = WIDE_CHECK_BYTES * 2


def _event(content: str) -> bytes:
    data = {"toolCallId": "t1", "success": True, "result": {"content": "@"}}
    line = json.dumps({"type": "tool.execution_complete", "id": "e", "timestamp": TS, "data": data})
    return line.replace('"@"', content).encode()


def test_a_line_of_millions_of_values_is_too_wide() -> None:
    assert too_wide(_event("[" + ",".join(["1"] * (BIG // 2)) + "]"))
    assert too_wide(_event(json.dumps([{"a": 1}] * (BIG // 8))))


def test_a_line_nested_a_million_deep_is_refused_as_well() -> None:
    assert too_wide(_event("[" * (BIG // 2) + "]" * (BIG // 2)))


def test_long_text_full_of_commas_and_colons_is_not_too_wide() -> None:
    csv = "\n".join('a,b:c,d,"e",f' for _ in range(BIG // 12))
    assert not too_wide(_event(json.dumps(csv)))


def _grown(value: Any, size: int) -> Any:
    """`value` with its longest string repeated until the whole is some `size` bytes."""
    strings: list[tuple[int, list[Any] | dict[str, Any], Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if isinstance(child, str):
                strings.append((len(child), node, key))
            elif isinstance(child, (dict, list)):
                walk(child)

    walk(value)
    _, parent, key = max(strings, key=lambda item: item[0])
    parent[key] = parent[key] * (size // max(len(parent[key]), 1) + 1)
    return value


def test_the_longest_real_lines_grown_to_megabytes_are_not_too_wide() -> None:
    lines = [
        line
        for log in paths.FIXTURES.glob("*/events.jsonl")
        for line in log.read_bytes().split(b"\n")
        if line
    ]
    for line in sorted(lines, key=len)[-30:]:
        grown = json.dumps(_grown(json.loads(line), BIG)).encode()
        assert len(grown) > BIG and not too_wide(grown), line[:120]


def test_the_reader_counts_a_too_wide_line_and_keeps_the_next_event() -> None:
    decoder = JsonLinesDecoder("log")
    good = _event('"ok"')
    events = decoder.feed(_event("[" + ",".join(["1"] * (BIG // 2)) + "]") + b"\n" + good + b"\n")
    assert [event.data["result"] for event in events] == [{"content": "ok"}]
    assert decoder.stats.too_wide == 1 and decoder.stats.skips()["too_wide"] == 1
    assert decoder.stats.huge_lines == 1
