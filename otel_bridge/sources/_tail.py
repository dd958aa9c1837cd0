"""Tail: follow every session log under one or more session-state directories as it grows.

Watchdog (inotify on Linux) only gives hints: its handler records which paths changed and wakes
the loop. `poll_once()` does all the work (stat, read, decode, assemble, emit) on the caller's
thread, so tests can drive it step by step.

A daemon beside thousands of sessions must cost nothing while they are quiet, so every poll
does work in proportion to what changed, never to what is followed: a hint names the one log
or directory to look at; the logs behind, holding a partial line or with a task open are kept
in small sets. Only two sweeps touch everything: the session-state directories are listed again
when their mtime moved (a new session directory changes it), and every log is stat'ed again,
as a safety net for notifications the kernel dropped, at every 12th rescan with notifications
(a minute by default), at every rescan without them, and at once when watchdog reports a queue
overflow.

Memory stays flat however many logs pile up: a log quiet for `TailOptions.evict_seconds` first
gives its session's state back to a snapshot (`_evict`), and once its checkpoint holds all of it
(saved, everything delivered, no interaction open, read to its end), the log goes to sleep: its
follower leaves memory too, and only its file's inode and size stay (`_dormant`). A
notification or a sweep that finds it changed wakes it from its checkpoint, as a restart would
(`_wake`). A restart puts logs resumed at their ends straight to sleep. Without checkpoints
(`--no-checkpoints`) nothing sleeps: the follower is all there is of a log.
See https://python-watchdog.readthedocs.io/ (Observer, FileSystemEventHandler).
"""

from __future__ import annotations

import json
import logging
import math
import os
import stat
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .._checkpoint import FINGERPRINT_BYTES, CheckpointStore, FileCheckpoint, fingerprint_of
from .._exceptions import CheckpointError
from .._lines import ReadStats
from .._records import SpanRecord
from .._safe_open import RegularFile, kind, open_regular
from .._words import plural
from ..assembler import Assembler, SessionAssembler
from ._discovery import EVENTS_FILE, LogFile, Refused, session_log, shown
from ._follow import Follower, Hints, TailOptions, end_of_last_line, start_summary
from ._gate import Gate, identity_key
from ._health import SkipCounter
from ._shard import in_shard
from ._watch import Watcher

__all__ = ["TailOptions", "Tailer"]

logger = logging.getLogger(__name__)

_MAX_PENDING = 1024  # safe places remembered per log while exports are behind
#: Bytes read from one file per poll, so that one huge log cannot stall the rest. A log with
#: more to read is read again at once (`run` does not wait between polls then), unless the
#: exporters are behind. With back-pressure, a read is also kept to what the room left in the
#: export queue can take: an event is some 100 bytes at the least, and ends a span or two.
_READ_LIMIT = 1 << 20
_MIN_READ = 4096
_BYTES_PER_SPAN = 100
#: With notifications, every log is stat'ed anyway at every this many rescans (a minute at the
#: default 5 s): a safety net for what the kernel did not report, cheap at 10,000 logs.
_RESCANS_PER_SWEEP = 12
#: Session directories with no log yet that get a watch of their own (the newest): beyond,
#: they are polled. A directory the CLI makes gets its log within milliseconds, so the young
#: ones are watched; 100,000 empty folders would otherwise take 100,000 of the user's inotify
#: watches.
_WATCHED_WAITING = 1000
#: Session directories with no log yet looked at (stat) per rescan, in turn: 100,000 of
#: them cost a stat each every 8 minutes or so at the default 5 s, not 20,000 stats a second.
_WAITING_PER_RESCAN = 1000
#: A longer gap between two polls is the bridge not running (SIGSTOP, a suspended machine):
#: only this much of it counts as a log being quiet (`--idle-timeout`).
_MAX_POLL_GAP = 60.0
#: Emit: takes finished records; may return the (sequence number, span id) of each span it
#: queued (`SpanSink.export` does), so that checkpoints can name what was delivered.
Emit = Callable[[list[SpanRecord]], "list[tuple[int, int]] | None"]


