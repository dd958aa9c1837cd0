"""Tail: follow every session log under one or more session-state directories as it grows.

Watchdog (inotify on Linux) only gives hints: its handler records which paths changed and wakes
the loop. `poll_once()` does all the work (stat, read, decode, assemble, emit) on the caller's
thread, so tests can drive it step by step, and a periodic full rescan recovers whatever the
kernel's event queue dropped or a missing watch never saw.
See https://python-watchdog.readthedocs.io/ (Observer, FileSystemEventHandler).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from .._checkpoint import CheckpointStore, FileCheckpoint
from .._lines import ReadStats
from .._records import SpanRecord
from ..assembler import Assembler
from ._discovery import EVENTS_FILE, LogFile, scan_session_state
from ._follow import Follower, Hints, TailOptions, end_of_last_line, start_summary
from ._health import SkipCounter

__all__ = ["TailOptions", "Tailer"]

logger = logging.getLogger(__name__)

_MAX_PENDING = 1024  # safe places remembered per log while exports are behind
_READ_LIMIT = 8 << 20  # bytes read from one file per poll, so one huge log cannot stall the rest


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
    """

    def __init__(
        self,
        roots: Sequence[Path],
        assembler: Assembler,
        emit: Callable[[list[SpanRecord]], None],
        options: TailOptions | None = None,
        clock: Callable[[], float] = time.time,
        checkpoints: CheckpointStore | None = None,
        sequence: Callable[[], int] | None = None,
    ) -> None:
        self.roots = [Path(r) for r in roots]
        self.options = options or TailOptions()
        self.stats = ReadStats()
        self._assembler = assembler
        self._emit = emit
        self._clock = clock
        self._followers: dict[str, Follower] = {}
        self.wake = threading.Event()
        self._hints = Hints(self.wake)
        self._observers: dict[Path, BaseObserver] = {}
        self._skips = SkipCounter(self.stats, assembler.metrics)
        self._last_rescan = float("-inf")
        self._started = False
        self._store = checkpoints
        self._resume: dict[str, FileCheckpoint] = {}
        self._sequence = sequence or (lambda: 0)
        self.catching_up = 0  # logs not yet read to their end once (read by probes' threads)
        self.events_read = 0
        self.last_lag: float | None = None  # seconds, of the last event read live

    @property
    def followed(self) -> list[str]:
        """Paths of the logs being followed."""
        return sorted(self._followers)

    def start(self) -> None:
        """Find the logs already there and start watching. Logs are read by `poll_once`."""
        if self._started:
            return
        self._started = True
        if self._store is not None:
            self._resume = self._store.load()
        now = self._clock()
        starts: Counter[str] = Counter()
        for root in self.roots:
            if not root.is_dir():
                logger.warning("%s does not exist yet; watching for it to appear", root)
            for log in scan_session_state(root):
                starts[self._follow(log, at_start=True, now=now)] += 1
        self._watch()
        logger.info("%s", start_summary(self.roots, self.options, starts))

    def poll_once(self) -> int:
        """Read what has been appended, pick up new logs, close quiet interactions.

        Returns:
            the number of events read.
        """
        now = self._clock()
        hinted = self._hints.take()
        rescan = time.monotonic() - self._last_rescan >= self.options.rescan_seconds
        if rescan or any(not p.endswith(EVENTS_FILE) for p in hinted):
            self._last_rescan = time.monotonic()
            self._watch()
            for root in self.roots:
                for log in scan_session_state(root):
                    if str(log.path) not in self._followers:
                        self._follow(log, at_start=False, now=now)
        events = 0
        for stream, follower in list(self._followers.items()):
            if rescan or stream in hinted or follower.decoder.pending_bytes:
                events += self._read(follower, now)
        self._close_quiet(now)
        self._skips.update()
        self.catching_up = sum(1 for f in self._followers.values() if not f.caught_up)
        self.events_read += events
        return events

    def run(
        self,
        should_stop: Callable[[], bool],
        poll_interval: float = 0.5,
        after_poll: Callable[[], None] | None = None,
    ) -> None:
        """Poll until `should_stop()`; a watchdog hint cuts the wait short.

        `should_stop` is checked at least every `poll_interval`: a signal handler can make it
        true without taking a lock (taking one there can deadlock with the interrupted code).
        """
        self.start()
        while not should_stop():
            self.poll_once()
            if after_poll is not None:
                after_poll()
            self.wake.wait(poll_interval)
            self.wake.clear()

    def close(self) -> None:
        """Stop watching. Open interactions are not exported: a restart rebuilds them from
        the log, and exporting them now as incomplete would give the same span twice with
        different content."""
        for observer in self._observers.values():
            observer.stop()
        for observer in self._observers.values():
            observer.join(timeout=5)
        self._observers.clear()

    # --- internals -------------------------------------------------------------------------

    def _watch(self) -> None:
        if not self.options.watch:
            return
        for root in self.roots:
            if root in self._observers or not root.is_dir():
                continue
            observer = Observer()
            try:
                observer.schedule(self._hints, str(root), recursive=True)
                observer.start()
            except OSError as exc:  # e.g. inotify watch limit reached
                logger.warning(
                    "cannot watch %s (%s); falling back to polling every %.0fs",
                    root,
                    exc,
                    self.options.rescan_seconds,
                )
                continue
            self._observers[root] = observer

    def _follow(self, log: LogFile, *, at_start: bool, now: float) -> str:
        """Follow a log; returns where from: "beginning", "end", "checkpoint" ("" if gone)."""
        try:
            st = log.path.stat()
        except OSError:
            return ""
        offset = 0
        start = "beginning"
        resume = self._resume.pop(str(log.path), None)
        if resume is not None and resume.matches(log.path):
            offset = resume.offset
            start = "checkpoint"
            self._assembler.session(str(log.path), log.session_hint).restore(resume.session)
        elif resume is not None:
            logger.info("%s was replaced or truncated since its checkpoint", log.path)
        elif (
            at_start
            and not self.options.backfill
            and now - st.st_mtime > self.options.catch_up_seconds
        ):
            offset = end_of_last_line(log.path, st.st_size)
            start = "end"
        if at_start:  # summed up in one line by start()
            logger.debug("following %s from byte %d (%s)", log.path, offset, start)
        else:  # a session that started while we run
            logger.info("following %s from byte %d", log.path, offset)
        follower = Follower(
            log, offset, (st.st_dev, st.st_ino), st.st_mtime, self.options, self.stats
        )
        if resume is not None and offset:
            follower.safe_session = dict(resume.session)
        self._followers[str(log.path)] = follower
        return start

    def _read(self, follower: Follower, now: float) -> int:
        path = follower.log.path
        try:
            st = path.stat()
        except FileNotFoundError:
            logger.info("%s was removed; its open spans are closed", path)
            self._emit(self._assembler.end_stream(follower.stream))
            del self._followers[follower.stream]
            return 0
        except OSError as exc:
            self._failed(follower, f"cannot stat {path}: {exc.strerror or exc}")
            return 0
        identity = (st.st_dev, st.st_ino)
        if identity != follower.identity or st.st_size < follower.read_pos:
            logger.info(
                "%s was %s; reading it from the start",
                path,
                "replaced" if identity != follower.identity else "truncated",
            )
            self._emit(self._assembler.end_stream(follower.stream))
            follower.restart(identity)
        if st.st_size <= follower.read_pos:
            follower.caught_up = follower.at_end = True
            return 0
        try:
            with path.open("rb") as handle:
                handle.seek(follower.read_pos)
                chunk = handle.read(min(st.st_size - follower.read_pos, _READ_LIMIT))
        except OSError as exc:
            self._failed(
                follower,
                f"cannot read {path}: {exc.strerror or exc}; the other "
                f"logs go on, and this one is tried again",
            )
            return 0
        if follower.error is not None:
            logger.info("%s can be read again", path)
            follower.error = None
        follower.read_pos += len(chunk)
        follower.at_end = follower.read_pos >= st.st_size
        follower.last_activity = now
        positions = follower.decoder.feed_positions(chunk)
        if positions:  # once a chunk: each observation costs the SDK a measurement
            self._assembler.metrics.add("otel_bridge.events.read", len(positions), {}, "")
        if follower.caught_up:  # catch-up reading is late by design; only live lag counts
            metrics = self._assembler.metrics
            for event, _ in positions:
                self.last_lag = max(now - event.timestamp_ns / 1e9, 0.0)
                metrics.record("otel_bridge.event.lag", self.last_lag, {}, "")
        if follower.read_pos >= st.st_size:
            follower.caught_up = True
            self._judge(follower)
        session = self._assembler.session(follower.stream, follower.log.session_hint)
        records = []
        safe: tuple[int, dict[str, Any]] | None = None
        for event, end in positions:
            records.extend(session.feed(event))
            if not session.has_open_interaction:
                safe = (end, session.snapshot())
        if records:
            self._emit(records)
        if safe is not None:
            follower.pending.append((self._sequence(), *safe))
            if len(follower.pending) > _MAX_PENDING:  # exports stalled: keep every other one
                follower.pending = follower.pending[1::2]
        return len(positions)

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

    def save_checkpoints(self, watermark: int | None = None) -> None:
        """Record where each log may resume: the latest safe place whose spans were all
        exported (sequence number up to `watermark`; None: all emitted spans were)."""
        if self._store is None:
            return
        entries: dict[str, FileCheckpoint] = {}
        for stream, follower in self._followers.items():
            checkpoint = follower.checkpoint(watermark)
            if checkpoint is not None:
                entries[stream] = checkpoint
        self._store.save(entries)

    def _close_quiet(self, now: float) -> None:
        """Close the open interaction of a log quiet for the idle timeout. One whose loop has
        stopped and only waits for background work is left to the assembler's background wait,
        counted from its last event as `replay` counts it, so both end it at the same place."""
        timeout = self.options.idle_timeout_seconds
        for follower in self._followers.values():
            if not self._assembler.has_open_interaction(follower.stream):
                continue
            session = self._assembler.session(follower.stream)
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
                self._emit(records)
            elif now - follower.last_activity >= timeout:
                logger.info(
                    "%s quiet for %.0fs; closing its open interaction", follower.log.path, timeout
                )
                self._emit(self._assembler.close_stream(follower.stream))
            else:
                continue
            follower.pending.append((self._sequence(), follower.decoder.offset, session.snapshot()))
