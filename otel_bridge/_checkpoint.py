"""Checkpoints: where `run` may resume each log after a restart or a crash.

A checkpoint is taken only at a safe place: the end of a line after which no interaction was
open, with everything before it handed to the exporters. Resuming there re-reads the open
interaction from its first event, so nothing is lost, and whatever was exported twice is the
same span (deterministic ids, the same events, the session state restored from the snapshot).
To keep that re-reading from exporting again what was delivered before a crash, a checkpoint
also lists the ids of the spans of the open interaction already delivered (`sent`): the
follower drops those when they come again.

The store is a journal, `checkpoints.jsonl` in the state directory: a version line, then one
line per checkpoint written, the last line of a log winning. A save appends only the logs whose
checkpoint moved (one small write and one fsync, however many logs are followed), so saving
after every delivered batch stays cheap, and an idle daemon writes nothing. When the journal
has grown to a few times what its live entries take, it is compacted: rewritten the crash-safe
way (a temp file, fsync, rename over the old one, fsync of the directory; as Vector's
checkpointer does), which is also how a save goes on after a failed append (a line cut by a
full disk is ignored on load: the one before it for the same log still holds). Mode 0600.

The store remembers, per log, only where its live line is in the journal (and a hash of it, to
tell whether a checkpoint moved): `get` reads that one line back. So a daemon can let a quiet
log's whole state live on disk and take it back when the log grows again (`Tailer`'s sleeping
logs), and a log costs a few dozen bytes in memory however many are followed.

A file is known by its device and inode and a fingerprint of its first bytes (as the
OpenTelemetry Collector's filelog receiver does), so a log that was replaced or truncated is
read again from its start. The version 1 file (`checkpoints.json`, one document) is still read,
and replaced by the journal at the first save.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ._exceptions import CheckpointError
from ._safe_open import open_regular

__all__ = ["FINGERPRINT_BYTES", "CheckpointStore", "FileCheckpoint", "fingerprint"]

logger = logging.getLogger(__name__)

FINGERPRINT_BYTES = 1024
_VERSION = 2
_NAME = "checkpoints.jsonl"
_V1_NAME = "checkpoints.json"
#: The journal is compacted when it is larger than this many times its live entries (and
#: larger than `_COMPACT_MIN_BYTES`): appends stay cheap, the file stays bounded.
_COMPACT_RATIO = 4
_COMPACT_MIN_BYTES = 1 << 20
_HASH_MASK = (1 << 64) - 1
_POSITION_SHIFT = 128
_CONTENT_MASK = (1 << _POSITION_SHIFT) - 1  # the hash and the length


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
    """

    path: str
    device: int
    inode: int
    fingerprint: str
    fingerprint_bytes: int
    offset: int
    session: Mapping[str, Any] = field(default_factory=dict)
    sent: Sequence[int] = ()

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


def _encode(checkpoint: FileCheckpoint) -> str:
    # Not `dataclasses.asdict`: it deep-copies the session state first, which was most of the
    # cost of a save (taken after every delivered batch).
    entry = {name: getattr(checkpoint, name) for name in _FIELDS}
    entry["sent"] = list(checkpoint.sent)
    return json.dumps(entry, sort_keys=True, separators=(",", ":"))


_FIELDS = tuple(f.name for f in fields(FileCheckpoint))


def _decode(line: str) -> FileCheckpoint:
    entry = json.loads(line)
    if not isinstance(entry, dict):
        raise ValueError("not an object")
    sent = entry.pop("sent", [])
    if not isinstance(sent, list) or not all(isinstance(s, int) for s in sent):
        raise ValueError("bad 'sent'")
    checkpoint = FileCheckpoint(**entry, sent=tuple(sent))
    if not isinstance(checkpoint.path, str) or not isinstance(checkpoint.offset, int):
        raise ValueError("bad path or offset")
    return checkpoint


