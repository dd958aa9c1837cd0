"""One checkpoint: which file it was taken on (device, inode, a fingerprint of its first bytes,
as the OpenTelemetry Collector's filelog receiver knows a file) and where to resume it; and its
line in the journal, every field checked when read back (`_checkpoint_entry`). The tailer
reads only this module; the store that keeps the journal is `_checkpoint`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files._safe_open import open_regular
from ._entry import (
    ENTRY_FIELDS,
    MAX_SENT,
    MAX_SENT_BLOCKS,
    checked_entry,
    scrubbed_session,
)

__all__ = [
    "FINGERPRINT_BYTES",
    "FileCheckpoint",
    "decode",
    "encode",
    "fingerprint",
    "fingerprint_of",
]

FINGERPRINT_BYTES = 1024


def fingerprint(
    path: Path, limit: int = FINGERPRINT_BYTES, root: Path | None = None
) -> tuple[str, int]:
    """SHA-256 of the first `limit` bytes, and how many bytes that was (a short file's
    fingerprint is matched as a prefix once it grows). Opened as the log's reader opens it
    (`open_regular`, below `root` if given): a FIFO swapped in for a quiet log raises instead
    of blocking.

    Raises:
        OSError: it cannot be opened, or is not a regular file (`UnsafeFile`).
    """
    with open_regular(path, root) as handle:
        return fingerprint_of(handle.read(limit))


def fingerprint_of(head: bytes) -> tuple[str, int]:
    """The fingerprint of a file that starts with `head` (its first bytes, at most
    `FINGERPRINT_BYTES`)."""
    return hashlib.sha256(head).hexdigest(), len(head)


@dataclass(frozen=True, slots=True)
class FileCheckpoint:
    """Where to resume one log.

    Attributes:
        path, device, inode, fingerprint, fingerprint_bytes: which file it is.
        offset: the safe place to resume reading at.
        session: the session's state there (`SessionAssembler.snapshot()`).
        sent: ids of spans finished after `offset` and already delivered: a restart that reads
            them again does not export them again.
        sent_blocks: the spans delivered before those of `sent`, as digests of blocks of
            1,024 ids in the order they are read again (feed/_delivered.py).
    """

    path: str
    device: int
    inode: int
    fingerprint: str
    fingerprint_bytes: int
    offset: int
    session: Mapping[str, Any] = field(default_factory=dict)
    sent: Sequence[int] = ()
    sent_blocks: Sequence[int] = ()

    @property
    def never_read(self) -> bool:
        """Taken where a run began to follow the log from its end, with nothing read since:
        no session state (a follower's is empty until it passes a safe place, and
        `SessionAssembler.snapshot()` never is) and no span delivered after it. Nothing of the
        log was exported, so reading it from its beginning (`run --backfill`) repeats
        nothing."""
        return self.offset > 0 and not self.session and not self.sent

    def matches(self, path: Path, root: Path | None = None) -> bool:
        """Is `path` still the file this checkpoint was taken on (not replaced, not cut)?
        Opened as its reader opens it (below `root` if given); one that cannot be opened, or
        is no longer a regular file, does not match."""
        try:
            with open_regular(path, root) as handle:
                st = handle.stat
                if (st.st_dev, st.st_ino) != (self.device, self.inode) or st.st_size < self.offset:
                    return False
                digest, _ = fingerprint_of(handle.read(self.fingerprint_bytes))
        except OSError:
            return False
        return digest == self.fingerprint


def encode(checkpoint: FileCheckpoint, scrub: Callable[[str], str]) -> str:
    """The journal line of a checkpoint, its session state scrubbed by `scrub`."""
    # Not `dataclasses.asdict`: it deep-copies the session state first, which was most of the
    # cost of a save (taken after every delivered batch).
    entry = {name: getattr(checkpoint, name) for name in ENTRY_FIELDS}
    entry["session"] = scrubbed_session(checkpoint.session, scrub)
    entry["sent"] = list(checkpoint.sent[:MAX_SENT])
    if checkpoint.sent_blocks:  # only for a long open task: a line stays as it was otherwise
        entry["sent_blocks"] = list(checkpoint.sent_blocks[:MAX_SENT_BLOCKS])
    else:
        del entry["sent_blocks"]
    return json.dumps(entry, sort_keys=True, separators=(",", ":"))


def decode(line: str) -> FileCheckpoint:
    """An entry back from its line, every field checked (`checked_entry`).

    Raises:
        ValueError: not an entry this version writes.
    """
    return FileCheckpoint(*checked_entry(line, FINGERPRINT_BYTES))
