"""Tail sampling decides per interaction: with a caller's parent span every interaction shares
its trace id, and each is still held, decided and kept on its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_bridge import AssemblerConfig, SpanRecord
from otel_bridge import semconv as sc
from otel_bridge.processors import TraceSampler
from tests import paths, spantree
from tests.builder import Log
from tests.spantree import assemble_file

FIXTURES = paths.FIXTURES
PARENT = (0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331)
LOW_64 = (1 << 64) - 1


def tasks(count: int, failing: frozenset[int] = frozenset()) -> Log:
    """A session of `count` tasks, each a tool call and an answer; those in `failing` have
    their tool fail."""
    log = Log()
    log.start()
    for number in range(count):
        interaction = f"i{number}"
        log.user(interaction=interaction)
        log.turn("0", interaction)
        log.usage(f"u{number}a")
        log.message([(f"call{number}", "view")])
        log.tool_start(f"call{number}", "view")
        log.tool_done(f"call{number}", success=number not in failing)
        log.turn_end("0")
        log.simple_turn("1", f"u{number}b", interaction=interaction)
    return log


def assemble(log: Log, parent: tuple[int, int] | None) -> list[SpanRecord]:
    return spantree.assemble(log, "s", config=AssemblerConfig(parent=parent))


def roots(spans: list[SpanRecord]) -> list[SpanRecord]:
    return [s for s in spans if sc.COPILOT_END_REASON in s.attributes]


def test_a_failed_task_after_a_healthy_one_is_kept_when_they_share_a_parent() -> None:
    spans = assemble(tasks(2, failing=frozenset({1})), PARENT)
    healthy, failed = roots(spans)
    assert healthy.trace_id == failed.trace_id == PARENT[0]  # one trace for both
    kept = TraceSampler(0.0).offer(spans)
    assert {s.root_span_id for s in kept} == {failed.span_id}
    assert len(kept) == sum(1 for s in spans if s.root_span_id == failed.span_id)  # all of it


def test_healthy_tasks_under_one_parent_are_decided_each_from_its_root() -> None:
    spans = assemble(tasks(60), PARENT)
    sampler, replica = TraceSampler(0.5), TraceSampler(0.5)
    kept = sampler.offer(spans)
    assert replica.offer(spans) == kept  # replicas agree
    bound = int(0.5 * (1 << 64))
    want = {r.span_id for r in roots(spans) if (r.span_id & LOW_64) < bound}
    assert 0 < len(want) < 60  # not all or nothing, as one decision per trace would be
    assert {s.root_span_id for s in kept} == want
    for root in want:  # whole interactions, never parts
        assert sum(1 for s in kept if s.root_span_id == root) == sum(
            1 for s in spans if s.root_span_id == root
        )


def test_without_a_parent_the_coin_is_the_trace_id_as_before() -> None:
    spans = assemble(tasks(60), None)
    kept = TraceSampler(0.5).offer(spans)
    bound = int(0.5 * (1 << 64))
    want = {r.trace_id for r in roots(spans) if (r.trace_id & LOW_64) < bound}
    assert 0 < len(want) < 60
    assert {s.trace_id for s in kept} == want


@pytest.mark.parametrize(
    "path", sorted(FIXTURES.glob("*/events.jsonl")), ids=lambda p: p.parent.name
)
def test_every_span_knows_the_root_of_its_interaction(path: Path) -> None:
    spans = assemble_file(path)
    root_ids = {(r.trace_id, r.span_id) for r in roots(spans)}
    for span in spans:  # late work too: it goes under a root exported before it
        assert (span.trace_id, span.root_span_id) in root_ids, span.name
    for root in roots(spans):
        assert root.root_span_id == root.span_id
    # the tree agrees: a span's parent belongs to the same interaction
    by_id = {s.span_id: s for s in spans}
    for span in spans:
        parent = by_id.get(span.parent_span_id or 0)
        if parent is not None:
            assert parent.root_span_id == span.root_span_id, span.name
