"""What a session remembers between tasks stays small: the id memories keep 8-byte digests
(bench/bench_session_memory.py prints the figures)."""

from __future__ import annotations

import gc
import tracemalloc

from otel_bridge import AssemblerConfig, AssemblerStats, JsonLinesDecoder, SessionAssembler
from otel_bridge.assembler._state import RECENT, SeenSet
from tests import paths
from tests.unit.processors.test_sampling import tasks

FIXTURES = paths.FIXTURES


def test_the_memory_keeps_at_least_its_limit_of_recent_entries() -> None:
    memory = SeenSet(limit=3000)
    keys: list[str | int] = [f"event-{n}" if n % 2 else n << 40 for n in range(12_000)]
    assert not any(memory.seen(key) for key in keys)  # all new
    assert 3000 <= len(memory) <= 3000 + 1500 + RECENT  # a generation at most over
    assert all(memory.seen(key) for key in keys[-3000:])  # the last `limit`, remembered
    # long forgotten (each comes back as new, and pushes older ones out: check them last)
    assert not any(memory.seen(key) for key in keys[: 12_000 - 2 * (3000 + 1500 + RECENT)])


def test_a_closed_session_still_drops_redelivered_events() -> None:
    path = FIXTURES / "subagent" / "events.jsonl"
    events = JsonLinesDecoder(str(path)).feed(path.read_bytes())
    session = SessionAssembler("s")
    spans = [s for e in events for s in session.feed(e)] + session.end_of_input()
    assert spans and not session.has_open_interaction
    assert [s for e in events for s in session.feed(e)] == []  # an SDK resume replays history
    assert session.stats.duplicates == len(events)


def test_a_long_closed_session_holds_a_few_bytes_per_event() -> None:
    events = tasks(1000).events()
    config, stats = AssemblerConfig(), AssemblerStats()
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        session = SessionAssembler("s", config, stats)
        for event in events:
            session.feed(event)
        session.end_of_input()
        count = len(events)
        del events
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert not session.has_open_interaction
    # 16 bytes per event id and per span id remembered (a dict of strings took ~160 per event)
    assert held / count < 40, held
