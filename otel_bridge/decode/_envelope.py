"""The fast path of the log reader: an event's envelope decoded apart from its data.

Why: most of a session log's bytes are in the data of a few events that the bridge never reads
(a `system.message` holds the whole system prompt, some 24 KB on every resume) or reads a few
fields of (a tool's result of a megabyte). Decoding all of it into Python strings and dicts
was most of what reading a log cost. msgspec decodes the envelope (`type`, `timestamp`, the
ids) and only checks the syntax of `data`, keeping its bytes (`msgspec.Raw`, no copy); a small
`data` is then decoded at once, by orjson, and a large one only when something reads it
(`LazyData`): the handler of a tool's completion does, nobody reads a system message's.

What a line gives is the same as before: the line's syntax is checked whole (msgspec also
checks the strings, escapes and nesting it skips), and whatever this path cannot take the
same way as `json` would (`_lines.JsonLinesDecoder`'s tolerant path: NaN, lone surrogates,
integers beyond 64 bits, bytes that are not UTF-8 in what is decoded at once) gives None, and
the caller takes the tolerant path. The one thing a skipped `data` is not checked for is its
UTF-8: a large `data` with bytes that are not UTF-8 is decoded with them replaced when it is
read, and counted then (`ReadStats.invalid_utf8`); one never read is never counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import msgspec
import orjson

from .._exceptions import EventDecodeError
from ._events import Event, event_from_fields

__all__ = ["LAZY_DATA_BYTES", "LazyData", "fast_event"]

#: A `data` of this many bytes or more is decoded when first read, not when its line is.
LAZY_DATA_BYTES = 4096

#: Maps every digit to b"0" and every other byte to b" ": a line's digit runs, found in C.
_DIGITS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
#: A run this long may be an integer orjson cannot hold exactly (beyond 64 bits): orjson
#: turns those into floats, silently, so such a `data` goes to `json`.
_LONG_NUMBER = b"0" * 19
_OBJECT = 0x7B  # "{": only an object is an event's data; anything else is none
_EMPTY: Mapping[str, Any] = {}


class _Envelope(msgspec.Struct):
    """The fields of an event that every reader needs. `Any`, checked by `event_from_fields`
    as `event_from_json` checks them: a field of the wrong type degrades the same way."""

    type: Any = None
    timestamp: Any = None
    id: Any = None
    data: msgspec.Raw = msgspec.Raw()
    agentId: Any = None  # the log's own names
    parentId: Any = None
    ephemeral: Any = None


_DECODER = msgspec.json.Decoder(_Envelope)


class Counts(Protocol):
    """Where bytes that were not UTF-8 are counted (`_lines.ReadStats`)."""

    invalid_utf8: int


def fast_event(line: bytes | bytearray, stats: Counts) -> Event | None:
    """The event on a well-formed line; None when the line needs the tolerant path.

    Args:
        line: one line of a log, without its newline.
        stats: the reader's `ReadStats`: a large `data` read later counts its bytes that
            were not UTF-8 there.
    """
    try:
        envelope = _DECODER.decode(line)
    except (msgspec.DecodeError, RecursionError):  # a ValidationError is a DecodeError
        return None
    raw = envelope.data
    data: Mapping[str, Any]
    if not raw or memoryview(raw)[0] != _OBJECT:
        data = _EMPTY
    elif len(raw) >= LAZY_DATA_BYTES:
        data = LazyData(raw, stats)
    else:
        small = bytes(raw)
        if _LONG_NUMBER in small.translate(_DIGITS):
            return None
        try:
            data = orjson.loads(small)
        except orjson.JSONDecodeError:
            return None
    try:
        return event_from_fields(
            envelope.type,
            envelope.timestamp,
            envelope.id,
            data,
            envelope.agentId,
            envelope.parentId,
            envelope.ephemeral,
        )
    except EventDecodeError:
        return None


class LazyData(Mapping[str, Any]):
    """An event's `data`, decoded the first time it is read; a read-only mapping like the
    dict it stands for (equal to it, and pickled as it).

    Its bytes were checked as JSON when the line was read; what is left to decide here is
    what the tolerant path decides for a whole line: integers beyond 64 bits decoded exactly
    (by `json`), bytes that are not UTF-8 replaced and counted.
    """

    __slots__ = ("_raw", "_stats", "_value")

    def __init__(self, raw: msgspec.Raw, stats: Counts) -> None:
        self._raw: msgspec.Raw | None = raw
        self._stats: Counts | None = stats
        self._value: dict[str, Any] | None = None

    def _decoded(self) -> dict[str, Any]:
        value = self._value
        if value is None:
            value = self._value = _decode(self._raw, self._stats)
            self._raw = self._stats = None  # the bytes go with the line
        return value

    def __getitem__(self, key: str) -> Any:
        return self._decoded()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._decoded().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._decoded()

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def __eq__(self, other: object) -> bool:
        return self._decoded() == (other._decoded() if isinstance(other, LazyData) else other)

    __hash__ = None  # type: ignore[assignment]  # a mapping, as dict: unhashable

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self._decoded(),))

    def __repr__(self) -> str:
        return repr(self._decoded())


def _decode(raw: Any, stats: Counts | None) -> dict[str, Any]:
    """The dict `raw` holds, decoded as the tolerant path would have decoded its line."""
    whole = bytes(raw)
    if _LONG_NUMBER not in whole.translate(_DIGITS):
        try:
            value = orjson.loads(whole)
        except orjson.JSONDecodeError:
            pass
        else:
            return value if isinstance(value, dict) else {}
    try:
        text = whole.decode("utf-8")
    except UnicodeDecodeError:
        if stats is not None:
            stats.invalid_utf8 += 1
        text = whole.decode("utf-8", errors="replace")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # e.g. an integer of over 4,300 digits
        return {}
    return value if isinstance(value, dict) else {}
