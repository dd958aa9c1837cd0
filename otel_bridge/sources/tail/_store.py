"""Where the tailer keeps its resume points: the checkpoint store (`CheckpointStore`: the
journal, its codec and the migration of older files are in `_checkpoint*.py`), or, with
checkpoints off, `NoCheckpoints`, which keeps nothing: every start is a first start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ..._checkpoint import FileCheckpoint

__all__ = ["NoCheckpoints", "Store"]


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
