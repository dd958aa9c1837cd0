"""Checkpoints: where `run` may resume each log after a restart or a crash.

A checkpoint is taken only at a safe place: the end of a line after which no interaction was
open, with everything before it handed to the exporters. Resuming there re-reads the open
interaction from its first event, so nothing is lost, and whatever was exported twice is the
same span (deterministic ids, the same events, the session state restored from the snapshot).

The file is written the crash-safe way (a temp file, fsync, rename over the old one, fsync of
the directory; as Vector's checkpointer does), mode 0600, versioned. A file is known by its
device and inode and a fingerprint of its first bytes (as the OpenTelemetry Collector's filelog
receiver does), so a log that was replaced or truncated is read again from its start.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ._exceptions import CheckpointError

__all__ = ["FINGERPRINT_BYTES", "CheckpointStore", "FileCheckpoint", "fingerprint"]

logger = logging.getLogger(__name__)

FINGERPRINT_BYTES = 1024
_VERSION = 1
_NAME = "checkpoints.json"


def fingerprint(path: Path, limit: int = FINGERPRINT_BYTES) -> tuple[str, int]:
    """SHA-256 of the first `limit` bytes, and how many bytes that was (a short file's
    fingerprint is matched as a prefix once it grows)."""
    with path.open("rb") as handle:
        head = handle.read(limit)
    return hashlib.sha256(head).hexdigest(), len(head)


@dataclass(frozen=True, slots=True)
class FileCheckpoint:
    """Where to resume one log."""

    path: str
    device: int
    inode: int
    fingerprint: str
    fingerprint_bytes: int
    offset: int
    session: Mapping[str, Any] = field(default_factory=dict)

    def matches(self, path: Path) -> bool:
        """Is `path` still the file this checkpoint was taken on (not replaced, not cut)?"""
        try:
            st = path.stat()
            if (st.st_dev, st.st_ino) != (self.device, self.inode) or st.st_size < self.offset:
                return False
            digest, _ = fingerprint(path, self.fingerprint_bytes)
        except OSError:
            return False
        return digest == self.fingerprint


class CheckpointStore:
    """The checkpoint file in a state directory (created 0700 if missing).

    Raises:
        CheckpointError: the directory cannot be created or written.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / _NAME
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise CheckpointError(
                f"cannot create the state directory {directory}: "
                f"{exc.strerror or exc}; choose another with --state-dir"
            ) from exc
        self._last: str | None = None

    def load(self) -> dict[str, FileCheckpoint]:
        """The checkpoints of the last run; {} when there are none or they cannot be read
        (logged: the logs are then read as on a first start)."""
        for candidate in (self.path.with_suffix(".json.tmp"), self.path):
            if not candidate.exists():
                continue
            try:
                document = json.loads(candidate.read_text(encoding="utf-8"))
                if document.get("version") != _VERSION:
                    raise ValueError(f"unknown version {document.get('version')!r}")
                entries = [FileCheckpoint(**entry) for entry in document["files"]]
            except (OSError, ValueError, TypeError, KeyError) as exc:
                logger.warning("ignoring checkpoint file %s: %s", candidate, exc)
                continue
            logger.info("resuming %d logs from %s", len(entries), candidate)
            return {entry.path: entry for entry in entries}
        return {}

    def save(self, checkpoints: Mapping[str, FileCheckpoint]) -> None:
        """Write all checkpoints atomically; a no-op when nothing changed since the last save."""
        document = json.dumps(
            {"version": _VERSION, "files": [asdict(c) for c in checkpoints.values()]},
            sort_keys=True,
        )
        if document == self._last:
            return
        temp = self.path.with_suffix(".json.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(document)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
            _fsync_directory(self.directory)
        except OSError as exc:
            raise CheckpointError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
        self._last = document


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
