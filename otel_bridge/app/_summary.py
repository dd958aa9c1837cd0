"""The lines run and replay end with: what reading the logs gave, and where spans went."""

from __future__ import annotations

from .._words import plural
from ..decode._events import printable_type
from ..decode._lines import MAX_UNKNOWN_TYPES, OTHER_UNKNOWN_TYPES, ReadStats
from ..export import SpanSink
from ..processors import Scrubber, ScrubberConfig

__all__ = ["destinations", "sampled", "summarize_reading"]


def summarize_reading(stats: ReadStats) -> str:
    """'120 events, 2 malformed lines skipped, ...': what reading the logs gave."""
    parts = [plural(stats.events, "event")]
    if stats.malformed:
        parts.append(f"{plural(stats.malformed, 'malformed line')} skipped")
    if stats.oversized:
        parts.append(f"{plural(stats.oversized, 'oversized line')} skipped")
    if stats.too_deep:
        parts.append(f"{plural(stats.too_deep, 'too deeply nested line')} skipped")
    if stats.too_wide:
        parts.append(f"{plural(stats.too_wide, 'line')} of too many values skipped")
    if stats.torn:
        parts.append(f"{plural(stats.torn, 'torn line')} repaired")
    if stats.invalid_utf8:
        parts.append(f"{plural(stats.invalid_utf8, 'line')} with invalid UTF-8")
    if stats.unknown_types:
        # past the cap the types are not all named: how many there were is not known
        distinct = len(stats.unknown_types)
        types = (
            f"more than {MAX_UNKNOWN_TYPES} unknown types"
            if stats.unknown_types_capped
            else plural(distinct, "unknown type")
        )
        parts.append(
            f"{plural(sum(stats.unknown_types.values()), 'event')} of {types} "
            f"({_unknown_types(stats)})"
        )
    return ", ".join(parts)


#: Unknown types named in the summary, the most frequent first; the rest are "N more".
_NAMED_TYPES = 3
#: A type's name is the log's text: one that long is cut (a compaction's type carries a hash).
_TYPE_CHARS = 48


def _unknown_types(stats: ReadStats) -> str:
    """Which types, and what to do about them: "7 events of 2 unknown types" alone leaves a
    user wondering whether anything was lost, and which flag keeps them."""
    named = [t for t, _ in stats.unknown_types.most_common() if t != OTHER_UNKNOWN_TYPES]
    # A type is the log's text, which could hold anything, a token included: named only in
    # the shape of a type (as the metric's label), and scrubbed as span text is.
    scrubber = Scrubber(ScrubberConfig())
    shown = [scrubber.text(printable_type(t)) for t in named]
    shown = [t if len(t) <= _TYPE_CHARS else t[: _TYPE_CHARS - 3] + "..." for t in shown]
    rest = len(named) - _NAMED_TYPES
    tail = " and more" if stats.unknown_types_capped else f" and {rest} more" if rest > 0 else ""
    listed = ", ".join(shown[:_NAMED_TYPES]) + tail
    return (
        f"{listed}: counted in otel_bridge.events.unknown; --keep-unknown-events puts them "
        "on their task's root span, docs/events.md"
    )


def destinations(sink: SpanSink) -> str:
    """ " (to each of 2 destinations; otlp ...: 6, file ...: 6)" when spans go to several, so
    that a destination that fell behind shows; else nothing."""
    if sink.destinations < 2:
        return ""
    return (
        f" (to each of {sink.destinations} destinations; "
        + ", ".join(f"{label}: {count}" for label, count in sink.stats.by_exporter.items())
        + ")"
    )


def sampled(sink: SpanSink) -> str:
    """ ", N spans sampled out" when sampling is on, else nothing."""
    dropped = sink.sampler.dropped_spans
    return f", {plural(dropped, 'span')} sampled out" if sink.sampler.ratio < 1 else ""
