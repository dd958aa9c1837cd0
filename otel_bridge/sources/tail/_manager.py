"""Tail: follow every session log under one or more session-state directories as it grows.

The manager only runs the poll: watchdog (inotify on Linux) gives hints, and `poll_once()`
does the work on the caller's thread, so tests can drive it step by step: the finder
(`Finder`) finds logs, the reading (`Reading`) reads awake ones into the downstream, the
tracker (`Tracker`) says which logs are awake, asleep, behind or open, and the checkpoint
store keeps what a sleeping log is. design.md beside this module says how a log is followed,
sleeps, wakes and is checkpointed. (Shaped after the OpenTelemetry Collector's file consumer,
pkg/stanza/fileconsumer: a manager that polls, a finder, a reader per file, a tracker.)
See https://python-watchdog.readthedocs.io/ (Observer, FileSystemEventHandler).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from ... import semconv as sc
from ...decode._lines import ReadStats
from .._gate import Gate
from .._health import SkipCounter
from .._watch import Hints, Watcher
from ._downstream import Downstream
from ._finder import Finder
from ._following import Following
from ._options import TailOptions, start_summary
from ._reading import Reading
from ._roots import RootHealth
from ._store import NoCheckpoints, Saver, Store
from ._tracker import Tracker, Untracked

__all__ = ["Tailer"]

# The name the lines of run's reading have always carried (people filter on it).
logger = logging.getLogger("otel_bridge.sources._tail")

#: With notifications, every log is stat'ed anyway at every this many rescans (a minute at the
#: default 5 s): a safety net for what the kernel did not report, cheap at 10,000 logs.
_RESCANS_PER_SWEEP = 12
#: Logs read per poll while they catch up (not yet read to their end once). Reading 10,000
#: logs in one poll held what each one's checkpoint waits for (the safe places, with their
#: session's state, until their spans are delivered) for all of them at once: some 7 KB a
#: log. A poll per batch lets `run` save checkpoints between batches, and what was saved go.
_CATCH_UP_BATCH = 256
#: A longer gap between two polls is the bridge not running (SIGSTOP, a suspended machine):
#: only this much of it counts as a log being quiet (`--idle-timeout`).
_MAX_POLL_GAP = 60.0


class Tailer:
    """Follows the session logs under `roots` and feeds their events to `downstream`.

    Call `start()`, then `poll_once()` repeatedly (or `run()`), then `close()`. All reading
    happens on the thread that calls `poll_once`; watchdog's thread only records hints.

    Args:
        roots: session-state directories; one that does not exist yet is watched for.
        downstream: takes the events (`feed.StreamFeeder`).
        options: how to follow.
        clock: wall-clock seconds (tests pass their own).
        checkpoints: where to keep the resume points (`CheckpointStore`); none: every start
            is a first start.
        backlog: how many spans the exporters hold (the sink's `queued`); none: no limit.
        max_backlog: while `backlog()` is at least this, logs are not read: they wait on disk
            for the exporters to catch up (a catch-up of big logs, a collector down) instead
            of a full queue dropping spans.
    """

    def __init__(
        self,
        roots: Sequence[Path],
        downstream: Downstream,
        options: TailOptions | None = None,
        clock: Callable[[], float] = time.time,
        checkpoints: Store | None = None,
        backlog: Callable[[], int] | None = None,
        max_backlog: int = 0,
    ) -> None:
        self.roots = [Path(r) for r in roots]
        self.options = options or TailOptions()
        self.stats = ReadStats()
        self._downstream = downstream
        self._clock = clock
        self.wake = threading.Event()
        self._hints = Hints(self.wake)
        self._watcher = Watcher(
            self.roots,
            self._hints,
            self.wake,
            self._count_watch_problem,
            rescan_seconds=self.options.rescan_seconds,
            enabled=self.options.watch,
        )
        self._skips = SkipCounter(self.stats, downstream.metrics)
        gate = Gate(self._count_skip)
        # Without checkpoints: a store that keeps nothing and a tracker with which nothing
        # sleeps, instead of a check at every use.
        self._store: Store = checkpoints if checkpoints is not None else NoCheckpoints()
        self._tracker = Tracker(gate) if checkpoints is not None else Untracked(gate)
        if checkpoints is not None:
            downstream.note_safe_places(self._tracker.mark_dirty)
        self._saver = Saver(self._store, self._tracker, self.options.checkpoint_seconds)
        self._following = Following(
            self.options, self.stats, self._tracker, downstream, self._saver, self._watcher
        )
        self._reading = Reading(
            self.options,
            self._tracker,
            downstream,
            self._following.admissible,
            self._following.forget,
            backlog,
            max_backlog,
        )
        self._following.reading = self._reading
        self._finder = Finder(
            self.roots, self.options, self._tracker, self._watcher, self._following.follow, clock
        )
        self._last_rescan = self._last_sweep = float("-inf")
        self.root_health = RootHealth(self.roots)  # what /readyz says of the roots
        self._last_poll: float | None = None
        self.started = False
        self.paused_reads = 0  # polls that left logs unread for the exporters to catch up
        # events read; logs the last poll put to sleep (their memory may be given back)
        self.events_read = self.let_go = 0

    # --- what run and its probes read -----------------------------------------------------

    @property
    def followed(self) -> list[str]:
        """Paths of the logs being followed (sleeping ones too)."""
        return sorted([*self._tracker.awake, *self._tracker.asleep])

    @property
    def followed_count(self) -> int:
        return len(self._tracker.awake) + len(self._tracker.asleep)

    @property
    def sleeping(self) -> int:
        """Logs asleep: nothing of them in memory but their file's inode and size."""
        return len(self._tracker.asleep)

    @property
    def catching_up(self) -> int:
        """Logs not yet read to their end once (read by probes' threads)."""
        return len(self._tracker.catching)

    def catching_streams(self) -> frozenset[str]:
        """The logs not yet read to their end once, for a scrape's thread: a copy (of a set of
        str, taken by CPython in one step under the GIL, as `catching_up`'s len is)."""
        return frozenset(self._tracker.catching)

    @property
    def resident(self) -> int:
        """Sessions whose state is in memory."""
        return self._downstream.resident

    @property
    def catch_up_bytes(self) -> int:
        """The catch-up at start, for a progress bar: bytes to read then."""
        return self._following.catch_up_bytes

    @property
    def caught_up_bytes(self) -> int:
        """Bytes of the catch-up read so far."""
        return self._reading.caught_up_bytes

    @property
    def last_lag(self) -> float | None:
        """Seconds, of the last event read live."""
        return self._reading.last_lag

    @property
    def heartbeat(self) -> float:
        """When a read of a log last began (monotonic): progress inside a long poll."""
        return self._reading.heartbeat

    @property
    def watch_problems(self) -> Counter[str]:
        """Notification problems by reason ("unavailable", "overflow")."""
        return self._watcher.problems

    # --- the loop -------------------------------------------------------------------------

    def start(self) -> None:
        """Find the logs already there and start watching. Logs are read by `poll_once`."""
        if self.started:
            return
        following = self._following
        following.take_resume_points()
        now = self._clock()
        starts: Counter[str] = Counter()
        self._watcher.watch_roots()  # before listing: a new log is seen one way or the other
        self.root_health.check()  # each root that cannot be listed, said once
        for root in self.roots:
            for log in self._finder.scan(root):
                starts[following.follow(log, at_start=True, now=now)] += 1
        following.started(starts)
        self._tracker.catching = set(self._tracker.awake)
        self._tracker.behind = set(self._tracker.awake)
        self._last_rescan = self._last_sweep = time.monotonic()
        self.started = self._finder.started = following.running = True
        logger.info("%s", start_summary(self.options, starts))
        following.say_backfill(starts)

    def poll_once(self) -> int:
        """Read what has been appended, pick up new logs, close quiet interactions; returns
        the number of events read."""
        now = self._clock()
        if self._last_poll is not None and now - self._last_poll > _MAX_POLL_GAP:
            self._reading.paused += now - self._last_poll - _MAX_POLL_GAP  # not quiet time
        self._last_poll = now
        mono = time.monotonic()
        to_read = self._hinted(now)
        self.let_go = 0
        timers = mono - self._last_rescan >= self.options.rescan_seconds
        if timers:
            self._last_rescan = mono
            self._watcher.watch_roots()
            self.root_health.check()
            self._finder.rescan(now)
        if self._watcher.overflowed():
            self._watcher.problem(
                "overflow", "the kernel dropped file notifications; looking at every log"
            )
            self._last_sweep = float("-inf")
        sweep_every = (
            self.options.rescan_seconds
            if self._watcher.degraded
            else self.options.rescan_seconds * _RESCANS_PER_SWEEP
        )
        if mono - self._last_sweep >= sweep_every:
            self._last_sweep = mono
            to_read.update(self._sweep(now))
        to_read |= self._tracker.behind
        events = self._read(to_read, now)
        if timers:  # timeouts of minutes, looked at every rescan, not every poll
            self._following.close_quiet(now)
            self._following.evict(now)
            self.let_go = self._tracker.put_to_sleep(self._saver.unsaved)
        self._skips.update()
        self.events_read += events
        return events

    def _hinted(self, now: float) -> set[str]:
        """The awake logs the hints name (sleeping ones woken); other paths looked at."""
        to_read: set[str] = set()
        tracker = self._tracker
        for path in self._hints.take():
            if path in tracker.awake:
                to_read.add(path)
            elif path in tracker.asleep:
                if self._following.wake(path, now, None):
                    to_read.add(path)
            else:
                self._finder.consider(path, now)
        return to_read

    def _sweep(self, now: float) -> set[str]:
        """Every log looked at: the awake ones to read, the sleeping ones that changed woken,
        the refused ones looked at again."""
        to_read = set(self._tracker.awake)
        for stream, st in self._tracker.changed_sleepers():
            if self._following.wake(stream, now, st):
                to_read.add(stream)
        for path in list(self._tracker.gate.refused):  # readable again? (a stat or two each)
            self._finder.consider(path, now)
        return to_read

    def _read(self, to_read: set[str], now: float) -> int:
        """Read the logs `to_read` (sorted: the same order in every run), unless the
        exporters are behind: then they wait on disk. Of the logs not yet read to their end
        once, at most `_CATCH_UP_BATCH` are read a poll: the others are read by the next
        polls, at once, after the checkpoints of these were saved."""
        events = 0
        reading = self._reading
        reading.more = False
        paused = False
        catching_up = 0
        for stream in sorted(to_read):
            reader = self._tracker.awake.get(stream)
            if reader is None:
                continue
            if paused or reading.exporters_behind():
                paused = True
                self._tracker.behind.add(stream)  # read once the exporters have caught up
                continue
            if not reader.caught_up:
                if catching_up >= _CATCH_UP_BATCH:
                    self._tracker.behind.add(stream)
                    reading.more = True  # the next poll goes on at once
                    continue
                catching_up += 1
            events += reading.read_guarded(reader, now)
        if paused:
            self.paused_reads += 1
            reading.more = False  # a delivery wakes the loop (`run` sets on_delivered)
        return events

    def run(
        self,
        should_stop: Callable[[], bool],
        poll_interval: float = 0.5,
        after_poll: Callable[[], None] | None = None,
    ) -> None:
        """Poll until `should_stop()`; a notification cuts the wait short.

        `should_stop` is checked at least every `poll_interval`: a signal handler can make it
        true without taking a lock (taking one there can deadlock with the interrupted code).
        """
        self.start()
        while not should_stop():
            # Cleared before the poll, not after the wait: a hint that comes while polling
            # wakes the next wait at once instead of waiting out `poll_interval`.
            self.wake.clear()
            self.poll_once()
            if after_poll is not None:
                after_poll()
            if not self._reading.more:  # a log has more to read now: no wait
                self.wake.wait(poll_interval)

    def close(self) -> None:
        """Stop watching. Open interactions are not exported: a restart rebuilds them from
        the log, and exporting them now as incomplete would give the same span twice with
        different content."""
        self._watcher.close()

    def save_checkpoints(self, watermark: int | None = None, *, force: bool = True) -> int:
        """Record where each log may resume: the latest safe place whose spans were all
        exported (sequence number up to `watermark`; None: all emitted spans were), and the
        spans after it already delivered (`Saver.save`). Returns how many logs' checkpoints
        were written.

        Raises:
            CheckpointError: the store cannot be written; what was taken is kept and written
                by the next call.
        """
        return self._saver.save(watermark, force=force)

    def _count_watch_problem(self, reason: str) -> None:
        self._downstream.metrics.add(
            sc.METRIC_WATCH_PROBLEMS, 1, {sc.OTEL_BRIDGE_REASON: reason}, ""
        )

    def _count_skip(self, reason: str) -> None:
        self._downstream.metrics.add(
            sc.METRIC_FILES_SKIPPED, 1, {sc.OTEL_BRIDGE_REASON: reason}, ""
        )
