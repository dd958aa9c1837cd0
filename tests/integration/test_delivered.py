"""What a checkpoint names of an open task's delivered spans: full blocks as digests, the rest
by id, so that its size does not grow with the task, and a restart drops exactly what was
delivered, however long the task (feed/_delivered.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from otel_bridge import Assembler
from otel_bridge.checkpoint._store import CheckpointStore
from otel_bridge.feed import StreamFeeder, _delivered
from otel_bridge.feed._delivered import DeliveredSpans, ReReadBlocks, block_digest
from otel_bridge.sources import Tailer, TailOptions
from tests.builder import Log
from tests.processes import bridge_env, start_bridge, terminate

SESSION = "5a1e0d5e-0000-4000-8000-000000000001"


class _Span:
    def __init__(self, span_id: int) -> None:
        self.span_id = span_id


def test_delivered_spans_fold_into_blocks_and_name_the_rest(monkeypatch) -> None:
    monkeypatch.setattr(_delivered, "BLOCK", 4)
    spans = DeliveredSpans()
    spans.add([(seq, 100 + seq) for seq in range(1, 11)], [100 + seq for seq in range(1, 11)])
    ids, blocks = spans.named(watermark=9)  # 9 delivered: two blocks, one id
    assert blocks == (block_digest([101, 102, 103, 104]), block_digest([105, 106, 107, 108]))
    assert ids == (109,)
    assert not spans.settled and spans.moved(10)
    ids, blocks = spans.named(watermark=10)
    assert ids == (109, 110) and len(blocks) == 2 and spans.settled
    spans.passed(safe_seq=10)  # the task ended and its safe place is the checkpoint
    assert spans.empty and spans.named(watermark=10) == ((), ())


def test_out_of_order_queueing_keeps_ids_only(monkeypatch) -> None:
    monkeypatch.setattr(_delivered, "BLOCK", 2)
    spans = DeliveredSpans()
    spans.add([(1, 7), (2, 8)], [8, 7])  # a sampler released them in another order
    spans.add([(3, 9), (4, 10)], [9, 10])
    ids, blocks = spans.named(watermark=4)
    assert blocks == () and ids == (7, 8, 9, 10)


def test_a_re_read_drops_the_blocks_it_finds_again_and_lets_the_rest_through(monkeypatch):
    monkeypatch.setattr(_delivered, "BLOCK", 3)
    blocks = [block_digest([1, 2, 3]), block_digest([4, 5, 6])]
    reread = ReReadBlocks[_Span](blocks)
    out = reread.take([_Span(i) for i in (1, 2, 3, 4)])
    assert out == [] and reread.verified == 1 and not reread.done
    out = reread.take([_Span(i) for i in (5, 6, 7)])
    assert [s.span_id for s in out] == [7] and reread.done and not reread.diverged
    other = ReReadBlocks[_Span](blocks)
    out = other.take([_Span(i) for i in (1, 2, 3, 4, 9, 6, 10)])  # the second block differs
    assert [s.span_id for s in out] == [4, 9, 6, 10] and other.diverged and other.verified == 1
    short = ReReadBlocks[_Span](blocks)
    assert short.take([_Span(1), _Span(2)]) == []
    assert [s.span_id for s in short.finish()] == [1, 2] and short.diverged  # a safe place came


def _endless_task(turns: int) -> Log:
    """One task that never ends: `turns` turns with a tool call each (three spans a turn)."""
    log = Log(session=SESSION)
    log.start()
    log.user()
    for number in range(turns):
        log.simple_turn(str(number), f"u{number}", tools=[(f"c{number}", "bash")])
    return log


class _Run:
    """A tailer over one session-state directory whose emit is delivery (no sink): every
    span emitted is delivered, and `save_checkpoints` names it."""

    def __init__(self, state: Path) -> None:
        self.emitted: list[int] = []
        self.tailer = Tailer(
            [state / "session-state"],
            StreamFeeder(
                Assembler(), lambda records: self.emitted.extend(r.span_id for r in records)
            ),
            TailOptions(rescan_seconds=0, idle_timeout_seconds=1e9, watch=False),
            checkpoints=CheckpointStore(state / "bridge-state"),
        )
        self.tailer.start()

    def poll(self) -> None:
        """Read until nothing is left (a poll reads at most a MiB of a log)."""
        while self.tailer.poll_once():
            self.tailer.save_checkpoints()
        self.tailer.save_checkpoints()


def _journal_lines(state: Path) -> list[dict]:
    lines = (state / "bridge-state" / "checkpoints.jsonl").read_text().splitlines()[1:]
    return [json.loads(line) for line in lines]


def test_an_endless_task_is_never_repeated_across_restarts_and_its_checkpoint_stays_small(
    tmp_path: Path,
) -> None:
    # 21,000 spans of a task that never ends: more than a checkpoint could name by id before
    log = _endless_task(7000).jsonl().splitlines(keepends=True)
    path = tmp_path / "session-state" / SESSION / "events.jsonl"
    path.parent.mkdir(parents=True)
    seen: list[int] = []
    written = 0
    for part in (len(log) // 3, 2 * len(log) // 3, len(log)):
        with path.open("ab") as handle:
            handle.write(b"".join(log[written:part]))
        written = part
        run = _Run(tmp_path)  # a restart (a crash after the last save) at every third
        run.poll()
        seen.extend(run.emitted)
        run.tailer.close()
    assert len(seen) == len(set(seen)) == 21_000  # every span once, the root still open
    last = _journal_lines(tmp_path)[-1]
    assert len(last["sent_blocks"]) == 20 and len(last["sent"]) == 21_000 - 20 * 1024
    assert len(json.dumps(last)) < 20_000  # 520 ids and 20 digests, not 21,000 ids


def test_a_block_that_no_longer_matches_is_exported_again_never_lost(tmp_path: Path) -> None:
    log = _endless_task(800).jsonl()  # 2,400 spans: two blocks and 352 ids
    path = tmp_path / "session-state" / SESSION / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(log)
    first = _Run(tmp_path)
    first.poll()
    first.tailer.close()
    journal = tmp_path / "bridge-state" / "checkpoints.jsonl"
    header, *entries = journal.read_text().splitlines()
    entry = json.loads(entries[-1])
    assert len(entry["sent_blocks"]) == 2
    entry["sent_blocks"][1] ^= 1  # as if the second block were of other spans
    journal.write_text("\n".join([header, *entries, json.dumps(entry)]) + "\n")
    second = _Run(tmp_path)
    second.poll()
    assert len(second.emitted) == 1024 + 352 - 352  # the second block again, nothing else
    assert set(second.emitted) == set(first.emitted[1024:2048])


@pytest.mark.parametrize("block", [3, 1024])
def test_restarts_inside_a_block_drop_exactly_what_was_delivered(
    tmp_path: Path, monkeypatch, block: int
) -> None:
    monkeypatch.setattr(_delivered, "BLOCK", block)
    lines = _endless_task(40).jsonl().splitlines(keepends=True)
    path = tmp_path / "session-state" / SESSION / "events.jsonl"
    path.parent.mkdir(parents=True)
    seen: list[int] = []
    for number, line in enumerate(lines):
        with path.open("ab") as handle:
            handle.write(line)
        if number % 7 == 0:  # restart often, at every kind of place in a block
            run = _Run(tmp_path)
            run.poll()
            seen.extend(run.emitted)
            run.tailer.close()
    run = _Run(tmp_path)
    run.poll()
    seen.extend(run.emitted)
    assert len(seen) == len(set(seen)) == 120


def test_reading_waits_while_the_exporters_are_behind(tmp_path: Path) -> None:
    """Back-pressure: while the exporters hold `max_backlog` spans, no log is read; the logs
    wait on disk (where nothing is lost) and are read once the exporters catch up."""
    path = tmp_path / "session-state" / SESSION / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(_endless_task(50).jsonl())
    backlog = [10]
    emitted: list[int] = []
    tailer = Tailer(
        [tmp_path / "session-state"],
        StreamFeeder(Assembler(), lambda records: emitted.extend(r.span_id for r in records)),
        TailOptions(rescan_seconds=0, watch=False),
        backlog=lambda: backlog[0],
        max_backlog=10,
    )
    tailer.start()
    assert tailer.poll_once() == 0 and emitted == [] and tailer.paused_reads == 1
    assert tailer.catching_up == 1  # not read: still to catch up, so /readyz says so
    backlog[0] = 9
    while tailer.poll_once():
        pass
    assert len(emitted) == 150 and tailer.paused_reads == 1


def test_run_catching_up_a_long_log_with_a_small_queue_and_a_slow_collector_drops_nothing(
    tmp_path: Path, otlp_receiver
) -> None:
    """Before, `run` read a log as fast as it could and the queue dropped its oldest spans
    whenever the exporter was slower than the reading."""
    path = tmp_path / "session-state" / SESSION / "events.jsonl"
    path.parent.mkdir(parents=True)
    log = _endless_task(600)
    log.now = time.time_ns()  # recent: read from its beginning at start
    log.user(interaction="i2")  # the first task ends, so that its root goes out too
    path.write_bytes(log.jsonl())
    otlp_receiver.delay = 0.05  # a collector slower than the reading
    process = start_bridge(
        [
            *("run", "--session-state", str(tmp_path / "session-state")),
            *("--state-dir", str(tmp_path / "bridge-state"), "--no-prometheus"),
            *("--queue-size", "100", "--idle-timeout", "3600"),
        ],
        env=bridge_env({"OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.http_endpoint}),
        log=tmp_path / "run.log",
    )
    try:
        otlp_receiver.wait_for_spans(1801, timeout=120)
    finally:
        terminate(process)
    log_text = (tmp_path / "run.log").read_text()
    assert "dropped" not in log_text, log_text
    assert len({s["span_id"] for s in otlp_receiver.spans()}) == 1801
