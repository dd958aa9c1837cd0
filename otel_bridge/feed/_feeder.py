"""The one way events become exported spans: feed -> emit -> count, for every source.

`replay`, `run`'s tailer, `LiveBridge` and the `--jobs` workers decode their bytes (or SDK
objects) into events and hand them to a `StreamFeeder`: it feeds them to the assembler, hands
the finished span records to `emit`, and counts what was read. For `run`, which checkpoints,
it also notes every safe place (the end of an event after which no interaction is open, with
the session's state there) and which spans were delivered after it, in the stream's `Ledger`,
and takes quiet sessions out of memory (their state kept in the ledger). Sources know nothing
of spans: they pass events and streams, and hold their ledgers without looking inside. (The
OpenTelemetry Collector's file consumer splits the same way: its reader calls an `emit`
callback and knows nothing downstream, pkg/stanza/fileconsumer.)
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import semconv as sc
from .._records import SpanRecord
from .._words import plural
from ..assembler import Assembler, SessionAssembler
from ..decode._events import Event
from ..metrics._recorder import MetricsRecorder
from ._ledger import Ledger
from ._quiet import QuietPolicy, QuietTask, Verdict

if TYPE_CHECKING:
    from ..sources.tail._options import TailOptions

__all__ = ["Emit", "StreamFeeder"]

# Its lines are all of run's reading (a task re-read after a restart, a background wait over),
# under the name those lines have always carried.
logger = logging.getLogger("otel_bridge.sources._tail")

_MAX_PENDING = 1024  # safe places remembered per stream while exports are behind
#: Emit: takes finished records; may return the (sequence number, span id) of each span it
#: queued (`SpanSink.export` does), so that checkpoints can name what was delivered; any
#: other value (None) says that emitting is exporting.
Emit = Callable[[list[SpanRecord]], object]
Positions = Iterable[tuple[Event, int]]


class StreamFeeder:
    """Feeds the events of many streams through one assembler into `emit`.

    Args:
        assembler: turns events into span records.
        emit: receives finished records.
        sequence: the sequence number of the last span handed to `emit` (the sink's), so that
            a checkpoint waits for the spans before it to be exported; none: emitting is
            exporting, and spans are numbered here as they are emitted.
    """

    def __init__(
        self,
        assembler: Assembler,
        emit: Emit,
        *,
        sequence: Callable[[], int] | None = None,
    ) -> None:
        self.assembler = assembler
        config = assembler.config
        #: the quiet-task policy; its timeouts are the tailer's (`follow_logs`)
        self.quiet = QuietPolicy(
            stall_seconds=config.trouble.stalled_seconds,
            background_wait_seconds=config.background_wait_seconds,
        )
        self._emit = emit
        self._emitted = 0
        self._sequence = sequence or (lambda: self._emitted)
        self._safe_places = False
        self._on_moved: Callable[[str], None] = lambda _stream: None

    def follow_logs(self, options: TailOptions, on_moved: Callable[[str], None] | None) -> None:
        """`run`'s tailer follows logs through this feeder: its timeouts join the quiet-task
        policy (said once if they override the stall threshold: `QuietPolicy.conflict`);
        `on_moved` (checkpoints are kept): note safe places and delivered spans in the
        ledgers, and tell it of each stream whose checkpoint may move."""
        idle, person = options.idle_timeout_seconds, options.person_timeout_seconds
        self.quiet = replace(self.quiet, idle_timeout_seconds=idle, person_timeout_seconds=person)
        conflict = self.quiet.conflict()
        if conflict is not None:
            logger.warning("%s", conflict)
        if on_moved is not None:
            self._safe_places = True
            self._on_moved = on_moved

    @property
    def metrics(self) -> MetricsRecorder:
        return self.assembler.metrics

    @property
    def resident(self) -> int:
        """Sessions whose state is in memory."""
        return self.assembler.resident

    def count_read(self, events: int) -> None:
        """Count decoded events into otel_bridge.events.read: once a batch, not once an event
        (each observation costs the SDK a measurement)."""
        if events:
            self.assembler.metrics.add(sc.METRIC_EVENTS_READ, events, {}, "")

    # --- whole streams (replay, the --jobs workers, LiveBridge) ---------------------------

    def feed(self, stream: str, events: list[Event], hint: str | None, *, end: bool = False) -> int:
        """Feed `events` of `stream` (counted) and emit what they finish; `end`: then end the
        stream (what is open closes at its last event, marked incomplete). Returns the spans
        emitted."""
        self.count_read(len(events))
        records = self.assembler.feed(stream, events, hint)
        if end:
            records += self.assembler.end_stream(stream)
        self._emit(records)
        return len(records)

    def feed_live(self, stream: str, event: Event) -> None:
        """One live event (LiveBridge; counted by the caller as it arrives): what it finishes
        is emitted, if anything."""
        records = self.assembler.feed(stream, [event], stream)
        if records:
            self._emit(records)

    def close_all(self) -> None:
        """Every stream is over (LiveBridge closed): what is open closes and is emitted."""
        self._emit(self.assembler.close_all())

    def end(self, stream: str) -> None:
        """The stream is over (gone, replaced, refused): what is open closes now."""
        self._emit(self.assembler.end_stream(stream))

    # --- followed streams (run) -----------------------------------------------------------

    ledger = staticmethod(Ledger.made)  # a stream's ledger: new, read again, or resumed

    def feed_positions(
        self, stream: str, hint: str | None, ledger: Ledger, positions: Positions
    ) -> bool:
        """Feed events (with the offset each ends at) to the stream's session, taken back
        into memory if it was evicted, and hand the finished spans over. Returns whether an
        interaction is open after them."""
        session = self.assembler.session(stream, hint)
        if ledger.evicted is not None:
            session.restore(json.loads(ledger.evicted))
            ledger.evicted = None
        if not self._safe_places:
            self._hand_over(stream, ledger, [r for e, _ in positions for r in session.feed(e)])
        else:
            self._feed_safely(stream, ledger, session, positions)
        return session.has_open_interaction

    def _feed_safely(
        self, stream: str, ledger: Ledger, session: SessionAssembler, positions: Positions
    ) -> None:
        """Feed, handing spans over at every safe place (the end of an event after which no
        interaction is open, with the session's state there), so that each checkpoint knows
        exactly which spans came before it."""
        records: list[SpanRecord] = []
        safe: tuple[int, int, dict[str, Any]] | None = None  # (records before it, end, state)
        for event, end in positions:
            records.extend(session.feed(event))
            if not session.has_open_interaction:
                safe = (len(records), end, session.snapshot())
            elif safe is not None:  # a task opened after a safe place: hand over before it
                self._hand_over(stream, ledger, records[: safe[0]], safe[1:])
                records = records[safe[0] :]
                safe = None
        if safe is not None:
            self._hand_over(stream, ledger, records[: safe[0]], safe[1:])
            records = records[safe[0] :]
        if records:
            self._hand_over(stream, ledger, records)

    def _hand_over(
        self,
        stream: str,
        ledger: Ledger,
        records: list[SpanRecord],
        safe: tuple[int, dict[str, Any]] | None = None,
    ) -> None:
        """Emit records (minus those a checkpoint says were delivered before a restart); then,
        at a safe place, remember it for the checkpoint."""
        records = self._not_delivered(stream, ledger, records, final=safe is not None)
        if records:
            returned = self._emit(records)
            self._emitted += len(records)
            if self._safe_places:
                queued = returned if isinstance(returned, list) else None
                if queued is None:  # emitting is exporting
                    first = self._emitted - len(records) + 1
                    queued = [(first + n, r.span_id) for n, r in enumerate(records)]
                ledger.sent.add(queued, [r.span_id for r in records])
                self._on_moved(stream)
        if safe is not None and self._safe_places:
            ledger.skip = None  # the re-read has passed what was delivered
            ledger.pending.append((self._sequence(), *safe))
            if len(ledger.pending) > _MAX_PENDING:  # exports stalled: keep every other one
                ledger.pending = ledger.pending[1::2]
            self._on_moved(stream)

    @staticmethod
    def _not_delivered(
        stream: str, ledger: Ledger, records: list[SpanRecord], *, final: bool
    ) -> list[SpanRecord]:
        """`records` but those a checkpoint said were delivered before a restart; `final`: a
        safe place follows them."""
        reread = ledger.reread
        if reread is not None:  # after a restart: the delivered blocks are dropped
            records = reread.take(records)
            if final:
                records.extend(reread.finish())
            if reread.diverged:
                logger.info(
                    "%s: read again after a restart, its open task gave other spans than "
                    "delivered before; they are exported again",
                    stream,
                )
                ledger.sent.diverged(reread.verified)
            if reread.done:
                ledger.reread = None
        skip = ledger.skip
        if skip and records:
            kept = [r for r in records if r.span_id not in skip]
            skip.difference_update(r.span_id for r in records)
            records = kept
        return records

    # --- quiet streams (the policy: `_quiet`) --------------------------------------------

    def _quiet_task(self, stream: str, now: float, quiet_seconds: float | None) -> QuietTask:
        """What the stream's open task is doing, as the quiet-task policy reads it."""
        facts = self.assembler.quiet_facts(stream, int(now * 1e9))
        if facts is None:  # nothing open: quiet, and nothing holds it
            return QuietTask(quiet_seconds=quiet_seconds)
        asks_person, background, silent = facts
        return QuietTask(asks_person, background, silent, quiet_seconds)

    def watch(self, now: float) -> None:
        """The signals only a clock tells, of every open task (`Assembler.watch`): a task is
        stalled when the quiet-task policy says so, with the threshold it holds."""
        policy = self.quiet

        def stalled(stream: str, silent: float) -> float:
            if not policy.may_stall(silent):  # what the task does is not looked at
                return 0.0
            task = self._quiet_task(stream, now, None)
            return policy.stalled_seconds if policy.verdict(task) is Verdict.STALLED else 0.0

        self.assembler.watch(int(now * 1e9), stalled)

    def settle(
        self,
        stream: str,
        ledger: Ledger,
        offset: int,
        *,
        quiet_seconds: float,
        at_end: bool,
        unread: Callable[[], bool],
        now: float,
    ) -> bool:
        """Apply the quiet-task policy to a followed stream whose task is open, quiet for
        `quiet_seconds` of the bridge's polling: a task whose background wait is over ends at
        its last event (counted from it, as replay counts it), an idle one is closed (a safe
        place at `offset`). `at_end`: all of the log was read (else a background wait is not
        judged: what is unread may be the work it waits for); `unread`: the source's look at
        whether its log has grown since (then it is read first, not closed). True when the
        task ended."""
        task = self._quiet_task(stream, now, quiet_seconds)
        verdict = self.quiet.verdict(task)
        if verdict is Verdict.BACKGROUND_OVER and at_end:
            return self._expire(stream, ledger, offset, now)
        if verdict is not Verdict.IDLE or unread():
            return False
        logger.info(
            "%s quiet for %.0fs%s; closing its open interaction",
            stream,
            self.quiet.timeout(task),
            " while its agent waited for a person" if task.asks_person else "",
        )
        self._close(stream, ledger, offset)
        return True

    def _expire(self, stream: str, ledger: Ledger, offset: int, now: float) -> bool:
        """End the waiting task of a stream whose background wait is over (counted from its
        last event, as replay counts it); False if it is not over yet."""
        session = self.assembler.session(stream)
        records = session.expire(int(now * 1e9))
        if session.has_open_interaction:
            return False
        logger.info(
            "%s: background work did not report within the background wait; "
            "its task ended at its last event",
            stream,
        )
        self._hand_over(stream, ledger, records, (offset, session.snapshot()))
        return True

    def _close(self, stream: str, ledger: Ledger, offset: int) -> None:
        """Close the stream's open interaction (quiet too long): a safe place at `offset`."""
        records = self.assembler.close_stream(stream)
        session = self.assembler.session(stream)
        self._hand_over(stream, ledger, records, (offset, session.snapshot()))

    def evict(self, stream: str, ledger: Ledger) -> None:
        """Take the stream's session out of memory; its state (a small snapshot) stays in the
        ledger, as a checkpoint keeps it."""
        snapshot = self.assembler.evict(stream)
        if snapshot is not None:
            state = json.dumps(snapshot)
            # Most often the state at the last safe place: then one string serves both.
            ledger.evicted = state if state != ledger.safe_session else ledger.safe_session

    def background_wait(self, stream: str, ledger: Ledger, now: float) -> str | None:
        """Once a task, what its stopped agent loop waits for and how long at most
        ("15 min for 2 background shells"); None when there is nothing (new) to say, or the
        wait is over already (an old log caught up: it ends at once)."""
        work = self.assembler.session(stream).background_work()
        if work is None or work[0] == ledger.waiting_said:
            return None
        task, last_ns, shells, subagents = work
        left = self.assembler.config.background_wait_seconds - (now - last_ns / 1e9)
        if left <= 0:
            return None
        ledger.waiting_said = task
        what = []
        if shells:
            what.append(plural(shells, "background shell"))
        if subagents:
            what.append(plural(subagents, "sub-agent"))
        return f"{_minutes(left)} for {' and '.join(what)}"


def _minutes(seconds: float) -> str:
    """ "15 min", "1 min", "40 s": how long a wait has left, rounded up."""
    if seconds < 60:
        return f"{math.ceil(seconds)} s"
    return f"{math.ceil(seconds / 60)} min"
