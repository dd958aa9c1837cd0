"""A log's life in the tailer: followed (from its beginning, its end or its checkpoint), woken
from its checkpoint, its quiet task closed, its session evicted, forgotten when gone.

Where a log found at start is read from: its checkpoint if it has one that matches its file;
else its beginning if it was modified within the catch-up window (or with --backfill, or
when checkpoints were lost), else its end. A log that starts while `run` runs is read from
its beginning. A log resumed at its end sleeps at once; one that sleeps is woken from its
checkpoint as a restart would take it (design.md).
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from functools import partial
from pathlib import Path

from ...checkpoint._file import FileCheckpoint, fingerprint
from ...decode._lines import ReadStats
from .._discovery import LogFile, shown
from .._gate import identity_key
from .._watch import Watcher
from ._downstream import Downstream
from ._options import TailOptions, end_of_last_line
from ._reader import Reader
from ._reading import Reading
from ._store import Saver, Store
from ._tracker import Tracker, stat_of

__all__ = ["Following"]

# The name the lines of run's reading have always carried (people filter on it).
logger = logging.getLogger("otel_bridge.sources._tail")


class Following:
    """Takes logs in (`follow`, `wake`) and lets them go (`forget`); closes quiet tasks.

    `reading` is set by the tailer once made (reading and following need each other: a
    refused log stops being followed, a woken one is read)."""

    reading: Reading

    def __init__(
        self,
        options: TailOptions,
        stats: ReadStats,
        tracker: Tracker,
        downstream: Downstream,
        saver: Saver,
        watcher: Watcher,
    ) -> None:
        self._options = options
        self._saver = saver  # what it saves, and the checkpoints taken and not yet written
        self._stats = stats
        self._tracker = tracker
        self._downstream = downstream
        self._store: Store = saver.store
        self._watcher = watcher
        self._resume: dict[str, FileCheckpoint] = {}
        self._recover = False  # at start: checkpoints were lost (`CheckpointStore.lost`)
        self._backfilled = 0
        self.running = False  # started: logs found now started while `run` runs
        self.catch_up_bytes = 0  # the catch-up at start: bytes to read then

    # --- start ----------------------------------------------------------------------------

    def take_resume_points(self) -> None:
        """Load the checkpoints, for the logs found at start."""
        self._resume = self._store.load()
        # Checkpoints were lost (a damaged file, set aside): a log without one may hold
        # spans never delivered, so it is read from its start whatever its age.
        self._recover = self._store.lost

    def started(self, starts: Counter[str]) -> None:
        """The logs found at start are followed (`starts`: how many from where): say what
        needs saying, and forget the checkpoints of logs gone since."""
        self._backfilled = starts.pop("backfilled", 0)
        starts["beginning"] += self._backfilled
        if starts["recovered"]:
            one = starts["recovered"] == 1
            logger.warning(
                "%d older log%s without a usable checkpoint %s read from %s start, as "
                "--backfill would: what was delivered from %s before may be sent again",
                starts["recovered"],
                *(("", "is", "its", "it") if one else ("s", "are", "their", "them")),
            )
        self._recover = False
        if self._resume:  # logs gone since: out of the journal
            self._store.forget(list(self._resume))
        self._resume = {}

    def say_backfill(self, starts: Counter[str]) -> None:
        """What --backfill did not do, and what does it (in the line that says so at once)."""
        if self._options.backfill and starts["checkpoint"]:
            backfilled = self._backfilled
            logger.info(
                "--backfill reads from their beginning the logs no earlier run read%s; the "
                "%d others resume from their checkpoints, where an earlier run left them: "
                "`otel-bridge replay PATH` reads a whole log again (what was delivered from it "
                "goes again, with the same ids)",
                f" ({backfilled})" if backfilled else " (none here)",
                starts["checkpoint"],
            )

    # --- taking logs in -------------------------------------------------------------------

    def follow(self, log: LogFile, *, at_start: bool, now: float) -> str:
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
        if not self.admissible(stream, st.st_size, key):
            return ""
        resume = self._resume.pop(stream, None)
        offset, start, resume = self._where_from(log, st, resume, at_start=at_start, now=now)
        if at_start:  # summed up in one line by start()
            logger.debug("following %s from byte %d (%s)", log.path, offset, start)
        else:  # a session that started while we run
            logger.info("following %s from byte %d", log.path, offset)
        self._watcher.watch_directory(log.path.parent)
        if resume is not None and start == "checkpoint":
            if offset == st.st_size and not resume.sent and not resume.sent_blocks:
                self._tracker.sleep_now(stream, key, st.st_size)  # nothing to read: asleep
                return start
            reader = self._new_reader(log, st, offset, resume)
        elif start == "end" and offset == st.st_size and self._asleep_at_end(log, st):
            return start
        else:
            reader = self._new_reader(log, st, offset, None)
        if at_start:
            self.catch_up_bytes += max(st.st_size - offset, 0)
        if self.running:
            self._tracker.catching.add(reader.stream)
            self._tracker.behind.add(reader.stream)
        return start

    def _where_from(
        self,
        log: LogFile,
        st: os.stat_result,
        resume: FileCheckpoint | None,
        *,
        at_start: bool,
        now: float,
    ) -> tuple[int, str, FileCheckpoint | None]:
        """(offset, where from, the checkpoint taken up) of a log found now."""
        if resume is not None and resume.matches(log.path, log.root):
            if at_start and self._options.backfill and resume.never_read:
                return 0, "backfilled", None  # nothing of it was exported: read it whole
            return resume.offset, "checkpoint", resume
        if resume is not None:
            logger.info("%s was replaced or truncated since its checkpoint", log.path)
        elif (
            at_start
            and not self._options.backfill
            and now - st.st_mtime > self._options.catch_up_seconds
        ):
            if self._recover:
                return 0, "recovered", resume  # said by start() in a line of its own
            return end_of_last_line(log, st.st_size, self._options.max_line_bytes), "end", None
        return 0, "beginning", resume

    def _asleep_at_end(self, log: LogFile, st: os.stat_result) -> bool:
        """An old log followed from its end, with nothing to read: asleep at once, its first
        checkpoint (its end, an empty session: what a restart would resume from) taken for
        the next save, instead of a reader that stayed awake for good (its session never in
        memory, it was never evicted, so never at rest): some 3 KB a log, 30 MB over 10,000
        old sessions. False (a reader then) without checkpoints, or if the file cannot be
        fingerprinted now."""
        if not self._tracker.sleeps:
            return False
        try:
            digest, length = fingerprint(log.path, root=log.root)
        except OSError:
            return False
        stream = str(log.path)
        self._saver.take(FileCheckpoint(stream, st.st_dev, st.st_ino, digest, length, st.st_size))
        self._tracker.sleep_now(stream, identity_key(st.st_dev, st.st_ino), st.st_size)
        return True

    def admissible(self, stream: str, size: int, key: int) -> bool:
        """May the log `stream`, of this size and file, be followed? If not, it is refused
        (said once, counted); if so, any earlier refusal is lifted."""
        gate = self._tracker.gate
        limit = self._options.max_log_bytes
        if size > limit:
            gate.refuse(stream, "too_large", f"{size} bytes, more than --max-log-bytes ({limit})")
            return False
        other = gate.owner(key, stream)
        if other is not None:
            gate.refuse(stream, "duplicate", f"the same file as {shown(other)}, read there")
            return False
        gate.admit(stream)
        return True

    def _new_reader(
        self, log: LogFile, st: os.stat_result, offset: int, resume: FileCheckpoint | None
    ) -> Reader:
        """A reader from `offset`, taking up `resume`'s state if given."""
        downstream = self._downstream
        if resume is not None:
            # Taken back when the log is read (a checkpointed log that stays quiet costs no
            # session assembler): the state at the safe place, and what was delivered after.
            ledger = downstream.ledger(
                offset, resume=(resume.session, resume.sent, resume.sent_blocks)
            )
        else:
            ledger = downstream.ledger(offset)
        reader = Reader(
            log,
            offset,
            (st.st_dev, st.st_ino),
            st.st_mtime - self.reading.paused,
            ledger,
            self._options.max_line_bytes,
            self._stats,
        )
        if resume is not None:
            reader.fingerprint = (resume.fingerprint, resume.fingerprint_bytes)
        else:
            self._tracker.mark_dirty(reader.stream)  # its first checkpoint: where it starts
        self._tracker.add(reader)
        return reader

    def wake(self, stream: str, now: float, st: os.stat_result | OSError | None) -> bool:
        """Take a sleeping log back from its checkpoint, as a restart does (one that cannot
        be read back, or a file replaced since, is read from its start), given what a stat of
        it said (None: stat it now). False if it is gone, or cannot be looked at now (it
        stays asleep, looked at again at the next sweep)."""
        if st is None:
            st = stat_of(stream)
        if isinstance(st, FileNotFoundError):
            logger.info("%s was removed", stream)
            self.forget(stream)
            return False
        if isinstance(st, OSError):
            return False
        if not self.admissible(stream, st.st_size, identity_key(st.st_dev, st.st_ino)):
            self.reading.stop_following(stream)
            return False
        self._tracker.wake(stream)
        path = Path(stream)
        log = LogFile(path, path.parent.name, path.parent.parent)  # as `session_log` makes it
        resume = self._saver.taken(stream) or self._store.get(stream)
        if resume is not None and resume.matches(path, log.root):
            reader = self._new_reader(log, st, resume.offset, resume)
        else:
            if resume is not None:
                logger.info("%s was replaced or truncated since its checkpoint", path)
            reader = self._new_reader(log, st, 0, None)
        reader.caught_up = True  # what it gets now is live
        reader.last_activity = now - self.reading.paused
        self._tracker.behind.add(stream)
        logger.debug("%s woke from its checkpoint at byte %d", path, reader.read_pos)
        return True

    # --- letting logs go ------------------------------------------------------------------

    def forget(self, stream: str) -> None:
        """A log that is gone: no reader, no session, no checkpoint."""
        self._tracker.forget(stream)
        self._watcher.forget_directory(Path(stream).parent)
        self._saver.unsaved.pop(stream, None)
        self._store.forget([stream])

    def close_quiet(self, now: float) -> None:
        """Let the downstream's quiet-task policy settle each log with a task open: it closes
        a task idle past its timeout, and ends one whose background wait is over (counted
        from its last event, as `replay` counts it, so both end it at the same place).

        Quiet is the log's, not the clock's: only time the bridge was polling counts (a pause
        of the process or of the machine is not the log being quiet), and a log that has grown
        beyond what was read is not quiet, whatever the time says (after a pause, its
        notification may not have been taken yet): it is read first."""
        awake = now - self.reading.paused
        tracker = self._tracker
        for stream in sorted(tracker.open):
            reader = tracker.awake[stream]
            if self._downstream.settle(
                stream,
                reader.ledger,
                reader.decoder.offset,
                quiet_seconds=awake - reader.last_activity,
                at_end=reader.at_end,
                unread=partial(self._read_first, reader),
                now=now,
            ):
                tracker.open.discard(stream)

    def _read_first(self, reader: Reader) -> bool:
        """Has the log grown beyond what was read (or another file taken its place)? Then it
        is read before its task is judged idle."""
        if _grown(reader):
            self._tracker.behind.add(reader.stream)
            return True
        return False

    def evict(self, now: float) -> None:
        """Take the sessions of quiet logs with no interaction open out of memory; their
        state (a small snapshot) stays in the reader's ledger, as a checkpoint keeps it (a
        log whose session is not in memory: nothing to take)."""
        tracker = self._tracker
        for stream, reader in list(tracker.awake.items()):
            if (
                stream in tracker.open
                or stream in tracker.behind
                or now - self.reading.paused - reader.last_activity < self._options.evict_seconds
            ):
                continue
            self._downstream.evict(stream, reader.ledger)


def _grown(reader: Reader) -> bool:
    """Has the log more than was read (or another file at its place)?"""
    st = stat_of(reader.stream)
    return isinstance(st, os.stat_result) and (
        (st.st_dev, st.st_ino) != reader.identity or st.st_size > reader.read_pos
    )
