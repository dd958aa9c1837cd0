"""Finished spans as plain values: what the assembler produces and the export adapter consumes.

These mirror the OpenTelemetry data model (integer-nanosecond times, 128-bit trace and 64-bit span
ids) without importing the SDK, so that the core stays pure and can be tested with plain values.
Only `export/_otel.py` turns them into SDK `ReadableSpan`s.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "AttributeValue",
    "LinkRecord",
    "SpanEventRecord",
    "SpanKind",
    "SpanRecord",
    "StatusCode",
]

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
