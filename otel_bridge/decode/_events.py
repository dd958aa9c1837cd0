"""The decoded Copilot session event: the one type every source produces and the assembler reads.

A Copilot event is an envelope `{type, data, id, timestamp, parentId, agentId?, ephemeral?}`
(see docs/events.md). Sources turn raw JSON objects into `Event` values here, so the
assembler never sees a malformed envelope: what cannot become an `Event` is an `EventDecodeError`,
which the source logs, counts and skips.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import EventDecodeError
from .._records import MAX_TIME_NS

__all__ = [
    "Event",
    "event_from_fields",
    "event_from_json",
    "parse_timestamp_ns",
    "printable_type",
]

# What every Copilot event type looks like: dotted lower-case words ("assistant.turn_start").
_TYPE_NAME = re.compile(r"[a-z][a-z0-9_]{0,30}(?:\.[a-z][a-z0-9_]{0,30}){0,3}")


def printable_type(event_type: str) -> str:
    """An event type fit for a log line or a metric label: the name itself when it has the
    shape of one (dotted lower-case words, as every Copilot type), else "<invalid>": the field
    comes from the log and could hold anything, a token included."""
    return event_type if len(event_type) <= 64 and _TYPE_NAME.fullmatch(event_type) else "<invalid>"


_EMPTY: Mapping[str, Any] = {}

# ISO-8601 as the CLI writes it ("2026-11-30T04:20:51.463Z"), tolerant of other fraction lengths
# and numeric offsets. Hand-parsed because datetime.fromisoformat on Python 3.10 rejects "Z" and
# fractions that are not 3 or 6 digits, and because nanoseconds must survive exactly.
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9})\d*)?"
    r"\s*(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$"
)


# The one shape the CLI writes, checked in C before the fields are cut out by position.
_CLI_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", re.ASCII)
# "2026-11-30T04:20" -> ns at the start of that minute, UTC: the minutes of a log repeat on
# event after event.
_MINUTES: dict[str, int] = {}
_MINUTES_LIMIT = 4096


def parse_timestamp_ns(text: str) -> int:
    """Convert an ISO-8601 timestamp to integer nanoseconds since the Unix epoch.

    A timestamp without an offset is taken as UTC, as the CLI always writes UTC.

    Raises:
        ValueError: the text is not an ISO-8601 date-time.
    """
    if len(text) == 24 and _CLI_TIMESTAMP.fullmatch(text) is not None:
        return _parse_cli_timestamp(text)
    match = _TIMESTAMP.match(text.strip())
    if match is None:
        raise ValueError(f"not an ISO-8601 timestamp: {text[:64]!r}")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minute <= 59 and second <= 60):
        raise ValueError(f"timestamp out of range: {text[:64]!r}")
    fraction = match.group(7) or ""
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    if match.group(9):
        offset = int(match.group(10)) * 3600 + int(match.group(11)) * 60
        seconds -= offset if match.group(9) == "+" else -offset
    return seconds * 1_000_000_000 + nanos


def _parse_cli_timestamp(text: str) -> int:
    """`parse_timestamp_ns` of "2026-11-30T04:20:51.463Z", the shape every CLI event has (the
    caller checked it): a few times faster than the general path, with the same result and the
    same range checks."""
    minute = _MINUTES.get(text[:16])
    if minute is None:
        year, month, day = int(text[:4]), int(text[5:7]), int(text[8:10])
        hour, minutes = int(text[11:13]), int(text[14:16])
        if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minutes <= 59):
            raise ValueError(f"timestamp out of range: {text[:64]!r}")
        minute = calendar.timegm((year, month, day, hour, minutes, 0, 0, 0, 0)) * 1_000_000_000
        if len(_MINUTES) >= _MINUTES_LIMIT:
            _MINUTES.clear()
        _MINUTES[text[:16]] = minute
    millis = int(text[17:19] + text[20:23])  # seconds and milliseconds: "51" + "463"
    if millis >= 61_000:  # a leap second is the most a minute has
        raise ValueError(f"timestamp out of range: {text[:64]!r}")
    return minute + millis * 1_000_000


@dataclass(frozen=True, slots=True)
class Event:
    """One Copilot session event.

    Attributes:
        type: the event type, e.g. "assistant.turn_start"; unknown types are kept as they are.
        id: the event's UUID; "" when the log had none (ids then fall back to type and time).
        timestamp_ns: when the CLI wrote the event, in ns since the epoch.
        data: the event's payload; always a mapping, empty when the log had none.
        agent_id: the sub-agent instance that emitted it; None for the main agent.
        parent_id: the previous persisted event's id, as the log says.
        ephemeral: True for live-only events.
    """

    type: str
    id: str
    timestamp_ns: int
    data: Mapping[str, Any] = field(default_factory=dict)
    agent_id: str | None = None
    parent_id: str | None = None
    ephemeral: bool = False

    @property
    def key(self) -> str:
        """A stable identity for id derivation: the event id, or type and time when absent."""
        return self.id or f"{self.type}@{self.timestamp_ns}"


def event_from_json(obj: Any) -> Event:
    """Build an `Event` from one decoded JSON value, checking the envelope.

    Only `type` and `timestamp` are required: everything else degrades (no id, no data) rather
    than losing the event, because a sparse event still tells the assembler when something
    happened.

    Raises:
        EventDecodeError: not an object, or `type`/`timestamp` missing or malformed, or a time
            no span can carry (before 1970, after 2262: `_records.MAX_TIME_NS`).
    """
    if not isinstance(obj, dict):
        raise EventDecodeError(f"expected a JSON object, got {type(obj).__name__}")
    data = obj.get("data")
    return event_from_fields(
        obj.get("type"),
        obj.get("timestamp"),
        obj.get("id"),
        data if isinstance(data, dict) else _EMPTY,
        obj.get("agentId"),
        obj.get("parentId"),
        obj.get("ephemeral"),
    )


def event_from_fields(
    event_type: Any,
    timestamp: Any,
    event_id: Any,
    data: Mapping[str, Any],
    agent_id: Any,
    parent_id: Any,
    ephemeral: Any,
) -> Event:
    """`event_from_json` of an envelope whose fields were cut out already (the log reader
    decodes the envelope apart from its data, `decode/_lines.py`): the same checks, the same Event.

    Raises:
        EventDecodeError: as `event_from_json`.
    """
    if not isinstance(event_type, str) or not event_type:
        raise EventDecodeError("event has no string 'type'")
    if not isinstance(timestamp, str):
        raise EventDecodeError(f"{printable_type(event_type)} event has no string 'timestamp'")
    try:
        if len(timestamp) == 24 and _CLI_TIMESTAMP.fullmatch(timestamp) is not None:
            timestamp_ns = _parse_cli_timestamp(timestamp)  # as parse_timestamp_ns, one call less
        else:
            timestamp_ns = parse_timestamp_ns(timestamp)
    except ValueError as exc:
        raise EventDecodeError(
            f"{printable_type(event_type)} event: timestamp is not ISO-8601"
        ) from exc
    if not 0 <= timestamp_ns <= MAX_TIME_NS:
        # Before 1970 or after 2262: no span can carry it (OTLP times are unsigned, and 64-bit
        # nanoseconds for most backends); a CLI writes neither, so the event is bad input.
        raise EventDecodeError(f"{printable_type(event_type)} event: timestamp outside 1970..2262")
    return Event(  # by position: the fields' order, type to ephemeral
        event_type,
        event_id if isinstance(event_id, str) else "",
        timestamp_ns,
        data,
        agent_id if isinstance(agent_id, str) and agent_id else None,
        parent_id if isinstance(parent_id, str) else None,
        ephemeral is True,
    )
