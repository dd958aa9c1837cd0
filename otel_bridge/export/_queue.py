"""A bounded queue and a retrying worker per span exporter.

Why not the SDK's BatchSpanProcessor: it drops a batch the exporter failed on, and drops new
spans when its queue is full, without telling its caller. The bridge must keep what it cannot
send yet (a collector down for minutes), retry with back-off, bound its memory, count and log
what it does drop, and tell the log follower how far delivery has got, so that a checkpoint never
runs ahead of what was exported.

Every span gets a sequence number when queued. A worker delivers its exporter's queue in order;
its watermark is the highest sequence number delivered (or dropped because the queue
overflowed). The sink's watermark is the lowest over its workers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

__all__ = ["ExportWorker", "RetryPolicy"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Back-off between attempts at a failed batch: initial, doubled each time, capped."""

    initial_seconds: float = 1.0
    max_seconds: float = 30.0

    def delay(self, attempt: int) -> float:
        return min(self.initial_seconds * (2 ** max(attempt - 1, 0)), self.max_seconds)


class ExportWorker:
    """Owns one exporter, its bounded queue and the thread that drains it.

    Args:
        exporter: where the spans go.
        capacity: spans the queue holds at most.
        max_batch: spans per export call.
        block_when_full: wait for room (replay: back-pressure), at most `block_seconds`, instead
            of dropping the oldest queued span (run: a live source cannot wait).
        block_seconds: how long a full queue is waited on before its oldest span is dropped.
        retry: back-off between attempts at a failed batch.
        on_result: called with (exporter name, spans, ok) after each attempt, from the worker
            thread; and with ok=None for spans dropped on overflow.
    """

    def __init__(self, exporter: SpanExporter, *, capacity: int, max_batch: int,
                 block_when_full: bool, retry: RetryPolicy,
                 on_result: Callable[[str, int, bool | None], None],
                 block_seconds: float = 60.0) -> None:
        if capacity < 1 or max_batch < 1:
            raise ValueError("capacity and max_batch must be positive")
        self.name = type(exporter).__name__
        self._exporter = exporter
        self._capacity = capacity
        self._max_batch = max_batch
        self._block = block_when_full
        self._block_seconds = block_seconds
        self._retry = retry
        self._on_result = on_result
        self._queue: deque[tuple[int, ReadableSpan]] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._deadline = float("inf")  # when stopping: give up retrying after this
        self._in_flight = 0  # spans taken from the queue, not yet delivered
        self._in_flight_first = 0  # the lowest sequence number among them
        self._last_seq = 0  # the highest sequence number ever queued
        self._abandoned_from: int | None = None  # the first span left undelivered at stop
        self.failing_since: float | None = None  # monotonic time the current batch first failed
        self._thread = threading.Thread(target=self._run, name=f"export-{self.name}",
                                        daemon=True)
        self._thread.start()

    @property
    def watermark(self) -> int:
        """Every span with a sequence number up to this is done with: delivered, or dropped
        because the queue overflowed (counted and logged)."""
        with self._cond:
            if self._abandoned_from is not None:
                return self._abandoned_from - 1
            if self._in_flight:
                return self._in_flight_first - 1
            if self._queue:
                return self._queue[0][0] - 1
            return self._last_seq

    @property
    def depth(self) -> int:
        """Spans waiting, in flight included."""
        with self._cond:
            return len(self._queue) + self._in_flight

    def put(self, items: Sequence[tuple[int, ReadableSpan]]) -> None:
        """Queue spans (sequence numbers ascending). Blocks or drops when full, as configured."""
        dropped = 0
        with self._cond:
            for item in items:
                if len(self._queue) + self._in_flight >= self._capacity and self._block:
                    self._cond.notify_all()  # the worker must see what this call added
                    self._cond.wait_for(lambda: self._stopping or len(self._queue)
                                        + self._in_flight < self._capacity, self._block_seconds)
                if len(self._queue) + self._in_flight >= self._capacity:
                    if self._queue:
                        self._queue.popleft()  # the oldest goes
                        dropped += 1
                    else:  # everything is in flight: this one cannot wait
                        self._last_seq = max(self._last_seq, item[0])
                        dropped += 1
                        continue
                self._queue.append(item)
                self._last_seq = max(self._last_seq, item[0])
            self._cond.notify_all()
        if dropped:
            self._on_result(self.name, dropped, None)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until everything queued was delivered (or dropped); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and not self._in_flight,
                                       timeout)

    def stop(self, timeout: float) -> int:
        """Deliver what it can within `timeout`, then stop. Returns the spans left undelivered."""
        with self._cond:
            self._stopping = True
            self._deadline = time.monotonic() + timeout
            self._cond.notify_all()
        self._thread.join(timeout + 5)
        with self._cond:
            left = len(self._queue) + self._in_flight
            if self._in_flight:
                self._abandoned_from = self._in_flight_first
            elif self._queue:
                self._abandoned_from = self._queue[0][0]
            self._queue.clear()
        try:
            self._exporter.shutdown()
        except Exception:
            logger.exception("exporter %s failed to shut down", self.name)
        return left

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._stopping)
                if not self._queue:
                    return
                batch = [self._queue.popleft()
                         for _ in range(min(self._max_batch, len(self._queue)))]
                self._in_flight = len(batch)
                self._in_flight_first = batch[0][0]
            attempt = 0
            while True:
                attempt += 1
                ok = self._attempt([span for _, span in batch])
                self._on_result(self.name, len(batch), ok)
                if ok:
                    self.failing_since = None
                    break
                if self.failing_since is None:
                    self.failing_since = time.monotonic()
                delay = self._retry.delay(attempt)
                with self._cond:
                    give_up = self._stopping and time.monotonic() + delay > self._deadline
                    if give_up:
                        self._queue.extendleft(reversed(batch))  # counted as left by stop()
                        self._in_flight = 0
                        self._cond.notify_all()
                        return
                    logger.warning("%s: export of %d spans failed (attempt %d); retrying in "
                                   "%.1fs, %d spans queued", self.name, len(batch), attempt,
                                   delay, len(self._queue) + len(batch))
                    self._cond.wait_for(lambda: self._stopping and
                                        time.monotonic() > self._deadline, delay)
            with self._cond:
                self._in_flight = 0
                self._cond.notify_all()

    def _attempt(self, spans: list[ReadableSpan]) -> bool:
        try:
            return self._exporter.export(spans) is SpanExportResult.SUCCESS
        except Exception:  # an exporter bug must not stop the bridge
            logger.exception("exporter %s raised", self.name)
            return False
