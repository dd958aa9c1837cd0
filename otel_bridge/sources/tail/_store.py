"""Where the tailer keeps its resume points: the checkpoint store (`CheckpointStore`: the
journal, its codec and the migration of older files are in `otel_bridge/checkpoint/`), or, with
checkpoints off, `NoCheckpoints`, which keeps nothing: every start is a first start.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from ..._exceptions import CheckpointError
from ...checkpoint._file import FileCheckpoint
from ._tracker import Tracker

__all__ = ["NoCheckpoints", "Saver", "Store"]


class Store(Protocol):
    """What the tailer asks of a checkpoint store."""

    @property
    def lost(self) -> bool: ...

    def load(self) -> dict[str, FileCheckpoint]: ...

    def get(self, path: str) -> FileCheckpoint | None: ...

    def save(self, checkpoints: Mapping[str, FileCheckpoint]) -> int: ...

    def forget(self, paths: Sequence[str]) -> None: ...


class NoCheckpoints:
    """The null store (`--no-checkpoints`): nothing loaded, nothing kept."""

    lost = False

    def load(self) -> dict[str, FileCheckpoint]:
        return {}

    def get(self, path: str) -> FileCheckpoint | None:
        return None

    def save(self, checkpoints: Mapping[str, FileCheckpoint]) -> int:
        return 0

    def forget(self, paths: Sequence[str]) -> None:
        return None


class Saver:
    """Writes the checkpoints that moved (`Tailer.save_checkpoints`)."""

    def __init__(self, store: Store, tracker: Tracker, every: float) -> None:
        self.store = store
        self._tracker = tracker
        self._every = every
        self.unsaved: dict[str, FileCheckpoint] = {}  # taken, not yet written (a failure)
        self._next_save = 0.0

    def take(self, checkpoint: FileCheckpoint) -> None:
        """A checkpoint made without a reader (a log asleep from the start): written with
        the next save."""
        self.unsaved[checkpoint.path] = checkpoint

    def taken(self, stream: str) -> FileCheckpoint | None:
        """The checkpoint of `stream` taken and not yet written, if any: newer than the
        store's."""
        return self.unsaved.get(stream)

    def save(self, watermark: int | None, *, force: bool) -> int:
        """Write the checkpoint of each dirty log whose checkpoint moved, up to `watermark`
        (the sink's; None: everything emitted was delivered); `force`: now, else only if
        `every` seconds have passed since the last save (`run` calls it after every poll
        and delivery). Returns how many were written.

        Raises:
            CheckpointError: the store cannot be written; what was taken is kept and written
                by the next call.
        """
        mono = time.monotonic()
        if not force and mono < self._next_save:
            return 0
        self._next_save = mono + self._every
        entries = self.unsaved
        tracker = self._tracker
        for stream in list(tracker.dirty):
            reader = tracker.awake.get(stream)
            if reader is None:
                tracker.dirty.discard(stream)
                continue
            ledger = reader.ledger
            if ledger.moved(watermark):
                checkpoint = reader.checkpoint(watermark)
                if checkpoint is not None:
                    entries[stream] = checkpoint
            if ledger.settled:
                tracker.dirty.discard(stream)
        if not entries:
            return 0
        self.unsaved = {}
        try:
            return self.store.save(entries)
        except CheckpointError:
            self.unsaved = entries
            raise
