"""A torn line's complete event: after `copilot --resume`, a log may hold a truncated event
that runs into a complete one on the same line. The decoder (`_lines`) gives that complete
event, once the line failed to parse whole; finding it must cost no more than the line's size
(`torn_start`), since a hostile line can be built for it."""

from __future__ import annotations

import json
import re

from .._exceptions import EventDecodeError
from ._events import Event, event_from_json

__all__ = ["recover_torn", "torn_start"]

#: Brackets and strings the search for a torn line's complete event walks through, back from
#: the line's end, before giving up. The largest event in the recorded captures has under 400;
#: the cap bounds the search's Python-level steps on a hostile line (100,000 take some 70 ms).
_MAX_TORN_TOKENS = 100_000

#: Backwards (on the reversed line): the bytes up to the next bracket or quote, and the end of
#: a string. In reversed JSON an escaped quote reads `"\`; the quote that opened the string
#: (preceded in the line by a bracket, a colon, a comma or a space) is the first one not
#: followed by a backslash.
_REVERSED_RUN = re.compile(rb'[^"{}\[\]]*')
_REVERSED_STRING_END = re.compile(rb'"(?!\\)')
_CLOSERS = frozenset(b"}]")
_OPENERS = frozenset(b"{[")
_QUOTE = ord('"')
_OPEN_BRACE = ord("{")


def recover_torn(line: bytes | bytearray) -> Event | None:
    """The complete event that ends a torn line (a truncated event running into it), or None.

    Raises:
        RecursionError: that event is nested deeper than the decoder goes.
    """
    start = torn_start(line)
    if start is None:
        return None
    # The stdlib decoder, not orjson: this is rare, and orjson's objects for a big suffix of
    # numbers take some four times the memory (small integers are not shared).
    try:
        return event_from_json(json.loads(line[start:].decode("utf-8", errors="replace")))
    except (ValueError, EventDecodeError):
        return None


def torn_start(line: bytes | bytearray) -> int | None:
    """Where the object that ends the line starts, if it can be one that started after the
    line's first byte; None when there is none (or the search gave up).

    Why backwards: a complete object that ends the line starts at the bracket matching its last
    `}`, one place only, found by walking back from the end over brackets and strings. Parsing
    forward from each `{"` of the line instead, each parse possibly to the line's end, is
    quadratic: 64 such `{"` made a 16 MB line built for it cost some 20 s of CPU. This walk
    reads each byte once (in C: the runs between brackets and quotes, and whole strings, are
    skipped by regular expressions), takes one step per bracket or string, at most
    `_MAX_TORN_TOKENS`, and leaves a single candidate to parse. Over valid JSON the walk is
    exact; over anything else the one parse that follows rejects it.
    """
    body = line.rstrip()
    if not body.endswith(b"}"):
        return None
    reversed_ = body[::-1]
    position = depth = 0
    for _ in range(_MAX_TORN_TOKENS):
        run = _REVERSED_RUN.match(reversed_, position)  # always matches: a `*` run
        if run is None or run.end() >= len(reversed_):
            return None
        position = run.end()
        byte = reversed_[position]
        position += 1
        if byte == _QUOTE:
            end = _REVERSED_STRING_END.search(reversed_, position)
            if end is None:
                return None
            position = end.end()
        elif byte in _CLOSERS:
            depth += 1
        elif byte in _OPENERS:
            depth -= 1
            if depth == 0:
                start = len(body) - position
                return start if start > 0 and byte == _OPEN_BRACE else None
    return None
