"""Helpers to look at assembled spans as a tree."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from otel_bridge import Assembler, AssemblerConfig, Event, JsonLinesDecoder, SpanRecord
from otel_bridge import semconv as sc
from otel_bridge.metrics._recorder import MetricsRecorder
from tests.builder import Log


def assemble(
    source: Iterable[Event] | Path | Log,
    stream: str | None = None,
    session: str | None = None,
    *,
    config: AssemblerConfig | None = None,
    metrics: MetricsRecorder | None = None,
) -> list[SpanRecord]:
    """Feed one stream to a fresh assembler, then end it: what `replay` does with one log, the
    one way every test assembles spans. A path is decoded as `replay` decodes a file and is, unless
    given, the stream, its directory the session; events (or a builder's Log) go to stream
    `sess-1` with no session id unless given."""
    if isinstance(source, Path):
        decoder = JsonLinesDecoder(str(source))
        events = decoder.feed(source.read_bytes()) + decoder.finish()
        stream = stream or str(source)
        session = source.parent.name if session is None else session
    else:
        events = source.events() if isinstance(source, Log) else list(source)
    stream = stream or "sess-1"
    assembler = Assembler(config, metrics=metrics)
    return assembler.feed(stream, events, session) + assembler.end_stream(stream)


def assemble_file(path: Path) -> list[SpanRecord]:
    """A log file replayed as `replay` does (`assemble(path)`)."""
    return assemble(path)


def by_name(spans: Sequence[SpanRecord], prefix: str) -> list[SpanRecord]:
    return [s for s in spans if s.name.startswith(prefix)]


def turns(spans: Sequence[SpanRecord], index: int | None = None) -> list[SpanRecord]:
    """The turn spans (all named `turn`), or those whose `copilot.turn.index` is `index` (the
    n-th turn of its agent in the task: a sub-agent's first turn is 1 too), in start order."""
    return sorted(
        (
            s
            for s in spans
            if s.name == sc.SPAN_TURN
            and (index is None or s.attributes.get(sc.COPILOT_TURN_INDEX) == index)
        ),
        key=lambda s: s.start_ns,
    )


def label(span: SpanRecord) -> str:
    """The span's name, and for a turn its index: `turn #2` (the name is `turn`; the index is
    its copilot.turn.index attribute)."""
    index = span.attributes.get(sc.COPILOT_TURN_INDEX)
    return f"{span.name} #{index}" if span.name == sc.SPAN_TURN and index is not None else span.name


def children(spans: Sequence[SpanRecord], parent: SpanRecord) -> list[SpanRecord]:
    return sorted(
        (s for s in spans if s.parent_span_id == parent.span_id and s.trace_id == parent.trace_id),
        key=lambda s: (s.start_ns, s.name),
    )


def outline(spans: Sequence[SpanRecord]) -> list[str]:
    """The tree as indented names (`label`: a turn with its index), children in start order:
    easy to compare with a hand-drawn expectation."""
    kids: dict[int | None, list[SpanRecord]] = defaultdict(list)
    ids = {s.span_id for s in spans}
    for span in spans:
        kids[span.parent_span_id if span.parent_span_id in ids else None].append(span)
    lines: list[str] = []

    def walk(span: SpanRecord, depth: int) -> None:
        lines.append("  " * depth + label(span))
        for child in sorted(kids[span.span_id], key=lambda s: (s.start_ns, s.name)):
            walk(child, depth + 1)

    for root in sorted(kids[None], key=lambda s: s.start_ns):
        walk(root, 0)
    return lines


def check_invariants(spans: Sequence[SpanRecord]) -> None:
    """What must hold for every assembly: unique ids, ended spans, parents in the same trace."""
    ids = [s.span_id for s in spans]
    assert len(ids) == len(set(ids)), "duplicate span ids"
    by_id = {s.span_id: s for s in spans}
    for span in spans:
        assert span.end_ns >= span.start_ns, span.name
        if span.parent_span_id is not None and span.parent_span_id in by_id:
            assert by_id[span.parent_span_id].trace_id == span.trace_id, span.name