class CheckpointStore:
    """The checkpoint journal in a state directory (created 0700 if missing).

    Raises:
        CheckpointError: the directory cannot be created.
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
        # path -> what its line as last written was and where: its hash, length and position
        # in the journal in one int (`_digest`; the lines themselves are read back from the
        # journal by `get` and when it is compacted), so that a log costs a few dozen bytes
        # here however many are followed.
        self._saved: dict[str, int] = {}
        # Read from a version 1 file: its checkpoints have no line in a journal until the
        # first save compacts (rewrites) it, so `get` takes them from here until then.
        self._legacy: dict[str, FileCheckpoint] = {}
        self._live_bytes = 0  # what the live lines take
        self._file_bytes = 0  # what the journal takes (live lines and superseded ones)
        self._clean = False  # the journal ends with a complete line we wrote or read
        self._damaged = 0  # damaged lines met when it was last read
        self.writes = 0  # appends and compactions done (for tests and benchmarks)

    def load(self) -> dict[str, FileCheckpoint]:
        """The checkpoints of the last run; {} when there are none or they cannot be read
        (logged: the logs are then read as on a first start). A damaged line loses only
        itself: the log it was for resumes from its previous line, if any."""
        entries: dict[str, FileCheckpoint] = {}
        if self.path.exists():
            entries = self._load_journal()
        elif (self.directory / _V1_NAME).exists() or (
            self.directory / (_V1_NAME + ".tmp")
        ).exists():
            entries = self._load_v1()
            self._saved = {path: _digest(_encode(c), -1) for path, c in entries.items()}
            self._legacy = dict(entries)
        if entries:
            logger.info("resuming %d logs from %s", len(entries), self.directory)
        self._live_bytes = sum(_length(d) + 1 for d in self._saved.values())
        return entries

    def get(self, path: str) -> FileCheckpoint | None:
        """The checkpoint of `path` as last saved (or loaded), read back from the journal;
        None when it has none, or when its line cannot be read back (logged)."""
        digest = self._saved.get(path)
        if digest is None:
            return None
        position = _position(digest)
        if position < 0:
            return self._legacy.get(path)
        try:
            with self.path.open("rb") as handle:
                handle.seek(position)
                line = handle.read(_length(digest)).decode("utf-8")
            checkpoint = _decode(line)
            if checkpoint.path != path or _digest(line, position) != digest:
                raise ValueError("the journal changed under the bridge")
        except (OSError, ValueError, TypeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            logger.warning("cannot read %s's checkpoint back from %s: %s", path, self.path, why)
            return None
        return checkpoint

    def save(self, checkpoints: Mapping[str, FileCheckpoint]) -> int:
        """Record these checkpoints (the logs not named keep theirs); only those that changed
        since they were last written are appended. Returns how many were written.

        Raises:
            CheckpointError: the journal cannot be written (a full disk, a read-only volume):
                what was saved before still holds; the next save tries again.
        """
        lines = {}
        for path, checkpoint in checkpoints.items():
            line = _encode(checkpoint)
            saved = self._saved.get(path)
            if saved is None or not _same(saved, line):
                lines[path] = line
        if not lines:
            return 0
        live = self._live_bytes + sum(
            len(line) + 1 - (_length(self._saved[path]) + 1 if path in self._saved else 0)
            for path, line in lines.items()
        )
        try:
            if not self._clean or self._file_bytes > max(_COMPACT_MIN_BYTES, _COMPACT_RATIO * live):
                positions = self._compact(lines)
            else:
                positions = self._append(lines)
        except OSError as exc:
            self._clean = False  # a line may be half written: the next save rewrites it all
            raise CheckpointError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
        self._saved.update(positions)
        self._live_bytes = live
        self.writes += 1
        return len(lines)

    def forget(self, paths: Sequence[str]) -> None:
        """Logs that are gone: their checkpoints leave the journal at its next compaction."""
        for path in paths:
            digest = self._saved.pop(path, None)
            if digest is not None:
                self._live_bytes -= _length(digest) + 1

    # --- internals -------------------------------------------------------------------------

    def _append(self, lines: Mapping[str, str]) -> dict[str, int]:
        """Append `lines`; returns each one's `_digest` (with where it now is)."""
        data, positions = _lines_at(lines, self._file_bytes)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        self._file_bytes += len(data)
        return positions

    def _compact(self, lines: Mapping[str, str]) -> dict[str, int]:
        """Rewrite the journal with the live line of every log: those given, and for the
        others their last line in the journal as it is (read back: not kept in memory).
        Returns the `_digest` of every line written (with where it now is)."""
        kept: dict[str, str] = {}
        if self.path.exists():
            try:
                journal = self._journal_lines()
            except (OSError, ValueError) as exc:  # damaged from outside: start it afresh
                logger.warning("rewriting %s, which cannot be read back: %s", self.path, exc)
                journal = []
            for path, line, _ in journal:
                if path in self._saved and path not in lines:
                    kept[path] = line
        for path, checkpoint in self._legacy.items():  # a version 1 file's, not in the journal
            if path in self._saved and path not in lines:
                kept.setdefault(path, _encode(checkpoint))
        kept.update(lines)
        header = (json.dumps({"version": _VERSION}) + "\n").encode("utf-8")
        body, positions = _lines_at(kept, len(header))
        data = header + body
        temp = self.path.with_suffix(".jsonl.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, self.path)
        _fsync_directory(self.directory)
        self._file_bytes = len(data)
        self._clean = True
        self._legacy = {}
        for old in (_V1_NAME, _V1_NAME + ".tmp"):  # the version 1 file is superseded
            with contextlib.suppress(FileNotFoundError):
                (self.directory / old).unlink()
        return positions

    def _journal_lines(self) -> list[tuple[str, str, int]]:
        """(path, line, where it starts) of each good line of the journal, in order (a log's
        last one wins).

        Raises:
            OSError: it cannot be read.
            ValueError: its first line is not this version's header.
        """
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        header = json.loads(lines[0])
        if not isinstance(header, dict) or header.get("version") != _VERSION:
            raise ValueError(f"unknown version {header!r}"[:80])
        self._file_bytes = len(data)
        good = []
        self._damaged = 0
        position = len(lines[0]) + 1
        for raw in lines[1:]:
            start, position = position, position + len(raw) + 1
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
                checkpoint = _decode(line)
            except (ValueError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
                self._damaged += 1
                if self._damaged == 1:
                    logger.warning("%s: skipping a damaged line (%s)", self.path, exc)
                continue
            good.append((checkpoint.path, line, start))
        self._clean = data.endswith(b"\n") and not self._damaged
        return good

    def _load_journal(self) -> dict[str, FileCheckpoint]:
        try:
            good = self._journal_lines()
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            logger.warning("ignoring checkpoint file %s: %s", self.path, why)
            return {}
        last = {path: (line, start) for path, line, start in good}
        self._saved = {path: _digest(line, start) for path, (line, start) in last.items()}
        return {path: _decode(line) for path, (line, _) in last.items()}

    def _load_v1(self) -> dict[str, FileCheckpoint]:
        for candidate in (self.directory / (_V1_NAME + ".tmp"), self.directory / _V1_NAME):
            if not candidate.exists():
                continue
            try:
                document = json.loads(candidate.read_text(encoding="utf-8"))
                if document.get("version") != 1:
                    raise ValueError(f"unknown version {document.get('version')!r}")
                entries = [FileCheckpoint(**entry) for entry in document["files"]]
            except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
                logger.warning("ignoring checkpoint file %s: %s", candidate, exc)
                continue
            return {entry.path: entry for entry in entries}
        return {}


def _digest(line: str, position: int) -> int:
    """A line's hash, its length in bytes and where it starts in the journal (-1: in none) in
    one int: enough to tell whether a checkpoint moved, and to read it back."""
    # (Lines are ASCII: `json.dumps` escapes the rest, so characters are bytes.)
    return (hash(line) & _HASH_MASK) | (len(line) << 64) | ((position + 1) << _POSITION_SHIFT)


def _same(digest: int, line: str) -> bool:
    """Is `line` the one `digest` was taken of (wherever it is)?"""
    return digest & _CONTENT_MASK == _digest(line, -1)


def _length(digest: int) -> int:
    return (digest >> 64) & _HASH_MASK


def _position(digest: int) -> int:
    return (digest >> _POSITION_SHIFT) - 1


def _lines_at(lines: Mapping[str, str], start: int) -> tuple[bytes, dict[str, int]]:
    """`lines` as the bytes to write at byte `start` of the journal, and each one's digest."""
    chunks = []
    positions = {}
    position = start
    for path, line in lines.items():
        data = line.encode("utf-8") + b"\n"
        chunks.append(data)
        positions[path] = _digest(line, position)
        position += len(data)
    return b"".join(chunks), positions


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
