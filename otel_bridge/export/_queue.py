"""A bounded queue and a retrying worker per span exporter.

Why not the SDK's BatchSpanProcessor: it drops a batch the exporter failed on, and drops new
spans when its queue is full, without telling its caller. The bridge must keep what it cannot
send yet (a collector down for minutes), retry with back-off, bound its memory, count and log
what it does drop, and tell the log follower how far delivery has got, so that a checkpoint never
runs ahead of what was exported.

Every span gets a sequence number when queued. A worker delivers its exporter's queue in order;
its watermark is the highest sequence number delivered (or dropped because the queue
overflowed). The sink's watermark is the lowest over its workers.

A worker logs one warning when its exporter starts failing (with the reason) and one line when it
works again; the SDK exporters' own retry messages are kept off the terminal (see
`_sdk_logs.capture_exporter_logs`), and every failed attempt is counted by the sink.

A batch that failed about its data (a span the exporter cannot encode, or the collector refuses
as invalid) is not retried as it is, which would hold back every span behind it for ever: the
span is isolated, dropped and counted, the rest delivered (`_poison`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry.sdk.trace.export import SpanExporter

from ._attempts import Attempt, ExporterCalls, ExportItem, Outage
from ._poison import Verdict, isolate

__all__ = ["ExportItem", "ExportWorker", "RetryPolicy"]

#: Called with (exporter class name, the sequence numbers of the spans, ok): ok True when
#: delivered, False for a failed attempt (retried), None when dropped from a full queue.
ResultCallback = Callable[[str, Sequence[int], bool | None], None]

#: How often a waiting stop() looks at its abort condition.
_ABORT_POLL_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Back-off between attempts at a failed batch: initial, doubled each time, capped."""

    initial_seconds: float = 1.0
    max_seconds: float = 30.0

    def delay(self, attempt: int) -> float:
        return min(self.initial_seconds * (2.0 ** max(attempt - 1, 0)), self.max_seconds)

    def wait_after(self, attempt: int, result: Attempt) -> float:
        """The wait after failed attempt number `attempt`: what the collector asked for
        (Retry-After) if longer; an endpoint that takes no traces at all (a 404: not an OTLP
        traces receiver) is asked again only rarely."""
        delay = max(self.delay(attempt), result.retry_after or 0.0)
        if result.verdict is Verdict.ENDPOINT:
            delay = max(delay, self.max_seconds)
        return delay


