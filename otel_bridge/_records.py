"""Finished spans as plain values: what the assembler produces and the export adapter consumes.

These mirror the OpenTelemetry data model (integer-nanosecond times, 128-bit trace and 64-bit span
ids) without importing the SDK, so that the core stays pure and can be tested with plain values.
Only `export/_otel.py` turns them into SDK `ReadableSpan`s.

What the protocols carry is narrower than what a log can say, and one value outside it makes an
exporter refuse the whole batch it is in (protobuf raises on a time past 2^64 ns or before 1970,
on text that is not valid Unicode). So a record is made valid where it is built (`valid_record`,
then `repair_record` when it is not, on every span the assembler emits): times within
0..`MAX_TIME_NS`, text with lone surrogates made valid, integers within 64 bits and floats
finite (others left out).
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_TIME_NS",
    "AttributeValue",
    "LinkRecord",
    "Repairs",
    "SpanEventRecord",
    "SpanKind",
    "SpanRecord",
    "StatusCode",
    "clamp_int",
    "repair_record",
    "valid_record",
    "valid_text",
]

#: The latest time a span may carry, in ns since the epoch (2262-04-11): OTLP's fixed64 would go
#: to 2^64 - 1, but many backends hold times as signed 64-bit nanoseconds (Go's time.Time, Java's
#: long), so the signed limit is the one every consumer takes. The earliest is the epoch (0).
MAX_TIME_NS = 2**63 - 1
#: OTLP's intValue is a signed 64-bit integer (protobuf raises on anything wider).
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

#: A UTF-16 surrogate code point: alone in a str, it cannot be encoded to UTF-8. JSON's
#: "\ud83d" escape makes one when a writer cut an emoji's escape pair in half.
_SURROGATE = re.compile(r"[\ud800-\udfff]")

AttributeValue = str | bool | int | float | Sequence[str] | Sequence[int] | Sequence[float]


class SpanKind(enum.Enum):
    """The span kinds the bridge emits (a subset of OpenTelemetry's)."""

    INTERNAL = "INTERNAL"
    CLIENT = "CLIENT"


class StatusCode(enum.Enum):
    """OpenTelemetry span status codes."""

    UNSET = "UNSET"
    OK = "OK"
    ERROR = "ERROR"


@dataclass(frozen=True, slots=True)
class SpanEventRecord:
    """A point in time inside a span (compaction, truncation, a permission wait...)."""

    name: str
    timestamp_ns: int
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LinkRecord:
    """A link to another span, e.g. from one interaction to the one before it."""

    trace_id: int
    span_id: int
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One finished span. `end_ns >= start_ns` always holds.

    `root_span_id` is the span id of the interaction's root (`invoke_agent copilot`) the span
    belongs to, its own for the root; None when unknown (a record built elsewhere). It is not
    exported: the sampler uses it to decide per interaction when interactions share a trace
    (a caller's parent span)."""

    trace_id: int
    span_id: int
    parent_span_id: int | None
    name: str
    kind: SpanKind
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    status: StatusCode = StatusCode.UNSET
    status_message: str | None = None
    events: tuple[SpanEventRecord, ...] = ()
    links: tuple[LinkRecord, ...] = ()
    root_span_id: int | None = field(default=None, compare=False, repr=False)


def valid_text(text: str) -> str:
    """`text`, encodable as UTF-8: each lone surrogate becomes U+FFFD (the replacement character,
    as a UTF-8 decoder makes of bytes it cannot read). ASCII text, almost all of it, is known
    valid at once (`str.isascii` reads a flag CPython keeps, whatever the length)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def clamp_int(value: int) -> int:
    """`value` within a signed 64-bit integer: a sum of counts from the log saturates rather than
    becoming a value no exporter can carry."""
    return INT64_MAX if value > INT64_MAX else INT64_MIN if value < INT64_MIN else value


@dataclass
class Repairs:
    """What `repair_record` changed in a record, by kind: text made valid, numbers left out
    (outside 64 bits, not finite, or of a type no attribute may have), times clamped."""

    text: int = 0
    number: int = 0
    time: int = 0
    #: usage numbers no call can have, left out before the span was made
    #: (`assembler._accounting.drop_implausible`)
    implausible: int = 0

    def __bool__(self) -> bool:
        return bool(self.text or self.number or self.time or self.implausible)


def valid_record(record: SpanRecord) -> bool:
    """Every value of `record` is one every exporter carries (see `repair_record`). Every span
    of a replay pays this one pass, so it is kept to the fewest operations: ASCII text is known
    valid at once, the limits are written out (a global's lookup costs as much as the
    comparison), no object is made."""
    message = record.status_message
    if not (
        _valid(record.attributes)
        and record.name.isascii()
        and (message is None or message.isascii())
        and 0 <= record.start_ns <= record.end_ns <= 9_223_372_036_854_775_807
    ):
        return False
    for event in record.events:
        if not (
            0 <= event.timestamp_ns <= 9_223_372_036_854_775_807
            and event.name.isascii()
            and _valid(event.attributes)
        ):
            return False
    return all(_valid(link.attributes) for link in record.links) if record.links else True


def _valid(attributes: Mapping[str, AttributeValue]) -> bool:
    """Every value is one OTLP carries; the types in the order they are most common."""
    for value in attributes.values():
        kind = type(value)
        if kind is str:
            if not value.isascii() and valid_text(value) is not value:  # type: ignore[union-attr,arg-type]
                return False
        elif kind is int:
            if not -9_223_372_036_854_775_808 <= value <= 9_223_372_036_854_775_807:  # type: ignore[operator]
                return False
        elif kind is bool:
            continue
        elif kind is float:
            if value - value != 0.0:  # type: ignore[operator]  # inf - inf and NaN are NaN
                return False
        elif kind is list or kind is tuple:
            if not _valid_array(value):  # type: ignore[arg-type]
                return False
        else:
            return False
    return True


def _valid_array(values: Sequence[object]) -> bool:
    """An array attribute OTLP carries: items of one scalar type, each valid as `_valid` says
    (arrays are rare: the items go through `_valid` as a mapping rather than a second copy of
    its checks)."""
    kinds = {type(item) for item in values}
    if len(kinds) > 1 or not kinds <= {str, int, float, bool}:
        return False
    return _valid(dict(enumerate(values)))  # type: ignore[arg-type]  # scalars, checked above


def repair_record(record: SpanRecord, repairs: Repairs) -> SpanRecord:
    """`record` made valid for every exporter, adding what was changed to `repairs`: attribute
    values (of the span, its events and links; in place when their mapping is a dict, the
    record's own), names and the status message with lone surrogates made valid, integers beyond
    64 bits and floats that are not finite left out, times clamped to 0..`MAX_TIME_NS` and the
    end not before the start. For a record `valid_record` refused (it may only hold non-ASCII
    text, valid: then nothing is changed)."""
    attributes = _repaired_attributes(record.attributes, repairs)
    events = tuple(_repaired_event(event, repairs) for event in record.events)
    links = tuple(_repaired_link(link, repairs) for link in record.links)
    name = record.name if record.name.isascii() else _text(record.name, repairs)
    message = record.status_message
    if message is not None and not message.isascii():
        message = _text(message, repairs)
    start, end = record.start_ns, record.end_ns
    if not 0 <= start <= end <= MAX_TIME_NS:
        repairs.time += 1
        start = min(max(start, 0), MAX_TIME_NS)
        end = min(max(end, start), MAX_TIME_NS)
    if (
        attributes is record.attributes
        and name is record.name
        and message is record.status_message
        and start == record.start_ns
        and end == record.end_ns
        and all(a is b for a, b in zip(events, record.events, strict=True))
        and all(a is b for a, b in zip(links, record.links, strict=True))
    ):
        return record
    return dataclasses.replace(
        record,
        attributes=attributes,
        name=name,
        status_message=message,
        start_ns=start,
        end_ns=end,
        events=events,
        links=links,
    )


def _text(text: str, repairs: Repairs) -> str:
    valid = valid_text(text)
    if valid is not text:
        repairs.text += 1
    return valid


def _repaired_event(event: SpanEventRecord, repairs: Repairs) -> SpanEventRecord:
    attributes = _repaired_attributes(event.attributes, repairs)
    name = event.name if event.name.isascii() else _text(event.name, repairs)
    timestamp = event.timestamp_ns
    if not 0 <= timestamp <= MAX_TIME_NS:
        repairs.time += 1
        timestamp = min(max(timestamp, 0), MAX_TIME_NS)
    if attributes is event.attributes and name is event.name and timestamp == event.timestamp_ns:
        return event
    return SpanEventRecord(name, timestamp, attributes)


def _repaired_link(link: LinkRecord, repairs: Repairs) -> LinkRecord:
    attributes = _repaired_attributes(link.attributes, repairs)
    if attributes is link.attributes:
        return link
    return LinkRecord(link.trace_id, link.span_id, attributes)


def _repaired_attributes(
    attributes: Mapping[str, AttributeValue], repairs: Repairs
) -> Mapping[str, AttributeValue]:
    """The attributes, valid: the same mapping when it was, else a dict with text made valid in
    place (the order of the keys kept) and bad numbers left out (the same dict, changed, when it
    is one)."""
    if _valid(attributes):
        return attributes
    out = attributes if isinstance(attributes, dict) else dict(attributes)
    for key, value in list(out.items()):
        valid = _valid_value(value, repairs)
        if valid is None:
            del out[key]
        elif valid is not value:
            out[key] = valid
    return out


def _valid_value(value: object, repairs: Repairs) -> AttributeValue | None:
    """One attribute value made valid: itself when it is, None to leave it out (counted)."""
    if isinstance(value, str):
        return _text(value, repairs)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return value
    elif isinstance(value, float):
        if value - value == 0.0:
            return value
    elif isinstance(value, Sequence):
        items = [_valid_value(item, repairs) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        kept = [item for item in items if item is not None]
        if len({type(item) for item in kept}) <= 1:  # OpenTelemetry arrays hold one type
            return kept  # type: ignore[return-value]
    repairs.number += 1
    return None
