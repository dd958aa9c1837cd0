"""The export queue's back-pressure (replay): a full queue is waited on at most once per `put`,
not once per span, and the queue never holds more than its capacity."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_bridge.export._queue import ExportWorker, RetryPolicy

FAST = RetryPolicy(initial_seconds=0.01, max_seconds=0.05)


def items(count: int) -> list[tuple[int, ReadableSpan]]:
    return [(seq, ReadableSpan(name=f"span {seq}")) for seq in range(1, count + 1)]


class Stuck(SpanExporter):
    """An exporter whose calls do not return until released: a collector that hangs."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(10)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


class Slow(SpanExporter):
    """A working exporter, slower than its caller; notes the queue's depth at each call."""

    def __init__(self) -> None:
        self.worker: ExportWorker | None = None
        self.names: list[str] = []
        self.depths: list[int] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        assert self.worker is not None
        self.depths.append(self.worker.depth)
        time.sleep(0.002)
        self.names.extend(span.name for span in spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def count_waits(worker: ExportWorker) -> list[bool]:
    """What each wait for room of the calling thread ended with (False: it timed out)."""
    caller = threading.get_ident()
    waits: list[bool] = []
    wait_for = worker._cond.wait_for

    def counted(predicate, timeout=None):  # type: ignore[no-untyped-def]
        result = wait_for(predicate, timeout)
        if threading.get_ident() == caller:
            waits.append(bool(result))
        return result

    worker._cond.wait_for = counted  # type: ignore[method-assign]
    return waits


def test_a_stuck_exporter_costs_one_wait_per_put_not_one_per_span() -> None:
    results: list[tuple[Sequence[int], bool | None]] = []
    exporter = Stuck()
    worker = ExportWorker(
        exporter,
        capacity=2,
        max_batch=1,
        block_when_full=True,
        block_seconds=0.2,
        retry=FAST,
        on_result=lambda _, seqs, ok: results.append((list(seqs), ok)),
    )
    waits = count_waits(worker)
    worker.put(items(12))
    # one wait, which timed out (the exporter never returns); then the oldest make room
    assert waits == [False]
    dropped = [seq for seqs, ok in results if ok is None for seq in seqs]
    # the oldest went (span 1 is in flight, unless the worker had not taken it yet) and the
    # queue held no more than its capacity
    assert dropped in (list(range(2, 12)), list(range(1, 11)))
    assert worker.depth == 2
    exporter.release.set()
    assert worker.wait_idle(5)
    assert worker.watermark == 12
    delivered = [seq for seqs, ok in results if ok for seq in seqs]
    assert sorted(delivered + dropped) == list(range(1, 13))
    worker.stop(1)


def test_a_slow_exporter_gets_everything_in_order_and_the_queue_stays_bounded() -> None:
    results: list[tuple[Sequence[int], bool | None]] = []
    exporter = Slow()
    worker = ExportWorker(
        exporter,
        capacity=2,
        max_batch=1,
        block_when_full=True,
        block_seconds=60,
        retry=FAST,
        on_result=lambda _, seqs, ok: results.append((list(seqs), ok)),
    )
    exporter.worker = worker
    waits = count_waits(worker)
    sent = items(12)
    worker.put(sent[:7])
    worker.put(sent[7:])
    assert worker.wait_idle(10)
    assert exporter.names == [span.name for _, span in sent]  # all, once, in order
    assert max(exporter.depths) <= 2  # back-pressure: never more than the capacity
    assert waits and all(waits)  # it waited for room, and room came every time
    assert not [seqs for seqs, ok in results if ok is None]  # nothing dropped
    worker.stop(1)


class Batches(SpanExporter):
    """Keeps the names of each batch it gets."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.batches.append([span.name for span in spans])
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def batching(exporter: Batches, linger: float | None, **options: Any) -> ExportWorker:
    """A worker of batches of 4 over a queue of 100 that waits for room (replay's), or as
    `options` say."""
    settings: dict[str, Any] = {
        "capacity": 100,
        "max_batch": 4,
        "block_when_full": True,
        "retry": FAST,
        "on_result": lambda *_: None,
        **options,
    }
    return ExportWorker(exporter, linger_seconds=linger, **settings)


def first_batch(exporter: Batches) -> list[str]:
    """The first batch `exporter` got, once it came (within 10 s)."""
    deadline = time.monotonic() + 10
    while not exporter.batches and time.monotonic() < deadline:
        time.sleep(0.01)
    return exporter.batches[0] if exporter.batches else []


def test_a_lingering_worker_sends_a_full_batch_at_once_and_wakes_for_a_first_span() -> None:
    # Puts of a few spans do not wake a lingering worker (it would only wait again); a put
    # that fills a batch does, and so does the first span after the queue ran dry.
    exporter = Batches()
    worker = batching(exporter, 30)  # far longer than the waits below: only a full batch goes
    spans = items(9)
    worker.put(spans[:1])
    worker.put(spans[1:3])
    worker.put(spans[3:5])  # 5 queued: a full batch of 4 goes, 1 lingers
    assert first_batch(exporter) == ["span 1", "span 2", "span 3", "span 4"]
    assert len(exporter.batches) == 1
    worker.put(spans[5:8])  # 4 queued again
    assert worker.wait_idle(10)
    assert exporter.batches[1] == ["span 5", "span 6", "span 7", "span 8"]
    assert worker.stop(5) == 0
    quick = Batches()
    worker = batching(quick, 0.05)
    worker.put(spans[8:])  # one span into an empty queue: delivered after the linger
    assert worker.wait_idle(10)
    assert quick.batches == [["span 9"]]
    assert worker.stop(5) == 0


def test_without_a_linger_only_full_batches_go_and_the_rest_at_the_stop() -> None:
    # replay's queue (linger None): a pause of the source, however long, cuts no batch, so a
    # replay's batches (the traces file's lines) are the same whatever its pace.
    exporter = Batches()
    worker = batching(exporter, None)
    spans = items(7)
    worker.put(spans[:3])
    time.sleep(0.3)  # six times run's linger: a lingering worker would have sent these
    assert exporter.batches == []
    worker.put(spans[3:6])  # 6 queued: a full batch goes, 2 wait
    assert first_batch(exporter) == ["span 1", "span 2", "span 3", "span 4"]
    time.sleep(0.1)
    assert len(exporter.batches) == 1
    worker.put(spans[6:])
    assert worker.stop(5) == 0
    assert exporter.batches[1:] == [["span 5", "span 6", "span 7"]]


def test_without_a_linger_a_full_queue_smaller_than_a_batch_goes() -> None:
    # A queue that holds fewer spans than a batch (a small --max-queue) is sent once full:
    # waiting for a batch it cannot hold would leave the blocked caller waiting for room.
    exporter = Batches()
    dropped: list[int] = []
    worker = batching(
        exporter,
        None,
        capacity=3,
        max_batch=10,
        block_seconds=1,  # then the put would drop the oldest spans to make room
        on_result=lambda name, seqs, ok: dropped.extend(seqs if ok is None else []),
    )
    worker.put(items(7))  # waits for room twice
    assert worker.stop(5) == 0
    assert dropped == []
    assert exporter.batches == [
        [f"span {n}" for n in group] for group in ([1, 2, 3], [4, 5, 6], [7])
    ]
