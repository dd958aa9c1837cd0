"""Which logs the tailer knows, and in which state: awake (a `Reader` in memory) or asleep
(only its file's inode and size), and the small sets a poll looks at instead of every log.

A log sleeps once its checkpoint, saved, holds all there is of it (`Reader.at_rest`): waking
it from the checkpoint gives it back as it was. Without checkpoints nothing sleeps, and no
checkpoint moves: `Untracked`, the null tracker, says so instead of a check at every use.
(As the OpenTelemetry Collector's file consumer has a tracker of its readers, with a no-state
one when nothing is persisted: pkg/stanza/fileconsumer/internal/tracker.)
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator

from .._gate import Gate, identity_key
from ._reader import Reader

__all__ = ["Tracker", "Untracked", "pack", "stat_of"]


class Tracker:
    """Known logs: awake, asleep, and the sets a poll reads from.

    Attributes:
        awake: path -> its reader.
        asleep: path -> its file and size (`pack`).
        behind: not read to the end (or a partial line held): read at the next poll.
        catching: not yet read to the end once (the catch-up).
        open: an interaction open (closed when quiet).
        dirty: its checkpoint may move (looked at by the next save).
        gate: one path per file; refused logs.
    """

    #: Logs may sleep (with checkpoints: one is what a sleeping log is).
    sleeps = True

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.awake: dict[str, Reader] = {}
        self.asleep: dict[str, int] = {}
        self.behind: set[str] = set()
        self.catching: set[str] = set()
        self.open: set[str] = set()
        self.dirty: set[str] = set()

    def known(self, stream: str) -> bool:
        return stream in self.awake or stream in self.asleep

    def add(self, reader: Reader) -> None:
        self.awake[reader.stream] = reader
        self.gate.claim(identity_key(*reader.identity), reader.stream)

    def mark_dirty(self, stream: str) -> None:
        """Its checkpoint may have moved."""
        self.dirty.add(stream)

    def forget(self, stream: str) -> None:
        """A log that is gone, or refused now: out of every set, its file let go."""
        reader = self.awake.pop(stream, None)
        if reader is not None:
            self.gate.release(identity_key(*reader.identity), stream)
        packed = self.asleep.pop(stream, None)
        if packed is not None:
            self.gate.release(packed >> 64, stream)
        for kept in (self.behind, self.catching, self.open, self.dirty):
            kept.discard(stream)

    def reached_end(self, reader: Reader) -> bool:
        """The reader read to the end of its file; True the first time (caught up)."""
        reader.at_end = True
        stream = reader.stream
        self.behind.discard(stream)
        first = not reader.caught_up
        if first:
            reader.caught_up = True
            self.catching.discard(stream)
            if not self.catching:  # caught up: let go of a table sized for every log
                self.catching, self.behind = set(), set(self.behind)
        if reader.decoder.pending_bytes:  # a partial line: look again at the next poll
            self.behind.add(stream)
        return first

    # --- sleep ----------------------------------------------------------------------------

    def sleep_now(self, stream: str, key: int, size: int) -> None:
        """A log resumed at its end from its checkpoint: asleep at once."""
        self.asleep[stream] = pack(key, size)
        self.gate.claim(key, stream)

    def put_to_sleep(self, unsaved: Collection[str]) -> int:
        """Let go of the readers of logs whose checkpoint, saved, holds all there is of
        them (none of `unsaved`): what is left in memory of each is its inode and size.
        Returns how many were let go."""
        count = 0
        for stream, reader in list(self.awake.items()):
            if self._may_sleep(reader, unsaved):
                del self.awake[stream]
                self.asleep[stream] = pack(identity_key(*reader.identity), reader.read_pos)
                count += 1
        return count

    def _may_sleep(self, reader: Reader, unsaved: Collection[str]) -> bool:
        stream = reader.stream
        return (
            reader.at_rest
            and stream not in self.open
            and stream not in self.behind
            and stream not in self.dirty
            and stream not in unsaved
        )

    def changed_sleepers(self) -> Iterator[tuple[str, os.stat_result | OSError]]:
        """The sweep's look at sleeping logs: those whose file grew, was replaced or is gone,
        with what a stat of each said, one at a time (each is woken before the next is
        looked at)."""
        # At every sweep, for every sleeping log: `pack` and `identity_key` written out, and
        # `os.stat` called bare (a third of the cost of 10,000 sleeping logs at idle).
        stat = os.stat
        for stream, packed in list(self.asleep.items()):
            try:
                st = stat(stream)
            except OSError as exc:
                yield stream, exc
                continue
            if ((st.st_dev << 64 | st.st_ino) << 64 | st.st_size) != packed:
                yield stream, st  # grown, replaced (else unchanged: still asleep)

    def wake(self, stream: str) -> None:
        """A sleeping log is taken back (its reader made from its checkpoint next)."""
        self.gate.release(self.asleep.pop(stream) >> 64, stream)


class Untracked(Tracker):
    """Without checkpoints: nothing sleeps, and no checkpoint moves."""

    sleeps = False

    def mark_dirty(self, stream: str) -> None:
        return None

    def put_to_sleep(self, unsaved: Collection[str]) -> int:
        return 0


def pack(key: int, size: int) -> int:
    """A sleeping log's file (`identity_key`) and size in one int: enough to see that it grew
    or was replaced (and `>> 64` gives the file back)."""
    return (key << 64) | size


def stat_of(path: str) -> os.stat_result | OSError:
    """A stat of `path`, or why there is none."""
    try:
        return os.stat(path)
    except OSError as exc:
        return exc