class Tailer:
    """Follows the session logs under `roots` and feeds them through `assembler` to `emit`.

    Call `start()`, then `poll_once()` repeatedly (or `run()`), then `close()`. All reading
    happens on the thread that calls `poll_once`; watchdog's thread only records hints.

    Args:
        roots: session-state directories; one that does not exist yet is watched for.
        assembler: turns events into span records.
        emit: receives finished records.
        options: how to follow.
        clock: wall-clock seconds (tests pass their own).
        checkpoints: where to keep the resume points; none: every start is a first start.
        sequence: the sequence number of the last span handed to `emit` (the sink's), so that
            a checkpoint waits for the spans before it to be exported; none: emitting is
            exporting.
        backlog: how many spans the exporters hold (the sink's `queued`); none: no limit.
        max_backlog: while `backlog()` is at least this, logs are not read: they wait on disk
            for the exporters to catch up (a catch-up of big logs, a collector down) instead
            of a full queue dropping spans.
    """

    def __init__(
        self,
        roots: Sequence[Path],
        assembler: Assembler,
        emit: Emit,
        options: TailOptions | None = None,
        clock: Callable[[], float] = time.time,
        checkpoints: CheckpointStore | None = None,
        sequence: Callable[[], int] | None = None,
        backlog: Callable[[], int] | None = None,
        max_backlog: int = 0,
    ) -> None:
        self.roots = [Path(r) for r in roots]
        self.options = options or TailOptions()
        self.stats = ReadStats()
        self._assembler = assembler
        self._emit = emit
        self._clock = clock
        self._followers: dict[str, Follower] = {}
        # Sleeping logs: path -> their file's inode and size (`_pack`), all that is kept in
        # memory of a quiet log whose checkpoint holds its state (see the module's docstring).
        self._dormant: dict[str, int] = {}
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
        self._skips = SkipCounter(self.stats, assembler.metrics)
        self._last_rescan = float("-inf")
        self._last_sweep = float("-inf")
        self._root_mtimes: dict[Path, float] = {}
        # Session dirs with no log yet -> mtime, in the order they are looked at in.
        self._waiting_dirs: OrderedDict[str, float] = OrderedDict()
        self._waiting_watched: dict[str, None] = {}  # those watched, oldest first
        self._gate = Gate(self._count_skip)
        # Wall-clock seconds the bridge was not polling (paused, suspended): not quiet time.
        self._paused = 0.0
        self._last_poll: float | None = None
        self.started = False
        self._store = checkpoints
        self._resume: dict[str, FileCheckpoint] = {}
        self._recover = False  # at start: checkpoints were lost (`CheckpointStore.lost`)
        self._unsaved: dict[str, FileCheckpoint] = {}  # taken, not yet written (a failure)
        self._next_save = 0.0
        # Without a sink's numbers, spans are numbered here as they are emitted (emitting is
        # exporting then): checkpoints tell the spans before a safe place from those after.
        self._emitted = 0
        self._sequence = sequence or (lambda: self._emitted)
        # Back-pressure: while the exporters hold `max_backlog` spans or more, no log is read
        # (they wait on disk, where nothing is lost), instead of the queue dropping its oldest.
        self._backlog = backlog
        self._max_backlog = max_backlog
        self._more = False  # a read stopped at _READ_LIMIT: read again without waiting
        self.paused_reads = 0  # polls that left logs unread for the exporters to catch up
        # Small sets, so that a poll costs what changed, not what is followed.
        self._behind: set[str] = set()  # not read to the end (or a partial line held)
        self._catching: set[str] = set()  # not yet read to the end once
        self._open: set[str] = set()  # an interaction open
        self._dirty: set[str] = set()  # its checkpoint may move
        self.events_read = 0
        self.last_lag: float | None = None  # seconds, of the last event read live
        # The catch-up at start, for a progress bar: bytes to read then, and read so far.
        self.catch_up_bytes = 0
        self.caught_up_bytes = 0

    @property
    def followed(self) -> list[str]:
        """Paths of the logs being followed (sleeping ones too)."""
        return sorted([*self._followers, *self._dormant])

    @property
    def followed_count(self) -> int:
        return len(self._followers) + len(self._dormant)

    @property
    def sleeping(self) -> int:
        """Logs asleep: nothing of them in memory but their file's inode and size."""
        return len(self._dormant)

    @property
    def catching_up(self) -> int:
        """Logs not yet read to their end once (read by probes' threads)."""
        return len(self._catching)

    @property
    def resident(self) -> int:
        """Sessions whose assembler is in memory."""
        return self._assembler.resident

    def start(self) -> None:
        """Find the logs already there and start watching. Logs are read by `poll_once`."""
        if self.started:
            return
        if self._store is not None:
            self._resume = self._store.load()
            # Checkpoints were lost (a damaged file, set aside): a log without one may hold
            # spans never delivered, so it is read from its start whatever its age.
            self._recover = self._store.lost
        now = self._clock()
        starts: Counter[str] = Counter()
        self._watcher.watch_roots()  # before listing: a new log is seen one way or the other
        for root in self.roots:
            if not root.is_dir():
                logger.warning("%s does not exist yet; watching for it to appear", root)
            for log in self._scan(root):
                starts[self._follow(log, at_start=True, now=now)] += 1
        backfilled = starts.pop("backfilled", 0)
        starts["beginning"] += backfilled
        if starts["recovered"]:
            one = starts["recovered"] == 1
            logger.warning(
                "%d older log%s without a usable checkpoint %s read from %s start, as "
                "--backfill would: what was delivered from %s before may be sent again",
                starts["recovered"],
                *(("", "is", "its", "it") if one else ("s", "are", "their", "them")),
            )
        self._recover = False
        self._catching = set(self._followers)
        self._behind = set(self._followers)
        self._last_rescan = self._last_sweep = time.monotonic()
        if self._store is not None and self._resume:  # logs gone since: out of the journal
            self._store.forget(list(self._resume))
        self._resume = {}
        self.started = True
        logger.info("%s", start_summary(self.options, starts))
        if self.options.backfill and starts["checkpoint"]:
            # What --backfill did not do, and what does it (in the line that says so at once)
            logger.info(
                "--backfill reads from their beginning the logs no earlier run read%s; the "
                "%d others resume from their checkpoints, where an earlier run left them: "
                "`otel-bridge replay PATH` reads a whole log again (what was delivered from it "
                "goes again, with the same ids)",
                f" ({backfilled})" if backfilled else " (none here)",
                starts["checkpoint"],
            )

    def poll_once(self) -> int:
        """Read what has been appended, pick up new logs, close quiet interactions.

        Returns:
            the number of events read.
        """
        now = self._clock()
        if self._last_poll is not None and now - self._last_poll > _MAX_POLL_GAP:
            self._paused += now - self._last_poll - _MAX_POLL_GAP  # not polling: not quiet
        self._last_poll = now
        mono = time.monotonic()
        to_read: set[str] = set()
        for path in self._hints.take():
            if path in self._followers:
                to_read.add(path)
            elif path in self._dormant:
                if self._wake(path, now, _stat(path)):
                    to_read.add(path)
            else:
                self._consider(path, now)
        timers = mono - self._last_rescan >= self.options.rescan_seconds
        if timers:
            self._last_rescan = mono
            self._watcher.watch_roots()
            self._rescan(now)
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
            to_read.update(self._followers)
            to_read.update(self._changed_sleepers(now))
            for path in list(self._gate.refused):  # readable again? (a stat or two each)
                self._consider(path, now)
        to_read |= self._behind
        events = 0
        self._more = False
        paused = False
        for stream in sorted(to_read):  # sorted: the same order in every run
            follower = self._followers.get(stream)
            if follower is None:
                continue
            if paused or self._exporters_behind():
                paused = True
                self._behind.add(stream)  # read once the exporters have caught up
                continue
            events += self._read_guarded(follower, now)
        if paused:
            self.paused_reads += 1
            self._more = False  # a delivery wakes the loop (`run` sets on_delivered)
        if timers:  # timeouts of minutes, looked at every rescan, not every poll
            self._close_quiet(now)
            self._evict(now)
            self._put_to_sleep()
        self._skips.update()
        self.events_read += events
        return events

    def _exporters_behind(self) -> bool:
        return self._backlog is not None and self._backlog() >= self._max_backlog

    def _read_limit(self) -> int:
        """How much of a log one read may take: `_READ_LIMIT`, or with back-pressure no more
        than the spans the export queue has room for would take (a small queue is not
        overrun by one read of many small events)."""
        if self._backlog is None:
            return _READ_LIMIT
        room = self._max_backlog - self._backlog()
        return max(_MIN_READ, min(_READ_LIMIT, room * _BYTES_PER_SPAN))

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
            if not self._more:  # a log has more to read now: no wait
                self.wake.wait(poll_interval)

    def close(self) -> None:
        """Stop watching. Open interactions are not exported: a restart rebuilds them from
        the log, and exporting them now as incomplete would give the same span twice with
        different content."""
        self._watcher.close()

    def save_checkpoints(self, watermark: int | None = None, *, force: bool = True) -> int:
        """Record where each log may resume: the latest safe place whose spans were all
        exported (sequence number up to `watermark`; None: all emitted spans were), and the
        spans after it already delivered. Only logs whose checkpoint moved are written.

        Args:
            watermark: the sink's; None: everything emitted was delivered.
            force: save now; False: only if `TailOptions.checkpoint_seconds` have passed
                since the last save (`run` calls it after every poll and delivery).

        Returns:
            how many logs' checkpoints were written.

        Raises:
            CheckpointError: the store cannot be written; what was taken is kept and written
                by the next call.
        """
        if self._store is None:
            return 0
        mono = time.monotonic()
        if not force and mono < self._next_save:
            return 0
        self._next_save = mono + self.options.checkpoint_seconds
        entries = self._unsaved
        for stream in list(self._dirty):
            follower = self._followers.get(stream)
            if follower is None:
                self._dirty.discard(stream)
                continue
            if follower.moved(watermark):
                checkpoint = follower.checkpoint(watermark)
                if checkpoint is not None:
                    entries[stream] = checkpoint
            if follower.settled:
                self._dirty.discard(stream)
        if not entries:
            return 0
        self._unsaved = {}
        try:
            return self._store.save(entries)
        except CheckpointError:
            self._unsaved = entries
            raise

    # --- finding logs ----------------------------------------------------------------------

    def _scan(self, root: Path) -> list[LogFile]:
        """List `root` for session logs not followed yet; remember directories that have
        no log yet, to look at again when their mtime moves."""
        try:
            self._root_mtimes[root] = root.stat().st_mtime
        except OSError:
            self._root_mtimes.pop(root, None)
            return []
        found = []
        shard = self.options.shard
        refused = self._gate.refused
        for name, path in _subdirectories(root):  # strings: 10,000 Paths cost 50 ms to make
            log_path = os.path.join(path, EVENTS_FILE)
            if (
                log_path in self._followers
                or log_path in self._dormant
                or path in self._waiting_dirs
                or log_path in refused
                or not in_shard(name, shard)
            ):
                continue
            directory = Path(path)
            log = session_log(root, directory)
            if isinstance(log, LogFile):
                found.append(log)
            elif isinstance(log, Refused):
                self._gate.refuse(str(log.path), log.reason, log.why)
            elif not name.startswith("."):
                self._await(directory)
        return sorted(found, key=lambda f: str(f.path))

    def _await(self, directory: Path) -> None:
        """A session directory with no log yet: looked at once more (a log created before
        the watch was there gives no notification), and again whenever its mtime moves. A
        young one (made while `run` runs, or lately) is watched: the CLI writes its log
        right after making it; the others are looked at in turn (`_rescan`)."""
        key = str(directory)
        if key in self._waiting_dirs:
            return
        mtime = _mtime(directory)
        self._waiting_dirs[key] = mtime or 0.0
        if self.started or (
            mtime is not None and self._clock() - mtime <= self.options.catch_up_seconds
        ):
            self._watch_waiting(key)
        log = session_log(directory.parent, directory)
        if isinstance(log, LogFile):
            self._stop_waiting(key)
            self._follow(log, at_start=not self.started, now=self._clock())
        elif isinstance(log, Refused):
            self._stop_waiting(key, unwatch=True)
            self._gate.refuse(str(log.path), log.reason, log.why)

    def _watch_waiting(self, key: str) -> None:
        """Watch a session directory with no log yet, in place of the oldest watched one when
        `_WATCHED_WAITING` are."""
        if key in self._waiting_watched:
            return
        if len(self._waiting_watched) >= _WATCHED_WAITING:
            oldest = next(iter(self._waiting_watched))
            del self._waiting_watched[oldest]
            self._watcher.forget_directory(Path(oldest))
        self._waiting_watched[key] = None
        self._watcher.watch_directory(Path(key))

    def _stop_waiting(self, key: str, *, unwatch: bool = False) -> None:
        """A session directory waits no more: its log is followed (its watch is the log's
        now), refused or gone (`unwatch`)."""
        self._waiting_dirs.pop(key, None)
        if key in self._waiting_watched:
            del self._waiting_watched[key]
            if unwatch:
                self._watcher.forget_directory(Path(key))

    def _rescan(self, now: float) -> None:
        """The periodic look without hints: a root whose mtime moved is listed again; session
        directories still without a log are looked at, `_WAITING_PER_RESCAN` at a time in
        turn, and one whose mtime moved is looked into (and watched)."""
        for root in self.roots:
            try:
                mtime = root.stat().st_mtime
            except OSError:
                continue
            if self._root_mtimes.get(root) != mtime:
                for log in self._scan(root):
                    self._follow(log, at_start=False, now=now)
        waiting = self._waiting_dirs
        for _ in range(min(_WAITING_PER_RESCAN, len(waiting))):
            directory, mtime = waiting.popitem(last=False)  # the longest not looked at
            current = _mtime(Path(directory))
            if current is None:
                self._stop_waiting(directory, unwatch=True)
                continue
            waiting[directory] = current  # to the back of the turn
            if current != mtime:
                self._watch_waiting(directory)
                self._consider(directory, now)

    def _consider(self, path: str, now: float) -> None:
        """A hint (or a sweep) for a path that is not a followed log: a new session directory
        or log, or a refused log that may be readable now?"""
        candidate = Path(path)
        directory = candidate.parent if candidate.name == EVENTS_FILE else candidate
        root = directory.parent
        if root not in self.roots or not in_shard(directory.name, self.options.shard):
            return  # deeper inside a session directory, elsewhere, or another shard's
        log_path = str(directory / EVENTS_FILE)
        if log_path in self._followers or log_path in self._dormant:
            return  # a sleeping log is woken by its own notification or the sweep
        log = session_log(root, directory)
        if isinstance(log, LogFile):
            self._stop_waiting(str(directory))
            self._follow(log, at_start=False, now=now)
        elif isinstance(log, Refused):
            self._stop_waiting(str(directory), unwatch=True)
            self._gate.refuse(str(log.path), log.reason, log.why)
        else:
            self._gate.forget(log_path)  # gone, or not there any more
            if directory.is_dir() and not directory.name.startswith("."):
                self._await(directory)

    def _count_watch_problem(self, reason: str) -> None:
        self._assembler.metrics.add(
            "otel_bridge.watch.problems", 1, {"otel_bridge.reason": reason}, ""
        )

    def _count_skip(self, reason: str) -> None:
        self._assembler.metrics.add(
            "otel_bridge.files.skipped", 1, {"otel_bridge.reason": reason}, ""
        )

    @property
    def watch_problems(self) -> Counter[str]:
        """Notification problems by reason ("unavailable", "overflow")."""
        return self._watcher.problems

    def _follow(self, log: LogFile, *, at_start: bool, now: float) -> str:
        """Follow a log; returns where from: "beginning", "end", "checkpoint", "recovered" (an
        older log read from its beginning because checkpoints were lost), "backfilled" (with
        --backfill, a log whose checkpoint says an earlier run never read it: read from its
        beginning), "" if gone or refused."""
        stream = str(log.path)
        try:
            st = log.path.stat()
        except OSError:
            return ""
        key = identity_key(st.st_dev, st.st_ino)
        if not self._admissible(stream, st.st_size, key):
            return ""
        offset = 0
        start = "beginning"
        resume = self._resume.pop(stream, None)
        if resume is not None and resume.matches(log.path, log.root):
            if at_start and self.options.backfill and resume.never_read:
                resume = None  # nothing of it was exported: read it whole, as a first start
                start = "backfilled"
            else:
                offset = resume.offset
                start = "checkpoint"
        elif resume is not None:
            logger.info("%s was replaced or truncated since its checkpoint", log.path)
        elif (
            at_start
            and not self.options.backfill
            and now - st.st_mtime > self.options.catch_up_seconds
        ):
            if self._recover:
                start = "recovered"  # said by start() in a line of its own
            else:
                offset = end_of_last_line(log, st.st_size, self.options.max_line_bytes)
                start = "end"
        if at_start:  # summed up in one line by start()
            logger.debug("following %s from byte %d (%s)", log.path, offset, start)
        else:  # a session that started while we run
            logger.info("following %s from byte %d", log.path, offset)
        self._watcher.watch_directory(log.path.parent)
        if resume is not None and start == "checkpoint":
            if offset == st.st_size and not resume.sent and not resume.sent_blocks:
                # nothing to read: asleep at once
                self._dormant[stream] = _pack(key, st.st_size)
                self._gate.claim(key, stream)
                return start
            follower = self._new_follower(log, st, offset, resume)
        else:
            follower = self._new_follower(log, st, offset, None)
        if at_start:
            self.catch_up_bytes += max(st.st_size - offset, 0)
        if self.started:
            self._catching.add(follower.stream)
            self._behind.add(follower.stream)
        return start

    def _admissible(self, stream: str, size: int, key: int) -> bool:
        """May the log `stream`, of this size and file, be followed? If not, it is refused
        (said once, counted); if so, any earlier refusal is lifted."""
        limit = self.options.max_log_bytes
        if size > limit:
            self._gate.refuse(
                stream, "too_large", f"{size} bytes, more than --max-log-bytes ({limit})"
            )
            return False
        other = self._gate.owner(key, stream)
        if other is not None:
            self._gate.refuse(stream, "duplicate", f"the same file as {shown(other)}, read there")
            return False
        self._gate.admit(stream)
        return True

    def _new_follower(
        self, log: LogFile, st: os.stat_result, offset: int, resume: FileCheckpoint | None
    ) -> Follower:
        """A follower from `offset`, taking up `resume`'s state if given."""
        follower = Follower(
            log,
            offset,
            (st.st_dev, st.st_ino),
            st.st_mtime - self._paused,
            self.options,
            self.stats,
        )
        if resume is not None:
            # Taken back when the log is read (a checkpointed log that stays quiet costs no
            # session assembler): the state at the safe place, and what was delivered after.
            follower.safe_session = follower.evicted = json.dumps(resume.session)
            follower.resume_sent(resume.sent, resume.sent_blocks)
            follower.fingerprint = (resume.fingerprint, resume.fingerprint_bytes)
        else:
            self._dirty.add(follower.stream)  # its first checkpoint: where it starts
        self._followers[follower.stream] = follower
        self._gate.claim(identity_key(st.st_dev, st.st_ino), follower.stream)
        return follower

    # --- reading ---------------------------------------------------------------------------

    def _read_guarded(self, follower: Follower, now: float) -> int:
        """`_read`, with whatever it raises (a bug met by an unusual log, past the session's
        own guard: decoding, scrubbing, queueing) logged once per log, counted, and the other
        logs read on: one log never stops the daemon. The log goes on from where reading got."""
        self.heartbeat = time.monotonic()  # progress inside a poll, for run's /healthz
        try:
            return self._read(follower, now)
        except Exception as exc:
            if not follower.raised:
                follower.raised = True
                logger.warning(
                    "%s: reading it raised %s; it goes on from where reading got (details at "
                    "DEBUG)",
                    follower.log.path,
                    type(exc).__name__,
                )
            logger.debug("reading %s raised", follower.log.path, exc_info=True)
            self._assembler.metrics.add(
                "otel_bridge.events.failed", 1, {"otel_bridge.step": "read"}, ""
            )
            return 0

    def _read(self, follower: Follower, now: float) -> int:
        """Read what was appended to the log since the last read (at most `_READ_LIMIT`).

        A stat says whether there is anything to do; the file is then opened as
        `open_regular` does (a regular file, no link followed below the root), and what
        its `fstat` says is what counts: another file (replaced: the rest of the old one is
        read first if it is still in the directory), a shorter one (truncated), or one whose
        first bytes changed (rewritten, even if longer) is read again from its start."""
        path = follower.log.path
        try:
            st = path.stat()
        except FileNotFoundError:
            self._removed(follower)
            return 0
        except OSError as exc:
            self._failed(follower, f"cannot stat {path}: {exc.strerror or exc}")
            return 0
        if not stat.S_ISREG(st.st_mode):  # a FIFO or a directory now: not even opened
            self._failed(follower, _unreadable(path, f"not a regular file ({kind(st.st_mode)})"))
            return 0
        if (st.st_dev, st.st_ino) == follower.identity and st.st_size == follower.read_pos:
            self._reached_end(follower)  # nothing new: not even opened
            return 0
        try:
            handle = open_regular(path, follower.log.root)
        except FileNotFoundError:
            self._removed(follower)
            return 0
        except OSError as exc:
            self._failed(follower, _unreadable(path, exc.strerror or str(exc)))
            return 0
        with handle:
            return self._read_from(follower, handle, now)

    def _read_from(self, follower: Follower, handle: RegularFile, now: float) -> int:
        stream = follower.stream
        st = handle.stat
        size = st.st_size
        identity = (st.st_dev, st.st_ino)
        events = 0
        if identity != follower.identity:
            key = identity_key(*identity)
            if not self._admissible(stream, size, key):
                self._stop_following(stream)
                return 0
            events = self._read_rotated(follower, now)
            self._start_over(follower, identity, "replaced")
        elif size < follower.read_pos:
            self._start_over(follower, identity, "truncated")
        elif 0 < follower.read_pos < size and not self._same_start(follower, handle):
            self._start_over(follower, identity, "rewritten")
        if size > self.options.max_log_bytes:
            self._admissible(stream, size, identity_key(*identity))  # refused: said, counted
            self._stop_following(stream)
            return events
        if follower.error is not None:
            logger.info("%s can be read again", follower.log.path)
            follower.error = None
        if size <= follower.read_pos:
            self._reached_end(follower)
            return events
        wanted = min(size - follower.read_pos, self._read_limit())
        start = follower.read_pos
        chunk = handle.read_at(start, wanted)
        if start == 0 and chunk:
            follower.fingerprint = fingerprint_of(chunk[:FINGERPRINT_BYTES])
        positions = self._decode(follower, chunk, now)
        catching_up = not follower.caught_up
        if catching_up:
            self.caught_up_bytes += len(chunk)
        # A read that ends short is the end of the file, whatever its size said (truncated
        # meanwhile, or a file that tells no size): looked at again when it changes, not at
        # every poll.
        if len(chunk) < wanted or follower.read_pos >= size:
            self._reached_end(follower)
        else:
            follower.at_end = False
            self._behind.add(stream)
            self._more = True
        if positions:
            self._assemble(follower, positions)
            if follower.at_end and stream in self._open:
                self._say_waiting(follower, now)
            if catching_up and follower.caught_up and stream not in self._open:
                # Read whole at start (or copied in): out of memory at once, not a minute
                # later, so that catching up on 10,000 logs does not hold 10,000 sessions.
                self._evict_one(follower)
        return events + len(positions)

    def _decode(self, follower: Follower, chunk: bytes, now: float) -> list[tuple[Any, int]]:
        """The events of `chunk`, the next bytes of the log, counted (and their lag, once
        the log is live)."""
        if not chunk:
            return []
        follower.read_pos += len(chunk)
        follower.last_activity = now - self._paused
        positions = follower.decoder.feed_positions(chunk)
        if positions:  # once a chunk: each observation costs the SDK a measurement
            self._assembler.metrics.add("otel_bridge.events.read", len(positions), {}, "")
        if follower.caught_up:  # catch-up reading is late by design; only live lag counts
            metrics = self._assembler.metrics
            for event, _ in positions:
                self.last_lag = max(now - event.timestamp_ns / 1e9, 0.0)
                metrics.record("otel_bridge.event.lag", self.last_lag, {}, "")
        return positions

    @staticmethod
    def _same_start(follower: Follower, handle: RegularFile) -> bool:
        """Does the file still begin as it did (its fingerprint: the first KiB, as the
        checkpoint's)? A log truncated and written again longer than it was is told apart
        from one that grew by this, not by its size. Takes the fingerprint of a file that
        has none yet, or a longer one."""
        head = handle.read_at(0, FINGERPRINT_BYTES)
        known = follower.fingerprint
        if known is not None:
            digest, length = known
            if len(head) < length or fingerprint_of(head[:length])[0] != digest:
                return False
            if length == len(head):
                return True
        follower.fingerprint = fingerprint_of(head)
        return True

    def _read_rotated(self, follower: Follower, now: float) -> int:
        """The log was replaced. If the old file is still in the session directory under
        another name (rotated: renamed, a new log made in its place), read what was appended
        to it since the last read before moving on; returns the events read. (One deleted
        is gone with what was left in it.)"""
        name = _renamed_to(follower.log.path.parent, follower.identity[1])
        if name is None:
            return 0
        events = 0
        try:
            with open_regular(follower.log.path.parent / name, follower.log.root) as old:
                st = old.stat
                if (st.st_dev, st.st_ino) != follower.identity:
                    return 0
                end = min(st.st_size, self.options.max_log_bytes)
                while follower.read_pos < end:
                    wanted = min(end - follower.read_pos, self._read_limit())
                    chunk = old.read_at(follower.read_pos, wanted)
                    positions = self._decode(follower, chunk, now)
                    if positions:
                        self._assemble(follower, positions)
                        events += len(positions)
                    if len(chunk) < wanted:
                        break
        except OSError:
            pass
        if events:
            logger.info("%s: read the rest of the file it replaced (%s)", follower.log.path, name)
        return events

    def _start_over(self, follower: Follower, identity: tuple[int, int], how: str) -> None:
        """The log's file was replaced, truncated or rewritten: what was open ends, and the
        new content is read from its start."""
        stream = follower.stream
        logger.info("%s was %s; reading it from the start", follower.log.path, how)
        self._emit(self._assembler.end_stream(stream))
        self._open.discard(stream)
        self._gate.release(identity_key(*follower.identity), stream)
        self._gate.claim(identity_key(*identity), stream)
        follower.restart(identity)

    def _removed(self, follower: Follower) -> None:
        logger.info("%s was removed; its open spans are closed", follower.log.path)
        self._emit(self._assembler.end_stream(follower.stream))
        self._forget(follower.stream)

    def _stop_following(self, stream: str) -> None:
        """A followed (or sleeping) log that is refused now: what was open ends, and it is
        looked at again at every sweep (`Gate`)."""
        self._emit(self._assembler.end_stream(stream))
        self._forget(stream)

    def _assemble(self, follower: Follower, positions: Iterable[tuple[Any, int]]) -> None:
        """Feed events to the log's session (taken back into memory if it was evicted) and
        hand the finished spans over."""
        stream = follower.stream
        session = self._assembler.session(stream, follower.log.session_hint)
        if follower.evicted is not None:
            session.restore(json.loads(follower.evicted))
            follower.evicted = None
        if self._store is None:  # no checkpoints: no safe places to note
            self._hand_over(follower, [r for e, _ in positions for r in session.feed(e)], None)
        else:
            self._assemble_safely(follower, session, positions)
        if session.has_open_interaction:
            self._open.add(stream)
        else:
            self._open.discard(stream)

    def _assemble_safely(
        self,
        follower: Follower,
        session: SessionAssembler,
        positions: Iterable[tuple[Any, int]],
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
                self._hand_over(follower, records[: safe[0]], safe[1:])
                records = records[safe[0] :]
                safe = None
        if safe is not None:
            self._hand_over(follower, records[: safe[0]], safe[1:])
            records = records[safe[0] :]
        if records:
            self._hand_over(follower, records, None)

    def _hand_over(
        self,
        follower: Follower,
        records: list[SpanRecord],
        safe: tuple[int, dict[str, Any]] | None,
    ) -> None:
        """Emit records (minus those a checkpoint says were delivered before a restart); then,
        at a safe place, remember it for the checkpoint."""
        reread = follower.reread
        if reread is not None:  # after a restart: the delivered blocks are dropped
            records = reread.take(records)
            if safe is not None:
                records.extend(reread.finish())
            if reread.diverged:
                logger.info(
                    "%s: read again after a restart, its open task gave other spans than "
                    "delivered before; they are exported again",
                    follower.log.path,
                )
                follower.sent.diverged(reread.verified)
            if reread.done:
                follower.reread = None
        skip = follower.skip
        if skip and records:
            kept = [r for r in records if r.span_id not in skip]
            skip.difference_update(r.span_id for r in records)
            records = kept
        if records:
            queued = self._emit(records)
            self._emitted += len(records)
            if self._store is not None:
                if queued is None:  # emitting is exporting
                    first = self._emitted - len(records) + 1
                    queued = [(first + n, r.span_id) for n, r in enumerate(records)]
                follower.sent.add(queued, [r.span_id for r in records])
                self._dirty.add(follower.stream)
        if safe is not None and self._store is not None:
            follower.skip = None  # the re-read has passed what was delivered
            follower.pending.append((self._sequence(), *safe))
            if len(follower.pending) > _MAX_PENDING:  # exports stalled: keep every other one
                follower.pending = follower.pending[1::2]
            self._dirty.add(follower.stream)

    def _reached_end(self, follower: Follower) -> None:
        follower.at_end = True
        self._behind.discard(follower.stream)
        if not follower.caught_up:
            follower.caught_up = True
            self._catching.discard(follower.stream)
            if not self._catching:  # caught up: let go of a table sized for every log
                self._catching, self._behind = set(), set(self._behind)
            self._judge(follower)
        if follower.decoder.pending_bytes:  # a partial line: look again at the next poll
            self._behind.add(follower.stream)

    def _forget(self, stream: str) -> None:
        """A log that is gone: no follower, no session, no checkpoint."""
        follower = self._followers.pop(stream, None)
        if follower is not None:
            self._gate.release(identity_key(*follower.identity), stream)
        packed = self._dormant.pop(stream, None)
        if packed is not None:
            self._gate.release(packed >> 64, stream)
        self._watcher.forget_directory(Path(stream).parent)
        for kept in (self._behind, self._catching, self._open, self._dirty):
            kept.discard(stream)
        if self._store is not None:
            self._store.forget([stream])

    def _say_waiting(self, follower: Follower, now: float) -> None:
        """Say once a task that its agent loop has stopped but it waits for background work
        (shells, sub-agents) that will resume it: its line comes only when they report, or
        when the background wait is over. Not for a task whose wait is over already (an old
        log caught up: it ends at once)."""
        work = self._assembler.session(follower.stream).background_work()
        if work is None or work[0] == follower.waiting_said:
            return
        task, last_ns, shells, subagents = work
        left = self._assembler.config.background_wait_seconds - (now - last_ns / 1e9)
        if left <= 0:
            return
        follower.waiting_said = task
        what = []
        if shells:
            what.append(plural(shells, "background shell"))
        if subagents:
            what.append(plural(subagents, "sub-agent"))
        logger.info(
            "%s: its task's agent loop stopped; waiting up to %s for %s",
            follower.log.path,
            _minutes(left),
            " and ".join(what),
        )

    @staticmethod
    def _judge(follower: Follower) -> None:
        """Say once, instead of a warning per line, that a log read to its end has given no
        event. It is still followed: a log could yet become one (its bad lines were counted)."""
        why = follower.decoder.without_events()
        if why is not None and not follower.not_a_log_said:
            logger.warning(
                "%s: does not look like a Copilot session log so far: %s; still following it",
                follower.log.path,
                why,
            )
            follower.not_a_log_said = True

    @staticmethod
    def _failed(follower: Follower, message: str) -> None:
        """Log a read problem once, not at every poll."""
        if follower.error != message:
            logger.warning("%s", message)
            follower.error = message

    # --- quiet logs ------------------------------------------------------------------------

    def _close_quiet(self, now: float) -> None:
        """Close the open interaction of a log quiet for the idle timeout. One whose loop has
        stopped and only waits for background work is left to the assembler's background wait,
        counted from its last event as `replay` counts it, so both end it at the same place.

        Quiet is the log's, not the clock's: only time the bridge was polling counts (a pause
        of the process or of the machine is not the log being quiet: `_MAX_POLL_GAP`), and a
        log that has grown beyond what was read is not quiet, whatever the time says (after a
        pause, its notification may not have been taken yet): it is read first."""
        timeout = self.options.idle_timeout_seconds
        awake = now - self._paused
        for stream in sorted(self._open):
            follower = self._followers[stream]
            session = self._assembler.session(stream)
            if session.waiting:
                if not follower.at_end:  # what is still unread may be the work it waits for
                    continue
                records = session.expire(int(now * 1e9))
                if session.has_open_interaction:
                    continue
                logger.info(
                    "%s: background work did not report within the background wait; "
                    "its task ended at its last event",
                    follower.log.path,
                )
            elif awake - follower.last_activity >= timeout:
                if self._grown(follower):
                    self._behind.add(stream)
                    continue
                logger.info(
                    "%s quiet for %.0fs; closing its open interaction", follower.log.path, timeout
                )
                records = self._assembler.close_stream(stream)
            else:
                continue
            self._open.discard(stream)
            self._hand_over(follower, records, (follower.decoder.offset, session.snapshot()))

    def _evict(self, now: float) -> None:
        """Take the sessions of quiet logs with no interaction open out of memory; their
        state (a small snapshot) stays with the follower, as a checkpoint keeps it."""
        for stream in self._assembler.streams():
            follower = self._followers.get(stream)
            if (
                follower is None
                or stream in self._open
                or stream in self._behind
                or now - self._paused - follower.last_activity < self.options.evict_seconds
            ):
                continue
            self._evict_one(follower)

    @staticmethod
    def _grown(follower: Follower) -> bool:
        """Has the log more than was read (or another file at its place)?"""
        st = _stat(follower.stream)
        return isinstance(st, os.stat_result) and (
            (st.st_dev, st.st_ino) != follower.identity or st.st_size > follower.read_pos
        )

    def _evict_one(self, follower: Follower) -> None:
        snapshot = self._assembler.evict(follower.stream)
        if snapshot is not None:
            state = json.dumps(snapshot)
            # Most often the state at the last safe place: then one string serves both.
            follower.evicted = state if state != follower.safe_session else follower.safe_session

    # --- sleeping logs ----------------------------------------------------------------------

    def _put_to_sleep(self) -> None:
        """Let go of the followers of logs whose checkpoint, saved, holds all there is of
        them: what is left in memory of each is its inode and size."""
        if self._store is None:
            return  # without checkpoints the follower is all there is of a log
        for stream, follower in list(self._followers.items()):
            if self._may_sleep(follower):
                del self._followers[stream]
                self._dormant[stream] = _pack(identity_key(*follower.identity), follower.read_pos)

    def _may_sleep(self, follower: Follower) -> bool:
        """Would waking it from its saved checkpoint give it back as it is? Its session is
        out of memory in the state the checkpoint holds, the checkpoint is in the journal
        with nothing after it to deliver or to skip, and the log was read to its end."""
        stream = follower.stream
        return (
            follower.evicted is not None
            and follower.settled
            and follower.sent.empty
            and follower.skip is None
            and follower.reread is None
            and follower.caught_up
            and follower.at_end
            and follower.error is None
            and not follower.decoder.pending_bytes
            and follower.safe_offset == follower.read_pos
            and follower.evicted == follower.safe_session
            and stream not in self._open
            and stream not in self._behind
            and stream not in self._dirty
            and stream not in self._unsaved
        )

    def _changed_sleepers(self, now: float) -> list[str]:
        """The sweep's look at sleeping logs: wake those whose file grew or was replaced,
        forget those that are gone. Returns the woken ones, to read."""
        woken = []
        for stream, packed in list(self._dormant.items()):
            st = _stat(stream)
            if (
                isinstance(st, os.stat_result)
                and _pack(identity_key(st.st_dev, st.st_ino), st.st_size) == packed
            ):
                continue  # unchanged: still asleep
            if self._wake(stream, now, st):
                woken.append(stream)
        return woken

    def _wake(self, stream: str, now: float, st: os.stat_result | OSError) -> bool:
        """Take a sleeping log back from its checkpoint, as a restart does (one that cannot
        be read back, or a file replaced since, is read from its start), given what a stat of
        it said. False if it is gone, or cannot be looked at now (it stays asleep, looked at
        again at the next sweep)."""
        if isinstance(st, FileNotFoundError):
            logger.info("%s was removed", stream)
            self._forget(stream)
            return False
        if isinstance(st, OSError):
            return False
        key = identity_key(st.st_dev, st.st_ino)
        if not self._admissible(stream, st.st_size, key):
            self._stop_following(stream)
            return False
        self._gate.release(self._dormant.pop(stream) >> 64, stream)
        path = Path(stream)
        log = LogFile(path, path.parent.name, path.parent.parent)  # as `session_log` makes it
        resume = self._store.get(stream) if self._store is not None else None
        if resume is not None and resume.matches(path, log.root):
            follower = self._new_follower(log, st, resume.offset, resume)
        else:
            if resume is not None:
                logger.info("%s was replaced or truncated since its checkpoint", path)
            follower = self._new_follower(log, st, 0, None)
        follower.caught_up = True  # what it gets now is live
        follower.last_activity = now - self._paused
        self._behind.add(stream)
        logger.debug("%s woke from its checkpoint at byte %d", path, follower.read_pos)
        return True


def _minutes(seconds: float) -> str:
    """ "15 min", "1 min", "40 s": how long a wait has left, rounded up."""
    if seconds < 60:
        return f"{math.ceil(seconds)} s"
    return f"{math.ceil(seconds / 60)} min"


def _unreadable(path: Path, why: str) -> str:
    return f"cannot read {path}: {why}; the other logs go on, and this one is tried again"


def _stat(path: str) -> os.stat_result | OSError:
    """A stat of `path`, or why there is none."""
    try:
        return os.stat(path)
    except OSError as exc:
        return exc


def _pack(key: int, size: int) -> int:
    """A sleeping log's file (`identity_key`) and size in one int: enough to see that it grew
    or was replaced (and `>> 64` gives the file back)."""
    return (key << 64) | size


def _subdirectories(root: Path) -> list[tuple[str, str]]:
    """(name, path) of each directory in `root`."""
    try:
        with os.scandir(root) as entries:
            return [(e.name, e.path) for e in entries if _is_dir(e)]
    except OSError:
        return []


def _is_dir(entry: Any) -> bool:
    try:
        return bool(entry.is_dir(follow_symlinks=False))
    except OSError:
        return False


def _renamed_to(directory: Path, inode: int) -> str | None:
    """The name under which the file `inode` is in `directory` now, other than the log's."""
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.inode() == inode and entry.name != EVENTS_FILE and _is_file(entry):
                    return entry.name
    except OSError:
        pass
    return None


def _is_file(entry: Any) -> bool:
    try:
        return bool(entry.is_file(follow_symlinks=False))
    except OSError:
        return False


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