class ExportWorker:
    """Owns one exporter, its bounded queue and the thread that drains it.

    Args:
        exporter: where the spans go.
        capacity: spans the queue holds at most.
        max_batch: spans per export call.
        block_when_full: wait for room (replay: back-pressure), at most `block_seconds` per
            `put`, instead of dropping the oldest queued span (run: a live source cannot wait).
        block_seconds: how long one `put` waits, in all, for room in a full queue before
            dropping the oldest queued spans for the rest of its spans.
        retry: back-off between attempts at a failed batch.
        on_result: called with (exporter class name, sequence numbers, ok) after each attempt,
            from the worker thread; and with ok=None for spans dropped on overflow.
        label: the exporter as a person knows it ("otlp http://collector:4318/v1/traces"), for
            log lines; its class name by default.
        on_rejected: called with (exporter class name, sequence numbers) for spans the
            exporter could not take even alone (`_poison`), dropped from its queue.
        linger_seconds: how long to wait for more spans before exporting a batch that is not
            full (like the SDK's BatchSpanProcessor schedule delay, but short: `run` uses
            50 ms, well inside what live latency may take). None: full batches only (or a
            full queue), the rest at the stop: replay's batches then depend on its spans alone.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        capacity: int,
        max_batch: int,
        block_when_full: bool,
        retry: RetryPolicy,
        on_result: ResultCallback,
        block_seconds: float = 60.0,
        label: str | None = None,
        linger_seconds: float | None = 0.0,
        on_rejected: Callable[[str, Sequence[int]], None] | None = None,
    ) -> None:
        if capacity < 1 or max_batch < 1:
            raise ValueError("capacity and max_batch must be positive")
        self._calls = ExporterCalls(exporter, label or type(exporter).__name__, on_rejected)
        self.name = self._calls.name
        self.label = self._calls.label
        self._outage = Outage(self.label)
        self._capacity = capacity
        self._max_batch = max_batch
        self._block = block_when_full
        self._block_seconds = block_seconds
        self._linger = linger_seconds
        self._retry = retry
        self._on_result = on_result
        self._queue: deque[tuple[int, ExportItem]] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._deadline = float("inf")  # when stopping: give up retrying after this
        self._in_flight = 0  # spans taken from the queue, not yet delivered
        self._in_flight_first = 0  # the lowest sequence number among them
        self._last_seq = 0  # the highest sequence number ever queued
        self._abandoned_from: int | None = None  # the first span left undelivered at stop
        self._shut = False
        # A daemon thread: one stuck in an exporter call (a collector that does not answer)
        # must not keep the process alive once the command is done with it.
        self._thread = threading.Thread(target=self._run, name=f"export-{self.name}", daemon=True)
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
    def failing_since(self) -> float | None:
        """Monotonic time the current batch first failed; None while exports go through."""
        return self._outage.failing_since

    @property
    def depth(self) -> int:
        """Spans waiting, in flight included."""
        with self._cond:
            return len(self._queue) + self._in_flight

    def put(self, items: Sequence[tuple[int, ExportItem]]) -> None:
        """Queue spans (sequence numbers ascending). Blocks or drops when full, as configured.

        Blocking waits for room as often as the queue fills, but for at most `block_seconds`
        in all per call, not per span: once that time is spent, each further span that finds
        the queue full drops the oldest queued one (counted), so that a stuck exporter costs a
        caller one wait, and the queue never holds more than `capacity`."""
        dropped: list[int] = []
        with self._cond:
            was_empty = False  # the worker may be waiting for a first span
            deadline: float | None = None
            for item in items:
                if self._full() and self._block and not self._stopping:
                    if deadline is None:  # the first wait of this call sets its limit
                        deadline = time.monotonic() + self._block_seconds
                    remaining = deadline - time.monotonic()
                    if remaining > 0:
                        self._cond.notify_all()  # the worker must see what this call added
                        self._cond.wait_for(lambda: self._stopping or not self._full(), remaining)
                if self._full():
                    if self._queue:
                        dropped.append(self._queue.popleft()[0])  # the oldest goes
                    else:  # everything is in flight: this one cannot wait
                        self._last_seq = max(self._last_seq, item[0])
                        dropped.append(item[0])
                        continue
                was_empty = was_empty or not self._queue
                self._queue.append(item)
                self._last_seq = max(self._last_seq, item[0])
            # Wake the worker when it waits for spans, or lingers and now has a full batch:
            # woken for less, a lingering worker would only wait again (a thread switch for
            # each call of a caller that hands over a few spans at a time).
            if was_empty or self._linger == 0 or self._batch_ready():
                self._cond.notify_all()
        if dropped:
            self._on_result(self.name, dropped, None)

    def _batch_ready(self) -> bool:
        """Time to send: stopping, a full batch, a full queue (a put waits). With the lock."""
        return self._stopping or len(self._queue) >= self._max_batch or self._full()

    def _full(self) -> bool:
        """No room for one more span. Call with the lock held."""
        return len(self._queue) + self._in_flight >= self._capacity

    def wait_idle(self, timeout: float) -> bool:
        """Wait until everything queued was delivered (or dropped); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and not self._in_flight, timeout)

    def begin_stop(self, deadline: float) -> None:
        """Deliver what is queued until `deadline` (monotonic), then stop; see `finish_stop`."""
        with self._cond:
            self._stopping = True
            self._deadline = deadline
            self._cond.notify_all()

    def finish_stop(self, abort: Callable[[], bool] | None = None) -> int:
        """Wait for the worker to deliver what it can before its deadline, or until `abort()`
        says to quit at once, then shut the exporter down. Returns the spans left undelivered
        (the watermark stays before the first of them).

        An exporter call still running then (the SDK exporters retry inside a call for up to
        their own timeout) is cut short by shutting the exporter down, which ends their
        back-off waits and closes their connections.
        """
        aborted = False
        while self._thread.is_alive():
            if abort is not None and abort():
                aborted = True
                break
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                break
            self._thread.join(min(remaining, _ABORT_POLL_SECONDS))
        if self._thread.is_alive():
            with self._cond:
                self._deadline = float("-inf")  # no further attempt
                self._cond.notify_all()
            self._shutdown_exporter()
            if not aborted:  # let it put its batch back; a quit does not wait
                self._thread.join(2.0)
        with self._cond:
            left = len(self._queue) + self._in_flight
            if self._in_flight:
                self._abandoned_from = self._in_flight_first
            elif self._queue:
                self._abandoned_from = self._queue[0][0]
            self._queue.clear()
        self._shutdown_exporter()
        return left

    def stop(self, timeout: float, abort: Callable[[], bool] | None = None) -> int:
        """Deliver what it can within `timeout`, then stop. Returns the spans left undelivered."""
        self.begin_stop(time.monotonic() + timeout)
        return self.finish_stop(abort)

    def _shutdown_exporter(self) -> None:
        with self._cond:
            if self._shut:
                return
            self._shut = True
        self._calls.shutdown()

    def _past_deadline(self) -> bool:
        """Stopping, and the time to deliver is up. Call with the lock held."""
        return self._stopping and time.monotonic() >= self._deadline

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._stopping)
                if self._linger != 0 and not self._batch_ready():
                    # A live source hands over a few spans at a time: gather them for a moment
                    # so that one export call carries many (each costs about a millisecond).
                    self._cond.wait_for(self._batch_ready, self._linger)
                if not self._queue or self._past_deadline():
                    return
                batch = [
                    self._queue.popleft() for _ in range(min(self._max_batch, len(self._queue)))
                ]
                self._in_flight = len(batch)
                self._in_flight_first = batch[0][0]
            if not self._deliver(batch):
                return
            with self._cond:
                self._in_flight = 0
                self._cond.notify_all()

    def _deliver(self, batch: list[tuple[int, ExportItem]]) -> bool:
        """Try a batch until it goes through (True), or until stopping's deadline: then it is
        put back at the head of the queue, for stop() to count (False).

        A failure about the batch's data (`_poison.classify`) is not retried as it is: the
        batch is split until the span the exporter cannot take is alone, the rest delivered
        and that span rejected (`_poison.isolate`); only what is left after that (a transient
        failure came meanwhile, or the receiver refuses everything) waits for the back-off."""
        attempt = 0
        while True:
            attempt += 1
            result = self._calls.attempt([span for _, span in batch], self._outage.trouble)
            self._on_result(self.name, [seq for seq, _ in batch], result.ok)
            ok = result.ok
            if not ok and result.verdict is Verdict.DATA:
                batch = isolate(
                    batch,
                    self._calls.try_part,
                    self._part_delivered,
                    self._calls.reject,
                    self._past_deadline_now,
                )
                ok = not batch
                if not ok:
                    self._refill(batch)
            if ok:
                self._outage.recovered(self.depth)
                return True
            delay = self._retry.wait_after(attempt, result)
            # A call that finish_stop cut short is no news; the start of an outage is.
            self._outage.failed(result, attempt, len(batch), delay, self.depth, shut=self._shut)
            if self._wait_or_give_up(batch, delay, result):
                return False

    def _wait_or_give_up(
        self, batch: list[tuple[int, ExportItem]], delay: float, result: Attempt
    ) -> bool:
        """Wait `delay` before the next attempt at `batch`, unless stopping says to give up:
        then the batch is put back at the head of the queue (True)."""
        with self._cond:
            # Give up when the wait would end past the deadline, or once it has passed
            # while waiting (finish_stop moves it to now to quit at once); stopping, at
            # once when the answer will not change (the endpoint refuses, or refused the
            # request as it is).
            give_up = self._stopping and (
                time.monotonic() + delay > self._deadline
                or result.verdict in (Verdict.ENDPOINT, Verdict.DATA)
            )
            if not give_up:
                self._cond.wait_for(self._past_deadline, delay)
                give_up = self._past_deadline()
            if give_up:
                self._queue.extendleft(reversed(batch))  # counted as left by stop()
                self._in_flight = 0
                self._cond.notify_all()
            return give_up

    # --- a span the exporter cannot take (`_poison`) --------------------------------------

    def _part_delivered(self, part: list[tuple[int, ExportItem]]) -> None:
        self._on_result(self.name, [seq for seq, _ in part], True)

    def _past_deadline_now(self) -> bool:
        with self._cond:
            return self._past_deadline() or self._shut

    def _refill(self, batch: list[tuple[int, ExportItem]]) -> None:
        """What is left of a batch after isolating its bad spans goes on in flight (the
        watermark stays before its first span); it takes more from the queue, up to a batch:
        a span the receiver refused, alone, gets others to be compared with at the next try
        (if they go through, the receiver takes data, and that span is the bad one)."""
        with self._cond:
            while self._queue and len(batch) < self._max_batch:
                batch.append(self._queue.popleft())
            self._in_flight = len(batch)
            self._in_flight_first = batch[0][0]
            self._cond.notify_all()
